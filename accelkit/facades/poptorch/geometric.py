"""``poptorch_geometric``: PopTorch Geometric's data loaders over accelkit's simulated IPU.

Graphcore's PyTorch Geometric tutorials (graphcore/examples, ``tutorials/tutorials/pytorch_geometric``) train GNNs
written with PyTorch Geometric (PyG) through ``poptorch.trainingModel``, and feed them with PopTorch Geometric's
loaders. A Poplar program has fixed shapes, so a loader pads every mini-batch of graphs to the same numbers of
graphs, nodes and edges: ``FixedSizeOptions(num_nodes, num_edges, num_graphs)``, at least one graph of each batch
kept for padding (its nodes and edges take up the slack). PopTorch Geometric's user guide and reference
(docs.graphcore.ai, 'PyTorch Geometric for the IPU') give the interface answered here:

- ``FixedSizeOptions`` (``from_dataset``, ``from_loader``), ``FixedSizeStrategy`` (``PadToMax``: ``num_graphs - 1``
  real graphs a batch; ``StreamPack``: as many as fit), ``OverSizeStrategy`` (``Error``, ``Skip``; the trimming
  ones are refused by name);
- ``FixedSizeDataLoader(dataset, batch_size, shuffle, fixed_size_options, fixed_size_strategy,
  over_size_strategy, add_pad_masks, follow_batch, exclude_keys, options)``: batches with ``graphs_mask``,
  ``nodes_mask`` and ``edges_mask`` (True where real);
- ``dataloader.DataLoader(dataset, batch_size, shuffle, follow_batch, exclude_keys, options)``: PyG's loader,
  unpadded (a single graph such as Cora is already of fixed size).

With ``deviceIterations`` (or replicas, or gradient accumulation) above 1 a loader hands one call's worth of
mini-batches at once, each collated on its own and their tensors concatenated along the first dimension, which
PopTorch splits again per device iteration. The padding graphs are PyG ``Data`` objects made here: node and edge
features filled with the options' pad values, the padding nodes shared evenly by the padding graphs and the padding
edges by those that have nodes, each padding graph's edges on its own first node. The neighbour
and cluster loaders (``neighbor_loader.FixedSizeNeighborLoader``, ``cluster_loader.FixedSizeClusterLoader``) need
PyG's sampling extensions (pyg-lib or torch-sparse, compiled against a CUDA PyTorch): they are refused by name.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch_geometric  # noqa: F401 - PopTorch Geometric is PyG's: without it, the import names what to install
from torch_geometric.data import Batch, Data, HeteroData

from accelkit.facades.poptorch.options import Options, PopTorchError
from accelkit.runtime import facade_log


class FixedSizeStrategy(enum.Enum):
    """How a :class:`FixedSizeDataLoader` fills a batch: ``PadToMax``, ``num_graphs - 1`` real graphs each batch
    and padding for the rest; ``StreamPack``, as many graphs as fit in the batch's nodes and edges, in order."""

    PadToMax = 0
    StreamPack = 1


class OverSizeStrategy(enum.Enum):
    """What happens to graphs that do not fit a batch: ``Error`` (the default) stops with the sizes to raise;
    ``Skip`` leaves them out (``StreamPack``); the trimming strategies cut nodes or edges away (refused here)."""

    Error = 0
    Skip = 1
    TrimNodes = 2
    TrimEdges = 3
    TrimNodesAndEdges = 4


class FixedSizeOptions:
    """``FixedSizeOptions(num_nodes, num_edges=None, num_graphs=2, node_pad_value=None, edge_pad_value=None,
    graph_pad_value=None, pad_graph_defaults=None)``: the size every padded batch has. ``num_edges`` defaults to a
    fully connected graph of ``num_nodes``; ``num_graphs`` counts the padding graph, so it is at least 2."""

    def __init__(self, num_nodes: int, num_edges: int | None = None, num_graphs: int = 2,
                 node_pad_value: float | None = None, edge_pad_value: float | None = None,
                 graph_pad_value: float | None = None, pad_graph_defaults: dict[str, Any] | None = None) -> None:
        if isinstance(num_nodes, dict) or isinstance(num_edges, dict):
            raise PopTorchError("FixedSizeOptions with a number of nodes or edges per type (heterogeneous graphs) "
                                "is not provided by accelkit's poptorch_geometric",
                                fix="give one number of nodes and of edges (homogeneous graphs)")
        for name, n in (("num_nodes", num_nodes), ("num_graphs", num_graphs)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise PopTorchError(f"FixedSizeOptions({name}=...) needs a whole number ≥ 1, got {n!r}",
                                    fix="e.g. FixedSizeOptions(num_nodes=100, num_edges=200, num_graphs=10)")
        _at_least_two(num_graphs)
        self.num_nodes = num_nodes
        self.num_edges = int(num_edges) if num_edges else num_nodes * (num_nodes - 1)
        self.num_graphs = num_graphs
        self.node_pad_value = 0.0 if node_pad_value is None else node_pad_value
        self.edge_pad_value = 0.0 if edge_pad_value is None else edge_pad_value
        self.graph_pad_value = 0.0 if graph_pad_value is None else graph_pad_value
        self.pad_graph_defaults = dict(pad_graph_defaults or {})

    @property
    def total_num_nodes(self) -> int:
        return self.num_nodes

    @property
    def total_num_edges(self) -> int:
        return self.num_edges

    def is_hetero(self) -> bool:
        return False

    @classmethod
    def from_dataset(cls, dataset: Any, batch_size: int, sample_limit: int | None = None,
                     progress_bar: bool | None = None) -> FixedSizeOptions:
        """Sizes that hold any ``batch_size - 1`` graphs of ``dataset`` (its largest graph's nodes and edges times
        ``batch_size - 1``) plus one padding node and edge."""
        _at_least_two(batch_size)
        limit = len(dataset) if sample_limit is None else min(sample_limit, len(dataset))
        graphs = [dataset[i] for i in range(limit)]
        max_nodes = max(int(g.num_nodes) for g in graphs)
        max_edges = max(int(g.num_edges) for g in graphs)
        return cls(num_nodes=max_nodes * (batch_size - 1) + 1, num_edges=max_edges * (batch_size - 1) + 1,
                   num_graphs=batch_size)

    @classmethod
    def from_loader(cls, loader: Any, sample_limit: int = 1000) -> FixedSizeOptions:
        """Sizes that hold the batches ``loader`` made in its first ``sample_limit`` batches, plus one graph, node
        and edge for padding."""
        nodes = edges = graphs = 0
        seen = 0
        while seen < sample_limit:
            before = seen
            for batch in loader:
                nodes, edges = max(nodes, int(batch.num_nodes)), max(edges, int(batch.num_edges))
                graphs = max(graphs, int(getattr(batch, "num_graphs", 1)))
                seen += 1
                if seen >= sample_limit:
                    break
            if seen == before:
                break
        return cls(num_nodes=nodes + 1, num_edges=edges + 1, num_graphs=graphs + 1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_nodes={self.num_nodes} (At least one node reserved for padding), "
                f"num_edges={self.num_edges} (At least one edge reserved for padding), num_graphs={self.num_graphs} "
                f"(At least one graph reserved for padding), node_pad_value={self.node_pad_value}, "
                f"edge_pad_value={self.edge_pad_value}, graph_pad_value={self.graph_pad_value}, "
                f"pad_graph_defaults={self.pad_graph_defaults})")


def _at_least_two(num_graphs: int) -> None:
    if num_graphs < 2:
        raise PopTorchError(f"a fixed-size batch holds at least 2 graphs (one real, one for padding), not {num_graphs}",
                            fix="give num_graphs (the loader's batch_size) of 2 or more")


def _evenly(amount: int, pieces: int) -> list[int]:
    return [amount // pieces + (1 if i < amount % pieces else 0) for i in range(pieces)]


class FixedSizeCollater:
    """Collates a list of PyG ``Data`` graphs into one ``Batch`` of exactly the options' graphs, nodes and edges:
    the real graphs, then padding graphs sharing the remaining nodes and edges, and the three masks."""

    def __init__(self, opts: FixedSizeOptions, add_masks_to_batch: bool = True,
                 follow_batch: Sequence[str] | None = None, exclude_keys: Sequence[str] | None = None) -> None:
        self.opts = opts
        self.add_masks_to_batch = add_masks_to_batch
        self.follow_batch = list(follow_batch or [])
        self.exclude_keys = list(exclude_keys or [])

    def fits(self, graphs: Sequence[Data]) -> bool:
        return (len(graphs) < self.opts.num_graphs and sum(int(g.num_nodes) for g in graphs) < self.opts.num_nodes
                and sum(int(g.num_edges) for g in graphs) < self.opts.num_edges)

    def __call__(self, data_list: list[Any]) -> Batch:
        if not data_list:
            raise PopTorchError("a fixed-size batch needs at least one real graph", fix="check the dataset is not empty")
        if isinstance(data_list[0], HeteroData):
            raise PopTorchError("fixed-size batches of heterogeneous graphs (HeteroData) are not provided by accelkit's "
                                "poptorch_geometric", fix="use homogeneous Data graphs")
        o = self.opts
        real_nodes = sum(int(g.num_nodes) for g in data_list)
        real_edges = sum(int(g.num_edges) for g in data_list)
        pad_graphs, pad_nodes, pad_edges = o.num_graphs - len(data_list), o.num_nodes - real_nodes, o.num_edges - real_edges
        if pad_graphs < 1:
            raise PopTorchError(f"the batch has {len(data_list)} graphs and room for {o.num_graphs} including at least "
                                "one padding graph", fix=f"give num_graphs of at least {len(data_list) + 1}")
        for what, pad, total, real in (("nodes", pad_nodes, o.num_nodes, real_nodes),
                                       ("edges", pad_edges, o.num_edges, real_edges)):
            if pad < 0 or (what == "nodes" and pad == 0 and pad_edges > 0):
                raise PopTorchError(
                    f"the fixed sizes do not leave room for the {what} of {len(data_list)} graph(s): they have {real} "
                    f"{what}, and the batch holds {total} including its padding",
                    fix=f"raise num_{what} in FixedSizeOptions (FixedSizeOptions.from_dataset(dataset, batch_size) "
                        "sizes them for the largest graphs), or pass over_size_strategy=OverSizeStrategy.Skip with "
                        "FixedSizeStrategy.StreamPack to leave such graphs out")
        template = data_list[0]
        node_level_y = all(getattr(g, "y", None) is not None and g.y.shape[:1] == (int(g.num_nodes),)
                           and int(g.num_nodes) != 1 for g in data_list)
        # the padding nodes shared evenly by the padding graphs, the padding edges by those that have nodes
        nodes = _evenly(pad_nodes, pad_graphs)
        holders = sum(1 for n in nodes if n)
        edges = _evenly(pad_edges, holders) + [0] * (pad_graphs - holders)
        padded = [self._padding_graph(template, n, e, node_level_y) for n, e in zip(nodes, edges, strict=True)]
        batch = Batch.from_data_list([*data_list, *padded], follow_batch=self.follow_batch,
                                     exclude_keys=self.exclude_keys)
        if self.add_masks_to_batch:
            batch.graphs_mask = torch.arange(o.num_graphs) < len(data_list)
            batch.nodes_mask = torch.arange(o.num_nodes) < real_nodes
            batch.edges_mask = torch.arange(o.num_edges) < real_edges
        return batch

    def _padding_graph(self, template: Data, nodes: int, edges: int, node_level_y: bool) -> Data:
        """A graph of ``nodes`` nodes and ``edges`` edges with the template's attributes, filled with the pad
        values; its edges all join its first node to itself."""
        o = self.opts
        pad = Data()
        for key, value in template.items():
            if key in self.exclude_keys:
                continue
            if not torch.is_tensor(value):
                pad[key] = o.pad_graph_defaults.get(key, value)
            elif key == "edge_index":
                pad[key] = torch.zeros((2, edges), dtype=value.dtype)
            elif key == "y" and node_level_y or key != "y" and template.is_node_attr(key):
                pad[key] = value.new_full((nodes, *value.shape[1:]), o.node_pad_value)
            elif key != "y" and template.is_edge_attr(key):
                pad[key] = value.new_full((edges, *value.shape[1:]), o.edge_pad_value)
            else:
                pad[key] = value.new_full(value.shape, o.graph_pad_value)
        pad.num_nodes = nodes
        return pad


def _combine(batches: list[Batch]) -> Batch:
    """One call's mini-batches as one: each tensor concatenated along its first dimension (PopTorch splits the
    call's inputs along it again, one slice per device iteration)."""
    if len(batches) == 1:
        return batches[0]
    out = batches[0].clone()
    for key, value in batches[0].items():
        if torch.is_tensor(value):
            shapes = {tuple(b[key].shape) for b in batches}
            if len(shapes) > 1:
                raise PopTorchError(
                    f"one call's {len(batches)} mini-batches differ in shape ({key}: "
                    f"{', '.join(str(list(s)) for s in sorted(shapes))}), and a compiled IPU program takes one shape",
                    fix="batch the graphs with poptorch_geometric.FixedSizeDataLoader (padded to one size), or keep "
                        "deviceIterations, replicas and gradient accumulation at 1")
            out[key] = torch.cat([b[key] for b in batches], dim=0)
    return out


def _options(options: Options | None) -> Options:
    if options is None:
        return Options()
    if not isinstance(options, Options):
        raise PopTorchError(f"options must be a poptorch.Options, got {type(options).__name__}",
                            fix="e.g. options=poptorch.Options().deviceIterations(4)")
    return options


class _PackSampler(torch.utils.data.Sampler):
    """``FixedSizeStrategy.StreamPack``'s batches: graphs taken in order while they fit in the batch's graphs,
    nodes and edges (one of each kept for padding); ``calls`` packs handed at once."""

    def __init__(self, dataset: Any, collater: FixedSizeCollater, shuffle: bool, skip: bool, calls: int) -> None:
        self.dataset, self.collater, self.shuffle, self.skip, self.calls = dataset, collater, shuffle, skip, calls

    def packs(self) -> Iterator[list[int]]:
        order = torch.randperm(len(self.dataset)).tolist() if self.shuffle else range(len(self.dataset))
        pack: list[int] = []
        graphs: list[Any] = []
        for i in order:
            g = self.dataset[i]
            if not self.collater.fits([g]):
                if self.skip:
                    continue
                self.collater([g])  # raises, naming the sizes to raise
            if not self.collater.fits([*graphs, g]):
                yield pack
                pack, graphs = [], []
            pack.append(i)
            graphs.append(g)
        if pack:
            yield pack

    def __iter__(self) -> Iterator[list[int]]:
        group: list[list[int]] = []
        for pack in self.packs():
            group.append(pack)
            if len(group) == self.calls:
                yield [i for p in group for i in p]
                group = []

    def __len__(self) -> int:
        return sum(1 for _ in self.packs()) // self.calls


class FixedSizeDataLoader(torch.utils.data.DataLoader):
    """``poptorch_geometric.FixedSizeDataLoader(dataset, batch_size=2, shuffle=False, fixed_size_options=None,
    fixed_size_strategy=FixedSizeStrategy.PadToMax, over_size_strategy=OverSizeStrategy.Error, add_pad_masks=True,
    follow_batch=None, exclude_keys=None, options=None, **kwargs)``: mini-batches of graphs padded to one size
    (see the module docstring); ``fixed_size_options`` defaults to ``FixedSizeOptions.from_dataset(dataset,
    batch_size)``."""

    def __init__(self, dataset: Any, batch_size: int = 2, shuffle: bool = False,
                 fixed_size_options: FixedSizeOptions | None = None,
                 fixed_size_strategy: FixedSizeStrategy = FixedSizeStrategy.PadToMax,
                 over_size_strategy: OverSizeStrategy = OverSizeStrategy.Error, add_pad_masks: bool | None = True,
                 follow_batch: Sequence[str] | None = None, exclude_keys: Sequence[str] | None = None,
                 options: Options | None = None, **kwargs: Any) -> None:
        self.options = _options(options)
        self.fixed_size_options = (fixed_size_options if fixed_size_options is not None
                                   else FixedSizeOptions.from_dataset(dataset, batch_size))
        if batch_size != self.fixed_size_options.num_graphs:
            raise PopTorchError(f"the loader's batch_size ({batch_size}) must equal num_graphs in its fixed-size "
                                f"options ({self.fixed_size_options.num_graphs})",
                                fix="pass batch_size=fixed_size_options.num_graphs")
        fixed_size_strategy, over_size_strategy = FixedSizeStrategy(fixed_size_strategy), OverSizeStrategy(over_size_strategy)
        if over_size_strategy not in (OverSizeStrategy.Error, OverSizeStrategy.Skip):
            raise PopTorchError(f"over_size_strategy={over_size_strategy} (cutting nodes or edges out of graphs to fit) "
                                "is not provided by accelkit's poptorch_geometric",
                                fix="size the batch for the largest graphs (FixedSizeOptions.from_dataset), or "
                                    "OverSizeStrategy.Skip with FixedSizeStrategy.StreamPack")
        if over_size_strategy == OverSizeStrategy.Skip and fixed_size_strategy != FixedSizeStrategy.StreamPack:
            raise PopTorchError("OverSizeStrategy.Skip leaves out graphs that do not fit, which only "
                                "FixedSizeStrategy.StreamPack can do", fix="pass fixed_size_strategy=FixedSizeStrategy.StreamPack")
        for k in ("collate_fn", "batch_sampler"):
            if kwargs.get(k) is not None:
                raise PopTorchError(f"FixedSizeDataLoader makes its own {k}", fix=f"leave {k} out")
            kwargs.pop(k, None)
        if kwargs.pop("num_workers", 0):
            facade_log.accept("PopTorch Geometric", "FixedSizeDataLoader(num_workers=...)",
                              "worker processes that prepare batches for the IPUs' host; this laptop prepares the "
                              "same batches in its own process")
        self.padded_batch_size = batch_size
        self.fixed_size_strategy, self.over_size_strategy = fixed_size_strategy, over_size_strategy
        self.calls = self.options.combined_batch_factor(True)
        self.collater = FixedSizeCollater(self.fixed_size_options, bool(add_pad_masks), follow_batch, exclude_keys)
        if fixed_size_strategy == FixedSizeStrategy.StreamPack:
            sampler = _PackSampler(dataset, self.collater, shuffle, over_size_strategy == OverSizeStrategy.Skip,
                                   self.calls)
            super().__init__(dataset, batch_sampler=sampler, collate_fn=self._collate_packs, **kwargs)
        else:
            per = batch_size - 1
            super().__init__(dataset, batch_size=per * self.calls, shuffle=shuffle, collate_fn=self._collate_runs,
                             drop_last=self.calls > 1 or bool(kwargs.pop("drop_last", False)), **kwargs)

    def _collate_runs(self, graphs: list[Any]) -> Batch:
        per = self.padded_batch_size - 1
        return _combine([self.collater(graphs[i:i + per]) for i in range(0, len(graphs), per)])

    def _collate_packs(self, graphs: list[Any]) -> Batch:
        packs: list[list[Any]] = [[]]
        for g in graphs:  # the sampler's packs again: it took graphs in this order while they fit
            if packs[-1] and not self.collater.fits([*packs[-1], g]):
                packs.append([])
            packs[-1].append(g)
        return _combine([self.collater(p) for p in packs])


class DataLoader(torch.utils.data.DataLoader):
    """``poptorch_geometric.dataloader.DataLoader(dataset, batch_size=1, shuffle=False, follow_batch=None,
    exclude_keys=None, options=None, **kwargs)``: PyG's ``DataLoader`` (batches of graphs, not padded), handing one
    call's worth of mini-batches at once when the options' device iterations, replicas or accumulation ask for
    more than one."""

    def __init__(self, dataset: Any, batch_size: int = 1, shuffle: bool = False,
                 follow_batch: Sequence[str] | None = None, exclude_keys: Sequence[str] | None = None,
                 options: Options | None = None, **kwargs: Any) -> None:
        from torch_geometric.loader.dataloader import Collater

        self.options = _options(options)
        self.calls = self.options.combined_batch_factor(True)
        self.mini_batch_size = batch_size
        kwargs.pop("collate_fn", None)
        self._collater = Collater(dataset, follow_batch, exclude_keys)
        super().__init__(dataset, batch_size=batch_size * self.calls, shuffle=shuffle, collate_fn=self._collate,
                         drop_last=self.calls > 1 or bool(kwargs.pop("drop_last", False)), **kwargs)

    def _collate(self, graphs: list[Any]) -> Any:
        per = self.mini_batch_size
        parts = [self._collater(graphs[i:i + per]) for i in range(0, len(graphs), per)]
        return parts[0] if len(parts) == 1 else _combine(parts)


def _needs_sampling(name: str) -> None:
    raise PopTorchError(f"poptorch_geometric's {name} samples subgraphs with PyTorch Geometric's compiled sampling "
                        "extensions (pyg-lib or torch-sparse, built against a CUDA PyTorch), which accelkit's CPU "
                        "environment does not have", fix="train on the whole graph with poptorch_geometric.dataloader."
                                                         "DataLoader, or on small graphs with FixedSizeDataLoader")


class FixedSizeNeighborLoader:
    """``poptorch_geometric.neighbor_loader.FixedSizeNeighborLoader``: refused (see :func:`_needs_sampling`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _needs_sampling("FixedSizeNeighborLoader")


class FixedSizeClusterLoader:
    """``poptorch_geometric.cluster_loader.FixedSizeClusterLoader``: refused (see :func:`_needs_sampling`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _needs_sampling("FixedSizeClusterLoader")


__version__ = "3.3.0+accelkit"

__all__ = ["DataLoader", "FixedSizeClusterLoader", "FixedSizeCollater", "FixedSizeDataLoader",
           "FixedSizeNeighborLoader", "FixedSizeOptions", "FixedSizeStrategy", "OverSizeStrategy", "__version__"]
