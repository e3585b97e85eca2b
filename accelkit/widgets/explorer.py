"""PlacementExplorer: pick a target, precision, batch, chips and mode, and watch the placement redraw.

    from accelkit.widgets import PlacementExplorer
    PlacementExplorer(model, inputs, target="sn40l")     # the last line of a cell shows it

Every change recompiles on the captured graph (``ak.compile`` keeps one capture per model and
input shapes, so only the passes, the memory plan and the placement run again: a few ms for
GPT-2) and redraws one ``plotly.graph_objects.FigureWidget`` in place. A compile that fails — a
forced mode that does not fit, too few chips for the TSP — shows its message, cause and fix in red
in the summary; nothing is raised into the notebook.

The figure dropdown lists *views*: functions ``CompiledProgram -> go.Figure``. :data:`VIEWS` holds
the built-in ones (placement map, memory plan); :func:`register_view` adds one for every explorer
created afterwards, e.g. ``register_view("gantt", lambda prog: accelkit.viz.perf.timeline(prog.report))``.
The built-in views also include the step's timeline and roofline (of ``prog.report``: MODELLED times).
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go
import torch
from torch import nn

from accelkit import hardware
from accelkit.compiler import MODES, CompiledProgram, CompileError, ModeError
from accelkit.errors import AccelkitError
from accelkit.families import model_for
from accelkit.hardware import AcceleratorSpec, fmt_bytes
from accelkit.hardware.precision import PREFERRED as PREFERRED_PRECISIONS  # noqa: F401 - re-exported
from accelkit.hardware.precision import default_for
from accelkit.sim.report import fmt_s
from accelkit.viz.perf import roofline, timeline
from accelkit.viz.placement import memory_plan_bars, placement_map
from accelkit.workflow.compiling import compile as ak_compile

View = Callable[[CompiledProgram], go.Figure]
"""A figure the explorer can show: a pure function of the compiled program, returning a new figure
(the explorer gives it a width and height where it has none, and a smaller title font)."""


def timeline_view(prog: CompiledProgram) -> go.Figure:
    """The modelled step as a Gantt chart (:func:`accelkit.viz.perf.timeline` of ``prog.report``)."""
    return timeline(prog.report)


def roofline_view(prog: CompiledProgram) -> go.Figure:
    """Each kernel under the chip's roofs (:func:`accelkit.viz.perf.roofline` of ``prog.report``)."""
    return roofline(prog.report)


VIEWS: dict[str, View] = {
    "placement map": placement_map,
    "memory plan": memory_plan_bars,
    "timeline": timeline_view,
    "roofline": roofline_view,
}
"""The figure dropdown's choices, in order. Add to it with :func:`register_view`."""

AUTO = "auto"

MAX_COUNT = 1_000_000  # upper bound of the batch and chips boxes; ak.compile names the real limits
REDRAW_AFTER_DISPLAY_S = 0.5
DEFAULT_HEIGHT = 450  # px, plotly's own default, for views that set none


def register_view(name: str, figure: View, *, replace: bool = False) -> None:
    """Add ``figure`` (``CompiledProgram -> go.Figure``) to the views of explorers created from now on."""
    if name in VIEWS and not replace:
        raise ValueError(f"a view named {name!r} exists already; pass replace=True to swap it")
    VIEWS[name] = figure


def targets() -> list[str]:
    """The targets the explorer offers: the whole catalog except the measured host, family by family."""
    return hardware.names(by_family=True, host=False)


def default_precision(spec: AcceleratorSpec) -> str:
    """bf16 if the chip has it, else fp16, else its first precision (``hardware.precision.default_for``)."""
    return default_for(spec)


def replace_figure(widget: go.FigureWidget, fig: go.Figure) -> None:
    """Make ``widget`` draw ``fig`` (its traces and layout), in place: the view updates, no new output.

    The front end receives four messages: delete the traces, add ``fig``'s, delete the top-level
    layout keys ``fig`` lacks (``xaxis2`` and the subplot titles of a two-panel figure,
    ``shapes``...; setting the new keys alone would leave those on screen), then one update with
    the layout keys that changed (the template, unchanged, is not sent again).
    ``width`` and ``height`` are never deleted: plotly.js fails on ``relayout({"height": null})``
    when the first draw had a height (the widget always draws with one), so give every figure
    both sizes, as :class:`PlacementExplorer` does.
    """
    old, new = widget.layout.to_plotly_json(), fig.layout.to_plotly_json()
    widget.data = ()
    widget.add_traces(list(fig.data))
    stale = {key: None for key in old if key not in new and key not in ("width", "height")}
    if stale:  # a relayout sends None as null, which deletes; assigning None would send an empty {}
        widget.plotly_relayout(stale)
    with widget.batch_update():  # the assignments below leave as one message
        for key, value in new.items():
            if old.get(key) != value:
                widget.layout[key] = value


def error_figure(title: str, message: str) -> go.Figure:
    """An empty figure whose title says no program was drawn, and why (the summary has the rest)."""
    fig = go.Figure()
    fig.update_layout(title={"text": title, "subtitle": {"text": message}},
                      xaxis={"visible": False}, yaxis={"visible": False}, height=320,
                      annotations=[{"text": "no program to draw: see the summary", "showarrow": False,
                                    "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper",
                                    "font": {"color": "#c00000", "size": 16}}])
    return fig


class PlacementExplorer:
    """Controls for ``ak.compile``'s arguments, one figure of the compiled program, and a summary.

    ``explorer.widget`` is the ipywidgets ``VBox`` (displaying the explorer displays it);
    ``explorer.figure`` the ``FigureWidget`` redrawn in place; ``explorer.program`` the last
    successful :class:`~accelkit.compiler.CompiledProgram` for the current settings (``None``
    when the last compile failed, its error in ``explorer.error``); ``explorer.summary_text`` the
    summary as plain text; ``explorer.last_update_s`` how long the last change took (compile and
    redraw, measured). ``explorer.set(target=..., ...)`` changes several controls with one recompile.
    """

    def __init__(self, model: nn.Module, example_inputs: Any, *, target: str = "sn40l",
                 precision: str | None = None, batch_size: int | None = None, chips: int = 1,
                 mode: str = AUTO, views: Mapping[str, View] | None = None,
                 figure_width: int = 660, stack: str | None = None) -> None:
        self.model = model
        self.example_inputs = example_inputs
        self.views: dict[str, View] = dict(VIEWS if views is None else views)
        self.figure_width = figure_width
        if not self.views:
            raise ValueError("the explorer needs at least one view (name -> function(prog) -> go.Figure)")
        self.program: CompiledProgram | None = None
        self.error: Exception | None = None
        self.last_update_s = 0.0
        self.last_compile_s = 0.0
        self._summary: list[str] = []
        self._drawn: go.Figure | None = None
        self._quiet = False
        names = targets()
        spec = self._spec(target, names)
        self._check(spec, precision=precision, mode=mode, batch_size=batch_size, chips=chips, stack=stack)
        example_batch = _batch_of(example_inputs)
        self._wanted_precision = precision
        self._wanted_mode = mode
        self._wanted_stack = stack

        def control(w: widgets.DOMWidget, css: str) -> widgets.DOMWidget:
            w.add_class(css)  # stable hooks for the browser test and for styling
            w.observe(self._on_change, names="value")
            return w

        style = {"description_width": "64px"}
        narrow = widgets.Layout(width="190px")
        self.target_control = control(widgets.Dropdown(options=names, value=spec.name, description="target",
                                                       style=style, layout=narrow), "ak-target")
        self.precision_control = control(widgets.Dropdown(options=list(spec.peak_flops),
                                                          description="precision", style=style, layout=narrow),
                                         "ak-precision")
        self.batch_control = control(widgets.BoundedIntText(value=batch_size or example_batch, min=1,
                                                            max=MAX_COUNT, description="batch", style=style,
                                                            layout=narrow), "ak-batch")
        self.chips_control = control(widgets.BoundedIntText(value=chips, min=1, max=MAX_COUNT,
                                                            description="chips", style=style, layout=narrow),
                                     "ak-chips")
        self.mode_control = control(widgets.Dropdown(options=self._modes(spec), description="mode",
                                                     style=style, layout=narrow), "ak-mode")
        self.stack_control = control(widgets.Dropdown(options=list(model_for(spec.family).stack_names),
                                                      description="stack", style=style, layout=narrow), "ak-stack")
        self.view_control = control(widgets.Dropdown(options=list(self.views), description="figure",
                                                     style=style, layout=narrow), "ak-view")
        with self._quietly():
            self._follow_target(spec)

        self.figure = go.FigureWidget()
        # a fixed figure width: the front end draws the widget before it is attached to the page, so
        # plotly's autosize would fall back to 700 px whatever the room; the summary wraps below it
        # when the output area is narrower than the figure and the summary together
        self.summary = widgets.HTML(layout=widgets.Layout(flex="1 1 280px", min_width="280px",
                                                          overflow="auto", padding="0 0 0 8px"))
        self.summary.add_class("ak-summary")
        controls = widgets.GridBox(
            [self.target_control, self.precision_control, self.mode_control,
             self.batch_control, self.chips_control, self.stack_control, self.view_control],
            layout=widgets.Layout(grid_template_columns="repeat(3, 200px)", grid_gap="2px 8px"))
        plot = widgets.Box([self.figure], layout=widgets.Layout(flex="0 0 auto"))
        below = widgets.HBox([plot, self.summary], layout=widgets.Layout(width="100%", flex_flow="row wrap"))
        self.widget = widgets.VBox([controls, below])
        self.widget.add_class("ak-placement-explorer")
        self._update(recompile=True)

    # ---- public API ------------------------------------------------------------------------------
    @property
    def target(self) -> str:
        return str(self.target_control.value)

    @property
    def precision(self) -> str:
        return str(self.precision_control.value)

    @property
    def batch_size(self) -> int:
        return int(self.batch_control.value)

    @property
    def chips(self) -> int:
        return int(self.chips_control.value)

    @property
    def mode(self) -> str:
        return str(self.mode_control.value)

    @property
    def stack(self) -> str:
        """The software stack the program is compiled for (the target family's; ``ak.compile(stack=...)``)."""
        return str(self.stack_control.value)

    @property
    def view(self) -> str:
        return str(self.view_control.value)

    @property
    def summary_text(self) -> str:
        """The summary beside the figure, as plain text (an error's message when the compile failed)."""
        return "\n".join(self._summary)

    def set(self, *, target: str | None = None, precision: str | None = None, batch_size: int | None = None,
            chips: int | None = None, mode: str | None = None, view: str | None = None,
            stack: str | None = None) -> PlacementExplorer:
        """Change any of the controls at once, then recompile and redraw once. Returns the explorer.

        A value no control can hold (an unknown target, a precision or mode the chip lacks, a
        batch below 1) raises here. What the compiler refuses (a forced mode that does not fit,
        more chips than the largest system) is shown in the summary in red, as in the notebook.
        """
        spec = self._spec(target or self.target, targets())
        self._check(spec, precision=precision, mode=mode, batch_size=batch_size, chips=chips, stack=stack)
        if view is not None and view not in self.views:
            raise ValueError(f"no view {view!r}; the explorer has {list(self.views)}")
        if precision is not None:
            self._wanted_precision = precision
        if mode is not None:
            self._wanted_mode = mode
        if stack is not None:
            self._wanted_stack = stack
        with self._quietly():
            self.target_control.value = spec.name
            self._follow_target(spec)
            for w, value in ((self.batch_control, batch_size), (self.chips_control, chips),
                             (self.view_control, view)):
                if value is not None:
                    w.value = value
        compile_args = (target, precision, batch_size, chips, mode, stack)
        # a new view alone only redraws
        self._update(recompile=view is None or any(v is not None for v in compile_args))
        return self

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
        # plotly's front end draws a new view before the page holds it, so text it measures (the
        # subtitle under the title) lands in the wrong place; drawing again once it is on the page fixes it
        _call_soon(REDRAW_AFTER_DISPLAY_S, self._redraw)

    def _redraw(self) -> None:
        if self._drawn is not None:
            replace_figure(self.figure, self._drawn)

    def __repr__(self) -> str:
        return (f"PlacementExplorer(target={self.target!r}, precision={self.precision!r}, "
                f"batch_size={self.batch_size}, chips={self.chips}, mode={self.mode!r}, stack={self.stack!r}, "
                f"view={self.view!r})")

    # ---- reacting to the controls ------------------------------------------------------------------
    @contextmanager
    def _quietly(self) -> Iterator[None]:
        """Change controls without each change starting its own recompile."""
        quiet, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = quiet

    def _on_change(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        owner = change["owner"]
        if owner is self.precision_control:
            self._wanted_precision = change["new"]
        elif owner is self.mode_control:
            self._wanted_mode = change["new"]
        elif owner is self.stack_control:
            self._wanted_stack = change["new"]
        elif owner is self.target_control:
            with self._quietly():
                self._follow_target(hardware.get(change["new"]))
        self._update(recompile=owner is not self.view_control)

    def _follow_target(self, spec: AcceleratorSpec) -> None:
        """Offer the precisions and modes ``spec`` has; keep the ones last asked for where it has them."""
        precisions = list(spec.peak_flops)
        if list(self.precision_control.options) != precisions:
            self.precision_control.options = precisions
        wanted = self._wanted_precision
        self.precision_control.value = wanted if wanted in precisions else default_precision(spec)
        modes = self._modes(spec)
        if list(self.mode_control.options) != modes:
            self.mode_control.options = modes
        self.mode_control.value = self._wanted_mode if self._wanted_mode in modes else AUTO
        family = model_for(spec.family)  # the family's stacks; the one last asked for where it has it
        stacks = list(family.stack_names)
        if list(self.stack_control.options) != stacks:
            self.stack_control.options = stacks
        self.stack_control.value = self._wanted_stack if self._wanted_stack in stacks else family.stack()

    @staticmethod
    def _modes(spec: AcceleratorSpec) -> list[str]:
        return [AUTO, *MODES[spec.family]]

    @staticmethod
    def _spec(target: str, names: list[str]) -> AcceleratorSpec:
        spec = hardware.get(target)  # UnknownNameError listing the catalog
        if spec.name not in names:
            raise CompileError(f"the explorer does not offer target {target!r}", fix=f"use one of {names}")
        return spec

    def _check(self, spec: AcceleratorSpec, *, precision: str | None, mode: str | None,
               batch_size: int | None, chips: int | None, stack: str | None = None) -> None:
        """Raise for values the controls cannot hold, naming the ones they can."""
        if precision is not None:
            spec.peak(precision)  # PrecisionError listing the chip's precisions
        if stack is not None:
            model_for(spec.family).stack(stack)  # CompileError listing the family's stacks
        if mode is not None and mode not in self._modes(spec):
            raise ModeError(f"{spec.name} has no execution mode {mode!r}",
                            fix=f"use one of {self._modes(spec)}", target=spec.name, mode=mode)
        for name, value in (("batch_size", batch_size), ("chips", chips)):
            if value is not None and (not isinstance(value, int) or not 1 <= value <= MAX_COUNT):
                raise CompileError(f"{name} must be a whole number from 1 to {MAX_COUNT:,}, got {value!r}",
                                   fix=f"e.g. {name}=4")

    # ---- compile and draw ----------------------------------------------------------------------------
    def _update(self, *, recompile: bool) -> None:
        start = time.perf_counter()
        if recompile:
            try:
                self.program = ak_compile(self.model, self.example_inputs, target=self.target,
                                          precision=self.precision, batch_size=self.batch_size,
                                          chips=self.chips, mode=self.mode, stack=self.stack)
                self.error = None
            except Exception as exc:  # shown, not raised: an observer's exception would vanish in the log
                self.program, self.error = None, exc
            self.last_compile_s = time.perf_counter() - start
        if self.program is not None:
            fig = self.views[self.view](self.program)
            self._summary = program_summary(self.program, requested_mode=self.mode)
        else:
            assert self.error is not None
            self._summary = error_summary(self.error, self._settings())
            fig = error_figure(f"{self.target}: compile failed", type(self.error).__name__)
        if fig.layout.width is None:
            fig.update_layout(width=self.figure_width)
        if fig.layout.height is None:  # see replace_figure: the front end cannot unset a height
            fig.update_layout(height=DEFAULT_HEIGHT)
        if fig.layout.title.font.size is None:  # the figures' long titles fit the narrower widget
            fig.update_layout(title_font_size=14)
        replace_figure(self.figure, fig)
        self._drawn = fig
        self.last_update_s = time.perf_counter() - start
        self.summary.value = self._summary_html()

    def _settings(self) -> str:
        chips = f"{self.chips} x " if self.chips > 1 else ""
        return f"{chips}{self.target}, {self.precision}, batch {self.batch_size}, mode {self.mode}, stack {self.stack}"

    def _summary_html(self) -> str:
        color = "#c00000" if self.error is not None else "inherit"
        timing = (f"compiled in {self.last_compile_s * 1e3:.0f} ms, "
                  f"updated in {self.last_update_s * 1e3:.0f} ms (measured)")
        style = f"white-space: pre-wrap; margin: 0; font-size: 11px; line-height: 1.35; color: {color}"
        return (f'<pre style="{style}">{html.escape(self.summary_text)}</pre>'
                f'<div style="color: #888; font-size: 11px">{timing}</div>')


# ---- summaries ---------------------------------------------------------------------------------------
def program_summary(prog: CompiledProgram, *, requested_mode: str = AUTO) -> list[str]:
    """A few lines on a compiled program: target, mode, kernels, bytes per chip and where they live."""
    plan = prog.memory_plan
    chips = f"{prog.chips} chips" if prog.chips > 1 else "1 chip"
    how = "auto: fastest that fits" if requested_mode == AUTO else "forced"
    lines = [  # short lines: the summary sits in a narrow column beside the figure
        f"target: {prog.spec.name} ({prog.spec.family})",
        f"{chips}, {prog.precision}, batch {prog.batch_size}",
        f"stack: {prog.stack}",
        f"mode: {prog.mode} ({how})",
        *(f"  {m}: {why}" for m, why in plan.candidates.items()),
        f"step time: {fmt_s(prog.report.step_time_s)} (modelled)",
        f"kernels: {len(prog.kernels)}, {prog.total_flops / 1e9:,.2f} GFLOP/step (counted)",
        f"placement: {len(prog.placement.regions)} regions",
        f"weights per chip: {fmt_bytes(plan.weights_bytes)} in {plan.placement.get('weights', '-')}",
        f"activations per chip: {fmt_bytes(plan.activation_bytes)} in "
        f"{plan.placement.get('activation', '-')}",
    ]
    if prog.chips > 1:
        lines.append(f"parallel: {prog.parallel}")
    if plan.replicas > 1:
        lines.append(f"replicas per chip: {plan.replicas}")
    return lines


def error_summary(error: Exception, settings: str) -> list[str]:
    """The compile error as the summary shows it: what was asked, then the error's message and fix."""
    head = type(error).__name__ + ("" if isinstance(error, AccelkitError) else " (unexpected: please report)")
    return [f"cannot compile {settings}", f"{head}:", *str(error).splitlines()]


def _call_soon(delay_s: float, fn: Callable[[], None]) -> None:
    """Run ``fn`` after ``delay_s`` on the kernel's event loop; do nothing where no loop runs (a script)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    loop.call_later(delay_s, fn)


def _batch_of(example_inputs: Any) -> int:
    """The example inputs' batch: the first tensor's first dimension (1 for a scalar)."""
    leaves = torch.utils._pytree.tree_flatten(example_inputs)[0]
    first = next((t for t in leaves if isinstance(t, torch.Tensor)), None)
    return int(first.shape[0]) if first is not None and first.dim() else 1


__all__ = ["AUTO", "VIEWS", "PlacementExplorer", "View", "default_precision", "error_figure",
           "error_summary", "program_summary", "register_view", "replace_figure", "targets"]
