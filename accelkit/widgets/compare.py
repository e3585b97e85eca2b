"""CompareTargets: one model compiled on every target, side by side, in a table you can sort.

    from accelkit.widgets import CompareTargets
    CompareTargets(model, inputs)                 # every catalog target except the host

Each target gets ``ak.compile(model, inputs, target=..., precision=...)`` once (one capture, shared:
only the passes, memory plan and placement run per target). The widget shows

    a table     mode, step time, throughput, compute utilization, energy, what bounds the step,
                sorted by the "sort by" dropdown; a target where the model does not compile (it
                does not fit, needs ``ak.port`` first, lacks the precision) shows why instead
    bars        ``accelkit.viz.perf.comparison_bars``: step time by section, in the table's order (sorted
                by throughput or energy, the bars show that number instead)
    a detail    one target's ``timeline`` or ``roofline``, picked by two dropdowns

Every time here is MODELLED from published figures; nothing was measured on an accelerator.
``compare.rows`` holds the table as plain dicts, ``compare.summary_text`` as plain text.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go
from torch import nn

from accelkit import hardware
from accelkit.compiler import CompiledProgram
from accelkit.errors import AccelkitError
from accelkit.families import model_for
from accelkit.hardware.spec import fmt_sig
from accelkit.sim.report import PerfReport, fmt_s
from accelkit.viz.perf import comparison_bars, roofline, timeline
from accelkit.widgets.dashboard import ERROR_COLOR, failure_lines, fit, known_stack, summary_box, summary_html
from accelkit.widgets.explorer import (
    AUTO,
    REDRAW_AFTER_DISPLAY_S,
    _call_soon,
    default_precision,
    error_figure,
    replace_figure,
)
from accelkit.widgets.explorer import targets as catalog_targets
from accelkit.workflow.compiling import compile as ak_compile

SORT_BY: dict[str, tuple[str, bool]] = {  # label -> (row key, largest first)
    "step time": ("step_time_s", False),
    "throughput": ("throughput", True),
    "utilization": ("utilization", True),
    "energy": ("energy_j", False),
    "chips": ("chips", False),
}
"""The "sort by" dropdown's choices. Rows without the number (it did not compile, no published power)
go last."""

DETAILS: dict[str, Callable[[PerfReport], go.Figure]] = {"timeline": timeline, "roofline": roofline}
"""The per-target figures the detail dropdown offers."""

_COLUMNS = ("target", "precision", "stack", "chips", "mode", "step time (modelled)", "throughput (modelled)",
            "compute utilization", "energy / step", "bound by")


_BOUND_VS_UTILIZATION = (
    "<i>bound by</i>: what limits most of the step's kernel time (compute, memory, communication or fixed "
    "latency). <i>compute utilization</i>: the FLOPs done over what all the chips' peak could do in the step "
    "time. A step can be compute-bound and still use a small share of peak: its kernels run on part of the chip "
    "(a wafer region, a pipeline stage), at the efficiency small matrices reach, or wait for the pipeline to fill.")


def _fmt_energy(j: float | None) -> str:
    if j is None:
        return "- (no published power)"
    return f"{j * 1e3:.3g} mJ" if j < 1 else f"{j:.3g} J"


def _fmt_share(share: float) -> str:
    """A utilization as a percentage with two significant figures below 1% (a wafer runs at 0.03%)."""
    return f"{share * 100:.2g}%" if share < 0.01 else f"{share:.1%}"


def _fmt_chips(n: int) -> str:
    return "1 chip" if n == 1 else f"{n} chips"


def _reason(error: Exception) -> str:
    """One line: the error's type and message (without its where and fix)."""
    message = error.message if isinstance(error, AccelkitError) else (str(error).splitlines() or [""])[0]
    return f"{type(error).__name__}: {message}"


class CompareTargets:
    """The same model compiled on several targets: a sortable table, comparison bars and a per-target detail.

    ``compare.programs`` maps each target that compiled to its :class:`~accelkit.CompiledProgram`,
    ``compare.errors`` each that did not to its error. ``compare.rows`` is the table (plain dicts,
    in the current order); ``compare.sort(by)`` and ``compare.set(detail=..., view=...)`` drive the
    dropdowns. ``compare.widget`` is the ipywidgets ``VBox``; ``compare.bars`` and ``compare.detail``
    the two ``FigureWidget``\\ s, redrawn in place.
    """

    def __init__(self, model: nn.Module, example_inputs: Any, *, targets: Sequence[str] | None = None,
                 precision: str = AUTO, batch_size: int | None = None, chips: int | None = None,
                 figure_width: int = 620, stack: str | Mapping[str, str] | None = None) -> None:
        self.model = model
        self.stack = stack
        self.example_inputs = example_inputs
        self.precision = precision
        self.figure_width = figure_width
        names = [hardware.get(t).name for t in targets] if targets is not None else catalog_targets()
        if not names:
            raise ValueError("CompareTargets needs at least one target")
        self.targets = names
        stacks = {name: self.stack_for(name) for name in names}  # a stack= that names nothing is refused here
        self.programs: dict[str, CompiledProgram] = {}
        self.errors: dict[str, Exception] = {}
        for name in names:
            spec = hardware.get(name)
            prec = default_precision(spec) if precision == AUTO else precision
            try:  # chips=None: as many chips as the model needs (a TSP holds 231 MB)
                self.programs[name] = ak_compile(model, example_inputs, target=name, batch_size=batch_size,
                                                 chips=chips if chips is not None else "auto", precision=prec,
                                                 stack=stacks[name])
            except Exception as exc:  # shown in the table, not raised
                self.errors[name] = exc
        self._rows = [self._row(name) for name in names]
        self._by = "step time"

        style, narrow = {"description_width": "64px"}, widgets.Layout(width="210px")
        self.sort_control = widgets.Dropdown(options=list(SORT_BY), value=self._by, description="sort by",
                                             style=style, layout=narrow)
        compiled = list(self.programs)
        self.detail_control = widgets.Dropdown(options=compiled, value=compiled[0] if compiled else None,
                                               description="detail", style=style, layout=narrow)
        self.view_control = widgets.Dropdown(options=list(DETAILS), description="figure", style=style,
                                             layout=narrow)
        for w, css in ((self.sort_control, "ak-sort"), (self.detail_control, "ak-detail"),
                       (self.view_control, "ak-view")):
            w.add_class(css)
        self.table = widgets.HTML(layout=widgets.Layout(overflow="auto"))
        self.table.add_class("ak-table")
        self.bars, self.detail = go.FigureWidget(), go.FigureWidget()
        self.bars_summary, self.detail_summary = summary_box(), summary_box()

        def beside(fig: go.FigureWidget, summary: widgets.HTML) -> widgets.HBox:
            plot = widgets.Box([fig], layout=widgets.Layout(flex="0 0 auto"))
            return widgets.HBox([plot, summary], layout=widgets.Layout(width="100%", flex_flow="row wrap"))

        self.widget = widgets.VBox([self.sort_control, self.table, beside(self.bars, self.bars_summary),
                                    widgets.HBox([self.detail_control, self.view_control]),
                                    beside(self.detail, self.detail_summary)])
        self.widget.add_class("ak-compare-targets")
        self._drawn: dict[str, go.Figure] = {}
        self._draw_table()
        self._draw_detail()
        self.sort_control.observe(lambda _: self._draw_table(), names="value")
        self.detail_control.observe(lambda _: self._draw_detail(), names="value")
        self.view_control.observe(lambda _: self._draw_detail(), names="value")

    # ---- public API ------------------------------------------------------------------------------
    def stack_for(self, target: str) -> str:
        """The software stack ``target`` is compiled for: ``stack=`` where it names one of the target's family's
        stacks (a mapping by target or family name, or one name for every family that has it), else the
        family's default for ``ak.compile``."""
        spec = hardware.get(target)
        family = model_for(spec.family)
        wanted = self.stack
        if isinstance(wanted, Mapping):
            wanted = wanted.get(spec.name, wanted.get(spec.family))
        known_stack(wanted, self.stack)
        return wanted if wanted in family.stack_names else family.stack()

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The table as plain dicts, in the current order (copies: changing them changes nothing)."""
        return [dict(r) for r in self._sorted()]

    @property
    def sort_by(self) -> str:
        return str(self.sort_control.value)

    def sort(self, by: str) -> CompareTargets:
        """Order the table (and the bars) by one of :data:`SORT_BY`'s labels or row keys. Returns self."""
        return self.set(sort_by=by)

    def set(self, *, sort_by: str | None = None, detail: str | None = None,
            view: str | None = None) -> CompareTargets:
        """Change the sort order, the detail's target and/or its figure; each redraws in place."""
        if sort_by is not None:
            label = next((k for k, (key, _) in SORT_BY.items() if sort_by in (k, key)), None)
            if label is None:
                raise ValueError(f"cannot sort by {sort_by!r}; use one of {list(SORT_BY)}")
            self.sort_control.value = label
        if detail is not None:
            name = hardware.get(detail).name
            if name not in self.programs:
                why = _reason(self.errors[name]) if name in self.errors else "it is not in this comparison"
                raise ValueError(f"no detail for {name!r}: {why}")
            self.detail_control.value = name
        if view is not None:
            if view not in DETAILS:
                raise ValueError(f"no view {view!r}; use one of {list(DETAILS)}")
            self.view_control.value = view
        return self

    @property
    def summary_text(self) -> str:
        """The table as plain text: one line per target, in the current order."""
        lines = [f"MODELLED: {self._model_name()} on {len(self.targets)} targets, sorted by {self.sort_by}"]
        width = max(len(t) for t in self.targets)
        for r in self._sorted():
            head = f"{r['target']:<{width}}  {r['precision']:<5}  {r['stack']:<9}"
            if r["reason"] is not None:
                lines.append(f"{head}  cannot compile: {r['reason']}")
                continue
            energy = "" if r["energy_j"] is None else f", {_fmt_energy(r['energy_j'])}"
            lines.append(f"{head}  {_fmt_chips(r['chips'])}  {r['mode']:<16} {fmt_s(r['step_time_s']):>9}  "
                         f"{fmt_sig(r['throughput']):>12} samples/s  util {_fmt_share(r['utilization'])}  "
                         f"{r['bound_by']}-bound{energy}")
        return "\n".join(lines)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
        # as in PlacementExplorer: plotly measures text wrongly in a view not yet on the page
        _call_soon(REDRAW_AFTER_DISPLAY_S, self._redraw)

    def _redraw(self) -> None:
        for widget, key in ((self.bars, "bars"), (self.detail, "detail")):
            if key in self._drawn:
                replace_figure(widget, self._drawn[key])

    def __repr__(self) -> str:
        return (f"CompareTargets({len(self.programs)} of {len(self.targets)} targets compiled, "
                f"sort_by={self.sort_by!r}, detail={self.detail_control.value!r})")

    # ---- the rows ---------------------------------------------------------------------------------
    def _row(self, name: str) -> dict[str, Any]:
        spec = hardware.get(name)
        prog = self.programs.get(name)
        precision = prog.precision if prog is not None else (
            default_precision(spec) if self.precision == AUTO else self.precision)
        row: dict[str, Any] = {"target": name, "family": spec.family, "precision": precision,
                               "stack": prog.stack if prog is not None else self.stack_for(name)}
        if prog is None:
            error = self.errors[name]
            fix = error.fix if isinstance(error, AccelkitError) else None
            return row | dict.fromkeys(("chips", "batch_size", "mode", "step_time_s", "throughput",
                                        "tokens_per_s", "utilization", "energy_j", "bound_by")) | {
                "reason": _reason(error), "fix": fix}
        report = prog.report
        bound = max(report.bound_by.items(), key=lambda kv: kv[1], default=("-", 0.0))
        return row | {
            "chips": prog.chips, "batch_size": prog.batch_size, "mode": prog.mode,
            "step_time_s": report.step_time_s, "throughput": report.throughput,
            "tokens_per_s": report.tokens_per_s, "utilization": report.utilization.get("compute", 0.0),
            "energy_j": report.energy_j, "bound_by": bound[0], "reason": None, "fix": None}

    def _sorted(self) -> list[dict[str, Any]]:
        key, largest_first = SORT_BY[self.sort_by]

        def order(item: tuple[int, dict[str, Any]]) -> tuple[bool, float, int]:
            i, row = item
            value = row[key]
            if value is None:
                return True, 0.0, i
            return False, -value if largest_first else value, i

        return [row for _, row in sorted(enumerate(self._rows), key=order)]

    def _model_name(self) -> str:
        prog = next(iter(self.programs.values()), None)
        return prog.graph.model_name if prog is not None else type(self.model).__name__

    # ---- drawing --------------------------------------------------------------------------------------
    def _draw_table(self) -> None:
        rows = self._sorted()
        sort_key = SORT_BY[self.sort_by][0]
        arrow = " ▼" if SORT_BY[self.sort_by][1] else " ▲"
        keys = (None, None, None, "chips", None, "step_time_s", "throughput", "utilization", "energy_j", None)
        head = "".join(f"<th>{html.escape(c)}{arrow if k == sort_key else ''}</th>"
                       for c, k in zip(_COLUMNS, keys, strict=True))
        body = []
        for r in rows:
            first = (f"<td><b>{html.escape(r['target'])}</b></td><td>{html.escape(r['precision'])}</td>"
                     f"<td>{html.escape(r['stack'])}</td>")
            if r["reason"] is not None:
                fix = f"<br><small>fix: {html.escape(r['fix'])}</small>" if r["fix"] else ""
                body.append(f"<tr>{first}<td colspan='{len(_COLUMNS) - 3}' style='color: {ERROR_COLOR}; "
                            f"text-align: left'>{html.escape(r['reason'])}{fix}</td></tr>")
                continue
            cells = (str(r["chips"]), r["mode"], fmt_s(r["step_time_s"]), f"{fmt_sig(r['throughput'])} samples/s",
                     _fmt_share(r["utilization"]), _fmt_energy(r["energy_j"]), r["bound_by"])
            body.append(f"<tr>{first}" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        self.table.value = (f"<table style='font-size: 12px'><tr>{head}</tr>{''.join(body)}</table>"
                            f"<small>times MODELLED from published figures, not measured. {_BOUND_VS_UTILIZATION}"
                            "</small>")
        self._draw_bars(rows)

    def _draw_bars(self, rows: list[dict[str, Any]]) -> None:
        compiled = [r for r in rows if r["reason"] is None]
        if compiled:
            # the bars show what the table is sorted by (step time stacked by section otherwise)
            metric = {"throughput": "throughput", "energy": "energy_j"}.get(self.sort_by, "step_time_s")
            with_value = [r for r in compiled if metric == "step_time_s" or r[metric] is not None]
            fig = comparison_bars({r["target"]: self.programs[r["target"]].report for r in with_value}, metric)
            fast, slow = compiled[0], compiled[-1]
            if self.sort_by != "step time":
                fast = min(compiled, key=lambda r: r["step_time_s"])
                slow = max(compiled, key=lambda r: r["step_time_s"])
            lines = [f"{len(compiled)} of {len(rows)} targets compile, in the table's order",
                     f"fastest step: {fast['target']} {fmt_s(fast['step_time_s'])} (modelled)",
                     f"slowest step: {slow['target']} {fmt_s(slow['step_time_s'])} (modelled), "
                     f"{slow['step_time_s'] / fast['step_time_s']:.1f}x the fastest"]
        else:
            fig = error_figure("no target compiled", "see the table")
            lines = [f"none of the {len(rows)} targets compiles this model"]
        failed = [r for r in rows if r["reason"] is not None]
        lines += [f"{r['target']}: {r['reason']}" for r in failed]
        self._show("bars", self.bars, fig)
        self.bars_summary.value = summary_html(lines, error=not compiled)

    def _draw_detail(self) -> None:
        name = self.detail_control.value
        view = str(self.view_control.value)
        if name is None:
            self._show("detail", self.detail, error_figure("no target compiled", "see the table"))
            self.detail_summary.value = summary_html(["no program to show: no target compiled"], error=True)
            return
        report = self.programs[name].report
        try:
            fig = DETAILS[view](report)
        except Exception as exc:  # shown, not raised: an observer's exception would vanish in the log
            self._show("detail", self.detail, error_figure(f"{name}: no {view}", type(exc).__name__))
            self.detail_summary.value = summary_html(failure_lines(f"the {view} of {name}", exc), error=True)
            return
        self._show("detail", self.detail, fig)
        bound = ", ".join(f"{k} {v:.0%}" for k, v in sorted(report.bound_by.items(), key=lambda kv: -kv[1]))
        lines = [f"{name} ({report.family}), {report.precision}, batch {report.batch_size}",
                 f"mode: {report.mode}, {_fmt_chips(report.chips)}, {report.parallel}",
                 f"step time: {fmt_s(report.step_time_s)} (modelled)",
                 f"throughput: {fmt_sig(report.throughput)} samples/s (modelled)",
                 "utilization: " + ", ".join(f"{k} {_fmt_share(v)}" for k, v in report.utilization.items()),
                 f"bound by: {bound}",
                 "slowest kernels:",
                 *(f"  {k.name}: {fmt_s(k.time_s)}, {k.bound}" for k in report.top(3))]
        self.detail_summary.value = summary_html(lines)

    def _show(self, key: str, widget: go.FigureWidget, fig: go.Figure) -> None:
        fig = fit(fig, self.figure_width)
        replace_figure(widget, fig)
        self._drawn[key] = fig


__all__ = ["DETAILS", "SORT_BY", "CompareTargets"]
