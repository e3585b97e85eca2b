"""``poptorch_geometric``: PopTorch Geometric's data loaders over accelkit's simulated IPU.

Graphcore's PyTorch Geometric tutorials (graphcore/examples, ``tutorials/tutorials/pytorch_geometric``) train GNNs
written with PyTorch Geometric (PyG) through ``poptorch.trainingModel``, and feed them with PopTorch Geometric's
loaders. A Poplar program has fixed shapes, so a loader pads every mini-batch of graphs to the same numbers of
graphs, nodes and edges: ``FixedSizeOptions(num_nodes, num_edges, num_graphs)``, at least one graph of each batch
kept for padding (its nodes and edges take up the slack). PopTorch Geometric's user guide and reference
(docs.graphcore.ai, 'PyTorch Geometric for the IPU') give the interface answered here:

- ``FixedSizeOptions`` (``from_dataset``, ``from_loader``; numbers per node and edge type for heterogeneous
  graphs), ``FixedSizeStrategy`` (``PadToMax``: ``num_graphs - 1`` real graphs a batch; ``StreamPack``: as many as
  fit), ``OverSizeStrategy`` (``Error``, ``Skip``; ``TrimNodes``, ``TrimEdges``, ``TrimNodesAndEdges`` for the
  sampling loaders);
- ``FixedSizeDataLoader(dataset, batch_size, shuffle, fixed_size_options, fixed_size_strategy,
  over_size_strategy, add_pad_masks, follow_batch, exclude_keys, options)``: batches with ``graphs_mask``,
  ``nodes_mask`` and ``edges_mask`` (True where real);
- ``dataloader.DataLoader(dataset, batch_size, shuffle, follow_batch, exclude_keys, options)``: PyG's loader,
  unpadded (a single graph such as Cora is already of fixed size);
- ``neighbor_loader.FixedSizeNeighborLoader`` and ``cluster_loader.FixedSizeClusterLoader``: PyG's
  ``NeighborLoader`` / ``ClusterLoader`` subgraphs (``Data`` or ``HeteroData``), trimmed to fit (:func:`trim`) and
  padded to the fixed sizes. Where pyg-lib and torch-sparse are missing, PyG samples and partitions with accelkit's
  stand-ins during ``accelkit vendor-run`` (:mod:`accelkit.vendor.pyg_sampling`).

With ``deviceIterations`` (or replicas, or gradient accumulation) above 1 a loader hands one call's worth of
mini-batches at once, each collated on its own and their tensors concatenated along the first dimension, which
PopTorch splits again per device iteration. The padding graphs are PyG ``Data`` objects made here: node and edge
features filled with the options' pad values, the padding nodes shared evenly by the padding graphs and the padding
edges by those that have nodes, each padding graph's edges on its own first node (per node and edge type for
``HeteroData``).
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
    ``Skip`` leaves them out (``StreamPack``); the trimming strategies cut a sampled subgraph's nodes or edges away
    (the neighbour and cluster loaders, whose default is ``TrimNodesAndEdges``; :func:`trim`)."""

    Error = 0
    Skip = 1
    TrimNodes = 2
    TrimEdges = 3
    TrimNodesAndEdges = 4


class FixedSizeOptions:
    """``FixedSizeOptions(num_nodes, num_edges=None, num_graphs=2, node_pad_value=None, edge_pad_value=None,
    graph_pad_value=None, pad_graph_defaults=None)``: the size every padded batch has. ``num_edges`` defaults to a
    fully connected graph of ``num_nodes``; ``num_graphs`` counts the padding graph, so it is at least 2. For
    heterogeneous graphs ``num_nodes`` may be a dict per node type and ``num_edges`` per edge type (a single number
    is given to every type when a heterogeneous batch meets it: :meth:`to_hetero`)."""

    def __init__(self, num_nodes: int | dict[str, int], num_edges: int | dict[Any, int] | None = None,
                 num_graphs: int = 2, node_pad_value: float | None = None, edge_pad_value: float | None = None,
                 graph_pad_value: float | None = None, pad_graph_defaults: dict[str, Any] | None = None) -> None:
        checks = [("num_nodes", k, v, 1) for k, v in (num_nodes.items() if isinstance(num_nodes, dict)
                                                       else [(None, num_nodes)])]
        checks += [("num_edges", k, v, 0) for k, v in (num_edges.items() if isinstance(num_edges, dict) else [])]
        checks.append(("num_graphs", None, num_graphs, 1))
        for name, key, v, least in checks:
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                where = f"[{key!r}]" if key is not None else ""
                raise PopTorchError(f"FixedSizeOptions({name}=...){where} needs a whole number ≥ {least}, got {v!r}",
                                    fix="e.g. FixedSizeOptions(num_nodes=100, num_edges=200, num_graphs=10), or for "
                                        "a heterogeneous graph num_nodes={'paper': 100, ...}, "
                                        "num_edges={('paper', 'cites', 'paper'): 200, ...}")
        _at_least_two(num_graphs)
        self.num_nodes: Any = dict(num_nodes) if isinstance(num_nodes, dict) else num_nodes
        total = sum(num_nodes.values()) if isinstance(num_nodes, dict) else num_nodes
        self.num_edges: Any = (dict(num_edges) if isinstance(num_edges, dict) else int(num_edges) if num_edges
                               else total * (total - 1))
        self.num_graphs = num_graphs
        self.node_pad_value = 0.0 if node_pad_value is None else node_pad_value
        self.edge_pad_value = 0.0 if edge_pad_value is None else edge_pad_value
        self.graph_pad_value = 0.0 if graph_pad_value is None else graph_pad_value
        self.pad_graph_defaults = dict(pad_graph_defaults or {})

    @property
    def total_num_nodes(self) -> int:
        return int(sum(self.num_nodes.values())) if isinstance(self.num_nodes, dict) else self.num_nodes

    @property
    def total_num_edges(self) -> int:
        return int(sum(self.num_edges.values())) if isinstance(self.num_edges, dict) else self.num_edges

    def is_hetero(self) -> bool:
        """Whether the numbers are given per node type and per edge type."""
        return isinstance(self.num_nodes, dict) and isinstance(self.num_edges, dict)

    def to_hetero(self, node_types: Sequence[str], edge_types: Sequence[Any]) -> FixedSizeOptions:
        """A single number of nodes (edges) given to every node (edge) type, as PopTorch Geometric does when a
        heterogeneous batch meets options made with one number."""
        if not isinstance(self.num_nodes, dict):
            self.num_nodes = dict.fromkeys(node_types, self.num_nodes)
        if not isinstance(self.num_edges, dict):
            self.num_edges = dict.fromkeys(edge_types, self.num_edges)
        return self

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
        """Sizes that hold the batches ``loader`` made in its first ``sample_limit`` batches (going round it again
        where it has fewer), plus one graph, node and edge for padding; per node and edge type where its batches
        are heterogeneous (``HeteroData``), as PopTorch Geometric's ``from_loader`` does."""
        nodes: Any = 0
        edges: Any = 0
        graphs = 0
        seen = 0
        hetero = False
        while seen < sample_limit:
            before = seen
            for batch in loader:
                if isinstance(batch, HeteroData):
                    if not hetero:
                        hetero, nodes, edges = True, {}, {}
                    for t in batch.node_types:
                        nodes[t] = max(nodes.get(t, 0), int(batch[t].num_nodes))
                    for t in batch.edge_types:
                        edges[t] = max(edges.get(t, 0), int(batch[t].num_edges))
                else:
                    nodes, edges = max(nodes, int(batch.num_nodes)), max(edges, int(batch.num_edges))
                graphs = max(graphs, int(getattr(batch, "num_graphs", 1)))
                seen += 1
                if seen >= sample_limit:
                    break
            if seen == before:
                break
        if hetero:
            return cls(num_nodes={t: n + 1 for t, n in nodes.items()}, num_edges={t: e + 1 for t, e in edges.items()},
                       num_graphs=graphs + 1)
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
    """Collates a list of PyG ``Data`` (or ``HeteroData``) graphs into one ``Batch`` of exactly the options' graphs,
    nodes and edges: the real graphs, then padding graphs sharing the remaining nodes and edges, and the three
    masks (per node and edge type for ``HeteroData``). ``trim_nodes`` / ``trim_edges``: a single graph too large
    for the batch is cut to fit first (see :func:`trim`)."""

    def __init__(self, opts: FixedSizeOptions, add_masks_to_batch: bool = True,
                 follow_batch: Sequence[str] | None = None, exclude_keys: Sequence[str] | None = None, *,
                 trim_nodes: bool = False, trim_edges: bool = False) -> None:
        self.opts = opts
        self.add_masks_to_batch = add_masks_to_batch
        self.follow_batch = list(follow_batch or [])
        self.exclude_keys = list(exclude_keys or [])
        self.trim_nodes, self.trim_edges = trim_nodes, trim_edges
        # what the size error suggests: the graph loaders' remedies unless a sampling loader says its own
        self.over_size_fix = ("raise num_{what} in FixedSizeOptions (FixedSizeOptions.from_dataset(dataset, "
                              "batch_size) sizes them for the largest graphs), or pass over_size_strategy="
                              "OverSizeStrategy.Skip with FixedSizeStrategy.StreamPack to leave such graphs out")

    def fits(self, graphs: Sequence[Data]) -> bool:
        if self.opts.is_hetero() or any(isinstance(g, HeteroData) for g in graphs):
            raise PopTorchError("packing heterogeneous graphs (FixedSizeStrategy.StreamPack) is not provided by "
                                "accelkit's poptorch_geometric", fix="use FixedSizeStrategy.PadToMax")
        return (len(graphs) < self.opts.num_graphs and sum(int(g.num_nodes) for g in graphs) < self.opts.num_nodes
                and sum(int(g.num_edges) for g in graphs) < self.opts.num_edges)

    def __call__(self, data_list: list[Any]) -> Batch:
        if not data_list:
            raise PopTorchError("a fixed-size batch needs at least one real graph", fix="check the dataset is not empty")
        if self.trim_nodes or self.trim_edges:
            if len(data_list) != 1:
                raise PopTorchError(f"trimming cuts one sampled subgraph to the batch's size, and this batch has "
                                    f"{len(data_list)} graphs", fix="trim with the neighbour or cluster loaders "
                                                                     "(one subgraph a batch), or size the batch to fit")
            data_list = [trim(data_list[0], self.opts, self.trim_nodes, self.trim_edges)]
        if isinstance(data_list[0], HeteroData):
            return self._hetero(data_list)
        if self.opts.is_hetero() or isinstance(self.opts.num_nodes, dict) or isinstance(self.opts.num_edges, dict):
            raise PopTorchError("FixedSizeOptions given per node or edge type are for heterogeneous graphs "
                                "(HeteroData), and this batch is of homogeneous Data graphs",
                                fix="give one number of nodes and of edges (FixedSizeOptions(num_nodes=..., "
                                    "num_edges=...))")
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
                    fix=self.over_size_fix.format(what=what))
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

    def _hetero(self, data_list: list[HeteroData]) -> Batch:
        """Heterogeneous graphs padded per node and edge type: the padding graphs share each type's remaining
        nodes and edges evenly; a padding edge joins the first nodes of its types in its padding graph."""
        o = self.opts.to_hetero(data_list[0].node_types, data_list[0].edge_types)
        pad_graphs = o.num_graphs - len(data_list)
        if pad_graphs < 1:
            raise PopTorchError(f"the batch has {len(data_list)} graphs and room for {o.num_graphs} including at least "
                                "one padding graph", fix=f"give num_graphs of at least {len(data_list) + 1}")
        template = data_list[0]
        real_nodes = {t: sum(int(g[t].num_nodes or 0) for g in data_list) for t in template.node_types}
        real_edges = {t: sum(int(g[t].num_edges) for g in data_list) for t in template.edge_types}
        pads: dict[str, dict[Any, list[int]]] = {"nodes": {}, "edges": {}}
        for what, real, limits in (("nodes", real_nodes, o.num_nodes), ("edges", real_edges, o.num_edges)):
            for t, n in real.items():
                if t not in limits:
                    raise PopTorchError(f"the batch has {what} of type {t!r}, which its FixedSizeOptions do not size "
                                        f"(they size {', '.join(map(repr, limits))})",
                                        fix=f"give num_{what} a number for {t!r} (FixedSizeOptions.from_loader(loader) "
                                            "sizes every type)")
                if n > limits[t]:
                    raise PopTorchError(
                        f"the fixed sizes do not leave room for the {what} of type {t!r}: the batch has {n}, and "
                        f"holds {limits[t]} including its padding", fix=self.over_size_fix.format(what=what)
                        + f" (for {t!r})")
                pads[what][t] = _evenly(limits[t] - n, pad_graphs)
        for t, per in pads["edges"].items():
            src, _, dst = t
            for i, e in enumerate(per):
                if e and not (pads["nodes"][src][i] and pads["nodes"][dst][i]):
                    end = src if not pads["nodes"][src][i] else dst
                    raise PopTorchError(
                        f"the padding edges of type {t!r} need a padding node of type {end!r}, and the batch's "
                        f"{end!r} nodes fill all {o.num_nodes[end]} places",
                        fix=f"raise num_nodes[{end!r}] by one (one node of each type is kept for padding), or trim "
                            "(OverSizeStrategy.TrimNodesAndEdges keeps it)")
        padded = [self._hetero_padding_graph(template, {t: per[i] for t, per in pads["nodes"].items()},
                                             {t: per[i] for t, per in pads["edges"].items()})
                  for i in range(pad_graphs)]
        batch = Batch.from_data_list([*data_list, *padded], follow_batch=self.follow_batch,
                                     exclude_keys=self.exclude_keys)
        if self.add_masks_to_batch:
            batch.graphs_mask = torch.arange(o.num_graphs) < len(data_list)
            for t in template.node_types:
                batch[t].nodes_mask = torch.arange(o.num_nodes[t]) < real_nodes[t]
            for t in template.edge_types:
                batch[t].edges_mask = torch.arange(o.num_edges[t]) < real_edges[t]
        return batch

    def _hetero_padding_graph(self, template: HeteroData, nodes: dict[str, int], edges: dict[Any, int]) -> HeteroData:
        o = self.opts
        pad = HeteroData()
        for t in template.node_types:
            store = template[t]
            for key, value in store.items():
                if key in self.exclude_keys or not torch.is_tensor(value):
                    continue
                pad[t][key] = (value.new_full((nodes[t], *value.shape[1:]), o.node_pad_value)
                               if store.is_node_attr(key) else value.new_full(value.shape, o.graph_pad_value))
            pad[t].num_nodes = nodes[t]
        for t in template.edge_types:
            store = template[t]
            for key, value in store.items():
                if key in self.exclude_keys or not torch.is_tensor(value):
                    continue
                if key == "edge_index":
                    pad[t][key] = torch.zeros((2, edges[t]), dtype=value.dtype)
                elif store.is_edge_attr(key):
                    pad[t][key] = value.new_full((edges[t], *value.shape[1:]), o.edge_pad_value)
                else:
                    pad[t][key] = value.new_full(value.shape, o.graph_pad_value)
        for key, value in template.items():  # graph-level attributes
            if key not in self.exclude_keys and torch.is_tensor(value):
                pad[key] = value.new_full(value.shape, o.graph_pad_value)
        return pad

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
                                "is not provided by accelkit's FixedSizeDataLoader (the neighbour and cluster loaders "
                                "trim their sampled subgraphs)",
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


# ---- sampled subgraphs: trimming, and the neighbour and cluster loaders -----------------------------------------
_HOP = "_accelkit_edge_hop"  # a sampled edge's hop, kept on the edges while they are trimmed ('edge' in the name:
# PyG takes it for an edge attribute)


def _limit(limits: Any, key: Any) -> int:
    return int(limits[key] if isinstance(limits, dict) else limits)


def _trim_store_counts(counts: list[int] | None, keep: int) -> list[int] | None:
    """Per-hop node counts after keeping the first ``keep`` nodes (the nodes are in hop order)."""
    if counts is None:
        return None
    out, left = [], keep
    for c in counts:
        out.append(int(min(int(c), max(left, 0))))
        left -= int(c)
    return out


def trim(data: Any, opts: FixedSizeOptions, trim_nodes: bool = True, trim_edges: bool = True) -> Any:
    """A sampled subgraph cut to fit a fixed-size batch with room left for padding (one node and one edge, of each
    type for ``HeteroData``): ``trim_nodes`` keeps the first ``num_nodes - 1`` nodes (a sampler puts the seed nodes
    first, then each hop's: the farthest go) and drops the edges that touch the others; ``trim_edges`` then keeps
    the first ``num_edges - 1`` edges (the first hops' edges, into the seeds, come first). PopTorch Geometric's own
    collater drops randomly chosen nodes and edges, keeping one of each graph; keeping the seeds instead keeps
    the rows a script reads as the batch's targets (``x[:batch_size]``). ``num_sampled_nodes`` /
    ``num_sampled_edges`` are counted again."""
    if isinstance(data, HeteroData):
        return _trim_hetero(data, opts.to_hetero(data.node_types, data.edge_types), trim_nodes, trim_edges)
    nodes, edges = int(data.num_nodes), int(data.num_edges)
    keep_nodes, keep_edges = opts.num_nodes - 1, opts.num_edges - 1
    if not ((trim_nodes and nodes > keep_nodes) or (trim_edges and edges > keep_edges)):
        return data
    hop_nodes, hop_edges = data.get("num_sampled_nodes"), data.get("num_sampled_edges")
    out = data.clone()
    for key in ("num_sampled_nodes", "num_sampled_edges"):
        if key in out:
            del out[key]
    if hop_edges is not None and sum(hop_edges) == edges:
        out[_HOP] = torch.repeat_interleave(torch.arange(len(hop_edges)), torch.tensor(hop_edges, dtype=torch.long))
    if trim_nodes and nodes > keep_nodes:
        out = out.subgraph(torch.arange(keep_nodes))
        hop_nodes = _trim_store_counts(hop_nodes, keep_nodes)
    if trim_edges and int(out.num_edges) > keep_edges:
        out = out.edge_subgraph(torch.arange(int(out.num_edges)) < keep_edges)
    if _HOP in out:
        hop_edges = torch.bincount(out[_HOP], minlength=len(hop_edges)).tolist()
        del out[_HOP]
    if hop_nodes is not None:
        out.num_sampled_nodes = hop_nodes
    if hop_edges is not None:
        out.num_sampled_edges = hop_edges
    return out


def _trim_hetero(data: HeteroData, opts: FixedSizeOptions, trim_nodes: bool, trim_edges: bool) -> HeteroData:
    """:func:`trim` per node type and per edge type."""
    over_nodes = {t: _limit(opts.num_nodes, t) - 1 for t in data.node_types
                  if trim_nodes and t in opts.num_nodes and int(data[t].num_nodes or 0) > _limit(opts.num_nodes, t) - 1}
    if not over_nodes and not (trim_edges and any(
            t in opts.num_edges and int(data[t].num_edges) > _limit(opts.num_edges, t) - 1 for t in data.edge_types)):
        return data
    out = data.clone()
    hops: dict[Any, list[int]] = {}
    for t in data.edge_types:
        counts = out[t].get("num_sampled_edges")
        if counts is not None and sum(counts) == int(out[t].num_edges):
            hops[t] = list(counts)
            out[t][_HOP] = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts, dtype=torch.long))
    if over_nodes:
        counts_n = {t: out[t].get("num_sampled_nodes") for t in over_nodes}
        out = out.subgraph({t: torch.arange(k) for t, k in over_nodes.items()})
        for t, k in over_nodes.items():
            if counts_n[t] is not None:
                out[t].num_sampled_nodes = _trim_store_counts(counts_n[t], k)
    if trim_edges:
        masks = {t: torch.arange(int(out[t].num_edges)) < _limit(opts.num_edges, t) - 1 for t in out.edge_types
                 if t in opts.num_edges and int(out[t].num_edges) > _limit(opts.num_edges, t) - 1}
        if masks:
            out = out.edge_subgraph(masks)
    for t, counts in hops.items():
        if _HOP in out[t]:
            out[t].num_sampled_edges = torch.bincount(out[t][_HOP], minlength=len(counts)).tolist()
            del out[t][_HOP]
    return out


def _set_aside(data: Any) -> list[tuple[Any, str, Any]]:
    """Take off the sampler's bookkeeping that is no node, edge or graph tensor (the seed count, the seeds' ids,
    the per-hop counts), as PopTorch Geometric's loader does before padding: (store, key, value) to put back."""
    stores = [data] if isinstance(data, Data) else list(data.stores)
    out = []
    for store in stores:
        for key in ("batch_size", "input_id", "seed_time", "num_sampled_nodes", "num_sampled_edges"):
            if key in store:
                out.append((store, key, store[key]))
                del store[key]
    return out


def _put_back(batch: Any, taken: list[tuple[Any, str, Any]]) -> Any:
    for store, key, value in taken:
        if isinstance(batch, HeteroData) and not isinstance(store, Data):
            target = batch[store._key] if getattr(store, "_key", None) is not None else batch
        else:
            target = batch
        target[key] = value
    return batch


def _over_size(strategy: Any, loader: str) -> tuple[bool, bool]:
    """The trimming a sampling loader's ``over_size_strategy`` asks for: (nodes, edges)."""
    strategy = OverSizeStrategy(strategy)
    if strategy == OverSizeStrategy.Skip:
        raise PopTorchError(f"{loader}(over_size_strategy=OverSizeStrategy.Skip): a sampled subgraph is the whole "
                            "batch, so there is nothing to leave out", fix="trim it (OverSizeStrategy."
                                                                           "TrimNodesAndEdges, the default) or size "
                                                                           "the batch for it (OverSizeStrategy.Error)")
    return (strategy in (OverSizeStrategy.TrimNodes, OverSizeStrategy.TrimNodesAndEdges),
            strategy in (OverSizeStrategy.TrimEdges, OverSizeStrategy.TrimNodesAndEdges))


class _SampledLoader(torch.utils.data.DataLoader):
    """What the neighbour and cluster loaders share: PyG's loader (``self.pyg_loader``) makes each mini-batch's
    subgraph, which is trimmed to fit and padded to the fixed size; one call's mini-batches handed at once."""

    pyg_loader: Any
    name = ""

    def _setup(self, fixed_size_options: FixedSizeOptions | None, over_size_strategy: Any, add_pad_masks: bool | None,
               follow_batch: Sequence[str] | None, exclude_keys: Sequence[str] | None,
               options: Options | None) -> None:
        self.options = _options(options)
        self.calls = self.options.combined_batch_factor(True)
        trim_nodes, trim_edges = _over_size(over_size_strategy, self.name)
        self.over_size_strategy = OverSizeStrategy(over_size_strategy)
        if fixed_size_options is None:
            fixed_size_options = FixedSizeOptions.from_loader(self.pyg_loader)
        if not isinstance(fixed_size_options, FixedSizeOptions):
            raise PopTorchError(f"{self.name}(fixed_size_options=...) takes a poptorch_geometric.FixedSizeOptions, "
                                f"got {type(fixed_size_options).__name__}",
                                fix="e.g. fixed_size_options=FixedSizeOptions.from_loader(pyg_loader)")
        self.fixed_size_options = fixed_size_options
        self.collater = FixedSizeCollater(fixed_size_options, bool(add_pad_masks), follow_batch, exclude_keys,
                                          trim_nodes=trim_nodes, trim_edges=trim_edges)
        self.collater.over_size_fix = (
            "raise num_{what} in FixedSizeOptions (FixedSizeOptions.from_loader(loader) sizes them for the "
            f"subgraphs the loader samples), or pass over_size_strategy=OverSizeStrategy.TrimNodesAndEdges to "
            f"{self.name} to cut each subgraph to fit")

    def _one(self, data: Any) -> Any:
        if self.collater.trim_nodes or self.collater.trim_edges:  # first, so the per-hop counts are counted again
            data = trim(data, self.fixed_size_options, self.collater.trim_nodes, self.collater.trim_edges)
        taken = _set_aside(data)
        batch = self.collater([data])
        return _put_back(batch, taken)

    def _batches(self, parts: list[Any]) -> Any:
        if len(parts) == 1:
            return parts[0]
        if isinstance(parts[0], HeteroData):
            raise PopTorchError(f"{self.name} hands one call's {len(parts)} mini-batches at once only for "
                                "homogeneous graphs here", fix="keep deviceIterations, replicas and gradient "
                                                              "accumulation at 1 for heterogeneous graphs")
        for p in parts:  # the bookkeeping lists do not combine: each mini-batch's own is in its slice
            for key in ("num_sampled_nodes", "num_sampled_edges"):
                if key in p:
                    del p[key]
        return _combine(parts)


class FixedSizeNeighborLoader(_SampledLoader):
    """``poptorch_geometric.neighbor_loader.FixedSizeNeighborLoader(data, num_neighbors, input_nodes=None,
    input_time=None, subgraph_type='directional', replace=False, directed=True, disjoint=False,
    temporal_strategy='uniform', time_attr=None, transform=None, transform_sampler_output=None, is_sorted=False,
    filter_per_worker=True, batch_size=1, neighbor_sampler=None, over_size_strategy=OverSizeStrategy.TrimNodesAndEdges,
    fixed_size_options=None, add_pad_masks=True, follow_batch=None, exclude_keys=None, options=None, **kwargs)``:
    PyG's ``NeighborLoader`` (``self.neighbour_loader``) samples each mini-batch of ``batch_size`` seed nodes; the
    subgraph is trimmed (:func:`trim`) and padded to ``fixed_size_options`` (default: ``FixedSizeOptions.from_loader``
    of the PyG loader) with the padding masks, ``batch_size`` and ``input_id`` kept as PyG's loader gives them.
    ``Data`` or ``HeteroData`` (then the options per node and edge type)."""

    name = "FixedSizeNeighborLoader"

    def __init__(self, data: Any, num_neighbors: Any, input_nodes: Any = None, input_time: Any = None,
                 subgraph_type: Any = "directional", replace: bool = False, directed: bool = True,
                 disjoint: bool = False, temporal_strategy: str = "uniform", time_attr: str | None = None,
                 transform: Any = None, transform_sampler_output: Any = None, is_sorted: bool = False,
                 filter_per_worker: bool = True, batch_size: int = 1, neighbor_sampler: Any = None,
                 over_size_strategy: OverSizeStrategy = OverSizeStrategy.TrimNodesAndEdges,
                 fixed_size_options: FixedSizeOptions | None = None, add_pad_masks: bool | None = True,
                 follow_batch: Sequence[str] | None = None, exclude_keys: Sequence[str] | None = None,
                 options: Options | None = None, **kwargs: Any) -> None:
        from torch_geometric.loader import NeighborLoader

        for k in ("collate_fn", "batch_sampler", "sampler"):
            if kwargs.get(k) is not None:
                raise PopTorchError(f"FixedSizeNeighborLoader makes its own {k}", fix=f"leave {k} out")
            kwargs.pop(k, None)
        if kwargs.pop("num_workers", 0):
            facade_log.accept("PopTorch Geometric", "FixedSizeNeighborLoader(num_workers=...)",
                              "worker processes that sample subgraphs for the IPUs' host; this laptop samples the "
                              "same subgraphs in its own process")
        _over_size(over_size_strategy, self.name)  # a strategy it cannot take stops it before anything is sampled
        shuffle, drop_last = bool(kwargs.pop("shuffle", False)), bool(kwargs.pop("drop_last", False))
        self.batch_size_ = batch_size
        self.neighbour_loader = NeighborLoader(
            data, num_neighbors, input_nodes=input_nodes, input_time=input_time, replace=replace,
            subgraph_type=subgraph_type, directed=directed, disjoint=disjoint, temporal_strategy=temporal_strategy,
            time_attr=time_attr, transform=transform, transform_sampler_output=transform_sampler_output,
            is_sorted=is_sorted, filter_per_worker=filter_per_worker, neighbor_sampler=neighbor_sampler,
            batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, **kwargs)
        self.pyg_loader = self.neighbour_loader
        self._setup(fixed_size_options, over_size_strategy, add_pad_masks, follow_batch, exclude_keys, options)
        super().__init__(self.neighbour_loader.dataset, batch_size=batch_size * self.calls, shuffle=shuffle,
                         collate_fn=self._collate, drop_last=self.calls > 1 or drop_last, **kwargs)

    def _collate(self, index: list[int]) -> Any:
        per = self.batch_size_
        return self._batches([self._one(self.neighbour_loader(index[i:i + per]))
                              for i in range(0, len(index), per)])


class FixedSizeClusterLoader(_SampledLoader):
    """``poptorch_geometric.cluster_loader.FixedSizeClusterLoader(cluster_data, fixed_size_options, batch_size=1,
    over_size_strategy=OverSizeStrategy.TrimNodesAndEdges, add_pad_masks=True, options=None, **kwargs)``: PyG's
    ``ClusterLoader`` joins ``batch_size`` clusters of ``cluster_data`` (a ``ClusterData``) with the edges between
    them into each mini-batch's graph, which is trimmed (:func:`trim`) and padded to ``fixed_size_options``."""

    name = "FixedSizeClusterLoader"

    def __init__(self, cluster_data: Any, fixed_size_options: FixedSizeOptions | None = None, batch_size: int = 1,
                 over_size_strategy: OverSizeStrategy = OverSizeStrategy.TrimNodesAndEdges,
                 add_pad_masks: bool | None = True, options: Options | None = None, **kwargs: Any) -> None:
        from torch_geometric.loader import ClusterData, ClusterLoader

        if not isinstance(cluster_data, ClusterData):
            raise PopTorchError(f"FixedSizeClusterLoader takes a torch_geometric.loader.ClusterData, got "
                                f"{type(cluster_data).__name__}",
                                fix="cluster_data = ClusterData(data, num_parts=...), then "
                                    "FixedSizeClusterLoader(cluster_data, ...)")
        for k in ("collate_fn", "batch_sampler", "sampler"):
            if kwargs.get(k) is not None:
                raise PopTorchError(f"FixedSizeClusterLoader makes its own {k}", fix=f"leave {k} out")
            kwargs.pop(k, None)
        kwargs.pop("num_workers", 0)
        _over_size(over_size_strategy, self.name)
        shuffle, drop_last = bool(kwargs.pop("shuffle", False)), bool(kwargs.pop("drop_last", False))
        self.batch_size_ = batch_size
        self.cluster_data = cluster_data
        self.pyg_loader = ClusterLoader(cluster_data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last)
        self._setup(fixed_size_options, over_size_strategy, add_pad_masks, None, None, options)
        clusters: Any = range(len(cluster_data))  # the loader's dataset: the clusters' numbers, as ClusterLoader's
        super().__init__(clusters, batch_size=batch_size * self.calls, shuffle=shuffle,
                         collate_fn=self._collate, drop_last=self.calls > 1 or drop_last, **kwargs)

    def _collate(self, index: list[int]) -> Any:
        per = self.batch_size_
        return self._batches([self._one(self.pyg_loader.collate_fn(index[i:i + per]))
                              for i in range(0, len(index), per)])


__version__ = "3.3.0+accelkit"

__all__ = ["DataLoader", "FixedSizeClusterLoader", "FixedSizeCollater", "FixedSizeDataLoader",
           "FixedSizeNeighborLoader", "FixedSizeOptions", "FixedSizeStrategy", "OverSizeStrategy", "__version__", "trim"]
