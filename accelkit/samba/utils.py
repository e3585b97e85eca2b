"""App helpers as SambaFlow names them (``sambaflow.samba.utils``): the command line and ``trace_graph``.

A SambaFlow app is one script with subcommands, run once to compile and again to use the PEF::

    python app.py compile -b 32 -mb 4 -p out/app.pef      # capture, map onto the RDU, write the PEF
    python app.py run     -b 32 -mb 4 -p out/app.pef      # trace against the PEF, run the loop
    python app.py test    -b 32 -mb 4 -p out/app.pef      # ... and compare each step with plain PyTorch
    python app.py measure-performance -b 32 -p out/app.pef  # ... and print the modelled latency
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from accelkit.samba.runtime import session
from accelkit.samba.tensor import SambaError, SambaTensor

COMMANDS = {
    "compile": "capture the model, map it onto the simulated RDU (sn40l) and write the PEF-like artifact to -p",
    "test": "trace against the PEF and run the app, comparing every step's outputs and weights with plain "
            "PyTorch on this CPU (the oracle); session.report() prints the max error",
    "run": "trace against the PEF and run the app's loop: real PyTorch numerics, the RDU's time modelled",
    "measure-performance": "like run; session.report() adds the modelled latency per batch and throughput",
}


def _common(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("-b", "--batch-size", type=int, default=1, metavar="N",
                   help="samples per batch; the PEF is compiled for exactly this batch (default 1)")
    p.add_argument("-mb", "--micro-batch-size", type=int, default=None, metavar="N",
                   help="training: split each batch into micro-batches of N samples and accumulate their "
                        "gradients (must divide the batch size; default: the whole batch)")
    p.add_argument("--inference", action="store_true",
                   help="compile / run the forward sections only (no optimizer, no backward pass)")
    p.add_argument("-p", "--pef", default=None, required=command != "compile", metavar="PATH",
                   help="the PEF-like artifact folder: written by compile (default out/<name>/<name>.pef), "
                        "read by the other commands")
    if command == "compile":
        fusion = p.add_mutually_exclusive_group()
        fusion.add_argument("--o0", dest="fusion", action="store_const", const="o0",
                            help="compile one operator per section (SambaFlow's o0)")
        fusion.add_argument("--o1", dest="fusion", action="store_const", const="o1",
                            help="fuse operators into a section per layer (SambaFlow's o1; the default)")
        p.add_argument("-ws", "--world-size", type=int, default=1, metavar="N",
                       help="number of RDUs to compile for (default 1)")
        p.add_argument("--data-parallel", action="store_true",
                       help="with -ws N: replicate the model on every RDU, each taking batch/N samples")
    else:
        p.add_argument("--mapping", choices=["section", "spatial"], default=None,
                       help="accepted for compatibility with SambaFlow apps; the simulated RDU ignores it")
        p.add_argument("--data-parallel", action="store_true",
                       help="run the data-parallel PEF (compiled with -ws N --data-parallel); read by apps")
        p.add_argument("--reduce-on-rdu", action="store_true",
                       help="reduce gradients on the RDUs (accepted; the reduction is part of the modelled clock)")


def parse_app_args(argv: Sequence[str] | None = None,
                   common_parser_fn: Callable[[argparse.ArgumentParser], Any] | None = None,
                   test_parser_fn: Callable[[argparse.ArgumentParser], Any] | None = None,
                   run_parser_fn: Callable[[argparse.ArgumentParser], Any] | None = None,
                   dev_mode: bool = False) -> argparse.Namespace:
    """Parse a SambaFlow-style app's command line (``sambaflow.samba.utils.argparser.parse_app_args``, called
    as in github.com/sambanova/tutorials: ``parse_app_args(argv=argv, common_parser_fn=add_args)`` in
    hello_world/logreg.py, ``parse_app_args(dev_mode=True, common_parser_fn=..., test_parser_fn=...,
    run_parser_fn=...)`` in lenet/lenet.py).

    Subcommands ``compile``, ``test``, ``run`` and ``measure-performance`` share ``-b/--batch-size``,
    ``-mb/--micro-batch-size``, ``--inference`` and ``-p/--pef``. ``common_parser_fn(parser)`` adds the app's
    own arguments to every subcommand, ``test_parser_fn(parser)`` to ``test`` and ``run_parser_fn(parser)``
    to run / measure-performance (and to test when there is no ``test_parser_fn``). An app may redefine a
    shared option (lenet adds its own ``-b/--batch-size``): the app's definition wins. ``dev_mode`` (SambaFlow's
    developer options) is accepted; it adds nothing here.
    The parsed arguments are also recorded on ``samba.session``, which is how ``-mb`` and ``--o0`` reach
    ``session.compile`` and how ``test`` turns on the oracle check.
    """
    parser = argparse.ArgumentParser(
        description="A SambaFlow-style app on accelkit's simulated SambaNova RDU: the numerics are real PyTorch "
                    "on this CPU, the RDU's time is modelled from published figures.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for command, text in COMMANDS.items():
        p = sub.add_parser(command, help=text, description=text, conflict_handler="resolve")
        _common(p, command)
        if common_parser_fn is not None:
            common_parser_fn(p)
        extra = test_parser_fn if command == "test" and test_parser_fn is not None else run_parser_fn
        if extra is not None and command != "compile":
            extra(p)
    args = parser.parse_args(None if argv is None else list(argv))
    session.app_args = args
    return args


def parse_yaml_to_args(yaml_file: str, args: argparse.Namespace) -> argparse.Namespace:
    """Override ``args`` with the keys of a YAML file (``sambaflow.samba.utils.argparser.parse_yaml_to_args``,
    as hello_world/logreg.py uses it with ``--yaml-config``); dashes in keys become underscores."""
    import yaml  # type: ignore[import-untyped]

    try:
        with open(yaml_file) as f:
            body = yaml.safe_load(f) or {}
    except OSError as exc:
        raise SambaError(f"cannot read the YAML config {yaml_file}: {exc}", fix="check the --yaml-config path") from None
    if not isinstance(body, dict):
        raise SambaError(f"{yaml_file} is not a mapping of argument names to values", fix="write `lr: 0.01` lines")
    for k, v in body.items():
        setattr(args, str(k).replace("-", "_"), v)
    return args


def get_pefmeta(args: argparse.Namespace, model: nn.Module) -> dict[str, Any]:
    """Metadata to store in the PEF (``sambaflow.samba.utils.pef_utils.get_pefmeta``): the app's arguments
    and the model's class. ``session.compile`` accepts it as ``pef_metadata``; accelkit's PEF does not keep it."""
    return {"args": {k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, type(None)))},
            "model": type(model).__name__}


def set_seed(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's random numbers (``sambaflow.samba.utils.set_seed``)."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def dataset_transform(config: dict[str, Any] | None = None) -> Callable[[Any], torch.Tensor]:
    """The MNIST transform of ``sambaflow.samba.utils.dataset.mnist.dataset_transform`` (hello_world/logreg.py):
    an image (PIL, array or uint8 tensor, 28x28) -> a flat float tensor of 784 pixels, scaled to [0, 1] and
    normalised with MNIST's mean 0.1307 and std 0.3081, ready for a ``Linear(784, ...)`` layer."""
    import numpy as np

    def transform(image: Any) -> torch.Tensor:
        t = torch.as_tensor(np.array(image, copy=True))
        t = t.float() / 255.0 if t.dtype == torch.uint8 else t.float()
        return ((t - 0.1307) / 0.3081).reshape(-1)

    return transform


def get_file_dir(file: str) -> str:
    """The folder of ``file`` (apps pass ``app_dir=utils.get_file_dir(__file__)`` to ``session.compile``)."""
    return os.path.dirname(os.path.abspath(file))


def trace_graph(model: nn.Module, inputs: Sequence[Any], optim: Any = None, *,
                pef: str | None = None, mapping: str | None = None,
                init_output_grads: bool | None = None) -> tuple[SambaTensor, ...]:
    """Load the PEF, check it was compiled for this model and these inputs, and set up the RDU session
    (``sambaflow.samba.utils.trace_graph``). Returns the traced output tensors, for ``session.run``.

    The checks (each a clear error saying to recompile): the parameter names and shapes, the inputs'
    names, shapes and dtypes, training vs inference, the precision. The run starts from the model's own
    weights, as SambaFlow copies the host model's weights to the RDU; the PEF's saved weights are not loaded.
    ``mapping`` is accepted for compatibility and ignored. ``optim`` may be a list of optimizers, ``inputs`` may
    hold ``None`` placeholders (as compiled), and ``init_output_grads=True`` is what a training trace does anyway.
    """
    return session.trace(model, inputs, optim, pef, mapping, init_output_grads)  # type: ignore[arg-type]


__all__ = ["dataset_transform", "get_file_dir", "get_pefmeta", "parse_app_args", "parse_yaml_to_args", "set_seed",
           "trace_graph"]
