"""``popdist``: Graphcore's library for runs spread over several host processes (launched with ``poprun``).

A script asks ``popdist.isPopdistEnvSet()`` whether ``poprun`` launched it; here nothing did, so it is False
and the script takes its single-process path (Graphcore's popdist example does exactly that when run with
plain ``python``). The other queries answer as one instance with one replica would; ``popdist.poptorch.Options``
is PopTorch's options object. To model data parallelism over several IPUs, set
``opts.replicationFactor(n)`` in the script instead.
"""

from __future__ import annotations

from accelkit.facades.poptorch.options import Options


def isPopdistEnvSet() -> bool:  # noqa: N802 - popdist's name
    """False: the script was not launched by ``poprun`` (it runs as one process here)."""
    return False


def getInstanceIndex() -> int:  # noqa: N802 - popdist's name
    return 0


def getNumInstances() -> int:  # noqa: N802 - popdist's name
    return 1


def getNumLocalReplicas() -> int:  # noqa: N802 - popdist's name
    return 1


def getNumTotalReplicas() -> int:  # noqa: N802 - popdist's name
    return 1


def getReplicaIndexOffset() -> int:  # noqa: N802 - popdist's name
    return 0


def init() -> None:
    """Set up the multi-process run (nothing to set up in one process)."""


class _PoptorchNamespace:
    """``popdist.poptorch``: ``Options`` is PopTorch's (one instance: no popdist settings to add)."""

    Options = Options


poptorch = _PoptorchNamespace()

__all__ = ["getInstanceIndex", "getNumInstances", "getNumLocalReplicas", "getNumTotalReplicas",
           "getReplicaIndexOffset", "init", "isPopdistEnvSet", "poptorch"]
