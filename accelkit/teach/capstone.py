"""The capstone (notebook 09): port *your* model, step by step, with a check after each step.

    cap = Capstone.load("mymodels:make_model")     # or a zoo name, "zoo:NAME", an nn.Module, a class
    prof = cap.profile()                          # 1. MEASURED on this host
    reports = cap.check(["a100", "sn40l", "tsp"]) # 2. what stops it on each target
    ported = cap.port("tsp")                      # 3. rewrites, verified against your model
    programs = cap.compile()                      # 4. on the three families (ported model where needed)
    run = cap.train("sn40l", steps=5)             # 5. a few real training steps, clock MODELLED
    cap.compare()                                 # 6. the targets side by side

Every step returns the plain value of the accelkit call it wraps, and records ``Line``s (PASS/FAIL with a
hint) in ``cap.checks``; ``cap.summary()`` lists them. The logic is here so the notebook stays thin.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit.teach.exercises import Line


def load_model(model: Any, inputs: Any = None, *, seed: int = 0, path: str | Path | None = None
               ) -> tuple[nn.Module, tuple[Any, ...]]:
    """The learner's model and example inputs from ``model``: ``"module:factory"``, ``"zoo:NAME"`` or a zoo
    name, an ``nn.Module``, or an ``nn.Module`` class (built with no arguments). ``inputs`` (a tensor or tuple)
    replaces the factory's; ``path`` is put on ``sys.path`` first so ``module`` imports from there."""
    from accelkit import zoo
    from accelkit.runner import UsageError
    from accelkit.runner import load_model as load_spec

    folder = str(Path(path).resolve()) if path is not None else None
    if folder is not None and folder not in sys.path:
        sys.path.insert(0, folder)
        importlib.invalidate_caches()
    torch.manual_seed(seed)
    given: Any = None
    if isinstance(model, str):
        spec = f"zoo:{model}" if ":" not in model and model in zoo.names() else model
        loaded = load_spec(spec, seed=seed)
        module, given = loaded.model, loaded.example_inputs
    elif isinstance(model, type) and issubclass(model, nn.Module):
        module = model()
    elif isinstance(model, nn.Module):
        module = model
    else:
        raise UsageError(f"cannot make a model from a {type(model).__name__}",
                         fix="give 'module:factory', a zoo name, an nn.Module or an nn.Module class")
    if inputs is not None:
        given = inputs
    if given is None:
        raise UsageError(f"{type(module).__name__} came without example inputs",
                         fix="set `inputs` in the parameters cell, e.g. (torch.randn(4, 16),)")
    return module, (given,) if isinstance(given, torch.Tensor) else tuple(given)


def default_loss(outputs: Any, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the last dimension (a classifier or a tagger); the outputs' first tensor is used."""
    logits = outputs if isinstance(outputs, torch.Tensor) else next(t for t in outputs if isinstance(t, torch.Tensor))
    return nn.functional.cross_entropy(logits.flatten(0, -2).float(), labels.flatten())


def default_labels(model: nn.Module, inputs: tuple[Any, ...], seed: int = 0) -> torch.Tensor:
    """Random class labels shaped like the model's output without its last dimension (fixed by ``seed``)."""
    with torch.no_grad():
        out = model(*inputs)
    logits = out if isinstance(out, torch.Tensor) else next(t for t in out if isinstance(t, torch.Tensor))
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, logits.shape[-1], logits.shape[:-1], generator=g)


@dataclass
class TrainRun:
    target: str
    losses: list[float]
    report: Any  # SessionReport: MODELLED time beside MEASURED host time

    def __str__(self) -> str:
        return (f"{len(self.losses)} steps on {self.target}: loss {self.losses[0]:.4f} -> {self.losses[-1]:.4f}\n"
                f"{self.report}")


@dataclass
class Capstone:
    model: nn.Module
    inputs: tuple[Any, ...]
    precision: str = "bf16"
    targets: list[str] = field(default_factory=list)
    checks: list[tuple[str, Line]] = field(default_factory=list)
    reports: dict[str, Any] = field(default_factory=dict)
    ported: dict[str, Any] = field(default_factory=dict)
    programs: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, model: Any, inputs: Any = None, *, seed: int = 0, path: str | Path | None = None,
             precision: str = "bf16") -> Capstone:
        module, example = load_model(model, inputs, seed=seed, path=path)
        return cls(module.eval(), example, precision)

    @property
    def name(self) -> str:
        return type(self.model).__name__

    def _record(self, step: str, lines: list[Line]) -> bool:
        for line in lines:
            self.checks.append((step, line))
            print(f"{step}: {line}")
        return all(line.ok for line in lines)

    # 1 ------------------------------------------------------------------------------------------
    def profile(self, runs: int = 3) -> Any:
        from accelkit.profiler import profile

        prof = profile(self.model, self.inputs, runs=runs)
        self._record("profile", [
            Line(prof.total_time_s > 0, f"MEASURED {prof.total_time_s * 1e3:.3g} ms per forward on this host"),
            Line(prof.total_flops > 0, f"{prof.total_flops:,} FLOPs counted by PyTorch's flop counter",
                 "no matmul-type op was counted: is the model all elementwise?"),
        ])
        return prof

    # 2 ------------------------------------------------------------------------------------------
    def check(self, targets: list[str]) -> dict[str, Any]:
        from accelkit.porting import check

        self.targets = list(targets)
        self.reports = {t: check(self.model, self.inputs, t) for t in self.targets}
        for t, r in self.reports.items():
            print(f"  {t:<6} {r.headline()}")
            for f in r.errors:
                print(f"         {f.summary()}")
        need = sum(not r.ok for r in self.reports.values())
        suggested = sum(r.ok and bool(r.recipes()) for r in self.reports.values())
        self._record("check", [Line(True, f"checked on {len(self.reports)} targets; {need} need a port, "
                                          f"{suggested} more have a rewrite suggested by a warning")])
        return self.reports

    # 3 ------------------------------------------------------------------------------------------
    def port(self, target: str) -> Any:
        from accelkit.porting import port

        result = port(self.model, self.inputs, target)
        self.ported[target] = result
        self._record("port", [
            Line(result.verified, f"{target}: {len(result.changes)} rewrite(s) "
                                  f"({', '.join(result.recipes) or 'none needed'}), max abs error "
                                  f"{result.max_abs_error:.1e} within {result.tolerance}",
                 "port refused a rewrite: read result.notes, change the model by hand, then port again"),
            Line(result.report_after.ok, f"after the port: {result.report_after.headline()}",
                 "an error no recipe fixes is left: its `fix` column says what to change by hand"),
        ])
        return result

    def model_for(self, target: str) -> tuple[nn.Module, tuple[Any, ...]]:
        """The ported model and inputs for ``target`` if it was ported, else yours."""
        if target in self.ported:
            return self.ported[target].model, tuple(self.ported[target].example_inputs)
        return self.model, self.inputs

    # 4 ------------------------------------------------------------------------------------------
    def compile(self, targets: list[str] | None = None, *, training: bool = False) -> dict[str, Any]:
        from accelkit import compile as ak_compile
        from accelkit import hardware
        from accelkit.compiler.compile_time import compile_time
        from accelkit.errors import AccelkitError

        targets = list(targets or self.targets)
        for t in targets:
            spec = hardware.get(t)
            precision = self.precision if self.precision in spec.peak_flops else spec.peak_16bit()[0]
            model, inputs = self.model_for(t)
            try:
                prog = ak_compile(model, inputs, target=t, precision=precision, training=training)
            except AccelkitError as err:
                self.errors[t] = err.message
                continue
            self.programs[t] = prog
            print(f"  {t:<6} {spec.family:<24} mode {prog.mode!r}, {len(prog.kernels)} kernels, "
                  f"step {prog.report.step_time_s * 1e3:.3g} ms (MODELLED)")
            print(f"         real toolchain: {compile_time(prog)}")
        families = {hardware.get(t).family for t in self.programs}
        self._record("compile", [
            Line(not self.errors, f"compiled on {len(self.programs)} of {len(targets)} targets"
                 + "".join(f"; {t}: {e.splitlines()[0]}" for t, e in self.errors.items()),
                 "port the model for that target first (cap.port(target)), or read the error's fix"),
            Line(len(families) >= 3, f"{len(families)} architecture families: {', '.join(sorted(families))}",
                 "pick targets of three different families"),
        ])
        return self.programs

    # 5 ------------------------------------------------------------------------------------------
    def train(self, target: str, steps: int = 5, lr: float = 1e-2, labels: torch.Tensor | None = None) -> TrainRun:
        from accelkit.runtime import Session

        model, inputs = self.model_for(target)
        model = model.train()
        labels = default_labels(model, inputs) if labels is None else labels
        session = Session(model, target=target, optimizer=torch.optim.Adam(model.parameters(), lr=lr),
                          loss_fn=default_loss, precision=self.precision)
        losses = []
        for _ in range(steps):
            step = session.run(*inputs, labels=labels)
            assert step.loss is not None  # a loss_fn and labels were given
            losses.append(float(step.loss))
        run = TrainRun(target, losses, session.report())
        model.eval()
        print(run)
        finite = all(torch.isfinite(torch.tensor(losses)))
        self._record("train", [
            Line(finite, f"{steps} real training steps, every loss finite", "lower lr, or check the loss"),
            Line(losses[-1] < losses[0], f"loss fell on the repeated batch: {losses[0]:.4f} -> {losses[-1]:.4f}",
                 "the loss should fall when one batch is repeated: raise lr or steps"),
        ])
        return run

    # 6 ------------------------------------------------------------------------------------------
    def compare(self) -> list[dict[str, Any]]:
        """One row per compiled target, fastest modelled step first."""
        rows = []
        for t, prog in self.programs.items():
            r = prog.report
            rows.append({"target": t, "family": r.family, "mode": r.mode, "precision": r.precision,
                         "step_ms": r.step_time_s * 1e3, "samples_per_s": r.throughput,
                         "compute_util": r.utilization.get("compute", 0.0), "ported": t in self.ported})
        rows.sort(key=lambda row: row["step_ms"])
        for row in rows:
            print(f"  {row['target']:<6} {row['family']:<24} {row['step_ms']:>9.3g} ms  "
                  f"{row['samples_per_s']:>12,.0f} samples/s  compute {row['compute_util']:.0%}"
                  f"{'  (ported)' if row['ported'] else ''}   MODELLED")
        self._record("compare", [Line(len(rows) >= 2, f"{len(rows)} targets compared; fastest (modelled): "
                                                     f"{rows[0]['target'] if rows else '-'}")])
        return rows

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(line.ok for _, line in self.checks)

    def summary(self) -> str:
        failed = [(s, line) for s, line in self.checks if not line.ok]
        head = (f"CAPSTONE {self.name}: all {len(self.checks)} checks passed" if self.passed
                else f"CAPSTONE {self.name}: {len(failed)} of {len(self.checks)} checks failed")
        return "\n".join([head, *(f"  {s}: {line}" for s, line in failed)])


__all__ = ["Capstone", "TrainRun", "default_labels", "default_loss", "load_model"]
