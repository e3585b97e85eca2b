"""PyTorch Geometric's compiled neighbour sampling and METIS partitioning answered in PyTorch for a vendor run
(``accelkit.vendor.pyg_sampling``), PopTorch Geometric's fixed-size neighbour and cluster loaders
(``accelkit.facades.poptorch.geometric``) and the generated IMDB (``accelkit.vendor.graphs``): the sampler keeps
pyg-lib's contract (homogeneous and heterogeneous), the partition is balanced and cuts far fewer edges than a random
one, every fixed-size batch has exactly its sizes with the seeds kept first, and a tutorial-shaped script trains
through ``accelkit vendor-run`` and leaves PyG as it was."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torch_geometric")  # a dev dependency (pyproject.toml): always there under `make test`

from torch_geometric.data import Data, HeteroData  # noqa: E402
from torch_geometric.loader import ClusterData, ClusterLoader, NeighborLoader  # noqa: E402
from torch_geometric.nn import MessagePassing  # noqa: E402
from torch_geometric.sampler import NeighborSampler  # noqa: E402
from torch_geometric.sampler.utils import to_csc  # noqa: E402

from accelkit.facades.poptorch import geometric as pg  # noqa: E402
from accelkit.facades.poptorch.options import PopTorchError  # noqa: E402
from accelkit.vendor import graphs, pyg_sampling  # noqa: E402


def _graph(nodes: int = 300, edges: int = 2400, seed: int = 0) -> Data:
    """A directed graph with skewed in-degrees (some nodes far more than k neighbours, some fewer)."""
    g = torch.Generator().manual_seed(seed)
    dst = (torch.rand(edges, generator=g) ** 2 * nodes).long()
    src = torch.randint(0, nodes, (edges,), generator=g)
    keep = src != dst
    return Data(x=torch.randn(nodes, 4, generator=g), edge_index=torch.stack([src[keep], dst[keep]]),
                y=torch.randint(0, 3, (nodes,), generator=g), num_nodes=nodes)


def _most(t: torch.Tensor) -> int:
    return int(t.max()) if t.numel() else 0


def _originals() -> tuple[object, ...]:
    return (NeighborSampler.__dict__["_sample"], ClusterData.__dict__["_metis"], ClusterData.__dict__["__init__"],
            MessagePassing.__dict__["__init__"])


def _check_sampled(data: Data, batch: Data, k: list[int]) -> None:
    seeds = batch.input_id.numel()
    assert torch.equal(batch.n_id[:seeds], batch.input_id)  # the seeds first (input_nodes=None: ids are node ids)
    assert batch.n_id.unique().numel() == batch.n_id.numel()
    assert sum(batch.num_sampled_nodes) == batch.num_nodes and batch.num_sampled_nodes[0] == seeds
    assert sum(batch.num_sampled_edges) == batch.num_edges and len(batch.num_sampled_edges) == len(k)
    # every sampled edge is an edge of the graph, named by its id
    src, dst = batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]]
    assert torch.equal(data.edge_index[:, batch.e_id], torch.stack([src, dst]))
    # at most k in-edges for each target in each hop; all of them where it has k or fewer
    start = 0
    indeg = torch.bincount(data.edge_index[1], minlength=data.num_nodes)
    for hop, count in enumerate(batch.num_sampled_edges):
        targets = batch.edge_index[1, start:start + count]
        per = torch.bincount(targets, minlength=batch.num_nodes)
        assert _most(per) <= k[hop]
        lo = sum(batch.num_sampled_nodes[:hop])
        frontier = torch.arange(lo, lo + batch.num_sampled_nodes[hop])
        want = indeg[batch.n_id[frontier]].clamp(max=k[hop])
        assert torch.equal(per[frontier], want)
        start += count


def test_the_neighbour_sampler_keeps_pyg_libs_contract_and_pyg_is_restored_after():
    data = _graph()
    before = _originals()
    with pyg_sampling.installed():
        torch.manual_seed(0)
        loader = NeighborLoader(data, num_neighbors=[4, 3], batch_size=16, shuffle=True)
        batches = list(loader)
        assert len(batches) == len(loader) == 19
        for b in batches:
            _check_sampled(data, b, [4, 3])
        # uniform: each of a high-degree node's neighbours drawn about equally often
        colptr, row, _ = to_csc(data, device="cpu")
        hub = int(torch.bincount(data.edge_index[1]).argmax())
        counts = torch.zeros(data.num_edges)
        for _ in range(2000):
            counts[pyg_sampling.neighbor_sample(colptr, row, torch.tensor([hub]), [2])[3]] += 1
        mine = counts[colptr[hub]:colptr[hub + 1]]
        assert int(mine.sum()) == 4000 and int((counts > 0).sum()) == mine.numel()
        assert float(mine.min()) > 0.25 * float(mine.mean()) and float(mine.max()) < 2.5 * float(mine.mean())
        # -1: every neighbour; replace=True: k draws
        _, col, node, edge, _, hop_edges = pyg_sampling.neighbor_sample(colptr, row, torch.tensor([hub]), [-1])
        assert hop_edges == [int((data.edge_index[1] == hub).sum())] and node[0] == hub
        _, _, _, edge, _, hop_edges = pyg_sampling.neighbor_sample(colptr, row, torch.tensor([hub]), [50], replace=True)
        assert hop_edges == [50]
        induced = NeighborLoader(data, num_neighbors=[3], batch_size=8, subgraph_type="induced")
        b = next(iter(induced))
        inside = torch.isin(data.edge_index, b.n_id).all(0)
        assert b.num_edges == int(inside.sum())  # every edge among the sampled nodes
        with pytest.raises(Exception, match="disjoint"):
            next(iter(NeighborLoader(data, num_neighbors=[2], batch_size=4, disjoint=True)))
    assert _originals() == before  # PyG's own again


def _hetero(seed: int = 0) -> HeteroData:
    g = torch.Generator().manual_seed(seed)
    d = HeteroData()
    sizes = {"movie": 120, "director": 40, "actor": 150}
    for t, n in sizes.items():
        d[t].x = torch.randn(n, 5, generator=g)
    d["movie"].y = torch.randint(0, 3, (120,), generator=g)
    d["movie"].train_mask = torch.rand(120, generator=g) < 0.3
    md = torch.stack([torch.arange(120), torch.randint(0, 40, (120,), generator=g)])
    ma = torch.stack([torch.arange(120).repeat_interleave(3), torch.randint(0, 150, (360,), generator=g)])
    ma = ma.unique(dim=1)
    d["movie", "to", "director"].edge_index = md
    d["director", "to", "movie"].edge_index = md.flip(0)
    d["movie", "to", "actor"].edge_index = ma
    d["actor", "to", "movie"].edge_index = ma.flip(0)
    return d


def test_heterogeneous_sampling_hops_per_edge_type_from_the_seed_type():
    data = _hetero()
    with pyg_sampling.installed():
        loader = NeighborLoader(data, num_neighbors=[2, 2], batch_size=5, input_nodes=("movie", data["movie"].train_mask))
        train = data["movie"].train_mask.nonzero().view(-1)
        seen = []
        for b in loader:
            seeds = b["movie"].input_id.numel()
            assert torch.equal(b["movie"].n_id[:seeds], b["movie"].input_id)  # the seeds first
            seen.append(b["movie"].n_id[:seeds])
            for t in b.node_types:
                assert sum(b[t].num_sampled_nodes) == b[t].num_nodes
                assert b[t].n_id.unique().numel() == b[t].num_nodes
            assert b["director"].num_sampled_nodes[0] == 0 and b["actor"].num_sampled_nodes[0] == 0
            for et in b.edge_types:
                src, _, dst = et
                ei = b[et].edge_index
                assert torch.equal(data[et].edge_index[:, b[et].e_id], torch.stack([b[src].n_id[ei[0]],
                                                                                    b[dst].n_id[ei[1]]]))
                assert sum(b[et].num_sampled_edges) == b[et].num_edges
                first = ei[1, :b[et].num_sampled_edges[0]]
                assert _most(torch.bincount(first)) <= 2
            # hop 1 reaches directors and actors only from the seed movies
            assert b["movie", "to", "director"].num_sampled_edges[0] == 0
            assert _most(b["director", "to", "movie"].edge_index[1, :b["director", "to", "movie"].num_sampled_edges[0]]
                         ) < seeds
        assert torch.equal(torch.cat(seen).sort().values, train)


def _planted(parts: int = 8, size: int = 60, inside: int = 5, across: int = 1, seed: int = 0) -> torch.Tensor:
    """Undirected edges of ``parts`` communities: ``inside`` links a node within its own, ``across`` to any."""
    g = torch.Generator().manual_seed(seed)
    n = parts * size
    src = torch.arange(n).repeat_interleave(inside + across)
    own = (src // size) * size + torch.randint(0, size, (n * (inside + across),), generator=g)
    anywhere = torch.randint(0, n, (n * (inside + across),), generator=g)
    dst = torch.where(torch.arange(src.numel()) % (inside + across) < inside, own, anywhere)
    keep = src != dst
    e = torch.stack([src[keep], dst[keep]])
    return torch.cat([e, e.flip(0)], 1).unique(dim=1)


def test_the_partition_is_balanced_covers_every_node_once_and_cuts_far_fewer_edges_than_random(tmp_path, capsys):
    from torch_geometric.index import index2ptr
    from torch_geometric.utils import sort_edge_index

    for edge_index, n, parts in ((_planted(), 480, 8), (_graph(400, 3000).edge_index, 400, 10)):
        row, index = sort_edge_index(edge_index, num_nodes=n)
        part = pyg_sampling.partition(index2ptr(row, size=n), index, parts)
        assert part.shape == (n,) and int(part.min()) == 0 and int(part.max()) == parts - 1
        sizes = torch.bincount(part, minlength=parts).float()
        assert float((sizes - n / parts).abs().max()) <= pyg_sampling.IMBALANCE * n / parts + 1
        random = torch.randint(0, parts, (n,), generator=torch.Generator().manual_seed(1))
        cut, chance = pyg_sampling.edge_cut(edge_index, part), pyg_sampling.edge_cut(edge_index, random)
        if n == 480:  # planted communities: found, mostly
            assert cut < 0.5 * chance, (cut, chance)
        else:  # a random graph has no communities to find: still below chance
            assert cut < chance
    data = Data(x=torch.randn(480, 3), edge_index=_planted(), y=torch.zeros(480, dtype=torch.long))
    with pyg_sampling.installed():
        clusters = ClusterData(data, num_parts=8, save_dir=str(tmp_path / "data"), log=False)
        assert len(clusters) == 8 and sum(int(c.num_nodes) for c in clusters) == 480
        ClusterData(data, num_parts=8, log=False)
    said = capsys.readouterr().out
    assert said.count("ClusterData's METIS partitioning") == 1 and "cut fewer edges" in said  # said once a run
    assert not (tmp_path / "data").exists()  # the partition is not METIS's: nothing left where a real run reads one
    with pytest.raises(Exception, match="num_parts"):
        pyg_sampling.partition(torch.tensor([0, 0]), torch.tensor([], dtype=torch.long), 5)


def test_fixed_size_loaders_hand_exactly_their_sizes_and_trimming_keeps_the_seeds():
    data = _graph()
    with pyg_sampling.installed():
        opts = pg.FixedSizeOptions(num_nodes=30, num_edges=40)
        loader = pg.FixedSizeNeighborLoader(data, num_neighbors=[5, 5], batch_size=8, fixed_size_options=opts,
                                            shuffle=True)
        assert len(loader) == 38
        for b in loader:
            assert b.x.shape == (30, 4) and b.edge_index.shape == (2, 40) and b.num_graphs == 2
            seeds = b.input_id.numel()
            assert torch.equal(b.n_id[:seeds], b.input_id)  # trimmed, the seeds kept first
            real_nodes, real_edges = int(b.nodes_mask.sum()), int(b.edges_mask.sum())
            assert real_nodes <= 29 and real_edges <= 39 and sum(b.num_sampled_nodes) == real_nodes
            assert sum(b.num_sampled_edges) == real_edges
            ei = b.edge_index[:, :real_edges]
            assert int(ei.max()) < real_nodes  # no real edge touches a dropped or padding node
            assert torch.equal(data.edge_index[:, b.e_id[:real_edges]], b.n_id[ei])
        sampled = NeighborLoader(data, num_neighbors=[5, 5], batch_size=8)
        auto = pg.FixedSizeOptions.from_loader(sampled, sample_limit=5)
        assert auto.num_graphs == 2 and auto.num_nodes > 8
        with pytest.raises(PopTorchError, match="room for the nodes") as err:
            next(iter(pg.FixedSizeNeighborLoader(data, num_neighbors=[5, 5], batch_size=8, fixed_size_options=opts,
                                                 over_size_strategy=pg.OverSizeStrategy.Error)))
        assert "TrimNodesAndEdges" in err.value.fix
        with pytest.raises(PopTorchError, match="nothing to leave out"):
            pg.FixedSizeNeighborLoader(data, num_neighbors=[5], fixed_size_options=opts,
                                       over_size_strategy=pg.OverSizeStrategy.Skip)
        clusters = ClusterData(data, num_parts=10, log=False)
        opts = pg.FixedSizeOptions.from_loader(ClusterLoader(clusters, batch_size=3), sample_limit=2)
        cl = pg.FixedSizeClusterLoader(clusters, batch_size=3, fixed_size_options=opts)
        assert len(cl) == 4
        for b in cl:
            assert b.x.shape[0] == opts.num_nodes and b.edge_index.shape[1] == opts.num_edges
        # heterogeneous: one size per node and edge type, a single number given to every type
        hetero = _hetero()
        per_type = pg.FixedSizeOptions(num_nodes={"movie": 9, "director": 4, "actor": 7},
                                       num_edges={et: 6 for et in hetero.edge_types})
        assert per_type.is_hetero() and per_type.total_num_nodes == 20
        for fixed in (per_type, pg.FixedSizeOptions(num_nodes=200, num_edges=300)):
            hl = pg.FixedSizeNeighborLoader(hetero, num_neighbors=[3, 3], batch_size=5, fixed_size_options=fixed,
                                            input_nodes=("movie", hetero["movie"].train_mask))
            for b in hl:
                for t in hetero.node_types:
                    assert b[t].num_nodes == fixed.num_nodes[t] and b[t].nodes_mask.shape == (fixed.num_nodes[t],)
                for et in hetero.edge_types:
                    assert b[et].num_edges == fixed.num_edges[et]
                seeds = b["movie"].input_id.numel()
                assert bool(b["movie"].nodes_mask[:seeds].all())
        auto = pg.FixedSizeOptions.from_loader(
            NeighborLoader(hetero, num_neighbors=[3, 3], batch_size=5, input_nodes=("movie", hetero["movie"].train_mask)),
            sample_limit=20)
        assert auto.is_hetero() and set(auto.num_nodes) == set(hetero.node_types)
    with pytest.raises(PopTorchError, match="whole number"):
        pg.FixedSizeOptions(num_nodes={"movie": 0})


def test_imdb_is_generated_at_the_published_sizes_with_a_learnable_genre():
    imdb = graphs.stand_ins()["IMDB"](None)
    d = imdb[0]
    spec = graphs.IMDB_SIZES
    assert d.node_types == ["movie", "director", "actor"]
    assert d.edge_types == [("movie", "to", "director"), ("movie", "to", "actor"), ("director", "to", "movie"),
                            ("actor", "to", "movie")]
    assert (d["movie"].num_nodes, d["director"].num_nodes, d["actor"].num_nodes) == (4278, 2081, 5257)
    assert all(d[t].x.shape[1] == 3066 for t in d.node_types) and d.num_edges == 34212  # PyG's dataset table
    assert [int(d["movie"][f"{s}_mask"].sum()) for s in ("train", "val", "test")] == [400, 400, 3478]
    assert not (d["movie"].train_mask & d["movie"].test_mask).any() and sorted(d["movie"].y.unique().tolist()) == [0, 1, 2]
    md = d["movie", "to", "director"].edge_index
    assert torch.equal(md[0], torch.arange(4278))  # one director a movie
    assert d["director", "to", "movie"].edge_index.shape == md.shape
    for t, et in (("director", ("movie", "to", "director")), ("actor", ("movie", "to", "actor"))):
        assert d[et].edge_index[1].unique().numel() == d[t].num_nodes  # everyone in at least one movie
    # a director's movies share a genre far more often than chance (1/3)
    y = d["movie"].y
    first = torch.full((spec.directors,), -1).scatter_reduce(0, md[1], y, reduce="amax", include_self=False)
    assert float((y == first[md[1]]).float().mean()) > 0.6
    assert torch.equal(graphs.stand_ins()["IMDB"]("elsewhere")[0]["movie"].x, d["movie"].x)  # the same every time


SCRIPT = '''\
"""Tutorial-shaped (Graphcore's PyTorch Geometric sampling tutorials): GraphSAGE on NeighborLoader batches padded
by FixedSizeNeighborLoader, a GCN on ClusterData clusters padded by FixedSizeClusterLoader."""
import torch
import torch.nn.functional as F
import poptorch
from poptorch_geometric import FixedSizeOptions, OverSizeStrategy
from poptorch_geometric.cluster_loader import FixedSizeClusterLoader
from poptorch_geometric.neighbor_loader import FixedSizeNeighborLoader
from torch_geometric.datasets import Planetoid
from torch_geometric.loader import ClusterData, ClusterLoader, NeighborLoader
from torch_geometric.nn import GCNConv, SAGEConv

data = Planetoid(root="data", name="Cora")[0]
batch_size = 32


class GraphSAGE(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.conv1 = SAGEConv(i, 32, add_self_loops=False)  # PyG 2.4 took (and ignored) it
        self.conv2 = SAGEConv(32, o)

    def forward(self, x, edge_index, y):
        x = self.conv2(self.conv1(x, edge_index).relu(), edge_index)
        return x, F.cross_entropy(x[:batch_size], y[:batch_size])


loader = NeighborLoader(data, num_neighbors=[5, 5], batch_size=batch_size, input_nodes=data.train_mask, shuffle=True)
options = FixedSizeOptions.from_loader(loader, sample_limit=3)
train = FixedSizeNeighborLoader(data, num_neighbors=[5, 5], batch_size=batch_size, input_nodes=data.train_mask,
                                shuffle=True, fixed_size_options=options,
                                over_size_strategy=OverSizeStrategy.TrimNodesAndEdges)
model = GraphSAGE(data.num_features, 7)
model.train()
sage = poptorch.trainingModel(model, optimizer=poptorch.optim.Adam(model.parameters(), lr=0.01))
losses = []
for epoch in range(6):
    for batch in train:
        assert batch.x.shape[0] == options.num_nodes and batch.edge_index.shape[1] == options.num_edges
        _, loss = sage(batch.x, batch.edge_index, batch.y)
        losses.append(float(loss))
print(f"GraphSAGE: first loss {losses[0]:.4f} last loss {sum(losses[-3:]) / 3:.4f}")


class GCN(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.conv1 = GCNConv(i, 32, add_self_loops=False)  # the padded batch keeps its shape
        self.conv2 = GCNConv(32, o, add_self_loops=False)

    def forward(self, x, edge_index, mask, y):
        x = self.conv2(self.conv1(x, edge_index).relu(), edge_index)
        return x, F.cross_entropy(x, torch.where(mask, y, -100))


clusters = ClusterData(data, num_parts=20, save_dir="data")
options = FixedSizeOptions.from_loader(ClusterLoader(clusters, batch_size=5), sample_limit=4)
cluster_train = FixedSizeClusterLoader(clusters, batch_size=5, fixed_size_options=options)
model = GCN(data.num_features, 7)
model.train()
gcn = poptorch.trainingModel(model, optimizer=poptorch.optim.Adam(model.parameters(), lr=0.01))
losses = []
for epoch in range(10):
    for batch in cluster_train:
        _, loss = gcn(batch.x, batch.edge_index, batch.train_mask & batch.nodes_mask, batch.y)
        losses.append(float(loss))
print(f"Cluster-GCN: first loss {sum(losses[:4]) / 4:.4f} last loss {sum(losses[-4:]) / 4:.4f}")
'''


def test_a_tutorial_shaped_sampling_script_trains_through_vendor_run_and_leaves_pyg_as_it_was(tmp_path, monkeypatch,
                                                                                                capsys):
    import torch_geometric.datasets as pyg_datasets

    from tests.test_vendor_run import falls, in_process

    real, before = pyg_datasets.IMDB, _originals()
    (tmp_path / "sampling_gnn.py").write_text(SCRIPT)
    out = in_process(tmp_path, monkeypatch, capsys, "sampling_gnn.py")
    falls(out.split("GraphSAGE: ")[1])
    falls(out.split("Cluster-GCN: ")[1])
    assert "trainingModel(GraphSAGE on 1 x gc200)" in out and "trainingModel(GCN on 1 x gc200)" in out
    assert "neighbour sampling" in out and "not METIS" in out and "SAGEConv(add_self_loops=...)" in out
    assert "poptorch_geometric.neighbor_loader" in out and "poptorch_geometric.cluster_loader" in out
    assert pyg_datasets.IMDB is real and _originals() == before  # PyG's own classes again after the run
    assert not (tmp_path / "data").exists()  # nothing written where the script keeps its data
