"""Notebook widgets: thin shells of controls over accelkit's figure functions.

    from accelkit.widgets import PlacementExplorer
    PlacementExplorer(model, inputs, target="sn40l")
    WorkflowDashboard(model, inputs, target="sn40l")  # profile, check, port, compile, run as tabs
    CompareTargets(model, inputs)                     # every target: a sortable table, bars, a detail

Importing this package needs ipywidgets and plotly's FigureWidget (which needs anywidget);
``import accelkit`` does not import it.
"""

from __future__ import annotations

from accelkit.widgets.compare import CompareTargets
from accelkit.widgets.dashboard import WorkflowDashboard
from accelkit.widgets.explorer import VIEWS, PlacementExplorer, View, register_view, replace_figure

__all__ = ["VIEWS", "PlacementExplorer", "View", "register_view", "replace_figure"]
__all__ += ["CompareTargets", "WorkflowDashboard"]
