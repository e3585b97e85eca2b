"""``tensorflow.python.ipu``: Graphcore's TensorFlow 2 for the IPU (``ipu.config.IPUConfig``,
``ipu.ipu_strategy.IPUStrategy``, Keras models compiled for the IPU), which Graphcore's TensorFlow 2 tutorials
use (ALCF's 'MNIST - Tensorflow2' example, ``tutorials/simple_applications/tensorflow2/mnist/mnist.py``).

It is not simulated: it is Graphcore's own build of TensorFlow (2.6 with the Poplar XLA backend, shipped with
the Poplar SDK, not on PyPI), and accelkit's IPU is driven through PopTorch. A script that imports it under
``accelkit vendor-run`` stops at that import (or at ``import tensorflow``, where TensorFlow is not installed) with
what to run instead; nothing else of the script runs.
"""

from __future__ import annotations

from accelkit.facades.poptorch.options import PopTorchError

MESSAGE = ("tensorflow.python.ipu (Graphcore's TensorFlow 2 for the IPU: IPUConfig, IPUStrategy, Keras on the IPU) "
           "is not simulated by accelkit: it is Graphcore's own build of TensorFlow with the Poplar backend, and "
           "accelkit's IPU runs PyTorch models through PopTorch")
FIX = ("write the model and its training loop in PyTorch with poptorch.trainingModel over a poptorch.DataLoader "
       "(Graphcore's tutorials/simple_applications/pytorch/mnist/mnist_poptorch.py, the same MNIST example, runs "
       "unchanged; examples/vendor/poptorch_mnist.py has that shape); or run the script on an IPU system with the "
       "Poplar SDK's TensorFlow wheel installed")


def refuse() -> None:
    """Raise the refusal (on import of ``tensorflow.python.ipu`` during a vendor run)."""
    raise PopTorchError(MESSAGE, fix=FIX)


refuse()
