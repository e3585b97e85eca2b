"""``SambaLoader``: a PyTorch DataLoader whose batches arrive as the PEF's named inputs.

    for x, y in SambaLoader(loader, ["features", "labels"]):     # sambaflow.samba.sambaloader.SambaLoader
        samba.session.run(input_tensors=[x, y], output_tensors=outputs)

Each tensor of a batch is named after the compiled input in the same position (batch dimension 0), so
``session.run`` can check it is fed where the program expects it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from accelkit.facades.samba.runtime import session
from accelkit.facades.samba.tensor import SambaError, SambaTensor, from_torch_tensor


class SambaLoader:
    """Wrap ``dataloader`` so each batch is a list of :class:`SambaTensor` named ``names``.

    ``function_hook(batch)``, if given, transforms each batch first (as in SambaFlow). When the graph has
    been traced (``utils.trace_graph``), ``names`` must be the PEF's input names, in order.
    """

    def __init__(self, dataloader: Iterable[Any], names: Sequence[str],
                 function_hook: Callable[[Any], Any] | None = None) -> None:
        if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
            raise SambaError(f"names must be a list of input names, got {names!r}", fix="e.g. ['features', 'labels']")
        self.dataloader = dataloader
        self.names = list(names)
        self.function_hook = function_hook

    def _check_names(self) -> None:
        tr = session.traced
        if tr is not None and self.names != tr.info.input_names:
            raise SambaError(f"SambaLoader names {self.names} do not match the PEF's inputs {tr.info.input_names} "
                             f"({tr.pef})", fix=f"SambaLoader(loader, {tr.info.input_names})")

    def __iter__(self) -> Iterator[list[SambaTensor]]:
        self._check_names()
        for batch in self.dataloader:
            if self.function_hook is not None:
                batch = self.function_hook(batch)
            items = list(batch) if isinstance(batch, (list, tuple)) else [batch]
            if len(items) != len(self.names):
                raise SambaError(f"a batch holds {len(items)} tensor(s) but SambaLoader names {len(self.names)}: "
                                 f"{self.names}", fix="give one name per tensor the DataLoader yields")
            yield [from_torch_tensor(t, name=n, batch_dim=0) for t, n in zip(items, self.names, strict=True)]

    def __len__(self) -> int:
        return len(self.dataloader)  # type: ignore[arg-type]
