"""``samba.session``: compile an app to a PEF-like artifact, then run its sections on the simulated RDU.

The shape of a SambaFlow app (``sambaflow.samba.session``)::

    samba.session.compile(model, inputs, optim, name="app", init_output_grads=True, pef="out/app.pef")
    outputs = utils.trace_graph(model, inputs, optim, pef="out/app.pef")   # load the PEF, check it fits
    loss, logits = samba.session.run(input_tensors=[x, y], output_tensors=outputs,
                                     section_types=["fwd", "bckwd", "opt"])
    samba.session.to_cpu(model); print(samba.session.report())

A *section* is a piece of the compiled program that runs as one spatial pipeline on the RDU; SambaFlow
groups them by type: ``fwd`` (forward), ``bckwd`` (backward) and ``opt`` (the optimizer step). Running
only ``["fwd"]`` is inference (or validation on a training PEF). Every run is an :class:`ak.Session`
step on the artifact's program: real PyTorch numerics on this CPU, the sections' time modelled.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit.compiler.program import CompiledProgram, Parallel
from accelkit.facades.samba import pef as pef_file
from accelkit.facades.samba.optim import as_optimizer, optimizer_name
from accelkit.facades.samba.oracle import OracleCheck, reference_step
from accelkit.facades.samba.tensor import SambaError, SambaTensor, for_cpu, named, plain, require_converted
from accelkit.hardware.spec import fmt_sig
from accelkit.runtime import facade_log
from accelkit.runtime.session import SECTIONS, Session, SessionReport
from accelkit.workflow.compiling import compile

TARGET = "sn40l"  # SambaNova's current RDU in accelkit's catalog
MAPPINGS = (None, "section", "spatial")


class Placed(nn.Module):
    """A model traced with ``None`` among its inputs (generative_nlp traces GPT-2 with ``(input_ids, None, None,
    None, position_ids, ..., labels)``), presented to the compiler and the session with its tensors only: each
    call puts them back in their places, ``None`` in the others, as the PEF's named inputs are bound."""

    def __init__(self, model: nn.Module, slots: tuple[bool, ...]) -> None:
        super().__init__()
        self.model = model
        self.slots = slots  # True where the traced inputs held a tensor

    def forward(self, *tensors: Any) -> Any:
        given = iter(tensors)
        return self.model(*(next(given) if filled else None for filled in self.slots))


def placed(model: nn.Module, inputs: Sequence[Any]) -> tuple[nn.Module, tuple[Any, ...]]:
    """The module the compiler and the session run, and the traced inputs that are tensors."""
    inputs = tuple(inputs)
    tensors = tuple(t for t in inputs if t is not None)
    if len(tensors) == len(inputs):
        return model, inputs
    return Placed(model, tuple(t is not None for t in inputs)), tensors


def seeded_loss(first_output: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """The scalar whose backward pass gives ``first_output`` the gradient ``grad`` (an app-set ``sn_grad``)."""
    return (first_output * grad.reshape(first_output.shape).to(first_output.dtype)).sum()


@dataclass
class Traced:
    """What ``utils.trace_graph`` set up: the model, its session on the PEF and the traced outputs."""

    model: nn.Module
    runs: nn.Module  # what the session runs: the model, or :class:`Placed` around it
    session: Session  # Session.from_program(model, pef): the PEF times every step
    info: pef_file.AppInfo
    outputs: tuple[SambaTensor, ...]
    pef: str
    oracle: OracleCheck | None


def precision_of(model: nn.Module, inputs: Sequence[Any]) -> str:
    """bf16 when the model or a floating input is bfloat16 (the app chose it), else fp32."""
    dtypes = {p.dtype for p in model.parameters()} | {t.dtype for t in inputs
                                                       if isinstance(t, torch.Tensor) and t.is_floating_point()}
    return "bf16" if torch.bfloat16 in dtypes else "fp32"


def _sections(section_types: Sequence[str] | None, training: bool) -> tuple[str, ...]:
    """The sections to run, lower case (SambaFlow apps write ``FWD`` / ``fwd``). ``gradnorm`` (generative_nlp's
    ``GRADNORM``) is the gradient-norm clipping before ``opt``: the optimizers' ``max_grad_norm`` does it."""
    if section_types is None:
        return SECTIONS if training else ("fwd",)
    if isinstance(section_types, str):
        section_types = [section_types]
    secs = tuple(str(s).lower() for s in section_types)
    bad = [s for s in secs if s not in (*SECTIONS, "gradnorm")]
    if bad:
        raise SambaError(f"unknown section type(s) {bad}", fix=f"use a subset of {[*SECTIONS, 'gradnorm']}")
    if "gradnorm" in secs and "opt" not in secs:
        raise SambaError("the GRADNORM section clips gradients for the OPT section, which is not run",
                         fix="run section_types=['FWD', 'BCKWD', 'GRADNORM', 'OPT']")
    return tuple(s for s in secs if s != "gradnorm")


def log_info(text: str) -> None:
    """Print ``text`` as SambaFlow prints its log lines (``[info    ] ...``), unless the app's ``--log-level``
    is above info (the tutorials' ``--log-level=error`` keeps them quiet, as on the real machine)."""
    level = getattr(session.app_args, "log_level", "info") or "info"
    if level in ("debug", "info"):
        print(f"[info    ] {text}")


def runtime_session_lines(pef: str | Path) -> None:
    """The two lines SambaFlow's runtime prints when a run opens its PEF (``sn_create_session: PEF File: ...`` and
    ``Log ID initialized to: ...``), in its format. The log they name is a real file, written beside the PEF: one
    line saying the session ran on accelkit's simulated RDU (the real runtime logs under /var/log/sambaflow)."""
    import datetime
    import getpass
    import os

    pid = os.getpid()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "user"
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    log = Path(pef).resolve().parent / "sn.log"
    try:
        with log.open("a", encoding="utf-8") as f:
            f.write(f"{stamp} : [INFO][LIB][{pid}]: sn_create_session: PEF File: {pef} (accelkit: simulated "
                    f"{TARGET} RDU; times in this run's report are MODELLED)\n")
    except OSError:
        log = Path(os.devnull)
    print(f"{stamp} : [INFO][LIB][{pid}]: sn_create_session: PEF File: {pef}")
    print(f"Log ID initialized to: [{user}][python][{pid}] at {log}")


class SambaSession:
    """The module-level ``samba.session`` object (the counterpart of ``sambaflow.samba.session``)."""

    def __init__(self) -> None:
        self.app_args: argparse.Namespace | None = None  # set by utils.parse_app_args
        self.traced: Traced | None = None

    def reset(self) -> None:
        """Forget the app's command line and traced PEF (before each vendor script the launcher runs)."""
        self.app_args, self.traced = None, None

    # ---- compile --------------------------------------------------------------------------------
    def compile(self, model: nn.Module, inputs: Sequence[Any], optim: Any = None, *,
                name: str | None = None, init_output_grads: bool | None = None, pef: str | None = None,
                app_dir: str | None = None,
                config_dict: dict[str, Any] | None = None, pef_metadata: Any = None, micro_batch: int | None = None,
                fusion: str | None = None, chips: int | None = None, data_parallel: bool | None = None,
                squeeze_bs_dim: bool = False, verbose: bool = True) -> CompiledProgram:
        """Compile ``model`` for the RDU and write the PEF-like artifact; prints a short summary.

        An optimizer makes it a training program (fwd, bckwd and opt sections); its loss output's gradient
        is seeded with 1 (the start of the backward pass), which is ``init_output_grads``' default for a
        training compile (hello_world/logreg.py compiles for training without passing it); an explicit
        ``init_output_grads=False`` is refused. ``pef`` defaults to ``out/<name>/<name>.pef`` under ``app_dir`` (else the working
        directory). ``micro_batch``, ``fusion`` (``"o0"``/``"o1"``), ``chips`` and ``data_parallel``
        default to the app's command line (``-mb``, ``--o0``/``--o1``, ``-ws``, ``--data-parallel``; ``-p`` for the
        PEF, relative to the working directory), or to
        ``config_dict`` (SambaFlow apps pass ``vars(args)``). ``pef_metadata`` is accepted and ignored.
        ``squeeze_bs_dim`` (lenet/lenet.py passes it) changes how the RDU lays out the batch axis, not the
        values: accepted and recorded. ``name`` (the app's name in the PEF) defaults to the command line's
        ``--pef-name``, else the model's class name (generative_nlp's inference app passes none).
        """
        if name is None:
            name = getattr(self.app_args, "pef_name", None) or (config_dict or {}).get("pef_name") \
                or type(model).__name__
        if squeeze_bs_dim:
            facade_log.accept("SambaFlow", "session.compile(squeeze_bs_dim=True)",
                              "lets the RDU compiler drop the batch axis from on-chip tensor layouts; the values are "
                              "the same, and the simulated layout is the compiler's own")
        require_converted(model, "session.compile")
        runs, inputs = placed(model, inputs)
        ports = pef_file.ports(inputs)
        optim = as_optimizer(optim)
        training = optim is not None
        if init_output_grads is None:
            init_output_grads = training
        if training and not init_output_grads:
            raise SambaError("a training compile (optim given) must initialise the loss output's gradient",
                             fix="pass init_output_grads=True (SambaFlow apps pass init_output_grads=not "
                                 "args.inference); an app that seeds the gradient itself sets traced_outputs[0].sn_grad "
                                 "after utils.trace_graph")
        args = argparse.Namespace(**config_dict) if config_dict is not None else self.app_args
        micro = micro_batch if micro_batch is not None else getattr(args, "micro_batch_size", None)
        fusion = fusion or getattr(args, "fusion", None) or "o1"
        chips = chips or getattr(args, "world_size", None) or 1
        dp = data_parallel if data_parallel is not None else bool(getattr(args, "data_parallel", False))
        batches = {t.shape[t.batch_dim] for t in inputs if isinstance(t, SambaTensor) and t.batch_dim is not None}
        if len(batches) > 1:
            raise SambaError(f"the inputs disagree on the batch size: {sorted(batches)}",
                             fix="give every input with batch_dim the same number of samples")
        batch = batches.pop() if batches else None
        prog = compile(runs, tuple(for_cpu(t) for t in inputs), target=TARGET, training=training,
                       precision=precision_of(model, inputs), batch_size=batch,
                       micro_batch=micro if training else None, fusion=fusion, chips=chips,
                       parallel=Parallel(data=chips) if dp else None)
        if training and not prog.graph.outputs:
            raise SambaError(f"{type(model).__name__}.forward must return the loss first for a training compile: "
                             "the backward pass starts from that output",
                             fix="compute the loss inside forward and return `loss, outputs`")
        pef_name = getattr(args, "pef_name", None) or name
        folder = getattr(args, "output_folder", None) or str(Path(app_dir or ".") / "out")
        path = pef or getattr(args, "pef", None) or str(Path(folder) / pef_name / f"{pef_name}.pef")
        if verbose:
            log_info(f"Compiling {type(model).__name__} as {pef_name!r} for the simulated {TARGET} RDU "
                     f"({'training' if training else 'inference'}, accelkit)")
        prog.save(path)
        pef_file.write(path, pef_file.AppInfo(
            name=name, inputs=ports, training=training, optimizer=optimizer_name(optim) if optim is not None else None,
            init_output_grads=init_output_grads, manifest_checksum=""))
        if verbose:
            summary = _compile_summary(name, prog, optim, path)
            print(summary)
            logs = Path(path).resolve().parent
            try:
                (logs / "compile.log").write_text(summary + "\n", encoding="utf-8")
            except OSError:
                pass
            log_info("Compilation succeeded for partition_1_1 (accelkit maps the whole graph as one partition)")
            log_info(f"Logs are generated in {logs}")
            log_info(f"PEF file {Path(path).resolve()} created")
        return prog

    # ---- trace (called by utils.trace_graph) ------------------------------------------------------
    def trace(self, model: nn.Module, inputs: Sequence[Any], optim: Any, pef: str,
              mapping: str | None = None, init_output_grads: bool | None = None) -> tuple[SambaTensor, ...]:
        from accelkit.compiler.artifact import load

        require_converted(model, "trace_graph")
        runs, inputs = placed(model, inputs)
        optim = as_optimizer(optim)
        if mapping not in MAPPINGS:
            raise SambaError(f"mapping={mapping!r} is not a SambaFlow mapping", fix="use 'section' or 'spatial'")
        if pef is None:
            raise SambaError("trace_graph needs the PEF to run against", fix="pass pef=args.pef (-p on the command line)")
        prog = load(pef)
        info = pef_file.read(pef)
        pef_file.check_model(prog, runs, pef)
        pef_file.check_inputs(info, inputs, pef)
        if info.training and optim is not None and init_output_grads is False:
            raise SambaError("trace_graph(init_output_grads=False) on a training PEF: the backward pass starts from "
                             "the loss output's gradient", fix="pass init_output_grads=True (or leave it out)")
        # a training PEF traced without an optimizer runs its fwd sections only (inference on a training PEF,
        # as SambaFlow allows): session.run refuses bckwd / opt on it
        if not info.training and optim is not None:
            raise SambaError(f"{pef} was compiled for inference: it has no bckwd or opt sections",
                             fix="compile again without --inference to train, or trace with optim=None")
        if precision_of(model, inputs) != prog.precision:
            raise SambaError(f"{pef} was compiled in {prog.precision}, the model is now "
                             f"{precision_of(model, inputs)}", fix=f"recompile: python app.py compile ... -p {pef}")
        outputs = []
        names = prog.graph.output_names or [f"output_{i}" for i in range(len(prog.graph.outputs))]
        for i, meta in enumerate(prog.graph.outputs):
            t = named(torch.zeros(meta.shape, dtype=getattr(torch, meta.dtype)), names[i] if i < len(names)
                      else f"output_{i}", 0 if meta.shape else None)
            t._sn_output_index = i  # type: ignore[attr-defined]
            if info.training and info.init_output_grads and i == 0 and not meta.shape:
                t.sn_grad = torch.ones(())  # the loss's gradient d loss / d loss: where the backward pass starts
            # a first output with a shape (generative_nlp's per-token loss) starts the backward pass from the
            # gradient the app sets: traced_outputs[0].sn_grad = ...
            outputs.append(t)
        command = getattr(self.app_args, "command", None)
        runtime_session_lines(pef)
        self.traced = Traced(model=model, runs=runs, session=Session.from_program(runs, prog, optim, loss_fn=seeded_loss),
                             info=info, outputs=tuple(outputs), pef=str(pef),
                             oracle=OracleCheck(prog.precision) if command == "test" else None)
        if mapping is not None:
            facade_log.accept("SambaFlow", f"trace_graph(mapping={mapping!r})",
                              "chooses how sections are laid out on the RDU's tiles; the simulated RDU's placement "
                              "is the compiler's own")
        facade_log.register_run(f"SambaFlow app on {pef}", self.report)
        setattr(model, "output_tensors", tuple(outputs))  # noqa: B010 - SambaFlow apps read model.output_tensors
        return tuple(outputs)

    def _require_traced(self, step: str) -> Traced:
        if self.traced is None:
            raise SambaError(f"session.{step} before the graph was traced",
                             fix="call utils.trace_graph(model, inputs, optim, pef=...) first")
        return self.traced

    # ---- run ------------------------------------------------------------------------------------
    def run(self, input_tensors: Sequence[Any], output_tensors: Sequence[Any] | None = None,
            section_types: Sequence[str] | None = None, hyperparam_dict: dict[str, float] | None = None,
            data_parallel: bool = False, reduce_on_rdu: bool = False) -> tuple[SambaTensor, ...]:
        """Run the traced program's sections on one batch; returns the outputs in ``output_tensors``' order.

        ``section_types`` (a subset of ``fwd``, ``bckwd``, ``opt``) defaults to all of them on a training
        PEF and to ``fwd`` on an inference one. ``hyperparam_dict`` (e.g. ``{"lr": 0.01}``) sets the
        optimizer's hyperparameters for this step and later ones, as SambaFlow's does. ``data_parallel`` and
        ``reduce_on_rdu`` are accepted for compatibility: here data parallelism is fixed at compile time
        (``-ws N --data-parallel``) and the gradient reduction is part of the modelled clock.
        """
        tr = self._require_traced("run")
        trains = tr.info.training and tr.session.optimizer is not None
        secs = _sections(section_types, trains)
        if tr.info.training and not trains and set(secs) - {"fwd"}:
            raise SambaError(f"{tr.pef} was traced without an optimizer, so it runs its fwd sections only, "
                             f"not {list(secs)}", fix="pass the optimizer to utils.trace_graph to train")
        for flag, on, why in (("data_parallel", data_parallel, "data parallelism is fixed when the PEF is compiled "
                               "(-ws N --data-parallel); the run uses what the PEF holds"),
                              ("reduce_on_rdu", reduce_on_rdu, "where gradients are reduced only moves time between "
                               "host and RDU; the modelled clock includes the reduction")):
            if on:
                facade_log.accept("SambaFlow", f"session.run({flag}=True)", why)
        if not tr.info.training and set(secs) - {"fwd"}:
            raise SambaError(f"{tr.pef} was compiled for inference and has only fwd sections, not {list(secs)}",
                             fix="run section_types=['fwd'], or compile without --inference to train")
        inputs = tuple(input_tensors)
        self._check_run_inputs(tr, inputs)
        if hyperparam_dict:
            self._set_hyperparameters(tr, hyperparam_dict)
        args = tuple(for_cpu(t) for t in inputs)
        grad = self._output_grad(tr, secs)
        ref = reference_step(tr.runs, tr.session.optimizer, args, secs, grad) if tr.oracle is not None else None
        with facade_log.vendor_call("samba.session.run(...)"):
            step = tr.session.run(*args, labels=grad, sections=secs)
        leaves = [t.detach() for t in torch.utils._pytree.tree_flatten(step.outputs)[0]
                  if isinstance(t, torch.Tensor)]
        if ref is not None and tr.oracle is not None:
            tr.oracle.add(leaves, ref[0], tr.runs, ref[1])
        wanted = tr.outputs if output_tensors is None else tuple(output_tensors)
        out = []
        for t in wanted:
            i = getattr(t, "_sn_output_index", None)
            if i is None or i >= len(leaves):
                raise SambaError(f"{getattr(t, 'sn_name', None) or 'a tensor'} is not an output of the traced graph",
                                 fix="pass output_tensors=the list utils.trace_graph returned")
            out.append(named(leaves[i], t.sn_name, t.batch_dim))
        return tuple(out)

    @staticmethod
    def _set_hyperparameters(tr: Traced, hyperparam_dict: dict[str, float]) -> None:
        """``hyperparam_dict``: optimizer hyperparameters (``lr``, ...) for every optimizer's groups, and ``p``, the
        dropout probability of every dropout layer (generative_nlp runs evaluation with ``{"lr": 0, "p": 0}``)."""
        if "p" in hyperparam_dict:
            for m in tr.model.modules():
                if isinstance(m, nn.modules.dropout._DropoutNd):
                    m.p = float(hyperparam_dict["p"])
        rest = {k: v for k, v in hyperparam_dict.items() if k != "p"}
        opt = tr.session.optimizer
        if rest and opt is None:
            raise SambaError(f"hyperparam_dict {sorted(rest)} needs a training PEF with an optimizer",
                             fix="drop them from hyperparam_dict")
        for group in opt.param_groups if opt is not None else ():
            for k, v in rest.items():
                if k not in group:
                    raise SambaError(f"{type(opt).__name__} has no hyperparameter {k!r}",
                                     fix=f"use some of {sorted(k for k in group if k != 'params')} (or 'p', dropout)")
                group[k] = v

    @staticmethod
    def _output_grad(tr: Traced, secs: tuple[str, ...]) -> torch.Tensor | None:
        """The gradient the backward pass starts from when the app set one (``outputs[0].sn_grad``), else None
        (the scalar loss's own gradient, 1)."""
        if "bckwd" not in secs or not tr.outputs:
            return None
        first = tr.outputs[0]
        grad = getattr(first, "sn_grad", None)
        if grad is None:
            raise SambaError(f"the PEF's first output {first.sn_name!r} has shape {list(first.shape)}, so the backward "
                             "pass needs its gradient from the app", fix="set traced_outputs[0].sn_grad to a tensor of "
                             f"{first.numel()} values (e.g. the per-token loss weights) before session.run")
        grad = plain(torch.as_tensor(grad))
        if grad.dim() == 0 and float(grad) == 1.0:
            return None
        if grad.numel() != first.numel():
            raise SambaError(f"outputs[0].sn_grad has {grad.numel()} values, the output {first.sn_name!r} "
                             f"{first.numel()}", fix=f"give one gradient value per element of shape {list(first.shape)}")
        if tr.session.micro_batch:
            raise SambaError("an app-set output gradient with micro-batches (-mb): each micro-batch would need its "
                             "share of it", fix="compile without -mb")
        return grad.detach()

    def _check_run_inputs(self, tr: Traced, inputs: tuple[Any, ...]) -> None:
        expected = tr.info.inputs
        if len(inputs) != len(expected):
            raise SambaError(f"{tr.pef} takes {len(expected)} inputs ({tr.info.input_names}), got {len(inputs)}",
                             fix="pass input_tensors in the order the app compiled them")
        for port, t in zip(expected, inputs, strict=True):
            if not isinstance(t, torch.Tensor):
                raise SambaError(f"input {port.name!r} is a {type(t).__name__}, not a tensor", fix="pass tensors")
            name = getattr(t, "sn_name", None)
            if name is not None and name != port.name:
                raise SambaError(f"input {name!r} arrived where the PEF expects {port.name!r}",
                                 fix=f"pass input_tensors in the compiled order {tr.info.input_names}")
            if tuple(t.shape) != port.shape:
                raise SambaError(
                    f"input {port.name!r} has shape {list(t.shape)}; the PEF was compiled for {list(port.shape)} "
                    "(an RDU program has static shapes)",
                    fix="drop the last partial batch (DataLoader(..., drop_last=True)) or compile with -b "
                        f"{t.shape[port.batch_dim] if port.batch_dim is not None else '<batch>'}")
            if pef_file.dtype_name(t.dtype) != port.dtype:
                raise SambaError(f"input {port.name!r} is {pef_file.dtype_name(t.dtype)}, the PEF expects {port.dtype}",
                                 fix=f"convert it: t.to(torch.{port.dtype})")

    # ---- after the loop -------------------------------------------------------------------------
    def to_cpu(self, model: nn.Module) -> None:
        """Copy the trained weights from the RDU back into ``model`` (``samba.session.to_cpu``).

        The simulated RDU trains the host model's own parameters, so there is nothing to copy; this only
        checks ``model`` is the one that was traced."""
        tr = self._require_traced("to_cpu")
        if model is not tr.model:
            raise SambaError("to_cpu got a different model object than the one traced",
                             fix="pass the model given to utils.trace_graph")

    @property
    def simulated_time_s(self) -> float:
        """Modelled RDU time of every section run so far (not measured)."""
        return self.traced.session.simulated_time_s if self.traced else 0.0

    @property
    def program(self) -> CompiledProgram:
        """The traced PEF's compiled program (kernels, memory plan, placement, modelled report)."""
        return self._require_traced("program").session.require_compiled("the traced PEF's program")

    def report(self) -> SessionReport:
        """Modelled time and throughput of the runs so far (labelled MODELLED), the host's measured time,
        and, under the ``test`` / ``measure-performance`` subcommands, the oracle check or the latency."""
        tr = self._require_traced("report")
        rep = tr.session.report()
        if tr.oracle is not None:
            rep.notes.append(str(tr.oracle))
        if getattr(self.app_args, "command", None) == "measure-performance" and rep.steps:
            from accelkit.sim.report import fmt_s

            prog = tr.session.require_compiled("measure-performance")
            rep.notes.append(
                f"measure-performance (MODELLED on {prog.target}, not measured): latency "
                f"{fmt_s(rep.simulated_time_s / rep.steps)} per batch of {prog.batch_size}, "
                f"throughput {fmt_sig(rep.simulated_throughput)} samples/s")
        return rep


def _compile_summary(name: str, prog: CompiledProgram, optim: Any, path: str) -> str:
    from accelkit.sim.report import fmt_s

    what = f"training ({optimizer_name(optim)})" if prog.training else "inference"
    micro = f" in micro-batches of {prog.micro_batch}" if prog.micro_batch != prog.batch_size else ""
    secs = ", ".join(f"{k} {fmt_s(v)}" for k, v in prog.report.sections_s.items() if v)
    return "\n".join([
        f"[samba] compiled {name!r} for {prog.chips} x {prog.target}: {what}, {prog.precision}, "
        f"batch {prog.batch_size}{micro}",
        f"[samba]   {len(prog.kernels)} kernels ({prog.fusion_level}), mode {prog.mode!r}; "
        f"step {fmt_s(prog.report.step_time_s)} MODELLED, not measured ({secs})",
        f"[samba]   PEF-like artifact: {path}/ (manifest.json, weights.safetensors, {pef_file.APP_FILE})",
    ])


session = SambaSession()
facade_log.reset_with_each_run(session.reset)
