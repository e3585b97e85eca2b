"""``optimum.graphcore``: Hugging Face's trainer for the IPU (``IPUConfig``, ``IPUTrainingArguments``,
``IPUTrainer``), which Graphcore's Hugging Face tutorials use in place of a PopTorch loop.

It is not simulated: its trainer compiles and runs the model on IPUs through its own copy of PopTorch's
machinery (pipelining from the IPU config of a model card on the Hub, its own data collation and
checkpointing), and a stand-in that trained some other way would print numbers the real trainer never
gives. Importing it under ``accelkit vendor-run`` stops the script at its import line with what to do
instead; nothing else of the script runs.
"""

from __future__ import annotations

from accelkit.facades.poptorch.options import PopTorchError

MESSAGE = ("optimum.graphcore (Hugging Face's IPUTrainer, IPUConfig, IPUTrainingArguments) is not simulated by "
           "accelkit: its trainer runs the model on IPUs through its own pipeline, which accelkit does not model")
FIX = ("train the transformers model with PopTorch itself: poptorch.trainingModel(model, poptorch.Options(), "
       "optimizer) in a loop over a poptorch.DataLoader (examples/vendor/poptorch_bert.py has that shape, and "
       "accelkit simulates it); or run the script on an IPU system with optimum-graphcore installed")


def refuse() -> None:
    """Raise the refusal (on import of ``optimum.graphcore`` during a vendor run)."""
    raise PopTorchError(MESSAGE, fix=FIX)


refuse()
