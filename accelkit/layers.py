"""accelkit's layers, bottom first: each imports only from the layers below it (function-local imports count too).

Data only: ``tests/test_layers.py`` checks the code against it, and checks its names against the layer list in
the design document (``DESIGN.md``, "Layers"). Each layer is ``(name, modules)``; a module belongs to the layer of
the longest prefix that names it.
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # AccelkitError and its subclasses, and what imports nothing else of accelkit: the argument checks, the
    # version, the constants registry, the cache object
    ("errors", ("accelkit.errors", "accelkit.boundary", "accelkit._version", "accelkit.constants",
                "accelkit.cache", "accelkit.layers")),
    # capture and the IR; specs as cited data (precision names live in accelkit.hardware.precision); datasets
    ("graph, hardware, precision", ("accelkit.graph", "accelkit.hardware", "accelkit.data", "accelkit.devtools")),
    ("porting", ("accelkit.porting",)),
    # pure, typed cost values (sim's report, constants and host modules are the same names, kept for readers)
    ("cost", ("accelkit.cost", "accelkit.sim.report", "accelkit.sim.constants", "accelkit.sim.host")),
    # the families' execution models, and the step estimate that composes them
    ("families", ("accelkit.families", "accelkit.sim", "accelkit.sim.estimate")),
    ("compiler", ("accelkit.compiler",)),
    # what composes the others: compile's search, serve, validate, bench, peers, the host's validation, the
    # profiler, sweeps (accelkit.sim.serve, .validate, .bench and .peers are the workflow modules under their old
    # names; sim's measured, stacks and host_validation still live in sim/)
    ("workflow", ("accelkit.workflow", "accelkit.sim.serve", "accelkit.sim.validate", "accelkit.sim.measured",
                  "accelkit.sim.stacks", "accelkit.sim.peers", "accelkit.sim.bench", "accelkit.sim.host_validation",
                  "accelkit.profiler")),
    # the vendor SDK facades live in accelkit.facades (its old_paths hook keeps accelkit.samba, ... importing)
    ("runtime, facades", ("accelkit.runtime", "accelkit.runner", "accelkit.facades", "accelkit.vendor",
                          "accelkit.zoo")),
    ("viz", ("accelkit.viz",)),
    # GroqFlow's facade draws groqview() with accelkit's own figures, so it sits above viz; the hub is the workshop
    # room (it reads teach's verdicts); the package root imports the public API on purpose
    ("widgets, cli, box, tour", ("accelkit.widgets", "accelkit.cli", "accelkit.box", "accelkit.tour",
                                 "accelkit.teach", "accelkit.hub", "accelkit.facades.groqflow", "accelkit.__main__",
                                 "accelkit")),
)
"""The layers, bottom first, as ``(name, module prefixes)``."""

__all__ = ["LAYERS"]
