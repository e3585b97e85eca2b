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

from accelkit.facades.samba.runtime import log_info, session
from accelkit.facades.samba.tensor import SambaError, SambaTensor, to_torch
from accelkit.runtime import facade_log

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
    p.add_argument("--log-level", default="info", type=str.lower,
                   choices=["debug", "info", "warning", "error", "critical", "none"],
                   help="how much SambaFlow's own log lines say ([info] ... lines; 'error' keeps only errors)")
    p.add_argument("--debug", action="store_true", help="SambaFlow's developer options: accepted, nothing more is shown")
    p.add_argument("--arch", default=None, metavar="ARCH",
                   help="the RDU generation to compile for (sn10, sn20, sn30, sn40l): recorded; the simulated "
                        "RDU is sn40l")
    if command == "compile":
        p.add_argument("--pef-name", default=None, metavar="NAME",
                       help="the PEF's name: it is written to <output-folder>/<NAME>/<NAME>.pef")
        p.add_argument("--output-folder", default=None, metavar="DIR",
                       help="the folder compile writes under (default: out, beside the app)")
        p.add_argument("--num-tiles", type=int, default=None, metavar="N",
                       help="RDU tiles to compile for (SN30: 4 tiles are half an RDU): recorded, not simulated")
        p.add_argument("--resources-scaling-factors", type=float, nargs="+", default=None, metavar="F",
                       help="how much of each on-chip resource the compiler may plan for: recorded, not simulated")
        p.add_argument("--compiler-configs-file", default=None, metavar="JSON",
                       help="a file of compiler settings: recorded, not simulated")
        p.add_argument("--mac-v2", action="store_true", help="the newer compiler front end: recorded, not simulated")
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
        p.add_argument("--acc-report-json", default=None, metavar="PATH",
                       help="where an app writes its AccuracyReport (read by apps)")
        p.add_argument("--visualize", action="store_true",
                       help="SambaFlow draws assert_close's differences: accepted, nothing is drawn here")
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
    _record_hardware_only(args)
    session.app_args = args
    return args


# SambaFlow compile arguments that shape the real compiler's plan, not the values computed: accepted, said once
HARDWARE_ONLY_ARGS = {
    "num_tiles": ("--num-tiles", "the RDU tiles the compiler may place the graph on (4 tiles are half an SN30 RDU); "
                  "the simulated RDU's placement is accelkit's own, on the whole chip"),
    "resources_scaling_factors": ("--resources-scaling-factors", "how much of each on-chip resource (PCUs, PMUs, "
                                  "switches) the compiler may plan for, to leave room when placing fails; accelkit's "
                                  "placement does not run out that way"),
    "arch": ("--arch", "the RDU generation to compile for; accelkit simulates the sn40l from its published figures"),
    "compiler_configs_file": ("--compiler-configs-file", "compiler settings below the level accelkit models"),
    "mac_v2": ("--mac-v2", "the compiler's newer front end; the simulated compile is accelkit's own"),
    "mapping": ("--mapping", "chooses how sections are laid out on the RDU; the simulated placement is accelkit's"),
}


def _record_hardware_only(args: argparse.Namespace) -> None:
    for attr, (flag, why) in HARDWARE_ONLY_ARGS.items():
        value = getattr(args, attr, None)
        if value not in (None, False, []):
            shown = " ".join(map(str, value)) if isinstance(value, list) else ("" if value is True else str(value))
            facade_log.accept("SambaFlow", f"{flag} {shown}".rstrip(), why)



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


def assert_close(actual: Any, expected: Any, name: str = "tensor", threshold: float = 1e-3, visualize: bool = False,
                 **_: Any) -> float:
    """Check an RDU result against the CPU's (``sambaflow.samba.utils.assert_close(samba, gold, name,
    threshold=...)``, as test subcommands use it): the largest absolute difference, relative to the
    reference's largest magnitude, must not exceed ``threshold``. Returns that error; raises a
    :class:`SambaError` naming ``name`` when it is too large. ``visualize`` (SambaFlow draws the difference) is
    accepted and ignored."""
    a = torch.as_tensor(to_torch(actual)).detach().float()
    b = torch.as_tensor(to_torch(expected)).detach().float()
    if a.shape != b.shape:
        raise SambaError(f"assert_close({name!r}): shapes differ, {tuple(a.shape)} vs {tuple(b.shape)}",
                         fix="compare the same output of the RDU run and of the CPU model")
    err = float((a - b).abs().max() / b.abs().max().clamp_min(1e-12)) if b.numel() else 0.0
    if not err <= threshold:
        raise SambaError(f"assert_close({name!r}): relative error {err:.3g} is above the threshold {threshold:g}",
                         fix="the RDU session and the CPU model disagree: check both ran the same weights and inputs")
    return err


class AccuracyReport:
    """``sambaflow.samba.utils.benchmark_acc.AccuracyReport(val_metrics=..., batch_size=..., num_iterations=...)``:
    an app's final accuracy figures, written as JSON by ``save(path)`` (the same keys SambaFlow's report has)."""

    def __init__(self, val_metrics: dict[str, Any], batch_size: int, num_iterations: int, **extra: Any) -> None:
        self.val_metrics = {k: float(v) for k, v in val_metrics.items()}
        self.batch_size = int(batch_size)
        self.num_iterations = int(num_iterations)
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        return {"val_metrics": self.val_metrics, "batch_size": self.batch_size, "num_iterations": self.num_iterations,
                **{k: v for k, v in self.extra.items() if isinstance(v, (str, int, float, bool))},
                "note": "written by accelkit's simulated RDU: the metrics are real, computed on the CPU"}

    def save(self, path: str | os.PathLike[str]) -> None:
        import json

        folder = os.path.dirname(os.fspath(path))
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path, "w") as f:
            json.dump(self.as_dict(), f, indent=2)


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


__all__ = ["AccuracyReport", "assert_close", "log_info", "dataset_transform", "get_file_dir", "get_pefmeta", "parse_app_args", "parse_yaml_to_args", "set_seed",
           "trace_graph"]
