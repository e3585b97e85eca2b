"""WorkflowDashboard: the porting workflow as tabs, profile -> check -> port -> compile -> run, for one target.

    from accelkit.widgets import WorkflowDashboard
    WorkflowDashboard(model, inputs, target="sn40l")     # the last line of a cell shows it

One tab per step of the workflow in :mod:`accelkit`:

    profile   ``ak.profile``: MEASURED on this host, once (it does not depend on the target)
    check     ``ak.check``: what stops the model on the target, where, and the fix (an HTML table)
    port      ``ak.port``: the rewrites, and the largest output error against the recipes' tolerance
    compile   ``ak.compile``: summary, placement map and memory plan
    run       a few ``ak.Session`` inference steps: real outputs (checked against plain PyTorch fp32),
              the MODELLED step time and its timeline

Work is lazy: a step runs the first time its tab is opened for a target (the profile runs when the
dashboard is built) and its result is kept per target, so going back to a target is instant.
Changing the target in the dropdown runs the open tab again for the new one; the other tabs run
when opened. Compile and run take the model the way the check leaves it: as given when the check
finds no error, else as ``ak.port`` rewrote it (the port tab shows how), which is the order a
real port follows. Precision is bf16 where the chip has it, else fp16.

A step that fails (a model that cannot be captured, a port beyond its tolerance, a model that does
not fit) shows its error, with where and the fix, in red in its tab; nothing is raised into the
notebook. ``dashboard.summary_text(step)`` is a tab's summary as plain text, for tests.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go
import torch
from torch import nn

from accelkit import hardware
from accelkit.compiler import CompiledProgram, CompileError
from accelkit.errors import AccelkitError
from accelkit.families import REGISTRY, model_for
from accelkit.graph.values import compare
from accelkit.hardware import fmt_bytes
from accelkit.porting import CompatibilityReport, PortResult, check, port
from accelkit.porting.check import split_inputs
from accelkit.profiler import HostProfile, profile
from accelkit.profiler.figures import op_time_bars
from accelkit.runtime import Session, StepResult
from accelkit.runtime.session import TOLERANCE
from accelkit.sim.report import fmt_s
from accelkit.viz.perf import timeline
from accelkit.viz.placement import memory_plan_bars, placement_map
from accelkit.widgets.explorer import (
    DEFAULT_HEIGHT,
    REDRAW_AFTER_DISPLAY_S,
    _call_soon,
    default_precision,
    program_summary,
    replace_figure,
    targets,
)
from accelkit.workflow.compiling import compile as ak_compile

STEPS = ("profile", "check", "port", "compile", "run")
"""The tabs, in workflow order."""

RUN_STEPS = 3  # inference steps the run tab takes
PORT_TRIALS = 1  # fresh random input sets ak.port checks besides the example (its default, 3, is slower)
LISTED = 6  # findings or changes a summary lists before "... and N more"
ERROR_COLOR = "#c00000"


# ---- shared by the dashboard and CompareTargets ----------------------------------------------------
def fit(fig: go.Figure, width: int) -> go.Figure:
    """``fig`` with a width and height (the front end cannot unset a size, see ``replace_figure``)
    and the smaller title font the narrow widgets need. Changes ``fig`` and returns it."""
    if fig.layout.width is None:
        fig.update_layout(width=width)
    if fig.layout.height is None:
        fig.update_layout(height=DEFAULT_HEIGHT)
    if fig.layout.title.font.size is None:
        fig.update_layout(title_font_size=14)
    return fig


def summary_html(lines: list[str], *, error: bool = False, footer: str = "") -> str:
    """Summary lines as the widgets show them: preformatted, small, red for an error."""
    color = ERROR_COLOR if error else "inherit"
    style = f"white-space: pre-wrap; margin: 0; font-size: 11px; line-height: 1.35; color: {color}"
    foot = f'<div style="color: #888; font-size: 11px">{html.escape(footer)}</div>' if footer else ""
    return f'<pre style="{style}">{html.escape(chr(10).join(lines))}</pre>{foot}'


def failure_lines(what: str, error: Exception) -> list[str]:
    """An error as a summary shows it: what failed, the error's type, then its message, where and fix."""
    return [f"{what} failed", f"{type(error).__name__}:", *str(error).splitlines()]


def summary_box() -> widgets.HTML:
    """The text column beside a figure; it wraps below the figure when the output area is narrow."""
    box = widgets.HTML(layout=widgets.Layout(flex="1 1 280px", min_width="280px", overflow="auto",
                                             padding="0 0 0 8px"))
    box.add_class("ak-summary")
    return box


def _first_tensor(x: Any) -> torch.Tensor | None:
    leaves = torch.utils._pytree.tree_flatten(x)[0]
    return next((t for t in leaves if isinstance(t, torch.Tensor)), None)


def known_stack(name: Any, given: Any) -> None:
    """Refuse a ``stack=`` given to a widget that is not a name, or names no family's stack (a name only some
    families have is kept for them; the others run their default)."""
    every = sorted({n for fam in REGISTRY.values() for n in fam.stack_names})
    if name is not None and (not isinstance(name, str) or name not in every):
        raise CompileError(f"stack={given!r} names no software stack",
                           fix=f"use one of {every} (each family offers its own: ak.families.model_for(family)"
                               ".stack_names), or a mapping of family or target names to them, or leave it out")


def _key(step: str, target: str) -> tuple[str, str | None]:
    """Where a step's outcome is kept: per target, except the profile (measured once, on the host)."""
    return step, None if step == "profile" else target


# ---- what a step leaves behind ------------------------------------------------------------------------
@dataclass(frozen=True)
class RunResult:
    """The run tab's steps: the session, each step's result, and the outputs checked against plain PyTorch."""

    session: Session
    steps: list[StepResult]
    max_rel_error: float  # max |output - fp32 reference| / max |reference|, first output tensor, last step
    tolerance: float  # the session's documented relative tolerance for its precision


@dataclass
class StepOutcome:
    """One step for one target (``target`` is None for the profile, which is measured on the host).

    ``value`` is what the workflow function returned (a HostProfile, CompatibilityReport,
    PortResult, CompiledProgram or :class:`RunResult`), ``None`` when the step failed and
    ``error`` holds why. ``seconds`` is how long the step took on this host (measured).
    """

    step: str
    target: str | None
    value: Any = None
    error: Exception | None = None
    lines: list[str] = field(default_factory=list)
    figures: list[go.Figure] = field(default_factory=list)
    table_html: str = ""
    seconds: float = 0.0

    @property
    def summary_text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class _Pane:
    """One tab's widgets: figures redrawn in place, the summary beside them, an HTML table below."""

    figures: list[go.FigureWidget]
    plots: widgets.VBox
    summary: widgets.HTML
    table: widgets.HTML
    box: widgets.VBox


class WorkflowDashboard:
    """The workflow's five steps as tabs for one model, with a target dropdown on top.

    ``dashboard.widget`` is the ipywidgets ``VBox`` (displaying the dashboard displays it);
    ``dashboard.tabs`` the ``Tab``; ``dashboard.figures[step]`` a tab's ``FigureWidget``\\ s, redrawn
    in place, ``dashboard.summaries[step]`` the ``HTML`` summary beside them and
    ``dashboard.tables[step]`` the ``HTML`` below (the check's and the port's tables).
    ``dashboard.set(target=..., step=...)`` changes the target and/or opens a tab (one redraw).
    ``dashboard.outcome(step)`` is the :class:`StepOutcome` for the current target and
    ``dashboard.summary_text(step)`` its summary as plain text; both run the step first if it has
    not run for this target.
    """

    def __init__(self, model: nn.Module, example_inputs: Any, *, target: str = "sn40l",
                 figure_width: int = 620, stack: str | None = None) -> None:
        known_stack(stack, stack)
        self.model = model
        self.stack = stack  # compile and run on this stack where the target's family has it
        self.example_inputs = example_inputs
        self.figure_width = figure_width
        names = targets()
        spec = hardware.get(target)  # UnknownNameError listing the catalog
        if spec.name not in names:
            raise AccelkitError(f"the dashboard does not offer target {target!r}", fix=f"use one of {names}")
        self._outcomes: dict[tuple[str, str | None], StepOutcome] = {}
        self._shown: dict[str, StepOutcome] = {}
        self._steps: dict[str, Callable[[StepOutcome, str], None]] = {
            "profile": self._profile, "check": self._check, "port": self._port,
            "compile": self._compile, "run": self._run}
        self.last_update_s = 0.0

        self.target_control = widgets.Dropdown(options=names, value=spec.name, description="target",
                                               style={"description_width": "48px"},
                                               layout=widgets.Layout(width="190px"))
        self.target_control.add_class("ak-target")
        self.status = widgets.HTML(layout=widgets.Layout(margin="0 0 0 12px"))
        figure_counts = {"profile": 1, "check": 0, "port": 0, "compile": 2, "run": 1}
        self._panes = {step: self._pane(figure_counts[step]) for step in STEPS}
        self.figures = {step: pane.figures for step, pane in self._panes.items()}
        self.summaries = {step: pane.summary for step, pane in self._panes.items()}
        self.tables = {step: pane.table for step, pane in self._panes.items()}
        self._quiet = False
        self.tabs = widgets.Tab(children=[self._panes[s].box for s in STEPS], titles=list(STEPS))
        self.widget = widgets.VBox([widgets.HBox([self.target_control, self.status]), self.tabs])
        self.widget.add_class("ak-workflow-dashboard")
        self.target_control.observe(self._on_change, names="value")
        self.tabs.observe(self._on_change, names="selected_index")
        self._render(self.step)

    # ---- public API ------------------------------------------------------------------------------
    @property
    def target(self) -> str:
        return str(self.target_control.value)

    @property
    def precision(self) -> str:
        """bf16 where the target has it, else fp16 (the explorer's default)."""
        return default_precision(hardware.get(self.target))

    def stack_for(self, target: str, *, session: bool = False) -> str:
        """The stack the compile tab (``session``: the run tab's ak.Session) uses on ``target``: ``stack=`` where
        the target's family has it, else the family's default for ``ak.compile`` (for a Session: what a
        training loop runs)."""
        family = model_for(hardware.get(target).family)
        return self.stack if self.stack in family.stack_names else family.stack(session=session)

    @property
    def step(self) -> str:
        """The open tab."""
        return STEPS[self.tabs.selected_index or 0]

    def set(self, *, target: str | None = None, step: str | None = None) -> WorkflowDashboard:
        """Change the target and/or open a tab; the open tab runs for the target if it has not yet."""
        if target is not None:
            spec = hardware.get(target)
            if spec.name not in self.target_control.options:
                raise AccelkitError(f"the dashboard does not offer target {target!r}",
                                    fix=f"use one of {list(self.target_control.options)}")
        if step is not None and step not in STEPS:
            raise ValueError(f"no step {step!r}; the dashboard has {list(STEPS)}")
        self._quiet = True  # both changes, then one draw
        try:
            if step is not None:
                self.tabs.selected_index = STEPS.index(step)
            if target is not None:
                self.target_control.value = hardware.get(target).name
        finally:
            self._quiet = False
        self._on_change({})
        return self

    def outcome(self, step: str) -> StepOutcome:
        """``step`` for the current target (the profile: for the host), run now if it has not run."""
        if step not in STEPS:
            raise ValueError(f"no step {step!r}; the dashboard has {list(STEPS)}")
        return self._outcome(step, self.target)

    def summary_text(self, step: str) -> str:
        """The summary ``step``'s tab shows for the current target, as plain text."""
        return self.outcome(step).summary_text

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
        # as in PlacementExplorer: plotly measures text wrongly in a view not yet on the page
        _call_soon(REDRAW_AFTER_DISPLAY_S, lambda: self._redraw(self.step))

    def __repr__(self) -> str:
        return f"WorkflowDashboard(target={self.target!r}, step={self.step!r})"

    # ---- reacting to the controls -------------------------------------------------------------------
    def _on_change(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        step = self.step
        self._render(step)
        # a tab opened for the first time is drawn while hidden; draw again once it is on the page
        _call_soon(REDRAW_AFTER_DISPLAY_S, lambda: self._redraw(step))

    def _redraw(self, step: str) -> None:
        pane, out = self._panes[step], self._shown.get(step)
        if out is not None:
            for widget, fig in zip(pane.figures, out.figures, strict=False):
                replace_figure(widget, fig)

    def _pane(self, n_figures: int) -> _Pane:
        figures = [go.FigureWidget() for _ in range(n_figures)]
        plots = widgets.VBox(figures, layout=widgets.Layout(flex="0 0 auto",
                                                            display=None if figures else "none"))
        summary = summary_box()
        summary.value = summary_html(["runs when this tab is opened"])
        table = widgets.HTML(layout=widgets.Layout(overflow="auto"))
        table.add_class("ak-table")
        row = widgets.HBox([plots, summary], layout=widgets.Layout(width="100%", flex_flow="row wrap"))
        return _Pane(figures, plots, summary, table, widgets.VBox([row, table]))

    def _render(self, step: str) -> None:
        """Show ``step``'s outcome for the current target in its tab (running it if needed)."""
        start = time.perf_counter()
        if _key(step, self.target) not in self._outcomes:
            where = "on this host" if step == "profile" else f"for {self.target}"
            self.status.value = f"<i>running {step} {where}…</i>"
        out = self._outcome(step, self.target)
        pane = self._panes[step]
        if self._shown.get(step) is not out:
            pane.summary.value = summary_html(
                out.lines, error=out.error is not None,
                footer=f"{step} ran in {out.seconds * 1e3:,.0f} ms (measured on this host)")
            for widget, fig in zip(pane.figures, out.figures, strict=False):
                replace_figure(widget, fig)
            pane.plots.layout.display = "none" if out.error is not None or not out.figures else None
            pane.table.value = out.table_html
            self._shown[step] = out
        self.last_update_s = time.perf_counter() - start
        self.status.value = html.escape(
            f"{self.target} ({hardware.get(self.target).family}), {self.precision}, "
            f"stack {self.stack_for(self.target)}. "
            "Profile: MEASURED on this host; step times: MODELLED.")

    # ---- the steps --------------------------------------------------------------------------------------
    def _outcome(self, step: str, target: str) -> StepOutcome:
        key = _key(step, target)
        if key not in self._outcomes:
            out = StepOutcome(step, key[1])
            start = time.perf_counter()
            try:
                self._steps[step](out, target)
            except Exception as exc:  # shown, not raised: an observer's exception would vanish in the log
                where = "on this host" if step == "profile" else f"for {target}"
                out.value, out.error, out.figures, out.table_html = None, exc, [], ""
                out.lines = failure_lines(f"{step} {where}", exc)
            out.seconds = time.perf_counter() - start
            self._outcomes[key] = out
        return self._outcomes[key]

    def _value(self, step: str, target: str) -> Any:
        """An earlier step's value, or an error that says which tab failed (the tab shows why)."""
        out = self._outcome(step, target)
        if out.error is not None:
            first = str(out.error).splitlines()[0] if str(out.error) else type(out.error).__name__
            raise AccelkitError(f"the {step} step failed for {target}: {first}",
                                fix=f"see the {step} tab") from out.error
        return out.value

    def _model_for(self, target: str) -> tuple[nn.Module, Any, str]:
        """The model compile and run take: as given when the check finds no error, else ak.port's."""
        report: CompatibilityReport = self._value("check", target)
        if report.ok:
            return self.model, self.example_inputs, "model: as given (the check found no error)"
        ported: PortResult = self._value("port", target)
        return (ported.model, ported.example_inputs,
                f"model: ported by ak.port ({', '.join(ported.recipes) or 'no change'}), see the port tab")

    def _fit(self, fig: go.Figure) -> go.Figure:
        return fit(fig, self.figure_width)

    def _profile(self, out: StepOutcome, target: str) -> None:
        prof: HostProfile = profile(self.model, self.example_inputs, check_portability=False)
        top = ", ".join(f"{r.op.removeprefix('aten::')} {r.share:.0%}" for r in prof.top(3))
        out.value = prof
        out.lines = [
            f"MEASURED on this host ({prof.cpu}, {prof.threads} torch threads)",
            prof.what,
            f"wall time per run: {prof.total_time_s * 1e3:.3f} ms",
            f"FLOPs per run: {prof.total_flops / 1e6:,.1f} MFLOP (matmul-type ops, counted)",
            f"achieved: {prof.achieved_flops_per_s / 1e9:,.2f} GFLOP/s",
            f"parameters: {prof.param_count:,} ({fmt_bytes(prof.param_bytes)})",
            f"hottest ops: {top}",
            "what may not port: see the check tab",
        ]
        out.figures = [self._fit(op_time_bars(prof, n=10))]

    def _check(self, out: StepOutcome, target: str) -> None:
        report = check(self.model, self.example_inputs, target)
        lines = [report.headline()]
        if not report.captured:
            lines.append("the model could not be captured: only what stopped the capture is listed")
        for f in report.errors[:LISTED]:
            lines += [f"error {f.kind}: {f.op} x{f.count} in {f.where} at {f.source or '?'}", f"  fix: {f.fix}"]
        if len(report.errors) > LISTED:
            lines.append(f"... and {len(report.errors) - LISTED} more error(s): see the table")
        kinds: dict[str, int] = {}
        for f in report.warnings:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        if kinds:
            lines.append("warnings: " + ", ".join(f"{k} x{n}" for k, n in kinds.items()))
        recipes = report.recipes()
        lines.append(f"ak.port recipes: {', '.join(recipes)}" if recipes else "ak.port: nothing to rewrite")
        out.value, out.lines, out.table_html = report, lines, report._repr_html_()

    def _port(self, out: StepOutcome, target: str) -> None:
        result = port(self.model, self.example_inputs, target, trials=PORT_TRIALS)
        lines = [f"{len(result.changes)} change(s)" + (f": {', '.join(result.recipes)}" if result.recipes else "")]
        for c in result.changes[:LISTED]:
            lines.append(f"  {c.recipe} at {c.source or '-'}: {c.what}")
        if len(result.changes) > LISTED:
            lines.append(f"  ... and {len(result.changes) - LISTED} more: see the table")
        if result.verified:
            lines.append(f"verified: max abs error {result.max_abs_error:.1e} within tolerance {result.tolerance} "
                         f"on {result.samples_checked} input set(s)")
        else:
            lines.append("NOT verified numerically: " + "; ".join(result.notes or ["nothing was run"]))
        lines += [f"before: {result.report_before.headline()}", f"after:  {result.report_after.headline()}"]
        out.value, out.lines, out.table_html = result, lines, result._repr_html_()

    def _compile(self, out: StepOutcome, target: str) -> None:
        model, inputs, which = self._model_for(target)
        prog: CompiledProgram = ak_compile(model, inputs, target=target,
                                           precision=default_precision(hardware.get(target)),
                                           stack=self.stack_for(target))
        out.value = prog
        out.lines = [which, *program_summary(prog)]
        out.figures = [self._fit(placement_map(prog)), self._fit(memory_plan_bars(prog))]

    def _run(self, out: StepOutcome, target: str) -> None:
        model, inputs, which = self._model_for(target)
        args, kwargs = split_inputs(inputs)
        if kwargs:
            raise AccelkitError("the run tab passes inputs positionally, and these have keywords",
                                fix="give the dashboard a tuple of positional inputs")
        precision = default_precision(hardware.get(target))
        session = Session(model, target=target, precision=precision, stack=self.stack_for(target, session=True))
        steps = [session.run(*args) for _ in range(RUN_STEPS)]
        got, want = _first_tensor(steps[-1].outputs), _first_tensor(self._reference())
        if got is None or want is None or got.shape != want.shape:
            raise AccelkitError("the run's first output does not match the model's in plain PyTorch",
                                where=f"shapes {None if got is None else tuple(got.shape)} and "
                                      f"{None if want is None else tuple(want.shape)}")
        # (the same shape, e.g. (B, T, vocab) logits) -> one number: error relative to the largest output
        error = compare(got, want).max_rel  # the one comparator (accelkit.graph.values)
        result = RunResult(session, steps, error, TOLERANCE[precision])
        first = ", ".join(f"{v:.4g}" for v in got.flatten()[:4].tolist())
        step_s = steps[-1].simulated_time_s
        host_s = sum(s.host_time_s for s in steps) / len(steps)
        verdict = "within" if error <= result.tolerance else "BEYOND"
        samples = int(got.shape[0]) if got.dim() else 1
        out.value = result
        out.lines = [
            f"{RUN_STEPS} inference steps in ak.Session on {target}, {precision}, stack {session.stack}",
            which,
            f"outputs (real PyTorch numerics): {tuple(got.shape)} {str(got.dtype).removeprefix('torch.')}, "
            f"first values {first}",
            f"vs plain PyTorch fp32: max error {error:.1e} of the largest output, {verdict} the "
            f"{precision} tolerance {result.tolerance:g}",
            f"step time: {fmt_s(step_s)} (modelled), {samples / step_s:,.0f} samples/s (modelled)",
            f"mode: {session.require_compiled('the run tab').mode}",
            f"host time per step: {fmt_s(host_s)} (measured, the CPU doing the real numerics)",
        ]
        out.figures = [self._fit(timeline(session.require_compiled('the run tab').report))]

    def _reference(self) -> Any:
        """The original model's outputs in plain fp32 PyTorch, in eval mode as the session runs it."""
        args, kwargs = split_inputs(self.example_inputs)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                return self.model(*args, **kwargs)
        finally:
            self.model.train(was_training)


__all__ = ["STEPS", "RunResult", "StepOutcome", "WorkflowDashboard", "failure_lines", "fit", "summary_html"]
