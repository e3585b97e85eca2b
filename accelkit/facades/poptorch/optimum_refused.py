"""optimum-graphcore's modules that accelkit does not answer (``optimum.graphcore.pipelines``, ``.modeling_utils``,
``.models``, ``.data``, ``.generation``, ``.diffusers``...): importing one stops the script at its import line,
naming what is answered (:mod:`accelkit.facades.poptorch.optimum`) and what to write instead."""

from __future__ import annotations

from accelkit.facades.poptorch.optimum import refuse_module

refuse_module("this module of optimum.graphcore (its pipelines, pipelined models, data collators, generation or "
              "diffusers)")
