"""A Jupyter kernel manager whose kernels listen on Unix sockets instead of TCP ports.

jupyter_client picks a kernel's five TCP ports by asking the OS for free ones, closing them and handing the
numbers to the kernel, which binds them a moment later: two kernels started at once by two processes (pytest-xdist's
workers each running a notebook, a notebook beside JupyterLab) can be handed the same port, and one of them dies
with "Address already in use" before it answers. On Unix sockets (``transport="ipc"``) each kernel's sockets are
files named after its own connection file, so no two kernels can collide.

    papermill.execute_notebook(src, out, kernel_manager_class=IpcKernelManager)
"""

from __future__ import annotations

import os
import tempfile
import uuid

from jupyter_client.manager import AsyncKernelManager
from traitlets import default


class IpcKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` (nbclient's default) whose kernels use ``transport="ipc"``, their socket files in
    the temporary folder under a name of their own (``/tmp/ak-kernel-<random>-ipc-1`` ...: jupyter_client's default,
    ``kernel-ipc`` in the working folder, would be shared by every kernel started there)."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc"

    @default("ip")
    def _default_ip(self) -> str:
        return os.path.join(tempfile.gettempdir(), f"ak-kernel-{uuid.uuid4().hex[:16]}-ipc")


__all__ = ["IpcKernelManager"]
