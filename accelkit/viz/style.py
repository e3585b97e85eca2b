"""What every accelkit figure shares: one colour per chip, log axes in SI units, labels that don't collide.

- :func:`chip_color` gives each chip its own colour, in its family's hue (the GPUs are greens, the
  RDUs reds, ...), so two chips of one family never share a colour and a chip keeps its colour
  from figure to figure.
- :func:`log_axis` labels a log axis with SI prefixes and the unit ("10 GB", "100 TFLOP/s"): plotly's
  own labels switch to "10¹⁵" above tera and read 10⁹ as "1B" (billions, or bytes?).
- :func:`label_positions` picks, for the text of each scatter point, a side where it overlaps no
  other label.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from accelkit.families import REGISTRY, model_for
from accelkit.hardware import HOST_FAMILY, AcceleratorSpec, catalog, fmt_si, fmt_sig

FAMILY_SHADES: dict[str, tuple[str, ...]] = {family: model.shades for family, model in REGISTRY.items()}
"""Per family, the shades its chips take in catalog order (each family's model says); the first is the
family's own colour."""

FAMILY_COLORS = {family: shades[0] for family, shades in FAMILY_SHADES.items()}


def chip_color(spec: AcceleratorSpec) -> str:
    """The chip's own colour: its family's hue, a different shade per chip (catalog order)."""
    shades = model_for(spec.family).shades
    names = [s.name for s in catalog() if s.family == spec.family]
    host = spec.family == HOST_FAMILY
    if host and spec.name == "host":
        return shades[0]
    i = names.index(spec.name) if spec.name in names else len(names)
    if host:
        i += 1  # the host has the first shade
    return shades[i % len(shades)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values for a log axis over [lo, hi]: powers of ten, with 2 and 5 between when the span is short."""
    lo, hi = max(lo, 1e-300), max(hi, lo)
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if b - a <= 2:
        ticks = [m * 10.0 ** e for e in range(a, b + 1) for m in (1, 2, 5)]
    else:
        every = max(1, math.ceil((b - a) / 8))  # at most about 8 labels
        ticks = [10.0 ** e for e in range(a, b + 1) if (e - a) % every == 0]
    return [t for t in ticks if lo / 1.0001 <= t <= hi * 1.0001] or [10.0 ** a]


def log_axis(values: Sequence[float], unit: str, *, title: str | None = None, pad: float = 0.25,
             si: bool = True) -> dict[str, object]:
    """A plotly log-axis dict for ``values``: range padded by ``pad`` decades, SI tick labels with ``unit``
    ("10 GB"); with ``si=False`` plain grouped numbers ("20,000") for counts such as samples/s, whose unit
    the title names."""
    vs = [v for v in values if v and v > 0 and math.isfinite(v)] or [1.0]
    lo, hi = math.log10(min(vs)) - pad, math.log10(max(vs)) + pad
    ticks = log_ticks(10 ** lo, 10 ** hi)
    axis: dict[str, object] = {"type": "log", "range": [lo, hi], "tickvals": ticks,
                               "ticktext": [fmt_si(t, unit).strip() if si else fmt_sig(t) for t in ticks]}
    if title is not None:
        axis["title"] = title
    return axis


ROOT = "<root>"
"""What the compiler calls the model itself, for an op of no submodule (its own forward's code)."""
TOP_LEVEL = "model (top level)"
"""How a figure names :data:`ROOT` to a reader."""


def readable_layer(name: str) -> str:
    """A layer or lane name as a figure shows it: ``<root>`` (the model's own ops) reads "model (top level)",
    ``section <root>`` "section model (top level)"; every other name as it is."""
    return name.replace(ROOT, TOP_LEVEL)


_POSITIONS = ("top center", "bottom center", "middle right", "middle left", "top right", "bottom left",
              "top left", "bottom right")


def label_positions(xs: Sequence[float], ys: Sequence[float], labels: Sequence[str], *,
                    x_range: tuple[float, float], y_range: tuple[float, float], log: bool = True,
                    width_px: float = 620, height_px: float = 320, font_px: float = 12,
                    positions: Sequence[str] = _POSITIONS) -> list[str]:
    """A plotly ``textposition`` per point such that no two labels (nor a label and a point) overlap,
    where the plot's size allows; points are placed left to right, each on the first free side of
    ``positions`` (in order of preference). A label may have several lines ("<br>").

    ``x_range``/``y_range`` are the axis ranges (in log10 units when ``log``); the pixel size is the
    plot area's, roughly.
    """
    def px(v: float, rng: tuple[float, float], size: float) -> float:
        v = math.log10(v) if log else v
        return (v - rng[0]) / ((rng[1] - rng[0]) or 1) * size

    pts = [(px(x, x_range, width_px), px(y, y_range, height_px)) for x, y in zip(xs, ys, strict=True)]
    marker = 7.0
    placed: list[tuple[float, float, float, float]] = [(x - marker, y - marker, x + marker, y + marker)
                                                       for x, y in pts]
    out = [""] * len(pts)
    for i in sorted(range(len(pts)), key=lambda j: pts[j]):
        x, y = pts[i]
        lines = labels[i].split("<br>")
        w, h = 0.62 * font_px * max(map(len, lines)), font_px * 1.2 * len(lines)
        best, best_hits = positions[0], math.inf
        hits: float
        for pos in positions:
            vert, horiz = pos.split()
            cy = y + (marker + h / 2 if vert == "top" else -marker - h / 2 if vert == "bottom" else 0)
            cx = x + (marker + w / 2 if horiz == "right" else -marker - w / 2 if horiz == "left" else 0)
            box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
            hits = sum(1.0 for b in placed if box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3])
            hits += 0 if (0 <= box[0] and box[2] <= width_px and 0 <= box[1] and box[3] <= height_px) else 0.5
            if hits < best_hits:
                best, best_hits = pos, hits
            if hits == 0:
                break
        vert, horiz = best.split()
        cy = y + (marker + h / 2 if vert == "top" else -marker - h / 2 if vert == "bottom" else 0)
        cx = x + (marker + w / 2 if horiz == "right" else -marker - w / 2 if horiz == "left" else 0)
        placed.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
        out[i] = best
    return out


__all__ = ["FAMILY_COLORS", "FAMILY_SHADES", "ROOT", "TOP_LEVEL", "chip_color", "label_positions", "log_axis",
           "log_ticks", "readable_layer"]
