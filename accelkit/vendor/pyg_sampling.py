"""PyTorch Geometric's compiled neighbour sampling and METIS partitioning, in PyTorch and NumPy, for ``accelkit
vendor-run``.

PyG (2.8) samples neighbourhoods (``NeighborLoader``, ``LinkNeighborLoader``: ``NeighborSampler._sample``) with
pyg-lib's ``pyg::neighbor_sample`` / ``pyg::hetero_neighbor_sample`` or torch-sparse's, and partitions graphs
(``ClusterData._metis``) with METIS through torch-sparse or pyg-lib. Their wheels come from data.pyg.org for each
PyTorch build, not from PyPI, so a machine that only reaches PyPI has neither, and PyG raises ImportError. For one
run, where neither is installed (``torch_geometric.typing.WITH_PYG_LIB``, ``WITH_TORCH_SPARSE`` and ``WITH_METIS``
all False), :func:`installed` swaps those two methods for the functions below; no flag is flipped, so PyG's other
code paths (``index_sort``, ``segment_matmul``, ...) keep their pure-PyTorch fallbacks. Afterwards PyG is as it was.

- :func:`neighbor_sample` / :func:`hetero_neighbor_sample`: pyg-lib's contract (its ``neighbor_sample`` docstring,
  pyg-lib 0.4, ``pyg_lib/sampler/__init__.py``): up to ``k`` neighbours of each node of the previous hop, uniformly
  without replacement (``-1``: all; ``replace=True``: ``k`` draws with replacement), the seed nodes first in the
  sampled nodes, then each hop's new nodes in the order they were reached; ``row``/``col`` the local indices of
  each sampled edge's source (the neighbour) and target; ``edge`` its position in PyG's CSC arrays (PyG maps it to
  the edge id); ``num_sampled_nodes`` per hop (the seeds first) and ``num_sampled_edges`` per hop. Heterogeneous
  graphs hop per edge type, from the nodes of its target type reached in the previous hop. ``subgraph_type="induced"``
  (every edge among the sampled nodes, as torch-sparse does it) too; ``disjoint`` and temporal sampling are refused
  by name. The global torch random generator draws, so ``torch.manual_seed`` repeats a run.
- :func:`partition`: not METIS. A balanced partition grown breadth first: the nodes ordered by a breadth-first
  search from a far node of each connected component (a level structure, as in Cuthill-McKee ordering), cut into
  ``num_parts`` runs of equal size, then a few rounds of balanced label propagation (each node moves to the part
  most of its neighbours are in, while both parts stay within :data:`IMBALANCE` of the mean). Its parts are as
  balanced as METIS's but it cuts more edges than METIS's multilevel refinement would; the run says so once.
  ``ClusterData(save_dir=...)`` computes it again and writes nothing there: a partition that is not METIS's is not
  left where a real run would load it as one.

PopTorch Geometric 3.3 pins PyG 2.4, whose ``MessagePassing`` took and ignored keyword arguments it did not know;
the block makes this PyG do the same (:func:`_lenient_init`), saying so once per layer and argument.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from accelkit.errors import AccelkitError

IMBALANCE = 0.03
"""The most a part may exceed (or fall short of) ``nodes / num_parts``: METIS's default load imbalance for k-way
partitioning, ``ufactor=30``, i.e. 1.03 (METIS 5.1 manual, section 5.5, ``-ufactor``)."""

REFINE_ROUNDS = 16  # label-propagation rounds after the breadth-first cut (later rounds move few nodes: measured)

_said: set[str] = set()


def _say_once(key: str, text: str, option: str) -> None:
    """Print ``text`` once per run (stdout, as the launcher's other notices) and record it for the run's summary."""
    if key in _said:
        return
    _said.add(key)
    from accelkit.runtime import facade_log

    print(f"accelkit vendor-run: {text}")
    facade_log.accept("PyTorch Geometric", option, text, emulated=True)


# ---- neighbour sampling ---------------------------------------------------------------------------------------
def _pick(colptr: torch.Tensor, row: torch.Tensor, dst: torch.Tensor, k: int,
          replace: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Sampled in-edges of the nodes ``dst`` (global ids) in a CSC graph: ``(which, pos)``, for each sampled edge the
    index into ``dst`` of its target and its position in ``row``; grouped by target, in CSC order within one."""
    start = colptr[dst]
    deg = colptr[dst + 1] - start
    if k == 0 or dst.numel() == 0:
        empty = torch.empty(0, dtype=torch.long)
        return empty, empty
    if replace and k > 0:
        has = (deg > 0).nonzero().view(-1)
        which = has.repeat_interleave(k)
        pos = start[which] + (torch.rand(which.numel()) * deg[which]).long().clamp_max(deg[which] - 1)
        return which, pos
    total = int(deg.sum())
    which = torch.repeat_interleave(torch.arange(dst.numel()), deg)
    first = torch.cumsum(deg, 0) - deg
    offset = torch.arange(total) - first[which]
    pos = start[which] + offset
    if k < 0 or bool((deg <= k).all()):
        return which, pos
    # k of each target's edges, uniformly without replacement: random keys, ranked within each target
    order = torch.argsort(torch.rand(total))
    order = order[torch.argsort(which[order], stable=True)]
    rank = torch.arange(total) - first[which[order]]
    keep = order[rank < k].sort().values  # back in CSC order
    return which[keep], pos[keep]


class _Nodes:
    """The sampled nodes of one type: global ids in the order reached, and their local indices."""

    def __init__(self, size: int) -> None:
        self.local = torch.full((size,), -1, dtype=torch.long)
        self.ids: list[torch.Tensor] = []
        self.count = 0

    def add(self, nodes: torch.Tensor, keep_repeats: bool = False) -> int:
        """Append the nodes of ``nodes`` not reached before, in first-reached order; how many were new."""
        cand = nodes if keep_repeats else nodes[self.local[nodes] < 0]
        if cand.numel() == 0:
            return 0
        uniq, inverse = torch.unique(cand, return_inverse=True)
        first = torch.full((uniq.numel(),), cand.numel(), dtype=torch.long)
        first = first.scatter_reduce(0, inverse, torch.arange(cand.numel()), reduce="amin")
        if keep_repeats:  # the seeds: all of them, as given; a repeated one is known by its first place
            fresh = cand
            self.local[uniq] = self.count + first
        else:
            fresh = uniq[torch.argsort(first)]
            self.local[fresh] = torch.arange(self.count, self.count + fresh.numel())
        self.ids.append(fresh)
        self.count += fresh.numel()
        return fresh.numel()

    def node(self) -> torch.Tensor:
        return torch.cat(self.ids) if self.ids else torch.empty(0, dtype=torch.long)


def _check(disjoint: bool, temporal: bool) -> None:
    if disjoint:
        raise AccelkitError("NeighborLoader(disjoint=True) (a separate subgraph for each seed node) is not done by "
                            "accelkit's stand-in for pyg-lib's neighbour sampler",
                            fix="leave disjoint=False, or run where pyg-lib installs (pip install pyg-lib -f "
                                "https://data.pyg.org/whl/torch-<version>+cpu.html)")
    if temporal:
        raise AccelkitError("temporal neighbour sampling (time_attr / input_time) is not done by accelkit's stand-in "
                            "for pyg-lib's neighbour sampler", fix="sample without time_attr, or run where pyg-lib "
                                                                    "installs (data.pyg.org)")


def neighbor_sample(colptr: torch.Tensor, row: torch.Tensor, seed: torch.Tensor, num_neighbors: list[int],
                    replace: bool = False, induced: bool = False) -> tuple[
                        torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, list[int] | None, list[int] | None]:
    """pyg-lib's ``neighbor_sample`` over a CSC graph (``colptr``, ``row``): ``(row, col, node, edge,
    num_sampled_nodes, num_sampled_edges)`` (the module docstring gives the contract; the counts are None for an
    induced subgraph, as torch-sparse gives none)."""
    colptr, row, seed = colptr.long(), row.long(), seed.long().view(-1)
    nodes = _Nodes(colptr.numel() - 1)
    nodes.add(seed, keep_repeats=True)
    rows, cols, edges, per_hop_nodes, per_hop_edges = [], [], [], [seed.numel()], []
    begin = 0
    for k in num_neighbors:
        frontier = nodes.node()[begin:] if nodes.count > begin else torch.empty(0, dtype=torch.long)
        frontier_local = torch.arange(begin, nodes.count)
        begin = nodes.count
        which, pos = _pick(colptr, row, frontier, int(k), replace)
        src = row[pos]
        per_hop_nodes.append(nodes.add(src))
        rows.append(nodes.local[src])
        cols.append(frontier_local[which])
        edges.append(pos)
        per_hop_edges.append(pos.numel())
    node = nodes.node()
    if induced:  # every edge among the sampled nodes, each target's in CSC order
        which, pos = _pick(colptr, row, node, -1, False)
        keep = nodes.local[row[pos]] >= 0
        which, pos = which[keep], pos[keep]
        return nodes.local[row[pos]], which, node, pos, None, None
    return _cat(rows), _cat(cols), node, _cat(edges), per_hop_nodes, per_hop_edges


def _cat(parts: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.long)


def hetero_neighbor_sample(node_types: list[str], edge_types: list[tuple[str, str, str]],
                           colptr_dict: dict[str, torch.Tensor], row_dict: dict[str, torch.Tensor],
                           seed_dict: dict[str, torch.Tensor], num_neighbors_dict: dict[str, list[int]],
                           replace: bool = False, induced: bool = False) -> tuple[
                               dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor],
                               dict[str, torch.Tensor], dict[str, list[int]] | None, dict[str, list[int]] | None]:
    """pyg-lib's ``hetero_neighbor_sample``: the dicts are keyed by node type and by PyG's edge-type strings
    (``"src__rel__dst"``); returns ``(row, col, node, edge, num_sampled_nodes, num_sampled_edges)`` dicts."""
    rels = {"__".join(t): t for t in edge_types}
    sizes = dict.fromkeys(node_types, 0)
    for rel, (src, _, dst) in rels.items():
        if rel in colptr_dict:
            sizes[dst] = max(sizes[dst], colptr_dict[rel].numel() - 1)
            if row_dict[rel].numel():
                sizes[src] = max(sizes[src], int(row_dict[rel].max()) + 1)
    for t, s in seed_dict.items():
        if s.numel():
            sizes[t] = max(sizes[t], int(s.max()) + 1)
    nodes = {t: _Nodes(sizes[t]) for t in node_types}
    per_hop_nodes: dict[str, list[int]] = {t: [0] for t in node_types}
    for t, s in seed_dict.items():
        per_hop_nodes[t][0] = nodes[t].add(s.long().view(-1), keep_repeats=True)
    out_row: dict[str, list[torch.Tensor]] = {r: [] for r in rels}
    out_col: dict[str, list[torch.Tensor]] = {r: [] for r in rels}
    out_edge: dict[str, list[torch.Tensor]] = {r: [] for r in rels}
    per_hop_edges: dict[str, list[int]] = {r: [] for r in rels}
    hops = max([0] + [len(v) for v in num_neighbors_dict.values()])
    begin = dict.fromkeys(node_types, 0)
    for hop in range(hops):
        end = {t: nodes[t].count for t in node_types}  # this hop samples from the nodes the previous one reached
        counts = dict.fromkeys(node_types, 0)
        for rel, (src, _, dst) in rels.items():
            ks = num_neighbors_dict.get(rel, [])
            k = int(ks[hop]) if hop < len(ks) else 0
            if rel not in colptr_dict or end[dst] == begin[dst] or k == 0:
                per_hop_edges[rel].append(0)
                continue
            frontier = nodes[dst].node()[begin[dst]:end[dst]]
            colptr, row = colptr_dict[rel].long(), row_dict[rel].long()
            which, pos = _pick(colptr, row, frontier, k, replace)
            found = row[pos]
            counts[src] += nodes[src].add(found)
            out_row[rel].append(nodes[src].local[found])
            out_col[rel].append(begin[dst] + which)
            out_edge[rel].append(pos)
            per_hop_edges[rel].append(pos.numel())
        for t in node_types:
            per_hop_nodes[t].append(counts[t])
        begin = end
    node = {t: nodes[t].node() for t in node_types}
    empty = torch.empty(0, dtype=torch.long)
    if induced:
        rows, cols, eids = {}, {}, {}
        for rel, (src, _, dst) in rels.items():
            if rel not in colptr_dict:
                rows[rel] = cols[rel] = eids[rel] = empty
                continue
            colptr, row = colptr_dict[rel].long(), row_dict[rel].long()
            which, pos = _pick(colptr, row, node[dst], -1, False)
            keep = nodes[src].local[row[pos]] >= 0
            which, pos = which[keep], pos[keep]
            rows[rel], cols[rel], eids[rel] = nodes[src].local[row[pos]], which, pos
        return rows, cols, node, eids, None, None
    return ({r: _cat(v) for r, v in out_row.items()}, {r: _cat(v) for r, v in out_col.items()}, node,
            {r: _cat(v) for r, v in out_edge.items()}, per_hop_nodes, per_hop_edges)


def _sample(self: Any, seed: Any, seed_time: Any = None, **kwargs: Any) -> Any:
    """``torch_geometric.sampler.NeighborSampler._sample`` with the functions above in place of pyg-lib's ops (the
    rest as PyG 2.8's own: backward sampling swaps row and col, heterogeneous keys map back to edge types)."""
    from torch_geometric.sampler import HeteroSamplerOutput, SamplerOutput
    from torch_geometric.sampler.base import SubgraphType
    from torch_geometric.sampler.utils import remap_keys

    _check(self.disjoint, seed_time is not None or getattr(self, "node_time", None) is not None
           or getattr(self, "edge_time", None) is not None)
    if getattr(self, "edge_weight", None) is not None:
        raise AccelkitError("weighted neighbour sampling (weight_attr) is not done by accelkit's stand-in for "
                            "pyg-lib's neighbour sampler", fix="sample uniformly (leave weight_attr out), or run "
                                                               "where pyg-lib installs (data.pyg.org)")
    induced = self.subgraph_type == SubgraphType.induced
    _say_once("sample", "PyTorch Geometric's neighbour sampling (pyg-lib's neighbor_sample, not installed here) runs "
              "in accelkit's PyTorch stand-in: the same contract (up to k neighbours a node each hop, uniformly "
              "without replacement, the seed nodes first), slower than pyg-lib's C++", "NeighborLoader's sampling")
    if isinstance(seed, dict):
        rows, cols, node, edge, n_nodes, n_edges = hetero_neighbor_sample(
            self.node_types, self.edge_types, self.colptr_dict, self.row_dict, seed,
            self.num_neighbors.get_mapped_values(self.edge_types), self.replace, induced)
        if self.sample_direction == "backward":
            rows, cols = cols, rows
        row_out = remap_keys(rows, self.to_edge_type)
        col_out = remap_keys(cols, self.to_edge_type)
        edge_out = remap_keys(edge, self.to_edge_type)
        if n_edges is not None:
            n_edges = remap_keys(n_edges, self.to_edge_type)
        if self.sample_direction == "backward":
            row_out = remap_keys(row_out, self.to_restored_edge_type)
            col_out = remap_keys(col_out, self.to_restored_edge_type)
            edge_out = remap_keys(edge_out, self.to_restored_edge_type)
            if n_edges is not None:
                n_edges = remap_keys(n_edges, self.to_restored_edge_type)
        return HeteroSamplerOutput(node=node, row=row_out, col=col_out, edge=edge_out, batch=None,
                                   num_sampled_nodes=n_nodes, num_sampled_edges=n_edges)
    row, col, node_t, edge_t, hop_nodes, hop_edges = neighbor_sample(
        self.colptr, self.row, seed, self.num_neighbors.get_mapped_values(), self.replace, induced)
    if self.sample_direction == "backward":
        row, col = col, row
    return SamplerOutput(node=node_t, row=row, col=col, edge=edge_t, batch=None, num_sampled_nodes=hop_nodes,
                         num_sampled_edges=hop_edges)


# ---- partitioning ---------------------------------------------------------------------------------------------
def _neighbours(indptr: np.ndarray, index: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """All neighbours of ``nodes`` (with repeats) in the CSR graph."""
    start, end = indptr[nodes], indptr[nodes + 1]
    deg = end - start
    if deg.sum() == 0:
        return np.empty(0, dtype=np.int64)
    offset = np.arange(deg.sum()) - np.repeat(np.cumsum(deg) - deg, deg)
    return index[np.repeat(start, deg) + offset]


def _bfs(indptr: np.ndarray, index: np.ndarray, start: int, seen: np.ndarray) -> list[np.ndarray]:
    """Breadth-first levels from ``start`` over nodes not yet ``seen`` (marks them)."""
    levels = [np.array([start])]
    seen[start] = True
    while True:
        nxt = _neighbours(indptr, index, levels[-1])
        nxt = np.unique(nxt[~seen[nxt]])
        if nxt.size == 0:
            return levels
        seen[nxt] = True
        levels.append(nxt)


def bfs_order(indptr: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Every node once: each connected component breadth first from a far node of it (found by a first search from
    its lowest-degree node), components one after the other, isolated nodes last."""
    n = indptr.size - 1
    deg = np.diff(indptr)
    seen = deg == 0
    order: list[np.ndarray] = []
    by_degree = np.argsort(deg, kind="stable")
    cursor = 0
    while True:
        while cursor < n and seen[by_degree[cursor]]:
            cursor += 1
        if cursor == n:
            break
        first = int(by_degree[cursor])
        probe = seen.copy()
        far = _bfs(indptr, index, first, probe)[-1]
        far_node = int(far[np.argmin(deg[far])])
        order.extend(_bfs(indptr, index, far_node, seen))
    order.append(np.flatnonzero(deg == 0))
    return np.concatenate(order) if order else np.empty(0, dtype=np.int64)


def _refine(indptr: np.ndarray, index: np.ndarray, part: np.ndarray, num_parts: int, rounds: int,
            rng: np.random.Generator) -> np.ndarray:
    """Balanced label propagation: nodes move to the part most of their neighbours are in, best gain first, while
    every part stays within :data:`IMBALANCE` of the mean size; half the nodes (drawn anew) may move each round, so
    two neighbours seldom swap parts together."""
    n = part.size
    mean = n / num_parts
    low, high = int(np.floor(mean * (1 - IMBALANCE))), int(np.ceil(mean * (1 + IMBALANCE)))
    src = np.repeat(np.arange(n), np.diff(indptr))
    for _ in range(rounds):
        counts = np.bincount(src * num_parts + part[index], minlength=n * num_parts).reshape(n, num_parts)
        best = counts.argmax(axis=1)
        gain = counts[np.arange(n), best] - counts[np.arange(n), part]
        movers = np.flatnonzero((gain > 0) & (rng.random(n) < 0.5))
        if movers.size == 0:
            break
        movers = movers[np.argsort(-gain[movers], kind="stable")]
        size = np.bincount(part, minlength=num_parts)
        to, frm = best[movers], part[movers]
        # how many movers ranked before each one go to its target / leave its source (accepted or not: a bound)
        into = _rank_within(to)
        out_of = _rank_within(frm)
        ok = (size[to] + into < high) & (size[frm] - out_of > low)
        if not ok.any():
            break
        part = part.copy()
        part[movers[ok]] = to[ok]
    return part


def _rank_within(keys: np.ndarray) -> np.ndarray:
    """For each entry, how many earlier entries have the same key."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_keys)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, keys.size]))
    rank = np.empty(keys.size, dtype=np.int64)
    rank[order] = np.arange(keys.size) - first
    return rank


def partition(indptr: torch.Tensor, index: torch.Tensor, num_parts: int, seed: int = 0) -> torch.Tensor:
    """A part id (``0 .. num_parts - 1``) for each node of the CSR graph (``indptr``, ``index``; taken as
    undirected), as METIS's ``cluster`` vector (the module docstring says how it is made). Deterministic."""
    n = indptr.numel() - 1
    if not isinstance(num_parts, int) or isinstance(num_parts, bool) or not 1 <= num_parts <= max(n, 1):
        raise AccelkitError(f"ClusterData(num_parts={num_parts!r}) for a graph of {n} nodes: a partition needs a "
                            "whole number of parts between 1 and the number of nodes",
                            fix=f"give num_parts between 1 and {n}")
    ip, ix = indptr.cpu().numpy().astype(np.int64), index.cpu().numpy().astype(np.int64)
    # both directions of every edge, no self loops: METIS's input is an undirected graph without them
    row = np.repeat(np.arange(n), np.diff(ip))
    a, b = np.r_[row, ix], np.r_[ix, row]
    keep = a != b
    a, b = a[keep], b[keep]
    pairs = np.unique(a * n + b)
    a, b = pairs // n, pairs % n
    sym_ptr = np.r_[0, np.cumsum(np.bincount(a, minlength=n))]
    order = bfs_order(sym_ptr, b)
    part = np.empty(n, dtype=np.int64)
    part[order] = np.arange(n) * num_parts // max(n, 1)  # equal runs of the breadth-first order
    if num_parts > 1:
        part = _refine(sym_ptr, b, part, num_parts, REFINE_ROUNDS, np.random.default_rng(seed))
    return torch.from_numpy(part)


def edge_cut(edge_index: torch.Tensor, part: torch.Tensor) -> float:
    """The share of edges whose two ends lie in different parts."""
    if edge_index.size(1) == 0:
        return 0.0
    return float((part[edge_index[0]] != part[edge_index[1]]).float().mean())


def _metis(self: Any, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``torch_geometric.loader.ClusterData._metis`` answered by :func:`partition` (PyG computes the CSR the same
    way first)."""
    from torch_geometric.index import index2ptr
    from torch_geometric.utils import sort_edge_index

    if self.sparse_format == "csr":
        row, index = sort_edge_index(edge_index, num_nodes=num_nodes)
        indptr = index2ptr(row, size=num_nodes)
    else:
        index, col = sort_edge_index(edge_index, num_nodes=num_nodes, sort_by_row=False)
        indptr = index2ptr(col, size=num_nodes)
    _say_once("metis", "ClusterData's METIS partitioning (torch-sparse or pyg-lib, not installed here) is answered "
              "by accelkit's balanced breadth-first partition with label-propagation refinement: every part within "
              f"{IMBALANCE:.0%} of the mean size as METIS's, but not METIS: METIS's multilevel refinement would cut "
              "fewer edges between the clusters; save_dir is not written (the partition is not METIS's)",
              "ClusterData (METIS partition)")
    return partition(indptr, index, int(self.num_parts)).to(edge_index.device)


# ---- PyG 2.4's MessagePassing keyword arguments -----------------------------------------------------------------
def _lenient_init(real: Any) -> Any:
    """``MessagePassing.__init__`` taking, and leaving unused, keyword arguments it does not know, as PyG 2.4 and
    before did (``**kwargs`` in its signature, never read: torch_geometric 2.4.0, ``nn/conv/message_passing.py``);
    PyG 2.5 dropped them, so a layer given one of another layer's options (Graphcore's tutorial 5:
    ``SAGEConv(..., add_self_loops=False)``) raises TypeError there. PopTorch Geometric 3.3 pins PyG 2.4
    (``pyg-nightly==2.4.0.dev20230613``, its requirements.txt)."""

    known = set(inspect.signature(real).parameters)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        unused = sorted(k for k in kwargs if k not in known)
        if unused:
            _say_once(f"kwargs {type(self).__name__} {unused}",
                      f"{type(self).__name__}({', '.join(f'{k}=...' for k in unused)}): PyTorch Geometric 2.4, which "
                      "PopTorch Geometric 3.3 pins, took and ignored keyword arguments a layer does not have; this "
                      f"PyG ({_pyg_version()}) raises TypeError for them, so they are left unused here as they were",
                      f"{type(self).__name__}({', '.join(f'{k}=...' for k in unused)})")
            kwargs = {k: v for k, v in kwargs.items() if k in known}
        real(self, *args, **kwargs)

    __init__.__doc__ = real.__doc__
    return __init__


def _pyg_version() -> str:
    import torch_geometric

    return str(getattr(torch_geometric, "__version__", "?"))


# ---- the run --------------------------------------------------------------------------------------------------
_DEPRECATION = r"Using '\w+' without a 'pyg-lib' installation is deprecated"


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """The stand-ins for the duration of the block, where PyTorch Geometric is installed without pyg-lib and
    torch-sparse (where either is there, PyG's own compiled code runs), and ``MessagePassing`` taking PyG 2.4's
    unused keyword arguments (:func:`_lenient_init`) where this PyG refuses them; PyG's classes as they were
    afterwards."""
    _said.clear()
    import importlib.util

    if importlib.util.find_spec("torch_geometric") is None:
        yield
        return
    import torch_geometric.typing as pyg_typing

    patches: list[tuple[Any, str, Any]] = []
    if not (pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE):
        from torch_geometric.sampler import NeighborSampler

        patches.append((NeighborSampler, "_sample", _sample))
    if not (pyg_typing.WITH_TORCH_SPARSE or pyg_typing.WITH_METIS):
        from torch_geometric.loader import ClusterData

        real_init = ClusterData.__init__

        def __init__(self: Any, data: Any, num_parts: int, recursive: bool = False, save_dir: Any = None,
                     *args: Any, **kwargs: Any) -> None:
            real_init(self, data, num_parts, recursive, None, *args, **kwargs)

        __init__.__doc__ = real_init.__doc__
        patches += [(ClusterData, "_metis", _metis), (ClusterData, "__init__", __init__)]
    from torch_geometric.nn import MessagePassing

    if not any(p.kind == p.VAR_KEYWORD for p in inspect.signature(MessagePassing.__init__).parameters.values()):
        patches.append((MessagePassing, "__init__", _lenient_init(MessagePassing.__init__)))
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    quiet = warnings.catch_warnings()  # the warning filters as they were, afterwards
    quiet.__enter__()
    # PyG's "install pyg-lib" warning: the stand-in's own line says what runs instead
    warnings.filterwarnings("ignore", message=_DEPRECATION)
    try:
        yield
    finally:
        quiet.__exit__(None, None, None)
        for owner, name, value in saved:
            setattr(owner, name, value)
        _said.clear()


__all__ = ["IMBALANCE", "bfs_order", "edge_cut", "hetero_neighbor_sample", "installed", "neighbor_sample",
           "partition"]

