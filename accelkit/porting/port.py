"""``ak.port``: apply the rewrites a compatibility report asks for, and prove the numbers did not move.

The loop, one recipe at a time::

    report = check(model)                    # what stops it on the target
    while report asks for a recipe not yet applied:
        model' = recipe(model)               # on a deep copy; the caller's model is never touched
        compare model' with model on the example inputs and fresh random ones
        refuse (PortError) if the difference is beyond the recipe's stated tolerance
        report = check(model')               # the re-check may reveal what the first finding hid

A recipe runs only where a finding names it (``Finding.recipe``); what no recipe covers (a model
too large for the chip, ``x[mask]``) stays in ``report_after`` for a person to decide.
"""

from __future__ import annotations

import copy
import html
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import nn

from accelkit import boundary
from accelkit.boundary import flag, got, number, whole
from accelkit.errors import ArgumentError, ModelError, PortError
from accelkit.graph.capture import user_code
from accelkit.graph.values import compare
from accelkit.porting.check import (
    CompatibilityReport,
    Finding,
    check,
    check_dynamic_dims,
    resolve_target,
    split_inputs,
)
from accelkit.porting.recipes import (
    RECIPE_ORDER,
    RECIPES,
    Change,
    PortContext,
    Sample,
    Tolerance,
    tensor_leaves,
)


@dataclass
class PortResult:
    """The rewritten model, what changed, the reports before and after, and the numerical check.

    ``max_abs_error`` is the largest difference between the ported and the original model's
    outputs over every input set checked (the example and ``trials`` fresh random ones);
    ``tolerance`` the bound it had to meet (the sum of the applied recipes' tolerances unless one
    was given). ``verified`` is False only when nothing could be run (a meta-device model).
    ``example_inputs`` are the example inputs as the ported model takes them; ``convert_inputs``
    does the same for new inputs (int32 indices, float32 values, labels appended...).
    """

    model: nn.Module
    target: str
    changes: list[Change]
    report_before: CompatibilityReport
    report_after: CompatibilityReport
    max_abs_error: float
    tolerance: Tolerance
    verified: bool
    example_inputs: Any
    samples_checked: int = 0
    notes: list[str] = field(default_factory=list)
    _ctx: PortContext | None = field(default=None, repr=False)

    @property
    def recipes(self) -> list[str]:
        """The recipes applied, in order."""
        return list(dict.fromkeys(c.recipe for c in self.changes))

    def convert_inputs(self, inputs: Any, labels: Any = None) -> Any:
        """``inputs`` (as the original model takes them) converted for the ported model."""
        args, kwargs = split_inputs(inputs)
        s = self._ctx.convert(Sample(args, kwargs, labels)) if self._ctx else Sample(args, kwargs, labels)
        return _as_inputs(s)

    def headline(self) -> str:
        check_txt = (f"verified: max abs error {self.max_abs_error:.1e} within tolerance {self.tolerance} "
                     f"on {self.samples_checked} input set(s)" if self.verified
                     else "NOT verified numerically (" + "; ".join(self.notes or ["nothing was run"]) + ")")
        return f"port of {self.report_before.model_name} to {self.target}: {len(self.changes)} change(s), {check_txt}"

    def summary(self) -> str:
        """Headline, the reports' verdicts and one line per change (stable text for notebooks)."""
        lines = [self.headline(), f"  before: {self.report_before.headline()}",
                 f"  after:  {self.report_after.headline()}"]
        lines += [f"  {c.recipe}: {c.what} [{c.module}] at {c.source or '-'}" for c in self.changes]
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [self.headline(), f"before: {self.report_before.headline()}",
                 f"after:  {self.report_after.headline()}"]
        if self.changes:
            rows = [(c.recipe, c.module, c.source or "-", c.what,
                     "-" if c.max_abs_error is None else f"{c.max_abs_error:.1e}") for c in self.changes]
            head = ("recipe", "module", "source", "what", "step error")
            widths = [min(60, max(len(r[i]) for r in [head, *rows])) for i in range(len(head))]
            fmt = "  ".join(f"{{:<{w}}}" for w in widths)
            lines += [fmt.format(*head), "-" * (sum(widths) + 2 * (len(widths) - 1))]
            lines += [fmt.format(*[x if len(x) <= 60 else x[:57] + "..." for x in r]) for r in rows]
        for name in self.recipes:
            lines.append(f"tolerance {name}: {RECIPES[name].tolerance} - {RECIPES[name].tolerance.why}")
        if self.report_after.findings:
            lines.append("still reported after porting:")
            lines += [f"  {f.summary()}" for f in self.report_after.findings]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(
            f"<tr><td>{e(c.recipe)}</td><td>{e(c.module)}</td><td>{e(c.source or '-')}</td><td>{e(c.what)}</td>"
            f"<td>{'-' if c.max_abs_error is None else f'{c.max_abs_error:.1e}'}</td>"
            f"<td>{e(str(RECIPES[c.recipe].tolerance))}</td></tr>" for c in self.changes)
        table = ("<table><tr><th>recipe</th><th>module</th><th>source</th><th>what</th><th>step error</th>"
                 f"<th>tolerance</th></tr>{rows}</table>" if rows else "")
        return (f"<p><b>{e(self.headline())}</b></p><p>before: {e(self.report_before.headline())}<br>"
                f"after: {e(self.report_after.headline())}</p>{table}")


# ------------------------------------------------------------------------------------------
# inputs: the example, fresh random ones, conversions
# ------------------------------------------------------------------------------------------
def _as_inputs(s: Sample) -> Any:
    if s.kwargs and not s.args:
        return dict(s.kwargs)
    return tuple(s.args)


def _clone(s: Sample) -> Sample:
    def c(v: Any) -> Any:
        return v.clone() if isinstance(v, torch.Tensor) else v

    return Sample(tuple(c(a) for a in s.args), {k: c(v) for k, v in s.kwargs.items()}, c(s.labels))


def _normalize_dims(model: nn.Module, example: Sample, dynamic_dims: Mapping[int | str, int | Sequence[int]] | None
                    ) -> dict[int | str, list[int]] | None:
    """Declared variable dims keyed by position (positional inputs) or keyword name; wrappers keep positions."""
    if not dynamic_dims:
        return None
    try:
        names = list(inspect.signature(model.forward).bind(*example.args, **example.kwargs).arguments)
    except (TypeError, ValueError):
        names = [f"arg{i}" for i in range(len(example.args))] + list(example.kwargs)
    out: dict[int | str, list[int]] = {}
    for key, dims in dynamic_dims.items():
        if isinstance(key, str) and key in names and names.index(key) < len(example.args):
            key = names.index(key)
        elif isinstance(key, str) and key not in example.kwargs:
            raise ArgumentError(f"dynamic_dims names input {key!r}, but forward's inputs are {names}",
                                fix="key dynamic_dims by argument name or position")
        out[key] = [dims] if isinstance(dims, int) else list(dims)
    return out


def _value(s: Sample, key: int | str) -> Any:
    return s.args[key] if isinstance(key, int) else s.kwargs[key]


def _fresh(t: torch.Tensor, g: torch.Generator, shape: Sequence[int] | None = None) -> torch.Tensor:
    shape = list(t.shape) if shape is None else list(shape)
    if t.dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if t.is_complex():  # real and imaginary parts drawn like a float input's
        return torch.randn(shape, generator=g, dtype=t.dtype)
    if t.is_floating_point():
        tf = t.double()
        std = float(tf.std()) if t.numel() > 1 and float(tf.std()) > 0 else 1.0
        return (torch.randn(shape, generator=g, dtype=torch.float64) * std + float(tf.mean())).to(t.dtype)
    lo, hi = (int(t.min()), int(t.max())) if t.numel() else (0, 1)
    return torch.randint(lo, hi + 1, shape, generator=g, dtype=t.dtype)


def _fresh_samples(example: Sample, trials: int, seed: int, dims: dict[int | str, list[int]] | None) -> list[Sample]:
    """The example, then ``trials`` random inputs drawn like it (every other one shorter, if dims vary)."""
    g = torch.Generator().manual_seed(seed)
    out = [example]
    sizes = {k: int(_value(example, k).shape[d[0]]) for k, d in (dims or {}).items()}
    for i in range(trials):
        resize: dict[int | str, tuple[int, int]] = {}  # input -> (dim, new size)
        if dims and i % 2 == 0:  # every other sample: a shorter length
            size = sizes[next(iter(dims))]
            new = int(torch.randint(max(1, size // 2), size + 1, (1,), generator=g)) if size > 1 else size
            resize = {k: (d[0], new) for k, d in dims.items()}

        def make(key: int | str, v: Any, resize: dict[int | str, tuple[int, int]] = resize) -> Any:
            if not isinstance(v, torch.Tensor):
                return v
            shape = list(v.shape)
            if key in resize:
                d, new = resize[key]
                shape[d] = new
            return _fresh(v, g, shape)

        args = tuple(make(k, a) for k, a in enumerate(example.args))
        kwargs = {k: make(k, v) for k, v in example.kwargs.items()}
        labels = example.labels
        if isinstance(labels, torch.Tensor):
            shape = list(labels.shape)
            if resize:  # labels that run along the variable dimension get the new length too
                k0, (d, new) = next(iter(resize.items()))
                if labels.dim() > d and shape[d] == sizes[k0]:
                    shape[d] = new
            labels = _fresh(labels, g, shape)
        out.append(Sample(args, kwargs, labels))
    return out


def _run(model: nn.Module, samples: list[Sample], ctx_convert: Callable[[Sample], Sample]) -> list[Any]:
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            outs = []
            for i, s in enumerate(samples):
                s = ctx_convert(_clone(s))
                torch.manual_seed(1234 + i)  # the same randomness (if any) for every model compared
                outs.append(model(*s.args, **s.kwargs))
            return outs
    finally:
        model.train(was)


def _compare(got: list[Any], ref: list[Any], tol: Tolerance, recipe: str) -> tuple[float, bool]:
    worst, ok = 0.0, True
    for g, r in zip(got, ref, strict=True):
        diff = compare(g, r)  # the one comparator (accelkit.graph.values)
        if not diff.same_structure:
            raise PortError(f"recipe {recipe} changed what the model returns: "
                            f"{[list(s) for s in diff.shapes_want]} -> {[list(s) for s in diff.shapes_got]}",
                            recipe=recipe)
        worst = max(worst, diff.max_abs)
        for a, b in zip(tensor_leaves(g), tensor_leaves(r), strict=True):
            a64, b64 = a.detach().double(), b.detach().double()
            both_nan = torch.isnan(a64) & torch.isnan(b64)
            ok = ok and tol.allows(torch.where(both_nan, 0.0, a64), torch.where(both_nan, 0.0, b64))
    return worst, ok


def _grads(model: nn.Module, sample: Sample, convert: Callable[[Sample], Sample]) -> dict[str, torch.Tensor] | None:
    """Parameter gradients (by name, float64) of the sum of forward's float outputs, in train mode.

    Runs on a copy (train mode updates BatchNorm statistics; the caller's model is never touched),
    with the same seed for every model compared; None when no output carries a gradient.
    """
    work = copy.deepcopy(model).train()
    s = convert(_clone(sample))
    torch.manual_seed(1234)
    with torch.enable_grad():
        outs = [t for t in tensor_leaves(work(*s.args, **s.kwargs)) if t.requires_grad and t.is_floating_point()]
        if not outs:
            return None
        sum(o.double().sum() for o in outs).backward()  # type: ignore[union-attr]
    return {n: p.grad.detach().double() for n, p in work.named_parameters() if p.grad is not None}


def _by_name(name: str, grads: dict[str, torch.Tensor]) -> torch.Tensor | None:
    """The gradient of parameter ``name`` of the model before a step, in the model after it (wrappers add prefixes)."""
    hits = [g for n, g in grads.items() if n == name or n.endswith("." + name)]
    return hits[0] if len(hits) == 1 else None


def _compare_grads(got: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], tol: Tolerance
                   ) -> tuple[float, list[str]]:
    """Largest gradient difference and the parameters whose gradients turned NaN/inf or moved beyond ``tol``."""
    worst, bad = 0.0, []
    for name, r in ref.items():
        g = _by_name(name, got)
        if g is None or g.shape != r.shape:
            continue
        newly_bad = ~torch.isfinite(g) & torch.isfinite(r)
        if bool(newly_bad.any()):
            bad.append(f"{name} (NaN/inf)")
            worst = math.inf
            continue
        fin = torch.isfinite(g) & torch.isfinite(r)
        d = float((g - r).abs()[fin].max()) if bool(fin.any()) else 0.0
        worst = max(worst, d)
        if not tol.allows(g[fin], r[fin]):
            bad.append(name)
    return worst, bad


def _grad_tolerance(tol: Tolerance) -> Tolerance:
    return Tolerance(max(10 * tol.atol, 1e-5), max(10 * tol.rtol, 1e-4),
                     "gradients pass the rewritten ops twice (forward and backward): ten times the outputs' "
                     "tolerance, at least float32 reassociation (1e-5 + 1e-4 relative)")


def _check_arguments(model: Any, example_inputs: Any, tolerance: Any, *, training: Any, dynamic_dims: Any,
                     buckets: Any, pad_value: Any, loss_fn: Any, trials: Any, seed: Any) -> Tolerance | None:
    """ak.port's boundary: every argument checked before any work (a wrong one is the caller's, never a recipe's);
    returns the caller's tolerance (None: each recipe's own)."""
    boundary.instance("model", model, nn.Module, takes="an nn.Module", example="ak.port(MyNet(), (x,), target='tsp')")
    flag("training", training)
    whole("trials", trials, at_least=0, example="trials=3")
    boundary.seed("seed", seed, example="seed=0")
    number("pad_value", pad_value, at_least=-math.inf, example="pad_value=0")
    boundary.function("loss_fn", loss_fn, takes="a function of (outputs, labels) returning the loss",
                      example="loss_fn=torch.nn.CrossEntropyLoss()")
    if buckets is not None:
        if not isinstance(buckets, (list, tuple)) or not buckets:
            raise ArgumentError(f"buckets must be a list of lengths, not {got(buckets)}", fix="e.g. buckets=[64, 128]")
        for b in buckets:
            whole("each of buckets", b, example="buckets=[64, 128]")
    check_dynamic_dims(model, example_inputs, dynamic_dims)
    if tolerance is None or isinstance(tolerance, Tolerance):
        return tolerance
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        raise ArgumentError(f"tolerance must be a number (the largest absolute difference allowed) or a "
                            f"Tolerance, not {got(tolerance)}",
                            fix="e.g. tolerance=1e-4, or accelkit.porting.recipes.Tolerance(atol=1e-5, rtol=1e-3)")
    return Tolerance(number("tolerance", tolerance, example="tolerance=1e-4"), 0.0, "given by the caller")


def _has_meta(model: nn.Module, sample: Sample) -> bool:
    tensors = [*model.parameters(), *model.buffers(), *tensor_leaves((sample.args, sample.kwargs))]
    return any(t.device.type == "meta" for t in tensors)


# ------------------------------------------------------------------------------------------
# the public function
# ------------------------------------------------------------------------------------------
def port(
    model: nn.Module,
    example_inputs: Any,
    target: Any = "wse2",
    tolerance: float | Tolerance | None = None,
    *,
    training: bool = False,
    dynamic_dims: Mapping[int | str, int | Sequence[int]] | None = None,
    buckets: Sequence[int] | None = None,
    pad_value: float = 0,
    loss_fn: Callable[..., torch.Tensor] | None = None,
    labels: Any = None,
    trials: int = 3,
    seed: int = 0,
) -> PortResult:
    """Rewrite a copy of ``model`` so it runs on ``target``, checking the numbers after every recipe.

    Applies, one at a time and only where :func:`check`'s findings name them, the recipes in
    :data:`accelkit.porting.recipes.RECIPES` (each with its stated tolerance). Every step is
    compared with the model before it on ``example_inputs`` and ``trials`` fresh random inputs
    drawn like them (shorter lengths too, when ``dynamic_dims`` is given); a step beyond its
    tolerance raises :class:`~accelkit.errors.PortError` naming the recipe, the error measured
    and the tolerance. ``tolerance`` (a number = absolute tolerance, or a ``Tolerance``) replaces
    every recipe's own.

    ``dynamic_dims``/``buckets``/``pad_value`` drive ``pad-to-bucket``; ``training``/``loss_fn``/
    ``labels`` drive ``loss-in-forward`` (targets whose SDK computes the loss inside the model).
    The original model is never modified.
    """
    spec = resolve_target(target)
    override = _check_arguments(model, example_inputs, tolerance, training=training, dynamic_dims=dynamic_dims,
                                buckets=buckets, pad_value=pad_value, loss_fn=loss_fn, trials=trials, seed=seed)
    args, kwargs = split_inputs(example_inputs)
    example = Sample(args, kwargs, labels)
    dims = _normalize_dims(model, example, dynamic_dims)
    model_name = type(model).__name__
    report = before = check(model, example_inputs, spec, training=training, dynamic_dims=dims, name=model_name)
    ctx = PortContext(spec=spec, dynamic_dims=dims, buckets=tuple(buckets) if buckets else None,
                      pad_value=pad_value, loss_fn=loss_fn)
    numeric = not _has_meta(model, example)
    samples = _fresh_samples(example, trials, seed, dims) if numeric else [example]
    notes: list[str] = [] if numeric else ["the model (or its inputs) is on the meta device: no numbers to compare"]
    ref = _reference_outputs(model, example_inputs, samples, loss_fn, labels) if numeric else []
    work, prev_model, prev = copy.deepcopy(model), model, ref
    changes: list[Change] = []
    applied: list[str] = []
    while (nxt := _next_step(report, applied)) is not None:
        step, findings = nxt
        hooks_before, convert_before = len(ctx.ref_hooks), list(ctx.transforms)
        candidate, new_changes = RECIPES[step].apply(work, findings, ctx)
        applied.append(step)
        err = None
        if numeric:
            prev, err = _checked_step(step, candidate, new_changes, prev_model, prev, samples, example, ctx,
                                      hooks_before, convert_before, override or RECIPES[step].tolerance, training,
                                      notes)
        changes += [replace(c, max_abs_error=err) for c in new_changes]
        work = prev_model = candidate
        report = check(work, _as_inputs(ctx.convert(_clone(example))), spec, training=training,
                       dynamic_dims=ctx.dynamic_dims, name=model_name)
    total = override or _total_tolerance(applied)
    max_err = _check_together(prev, ref, samples, ctx, applied, total) if numeric else math.nan
    if report.errors:
        notes.append("errors remain that no recipe cleared (see report_after): they need a person")
    return PortResult(model=work, target=spec.name, changes=changes, report_before=before, report_after=report,
                      max_abs_error=max_err, tolerance=total, verified=numeric,
                      example_inputs=_as_inputs(ctx.convert(_clone(example))), samples_checked=len(samples) if numeric else 0,
                      notes=notes, _ctx=ctx)


def _reference_outputs(model: nn.Module, example_inputs: Any, samples: list[Sample],
                       loss_fn: Callable[..., torch.Tensor] | None, labels: Any) -> list[Any]:
    """The user's model on every sample: what each rewritten model must reproduce. Refuses a forward that
    returns no tensor (nothing to check), and runs ``loss_fn`` once so its own failure is reported as the user's."""
    with user_code(model, example_inputs):  # the user's own model failing is not a recipe's fault
        ref = _run(model, samples, lambda s: s)
    if not all(tensor_leaves(r) for r in ref):
        kind = type(next(r for r in ref if not tensor_leaves(r))).__name__
        raise ModelError(f"{type(model).__name__}'s forward returns a {kind} with no tensor in it: there are no "
                         "numbers to check a rewritten model against, so a port could not be verified",
                         fix="make forward return its output tensor(s) (a tensor, or a tuple/dict of tensors)")
    if loss_fn is not None and labels is not None:
        with user_code(model, example_inputs, "loss_fn(outputs, labels)"):
            loss_fn(tensor_leaves(ref[0])[0], labels)
    return ref


def _next_step(report: CompatibilityReport, applied: list[str]) -> tuple[str, list[Finding]] | None:
    """The next recipe to apply (in :data:`RECIPE_ORDER`) and the findings it answers; None when none is left."""
    wanted = {f: _next_recipe(f.recipe, applied) for f in report.findings if f.recipe}
    todo = [r for r in RECIPE_ORDER if r in wanted.values() and r not in applied]
    if not todo:
        return None
    return todo[0], [f for f, r in wanted.items() if r == todo[0]]


def _checked_step(step: str, candidate: nn.Module, new_changes: list[Change], prev_model: nn.Module,
                  prev: list[Any], samples: list[Sample], example: Sample, ctx: PortContext, hooks_before: int,
                  convert_before: list[Callable[[Sample], Sample]], tol: Tolerance, training: bool,
                  notes: list[str]) -> tuple[list[Any], float]:
    """Run one recipe's rewritten model on the samples and compare it with the model before it (through the
    reference hooks the recipe added), then its gradients where its outputs should not change. Returns its
    outputs and the largest difference; raises :class:`PortError` beyond ``tol``."""
    try:
        got = _run(candidate, samples, ctx.convert)
    except PortError:
        raise
    except Exception as exc:
        raise PortError(f"recipe {step} broke the model: {type(exc).__name__}: {str(exc).splitlines()[0]}",
                        recipe=step, where=", ".join(c.source or "?" for c in new_changes[:1])) from exc
    expected = prev
    for hook in ctx.ref_hooks[hooks_before:]:
        expected = [hook(out, _convert_with(convert_before, s)) for out, s in zip(expected, samples, strict=True)]
    err, ok = _compare(got, expected, tol, step)
    if not ok:
        where = "; ".join(f"{c.module} at {c.source or '?'}" for c in new_changes if c.source) or None
        raise PortError(
            f"recipe {step} refused: it changes the outputs by up to {err:.3g} (max abs), beyond its "
            f"tolerance {tol} ({tol.why})", recipe=step, error=err, tolerance=str(tol), where=where,
            fix="leave this finding for a person, or pass a looser tolerance= if the difference is acceptable")
    if len(ctx.ref_hooks) == hooks_before:  # same outputs expected: the gradients must match too
        bad_grads = _check_grads(prev_model, candidate, example, convert_before, ctx.convert, tol, step,
                                 new_changes)
        if bad_grads and training:
            raise bad_grads
        if bad_grads:
            notes.append(f"inference only: {bad_grads.message}; port with training=True refuses it")
    return got, err


def _check_together(got: list[Any], ref: list[Any], samples: list[Sample], ctx: PortContext, applied: list[str],
                    total: Tolerance) -> float:
    """All the recipes together against the user's model (through every reference hook), within their combined
    tolerance; returns the largest difference."""
    expected = ref
    for hook in ctx.ref_hooks:
        expected = [hook(out, s) for out, s in zip(expected, samples, strict=True)]
    max_err, ok = _compare(got, expected, total, "+".join(applied) or "none")
    if not ok:
        raise PortError(f"recipes {', '.join(applied)} together change the outputs by up to {max_err:.3g}, "
                        f"beyond their combined tolerance {total}", recipe="+".join(applied), error=max_err,
                        tolerance=str(total))
    return max_err


def _check_grads(before: nn.Module, after: nn.Module, example: Sample, convert_before: list[Callable[[Sample], Sample]],
                 convert_after: Callable[[Sample], Sample], tol: Tolerance, step: str, changes: list[Change]
                 ) -> PortError | None:
    """Why ``step`` is not safe to train through: a backward on the same inputs and seed, in train mode, gives
    other parameter gradients (or fails). None when the gradients agree."""
    ref = _grads(before, example, lambda s: _convert_with(convert_before, s))
    if ref is None:
        return None
    try:
        got = _grads(after, example, convert_after)
    except Exception as exc:
        return PortError(f"recipe {step} breaks training: backward through the rewritten model fails "
                        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})", recipe=step,
                        fix="use the ported model for inference only, or rewrite this part by hand")
    gtol = _grad_tolerance(tol)
    worst, bad = _compare_grads(got or {}, ref, gtol)
    if bad:
        where = "; ".join(f"{c.module} at {c.source or '?'}" for c in changes if c.source) or None
        what = "turns gradients NaN" if math.isinf(worst) else f"changes gradients by up to {worst:.3g} (max abs)"
        return PortError(
            f"recipe {step} is inference-only: its outputs match, but it {what} for {', '.join(bad[:4])}"
            f"{' ...' if len(bad) > 4 else ''} (train mode, the same inputs and seed; gradient tolerance {gtol}), "
            f"so a model trained after it would not learn what the original learns", recipe=step,
            error=worst, tolerance=str(gtol), where=where,
            fix="rewrite this part by hand so both branches are safe to differentiate (e.g. clamp before sqrt), "
                "or port for inference only with the original model kept for training")
    return None


def _next_recipe(name: str, applied: list[str]) -> str:
    """The recipe a finding asks for, or its follow-up when that one was applied and did not clear it."""
    while name in applied and RECIPES[name].then:
        name = RECIPES[name].then or name
    return name


def _convert_with(transforms: list[Callable[[Sample], Sample]], s: Sample) -> Sample:
    for t in transforms:
        s = t(s)
    return s


def _total_tolerance(applied: list[str]) -> Tolerance:
    total = Tolerance(0.0, 0.0, "no recipe applied: outputs must be identical")
    for name in applied:
        total = total + RECIPES[name].tolerance
    return total


# ------------------------------------------------------------------------------------------
# exercise (notebook 03): replace a data-dependent `if` by torch.where, by hand
# ------------------------------------------------------------------------------------------
class GatedMLP(nn.Module):
    """The exercise's model: a Python ``if`` on a tensor picks the activation, so it cannot be captured.

    Rewrite ``forward`` with ``torch.where`` (keep the layers ``fc1`` and ``fc2``), then call
    :func:`exercise_check` on your model.
    """

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, d)
        self.fc2 = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        if h.mean() > 0:  # the value of h decides which code runs: no graph can hold this
            h = torch.relu(h)
        else:
            h = torch.tanh(h)
        return self.fc2(h)


def exercise_check(model: nn.Module, target: str = "tsp", d: int = 16) -> bool:
    """Check the learner's rewrite of :class:`GatedMLP`: it captures, runs on ``target`` and matches.

    Prints one PASS/FAIL line per check and returns True when all pass.
    """
    ref = GatedMLP(d)
    results = []
    try:
        ref.load_state_dict(model.state_dict())
        results.append((True, "same layers as GatedMLP (fc1, fc2)"))
    except Exception as exc:  # wrong parameter names or shapes
        results.append((False, f"keep the layers fc1 and fc2 of GatedMLP ({type(exc).__name__})"))
    x0 = torch.randn(4, d, generator=torch.Generator().manual_seed(0))
    report = check(model, (x0,), target)
    flow = report.find(kind="data-dependent-control-flow") + report.find(kind="host-sync")
    results.append((not flow, "captures as one graph: no data-dependent `if` left" if not flow
                    else f"still a data-dependent branch{' at ' + flow[0].source if flow[0].source else ''}: "
                         f"{flow[0].fix}"))
    results.append((report.ok, f"no errors on {target}" if report.ok
                    else f"{len(report.errors)} error(s) on {target}: " + "; ".join(f.summary() for f in report.errors)))
    if results[0][0]:
        g = torch.Generator().manual_seed(1)
        branches = {True: 0, False: 0}
        worst = 0.0
        with torch.no_grad():
            for i in range(16):
                x = torch.randn(4, d, generator=g) + (3.0 if i % 2 else -3.0)
                branches[bool(ref.fc1(x).mean() > 0)] += 1
                worst = max(worst, float((model(x) - ref(x)).abs().max()))
        both = all(branches.values())
        results.append((worst <= 1e-6, f"same outputs as GatedMLP on 16 inputs "
                                       f"({'both branches taken' if both else 'one branch only'}), "
                                       f"max abs error {worst:.1e}"))
    for ok, text in results:
        print(f"[{'PASS' if ok else 'FAIL'}] {text}")
    solved = all(ok for ok, _ in results)
    print("Exercise solved." if solved else "Not yet: fix the FAIL lines above and run this cell again.")
    return solved


__all__ = ["GatedMLP", "PortResult", "exercise_check", "port"]

