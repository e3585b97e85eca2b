"""Notebook widgets: thin shells of controls over accelkit's figure functions.

    from accelkit.widgets import PlacementExplorer
    PlacementExplorer(model, inputs, target="sn40l")

Importing this package needs ipywidgets and plotly's FigureWidget (which needs anywidget);
``import accelkit`` does not import it.
"""

from __future__ import annotations

from accelkit.widgets.explorer import VIEWS, PlacementExplorer, View, register_view, replace_figure

__all__ = ["VIEWS", "PlacementExplorer", "View", "register_view", "replace_figure"]
