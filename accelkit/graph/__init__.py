"""Graph capture to accelkit's ATen-level IR, with per-node cost."""

from accelkit.graph.capture import capture
from accelkit.graph.ir import Graph, Node, TensorMeta

__all__ = ["Graph", "Node", "TensorMeta", "capture"]
