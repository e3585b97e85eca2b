"""What the 2.0 Model Zoo's runner reads from the appliance client, ``cerebras_appliance``: its debug settings
(``run_utils.get_debug_args``) and its NaN error (``errors.ApplianceNanError``).

The appliance client sends a compiled program to a Cerebras cluster and streams its data; accelkit simulates the
system behind it, so the client's settings are kept and listed at the end of the run (they tune the cluster's
coordinator, workers and memory), and change nothing in what is computed. Release 1.9's runner imports the client's
``AP_DISABLED`` on every path and, on its CSX path, the rest of the protobuf stack (``cerebras_appliance.pb``): the
first answered, the rest refused (:mod:`accelkit.facades.cerebras.zoo_r1`).
"""

from __future__ import annotations

from typing import Any

from accelkit.runtime import facade_log


class ApplianceNanError(Exception):
    """``cerebras_appliance.errors.ApplianceNanError``: the runner raises it when a loss is NaN or infinite."""


class DebugArgs:
    """``DebugArgs``, the appliance's debug settings message: any field can be read (an empty sub-message) or set
    (recorded as a hardware-only option), as a protobuf message's can."""

    def __init__(self, path: str = "debug_args") -> None:
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_fields", {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        fields = object.__getattribute__(self, "_fields")
        if name not in fields:
            fields[name] = DebugArgs(f"{object.__getattribute__(self, '_path')}.{name}")
        return fields[name]

    def MergeFrom(self, other: Any) -> None:  # noqa: N802 - protobuf's name (the 2.x Trainer merges a file's settings)
        for name, value in object.__getattribute__(other, "_fields").items() if isinstance(other, DebugArgs) else ():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_fields")[name] = value
        facade_log.accept("Cerebras", f"{object.__getattribute__(self, '_path')}.{name} = {value!r}",
                          "sets the appliance's resources (coordinator, worker, activation and weight servers' memory) "
                          "for the job on the cluster; the simulated run is the same")


def get_debug_args(debug_args_path: str | None = None) -> DebugArgs:
    """``cerebras_appliance.run_utils.get_debug_args(path)``: the appliance's debug settings (a file of them, when
    given, is recorded, not read: it only tunes the cluster)."""
    if debug_args_path:
        facade_log.accept("Cerebras", f"get_debug_args({debug_args_path!r})",
                          "reads the appliance's debug settings for the job on the cluster; the simulated run is the "
                          "same")
    return DebugArgs()


def update_debug_args_from_keys(debug_args: DebugArgs, keys: dict[str, Any]) -> None:
    """``update_debug_args_from_keys(debug_args, {"debug_usr.some.field": value, ...})`` (the 2.3 Model Zoo's
    runner, from a config's ``debug_args``): each dotted field set, and recorded as :class:`DebugArgs` records."""
    for dotted, value in keys.items():
        *path, last = str(dotted).split(".")
        node = debug_args
        for name in path:
            node = getattr(node, name)
        setattr(node, last, value)


__all__ = ["ApplianceNanError", "DebugArgs", "get_debug_args", "update_debug_args_from_keys"]
