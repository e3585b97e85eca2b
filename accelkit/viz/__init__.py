"""Plotly figures: each function returns a ``plotly.graph_objects.Figure`` and never shows it."""

from __future__ import annotations

from accelkit.viz.catalog import (
    METRICS,
    catalog_bars,
    catalog_scatter,
    family_diagram,
    memory_tiers_chart,
    spectrum,
)

__all__ = [
    "METRICS",
    "catalog_bars",
    "catalog_scatter",
    "family_diagram",
    "memory_tiers_chart",
    "spectrum",
]
