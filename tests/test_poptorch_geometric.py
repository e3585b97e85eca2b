"""PopTorch Geometric over accelkit's simulated IPU (``accelkit.facades.poptorch.geometric``) and PyTorch
Geometric's downloaded sets made here (``accelkit.vendor.graphs``): fixed-size batches hold exactly their graphs,
nodes and edges with the padding masks, packing fits, a call's mini-batches train bit for bit as PyTorch's steps
do, the generated sets have the real sizes, and a tutorial-shaped script (examples/vendor/poptorch_geometric_gnn.py)
runs through ``accelkit vendor-run``."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torch_geometric")  # a dev dependency (pyproject.toml): always there under `make test`

import torch.nn.functional as F  # noqa: E402
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.nn import GCNConv, global_mean_pool  # noqa: E402

from accelkit.facades import poptorch  # noqa: E402
from accelkit.facades.poptorch import geometric as pg  # noqa: E402
from accelkit.facades.poptorch.options import PopTorchError  # noqa: E402
from accelkit.vendor import graphs  # noqa: E402


def _graph(n: int, e: int, label: int, seed: int) -> Data:
    g = torch.Generator().manual_seed(seed)
    return Data(x=torch.randn(n, 3, generator=g), edge_index=torch.randint(0, n, (2, e), generator=g),
                edge_attr=torch.randn(e, 2, generator=g), y=torch.tensor([label]))


GRAPHS = [_graph(4 + i % 5, 6 + i % 7, i % 2, i) for i in range(23)]


def test_a_fixed_size_batch_holds_exactly_its_graphs_nodes_and_edges_with_masks_and_pad_values():
    opts = pg.FixedSizeOptions(num_nodes=40, num_edges=70, num_graphs=5, node_pad_value=-1.0, edge_pad_value=7.0,
                               graph_pad_value=9.0)
    real = GRAPHS[:3]
    b = pg.FixedSizeCollater(opts)(list(real))
    n, e = sum(g.num_nodes for g in real), sum(g.num_edges for g in real)
    assert b.x.shape == (40, 3) and b.edge_index.shape == (2, 70) and b.edge_attr.shape == (70, 2)
    assert b.num_graphs == 5 and b.y.shape == (5,) and b.batch.shape == (40,)
    assert b.graphs_mask.tolist() == [True] * 3 + [False] * 2
    assert int(b.nodes_mask.sum()) == n and int(b.edges_mask.sum()) == e
    assert torch.equal(b.x[:n], torch.cat([g.x for g in real])) and (b.x[n:] == -1.0).all()
    assert (b.edge_attr[e:] == 7.0).all() and b.y[3:].tolist() == [9, 9]
    # padding edges stay among the padding nodes: a message passed over them never reaches a real node
    assert (b.edge_index[:, e:] >= n).all() and int(b.edge_index.max()) < 40
    assert set(b.batch[n:].tolist()) <= {3, 4}


def test_a_batch_too_small_names_the_size_to_raise_and_trimming_is_refused_by_name():
    opts = pg.FixedSizeOptions(num_nodes=10, num_edges=100, num_graphs=4)
    with pytest.raises(PopTorchError, match="room for the nodes") as err:
        pg.FixedSizeCollater(opts)(list(GRAPHS[:3]))
    assert "num_nodes" in err.value.fix
    with pytest.raises(PopTorchError, match="at least 2 graphs"):
        pg.FixedSizeOptions(num_nodes=10, num_graphs=1)
    with pytest.raises(PopTorchError, match="cutting nodes or edges"):
        pg.FixedSizeDataLoader(GRAPHS, batch_size=4, fixed_size_options=opts,
                               over_size_strategy=pg.OverSizeStrategy.TrimNodes)
    with pytest.raises(PopTorchError, match="batch_size"):
        pg.FixedSizeDataLoader(GRAPHS, batch_size=3, fixed_size_options=opts)
    with pytest.raises(PopTorchError, match="nothing to leave out"):  # the sampling loaders trim (test_pyg_sampling)
        pg.FixedSizeNeighborLoader(Data(x=torch.randn(4, 3), edge_index=torch.tensor([[0, 1], [1, 2]])),
                                   num_neighbors=[5], fixed_size_options=opts,
                                   over_size_strategy=pg.OverSizeStrategy.Skip)


def test_pad_to_max_takes_batch_size_minus_one_graphs_and_from_dataset_fits_the_largest():
    opts = pg.FixedSizeOptions.from_dataset(GRAPHS, batch_size=4)
    assert opts.num_nodes == 8 * 3 + 1 and opts.num_edges == 12 * 3 + 1 and opts.num_graphs == 4
    batches = list(pg.FixedSizeDataLoader(GRAPHS, batch_size=4))
    assert len(batches) == 8  # 23 graphs, 3 real ones a batch
    assert [int(b.graphs_mask.sum()) for b in batches] == [3] * 7 + [2]
    assert all(b.x.shape == (25, 3) and b.edge_index.shape == (2, 37) for b in batches)


def test_stream_pack_fits_as_many_graphs_as_room_allows_and_skips_what_never_fits():
    opts = pg.FixedSizeOptions(num_nodes=20, num_edges=40, num_graphs=6)
    loader = pg.FixedSizeDataLoader(GRAPHS, batch_size=6, fixed_size_options=opts,
                                    fixed_size_strategy=pg.FixedSizeStrategy.StreamPack)
    batches = list(loader)
    assert len(loader) == len(batches)
    assert sum(int(b.graphs_mask.sum()) for b in batches) == len(GRAPHS)  # every graph, once
    for b in batches:
        assert int(b.nodes_mask.sum()) <= 19 and int(b.edges_mask.sum()) <= 39 and int(b.graphs_mask.sum()) <= 5
    # a pack closes only when the next graph would not fit
    real = [int(b.graphs_mask.sum()) for b in batches]
    firsts = [sum(real[:i]) for i in range(1, len(real))]
    for i, first in enumerate(firsts):
        nodes = int(batches[i].nodes_mask.sum()) + GRAPHS[first].num_nodes
        edges = int(batches[i].edges_mask.sum()) + GRAPHS[first].num_edges
        assert real[i] == 5 or nodes > 19 or edges > 39
    big = [*GRAPHS[:4], _graph(30, 5, 0, 99), *GRAPHS[4:8]]
    with pytest.raises(PopTorchError, match="room for the nodes"):
        list(pg.FixedSizeDataLoader(big, batch_size=6, fixed_size_options=opts,
                                    fixed_size_strategy=pg.FixedSizeStrategy.StreamPack))
    skipped = list(pg.FixedSizeDataLoader(big, batch_size=6, fixed_size_options=opts,
                                          fixed_size_strategy=pg.FixedSizeStrategy.StreamPack,
                                          over_size_strategy=pg.OverSizeStrategy.Skip))
    assert sum(int(b.graphs_mask.sum()) for b in skipped) == 8


class _Classifier(torch.nn.Module):
    def __init__(self, graphs: int) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.conv = GCNConv(3, 8, add_self_loops=False)
        self.lin = torch.nn.Linear(8, 2)
        self.graphs = graphs

    def forward(self, x, edge_index, batch, graphs_mask, y):
        h = self.lin(global_mean_pool(self.conv(x, edge_index).relu(), batch, size=self.graphs))
        return F.cross_entropy(h, torch.where(graphs_mask, y, -100))


def test_device_iterations_hand_a_calls_mini_batches_at_once_and_train_as_pytorchs_steps():
    opts = pg.FixedSizeOptions(num_nodes=30, num_edges=50, num_graphs=4)
    single = list(pg.FixedSizeDataLoader(GRAPHS, batch_size=4, fixed_size_options=opts))
    options = poptorch.Options().deviceIterations(2)
    combined = list(pg.FixedSizeDataLoader(GRAPHS, batch_size=4, fixed_size_options=opts, options=options))
    assert len(combined) == len(GRAPHS) // 6  # two mini-batches of 3 real graphs a call; a partial call dropped
    assert combined[0].x.shape == (60, 3) and combined[0].edge_index.shape == (4, 50)
    assert torch.equal(combined[0].edge_index[2:], single[1].edge_index)  # each mini-batch keeps its own indices
    # the oracle: the IPU's two device iterations are PyTorch's two optimizer steps, one per mini-batch
    ipu, ref = _Classifier(4), _Classifier(4)
    run = poptorch.trainingModel(ipu, options, optimizer=torch.optim.SGD(ipu.parameters(), lr=0.1))
    sgd = torch.optim.SGD(ref.parameters(), lr=0.1)
    for call in range(2):
        b = combined[call]
        run(b.x, b.edge_index, b.batch, b.graphs_mask, b.y)
        for m in single[2 * call:2 * call + 2]:
            sgd.zero_grad()
            ref(m.x, m.edge_index, m.batch, m.graphs_mask, m.y).backward()
            sgd.step()
    for (name, p), q in zip(ipu.named_parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert run.training and run.lin is ipu.lin  # the wrapped model's attributes, as PopTorch forwards them
    run.eval()
    assert not ipu.training
    with pytest.raises(AttributeError, match="neither poptorch's PoplarExecutor"):
        _ = run.no_such_attribute


def test_the_unpadded_loader_combines_same_shaped_mini_batches_per_call_and_refuses_others():
    same = [GRAPHS[0]] * 7
    loader = pg.DataLoader(same, batch_size=2, options=poptorch.Options().deviceIterations(3))
    first = next(iter(loader))
    assert len(loader) == 1 and first.x.shape[0] == 6 * GRAPHS[0].num_nodes and first.y.shape == (6,)
    assert first.edge_index.shape == (6, 2 * GRAPHS[0].num_edges)  # three (2, edges) blocks, one per iteration
    assert next(iter(pg.DataLoader(GRAPHS, batch_size=2))).num_graphs == 2  # one call, one mini-batch: PyG's
    with pytest.raises(PopTorchError, match="differ in shape") as err:
        next(iter(pg.DataLoader(GRAPHS, batch_size=2, options=poptorch.Options().deviceIterations(3))))
    assert "FixedSizeDataLoader" in err.value.fix


def test_generated_sets_have_the_real_sizes_splits_and_a_learnable_signal():
    planetoid, tu = graphs.stand_ins()["Planetoid"], graphs.stand_ins()["TUDataset"]
    cora = planetoid("unused", "Cora")
    g = cora[0]
    assert (g.num_nodes, cora.num_features, cora.num_classes, g.num_edges) == (2708, 1433, 7, 10556)
    assert int(g.train_mask.sum()) == 140 and int(g.val_mask.sum()) == 500 and int(g.test_mask.sum()) == 1000
    assert torch.bincount(g.y[g.train_mask]).tolist() == [20] * 7
    assert torch.bincount(g.y).tolist() == [351, 217, 418, 818, 426, 298, 180]
    assert g.is_undirected() and not g.has_self_loops()
    within = float((g.y[g.edge_index[0]] == g.y[g.edge_index[1]]).float().mean())
    assert within == pytest.approx(0.81, abs=0.03)  # Cora's edge homophily
    assert torch.equal(planetoid(None, "Cora")[0].x, g.x)  # the same graph every time
    mutag = tu("unused", "MUTAG")
    assert len(mutag) == 188 and mutag.num_features == 7 and mutag.num_edge_features == 4 and mutag.num_classes == 2
    sizes = torch.tensor([d.num_nodes for d in mutag], dtype=torch.float)
    assert float(sizes.mean()) == pytest.approx(17.93, rel=0.1) and int(sizes.min()) >= 10
    assert sorted(torch.bincount(torch.cat([d.y for d in mutag])).tolist()) == [63, 125]
    with pytest.raises(ValueError, match="MUTAG"):
        tu(None, "NOT-A-SET")
    qm9 = graphs.small_molecules(400)
    assert qm9[0]["z"].tolist() == [6, 1, 1, 1, 1]  # methane first, as in QM9
    atoms = torch.tensor([float(m["x"].shape[0]) for m in qm9])
    bonds = torch.tensor([float(m["edge_index"].shape[1]) for m in qm9])
    assert float(atoms.mean()) == pytest.approx(18.0, rel=0.1) and int(atoms.max()) <= 29  # QM9: 18.0, at most 29
    assert float(bonds.mean()) == pytest.approx(37.3, rel=0.1)
    for m in qm9[:50]:
        n, e = m["x"].shape[0], m["edge_index"].shape[1]
        assert m["x"].shape == (n, 11) and m["edge_attr"].shape == (e, 4) and m["y"].shape == (1, 19)
        assert m["pos"].shape == (n, 3) and torch.equal(m["x"][:, 5].long(), m["z"])
        assert int(m["edge_index"].max()) < n and Data(edge_index=m["edge_index"], num_nodes=n).is_undirected()


def test_graphcore_style_gnn_script_runs_unchanged_and_the_stand_ins_leave_no_trace(tmp_path, monkeypatch, capsys):
    import torch_geometric.datasets as pyg_datasets

    from tests.test_vendor_run import falls, in_process

    real = pyg_datasets.Planetoid
    out = in_process(tmp_path, monkeypatch, capsys, "poptorch_geometric_gnn.py", "--epochs", "30")
    falls(out.split("Cora test accuracy")[0])
    mutag = [float(v) for v in out.split("MUTAG: ")[1].split("first loss ")[1].split("\n")[0].split(" last loss ")]
    assert mutag[1] < mutag[0]
    assert "Cora test accuracy" in out and "MODELLED on gc200" in out
    assert "trainingModel(GraphClassifier on 1 x gc200)" in out and "deviceIterations 2" in out
    assert "generated citation graph at Cora's sizes" in out and "nothing downloaded" in out
    assert "poptorch_geometric" in out
    assert pyg_datasets.Planetoid is real  # the real class again after the run
    assert not (tmp_path / "data").exists()  # nothing written where the script keeps its data


def test_a_set_not_made_here_is_refused_by_url_and_pygs_compiled_samplers_are_explained(tmp_path, monkeypatch):
    from accelkit.vendor import run_script

    monkeypatch.chdir(tmp_path)
    (tmp_path / "reddit.py").write_text("from torch_geometric.datasets import Reddit\nReddit(root='data/Reddit')\n")
    run = run_script(tmp_path / "reddit.py", synthetic_data=True, quiet=True)
    assert run.exit_code == 1 and "would download https://" in run.error and "data/Reddit/raw" in run.error
    assert "QM9" in run.error and not [p for p in (tmp_path / "data").rglob("*") if p.is_file()]  # PyG made the folder
    # uniform sampling and ClusterData run in accelkit's stand-ins (tests/test_pyg_sampling.py); weighted sampling
    # needs pyg-lib itself, which is explained
    (tmp_path / "weighted.py").write_text(
        "from torch_geometric.datasets import Planetoid\nfrom torch_geometric.loader import NeighborLoader\n"
        "data = Planetoid('data', 'Cora')[0]\ndata.w = data.edge_index[0].float()\n"
        "NeighborLoader(data, num_neighbors=[2], weight_attr='w')\n")
    run = run_script(tmp_path / "weighted.py", synthetic_data=True, quiet=True)
    assert run.exit_code == 1 and "weighted.py:5" in run.error
    assert "pyg-lib" in run.error and "data.pyg.org" in run.error and "FixedSizeDataLoader" in run.error


def test_dicts_of_tensors_are_inputs_streamed_every_call_as_poptorch_flattens_them():
    """A heterogeneous GNN takes ``x_dict`` and ``edge_index_dict`` (PyG's dicts of tensors) beside keyword tensors:
    PopTorch flattens them into the program's inputs, so they cross the host link every call and the first
    tensor's leading dimension counts the samples; they are not settings fixed into the program."""
    class Hetero(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.movie, self.actor = torch.nn.Linear(32, 3), torch.nn.Linear(32, 3)

        def forward(self, x_dict, edge_index_dict, target=None):
            src, dst = edge_index_dict[("actor", "to", "movie")]
            out = self.movie(x_dict["movie"]).index_add(0, dst, self.actor(x_dict["actor"])[src])
            return out, F.cross_entropy(out, target)

    torch.manual_seed(0)
    x = {"movie": torch.randn(60, 32), "actor": torch.randn(90, 32)}
    edges = {("actor", "to", "movie"): torch.stack([torch.randint(0, 90, (200,)), torch.randint(0, 60, (200,))])}
    y = torch.randint(0, 3, (60,))
    model = Hetero()
    pm = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    losses = [float(pm(x, edges, target=y)[1]) for _ in range(3)]
    assert losses[-1] < losses[0]
    session = pm._session
    assert session.samples == 3 * 60  # the movie nodes of each call, not one 1-D target
    report = session.compiled.report
    streamed = sum(t.numel() * t.element_size() for t in (*x.values(), *edges.values(), y))
    assert report.io_in_bytes >= streamed  # the dicts' tensors cross the host link every call
