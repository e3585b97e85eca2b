"""``sambaflow.samba.env``: what an app asks about the runtime it is on.

    from sambaflow.samba.env import use_mock_samba_runtime
    MOCK_SAMBA_RUNTIME = use_mock_samba_runtime()     # ALCF's and SambaNova's starter apps

SambaFlow's mock runtime runs an app without an RDU and returns placeholder numbers, so apps loosen their
accuracy checks under it. accelkit's simulated RDU computes the real values (PyTorch on this CPU), so it is
not a mock: :func:`use_mock_samba_runtime` is False and an app keeps its real checks.
"""

from __future__ import annotations


def use_mock_samba_runtime() -> bool:
    """False: the simulated RDU computes real values (only its clock is modelled), unlike SambaFlow's mock."""
    return False


__all__ = ["use_mock_samba_runtime"]
