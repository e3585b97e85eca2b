"""PyTorch Geometric's downloaded graph sets for ``accelkit vendor-run --synthetic-data``: ``Planetoid`` (Cora,
CiteSeer, PubMed), ``TUDataset`` (MUTAG, PROTEINS, ENZYMES, NCI1), ``QM9`` and ``IMDB`` (heterogeneous), generated
here at the real sets' sizes.

Graphcore's PyTorch Geometric tutorials (graphcore/examples, ``tutorials/tutorials/pytorch_geometric``) download
Cora (Sen et al., AI Magazine 2008, as split by Yang, Cohen and Salakhutdinov, ICML 2016) and MUTAG (Debnath et
al., J. Med. Chem. 1991; the TU collection, Morris et al., 2020). Nothing is downloaded here, so for one run the
two classes are answered by real ``torch_geometric`` in-memory datasets (``InMemoryDataset``: transforms,
indexing, ``shuffle``, ``num_features`` and ``num_classes`` are PyG's own) over graphs made here:

- **Planetoid**: the real node, feature, class and edge counts and the public split (20 training nodes a class,
  500 validation, 1,000 test); each paper cites papers of its own class 81% of the time (Cora's edge homophily;
  CiteSeer 74%, PubMed 80%) and uses words its class favours, so a GCN learns the classes, as on the real set.
  Features are 0/1 word indicators (Cora, CiteSeer) or TF-IDF-like weights (PubMed).
- **TUDataset**: the real number of graphs, node and edge label kinds and classes (their shares too); each graph a
  random tree with a few ring closures at the set's mean size, its node labels drawn from a mix that depends on
  its class.
- **QM9**: 130,831 small molecules of up to 9 heavy atoms with their hydrogens, PyG's fields (atom and bond
  features, atomic numbers, positions, 19 targets); the targets are standardized sums over the atoms.
- **IMDB** (Graphcore's heterogeneous-graph tutorial): PyG's ``HeteroData`` layout of MAGNN's IMDB subset (movies,
  directors, actors and the links both ways), at its sizes (:data:`IMDB_SIZES`); each movie's genre shows in its
  plot keywords and in its director's and actors' other movies, so a GNN learns it.

The counts are the published ones (PyG's dataset table, ``torch_geometric.datasets`` docs); the graphs are not
the real ones: accuracies are not the papers'. The run says so once, and writes nothing to the script's folder.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from accelkit.vendor.notices import say


@dataclass(frozen=True)
class Citations:
    """A Planetoid citation graph's published sizes."""

    nodes: int
    features: int
    class_sizes: tuple[int, ...]
    edges: int  # directed, both directions of each citation, as PyG stores them
    homophily: float  # the share of edges within a class
    words: float  # mean nonzero features a node
    binary: bool  # 0/1 word indicators (else TF-IDF weights)


PLANETOID = {
    "cora": Citations(2708, 1433, (351, 217, 418, 818, 426, 298, 180), 10556, 0.81, 18.2, True),
    "citeseer": Citations(3327, 3703, (264, 590, 668, 701, 596, 508), 9104, 0.74, 31.7, True),
    "pubmed": Citations(19717, 500, (4103, 7739, 7875), 88648, 0.80, 50.1, False),
}
"""Nodes, features, class sizes and directed edges of PyG's Planetoid sets (PyG's dataset table); homophily from
Zhu et al., 'Beyond Homophily in Graph Neural Networks', NeurIPS 2020, table 1 (edge homophily)."""


@dataclass(frozen=True)
class Molecules:
    """A TU graph-classification set's published sizes."""

    graphs: int
    node_labels: int  # one-hot node features
    edge_labels: int  # one-hot edge features (0: none)
    class_sizes: tuple[int, ...]
    mean_nodes: float
    max_nodes: int
    mean_edges: float  # undirected
    min_nodes: int


TU = {
    "MUTAG": Molecules(188, 7, 4, (63, 125), 17.93, 28, 19.79, 10),
    "PROTEINS": Molecules(1113, 3, 0, (663, 450), 39.06, 620, 72.82, 4),
    "ENZYMES": Molecules(600, 3, 0, (100,) * 6, 32.63, 126, 62.14, 2),
    "NCI1": Molecules(4110, 37, 0, (2053, 2057), 29.87, 111, 32.30, 3),
}
"""Graphs, label kinds, classes and mean sizes of the TU sets (Morris et al., 'TUDataset', 2020, table; PyG's
dataset table)."""


def _rng(*key: Any) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _labels(sizes: tuple[int, ...], train_per_class: int, rng: np.random.Generator) -> np.ndarray:
    """Node classes: the first ``train_per_class`` x classes nodes hold that many of each class (the public split's
    training nodes), the rest the remaining counts, shuffled."""
    head = np.repeat(np.arange(len(sizes)), train_per_class)
    rest = np.concatenate([np.full(s - train_per_class, c) for c, s in enumerate(sizes)])
    rng.shuffle(head)
    rng.shuffle(rest)
    return np.concatenate([head, rest])


def _citation_edges(y: np.ndarray, edges: int, homophily: float, rng: np.random.Generator) -> np.ndarray:
    """``edges`` directed edges (each citation both ways, no self loops, no repeats), ``homophily`` of them within
    a class; who cites is skewed (a few nodes hold many citations, as in a citation graph)."""
    n = len(y)
    weight = rng.pareto(2.0, n) + 1.0
    weight /= weight.sum()
    by_class = [np.flatnonzero(y == c) for c in range(int(y.max()) + 1)]
    chance = sum((len(m) / n) ** 2 for m in by_class)  # an edge drawn at random stays in its class this often
    homophily = (homophily - chance) / (1 - chance)
    pairs: set[tuple[int, int]] = set()
    want = edges // 2
    while len(pairs) < want:
        m = 2 * (want - len(pairs)) + 16
        u = rng.choice(n, size=m, p=weight)
        same = rng.random(m) < homophily
        v = rng.integers(0, n, size=m)
        for i in np.flatnonzero(same):
            members = by_class[y[u[i]]]
            v[i] = members[rng.integers(0, len(members))]
        for a, b in zip(u.tolist(), v.tolist(), strict=True):
            if a != b:
                pairs.add((min(a, b), max(a, b)))
                if len(pairs) == want:
                    break
    both = np.array(sorted(pairs) + sorted((b, a) for a, b in pairs)).T
    order = np.lexsort((both[1], both[0]))
    return both[:, order]


def _citation_features(y: np.ndarray, spec: Citations, rng: np.random.Generator) -> np.ndarray:
    """Each node's words: about ``spec.words`` a node, a third of them from its class's own share of the vocabulary."""
    n, f, classes = len(y), spec.features, len(spec.class_sizes)
    x = np.zeros((n, f), dtype=np.float32)
    counts = np.maximum(1, rng.poisson(spec.words, n))
    span = f // classes
    for i in range(n):
        k = counts[i]
        own = rng.random(k) < 1 / 3
        cols = np.where(own, y[i] * span + rng.integers(0, span, k), rng.integers(0, f, k))
        x[i, cols] = 1.0 if spec.binary else rng.exponential(0.05, k).astype(np.float32) + 0.01
    return x


def citation_graph(name: str) -> dict[str, torch.Tensor]:
    """The generated graph of Planetoid's ``name`` (``"Cora"``, ``"CiteSeer"``, ``"PubMed"``): x, edge_index, y."""
    spec = PLANETOID[name.lower()]
    rng = _rng("planetoid", name.lower())
    y = _labels(spec.class_sizes, 20, rng)
    return {"x": torch.from_numpy(_citation_features(y, spec, rng)),
            "edge_index": torch.from_numpy(_citation_edges(y, spec.edges, spec.homophily, rng)).long(),
            "y": torch.from_numpy(y).long()}


def _molecule(spec: Molecules, label: int, rng: np.random.Generator) -> dict[str, torch.Tensor]:
    """One graph of a TU set: a random tree plus ring closures, at about the set's mean size."""
    n = int(np.clip(round(rng.normal(spec.mean_nodes, 0.3 * spec.mean_nodes)), spec.min_nodes,
                    min(spec.max_nodes, 3 * spec.mean_nodes)))
    parents = [int(rng.integers(0, i)) for i in range(1, n)]
    pairs = {(p, i) for i, p in zip(range(1, n), parents, strict=True)}
    extra = max(0, round(rng.normal(spec.mean_edges / spec.mean_nodes * n - (n - 1), 1.0)))
    for _ in range(10 * extra):
        if len(pairs) >= n - 1 + extra:
            break
        a, b = sorted(int(v) for v in rng.integers(0, n, 2))
        if a != b:
            pairs.add((a, b))
    ordered = sorted(pairs)
    src = [a for a, b in ordered] + [b for a, b in ordered]
    dst = [b for a, b in ordered] + [a for a, b in ordered]
    edge_index = torch.tensor([src, dst], dtype=torch.long)
    order = torch.argsort(edge_index[0] * n + edge_index[1])
    edge_index = edge_index[:, order]
    # node labels: a mix over the label kinds that leans to this class's favourite
    kinds = spec.node_labels
    mix = np.full(kinds, 1.0)
    mix[label % kinds] += 2.0
    mix[(2 * label + 1) % kinds] += 1.0
    atoms = rng.choice(kinds, size=n, p=mix / mix.sum())
    out = {"x": torch.nn.functional.one_hot(torch.from_numpy(atoms).long(), kinds).float(),
           "edge_index": edge_index, "y": torch.tensor([label])}
    if spec.edge_labels:
        bonds = rng.choice(spec.edge_labels, size=len(ordered), p=None)
        bonds = np.concatenate([bonds, bonds])[order.numpy()]
        out["edge_attr"] = torch.nn.functional.one_hot(torch.from_numpy(bonds).long(), spec.edge_labels).float()
    return out


def molecules(name: str) -> list[dict[str, torch.Tensor]]:
    """The generated graphs of TUDataset's ``name``, in class order shuffled once (as the real files are not)."""
    spec = TU[name]
    rng = _rng("tu", name)
    labels = np.concatenate([np.full(s, c) for c, s in enumerate(spec.class_sizes)])
    rng.shuffle(labels)
    return [_molecule(spec, int(c), rng) for c in labels]


QM9_MOLECULES = 130_831
"""QM9's molecules as PyG serves them (Ramakrishnan et al., Scientific Data 2014; PyG's dataset table: 130,831
graphs, about 18.0 atoms and 37.3 directed bonds each, 11 node features, 4 edge features, 19 targets)."""
_ELEMENTS = np.array([1, 6, 7, 8, 9])  # H, C, N, O, F: QM9's elements, the order of its one-hot atom type


def small_molecules(count: int = QM9_MOLECULES) -> list[dict[str, Any]]:
    """``count`` QM9-like molecules: up to 9 heavy atoms (C, N, O, F) joined in a tree with a ring closure now and
    then, hydrogens filling each heavy atom to about four bonds; 3-D positions a bond length apart; PyG's QM9 fields
    (x: atom type one-hot, atomic number, aromatic, sp/sp2/sp3, hydrogens; edge_attr: bond type one-hot; z; pos;
    y: 19 targets). The targets are standardized sums over the atoms plus noise, not QM9's properties in its units."""
    rng = _rng("qm9", count)
    weights = rng.normal(0.0, 1.0, (5, 19)) / 4  # each element's share of each target
    out = []
    for index in range(count):
        # most of GDB-9's molecules have all nine heavy atoms; the first is methane, as QM9's is
        heavy = (9 if rng.random() < 0.85 else int(rng.integers(1, 9))) if index else 1
        kinds = rng.choice(4, size=heavy, p=[0.70, 0.12, 0.16, 0.02]) + 1  # C, N, O, F (indices into _ELEMENTS)
        kinds[0] = 1
        pairs = [(int(rng.integers(0, i)), i) for i in range(1, heavy)]
        for _ in range(min(int(rng.poisson(1.7)), max(0, heavy - 2))):  # rings: about 1.7 a molecule
            a, b = sorted(int(v) for v in rng.choice(heavy, 2, replace=False))
            if (a, b) not in pairs:
                pairs.append((a, b))
        valence = np.array([4, 3, 2, 1])[kinds - 1]
        used = np.zeros(heavy, dtype=int)
        for a, b in pairs:
            used[a] += 1
            used[b] += 1
        hydrogens = np.maximum(0, valence - used)
        # double and triple bonds take hydrogens' places: about as many hydrogens as heavy atoms in all
        for _ in range(max(0, int(hydrogens.sum()) - max(int(round(rng.normal(heavy + 1, 1.5))), 4))):
            hydrogens[rng.choice(np.flatnonzero(hydrogens))] -= 1
        atoms = list(kinds)
        for atom, h in enumerate(hydrogens):
            for _ in range(int(h)):
                pairs.append((atom, len(atoms)))
                atoms.append(0)
        n = len(atoms)
        z = _ELEMENTS[np.array(atoms)]
        src = [a for a, b in pairs] + [b for a, b in pairs]
        dst = [b for a, b in pairs] + [a for a, b in pairs]
        order = np.lexsort((dst, src))
        edge_index = torch.tensor([src, dst], dtype=torch.long)[:, torch.from_numpy(order)]
        bond = np.where(rng.random(len(pairs)) < 0.85, 0, rng.integers(1, 4, len(pairs)))
        bond[[i for i, (a, b) in enumerate(pairs) if atoms[b] == 0]] = 0  # bonds to hydrogen are single
        bond = np.concatenate([bond, bond])[order]
        hs = np.bincount([a for a, b in pairs if atoms[b] == 0], minlength=n)
        hybrid = rng.integers(0, 3, n)
        x = np.zeros((n, 11), dtype=np.float32)
        x[np.arange(n), atoms] = 1.0
        x[:, 5] = z
        x[:, 6] = (bond[order.argsort()][:len(pairs)] == 3).any() if heavy > 4 else 0.0
        x[np.arange(n), 7 + hybrid] = np.where(np.array(atoms) > 0, 1.0, 0.0)
        x[:, 10] = hs
        pos = np.cumsum(rng.normal(0.0, 0.9, (n, 3)), axis=0).astype(np.float32)
        counts = np.bincount(atoms, minlength=5)
        y = (counts @ weights + rng.normal(0.0, 0.1, 19)).astype(np.float32)
        out.append({"x": torch.from_numpy(x), "edge_index": edge_index,
                    "edge_attr": torch.nn.functional.one_hot(torch.from_numpy(bond).long(), 4).float(),
                    "y": torch.from_numpy(y)[None], "pos": torch.from_numpy(pos), "z": torch.from_numpy(z).long(),
                    "smiles": "", "name": f"gdb_{index + 1}", "idx": torch.tensor([index])})
    return out


@dataclass(frozen=True)
class MovieSizes:
    """MAGNN's IMDB subset as PyG serves it (``torch_geometric.datasets.IMDB``)."""

    movies: int
    directors: int
    actors: int
    features: int  # bag-of-words plot keywords, on every node type
    movie_director: int  # links, each stored both ways
    movie_actor: int
    split: tuple[int, int, int]  # train, validation, test movies
    classes: int  # genres: action, comedy, drama


IMDB_SIZES = MovieSizes(4278, 2081, 5257, 3066, 4278, 12828, (400, 400, 3478), 3)
"""Node counts and genres from PyG's ``IMDB`` docstring (4,278 movies, 5,257 actors, 2,081 directors; action,
comedy, drama); 3,066 features and 34,212 directed edges from PyG's heterogeneous dataset table (``torch_geometric
.datasets`` docs: IMDB, 11,616 nodes, 34,212 edges): one director a movie (4,278 links) and the remaining 12,828
movie-actor links (34,212 / 2 - 4,278), about three actors a movie; the 400 / 400 / 3,478 split of MAGNN (Fu et
al., WWW 2020, table 2 and its data release, ``train_val_test_idx.npz``)."""

IMDB_KEYWORDS = 8.0  # mean plot keywords a movie: chosen here (the real set's is not published with it)
IMDB_LOYALTY = 0.7  # how often a director or actor takes a movie of their own favourite genre: chosen here


def _people(movie_genre: np.ndarray, people: int, links: int, rng: np.random.Generator) -> np.ndarray:
    """``links`` distinct (movie, person) pairs: every person in at least one movie, every movie given its share
    of the links (one each, then the rest round-robin), a person's movies mostly of the genre of their first."""
    movies = len(movie_genre)
    per_movie = np.full(movies, links // movies)
    per_movie[rng.permutation(movies)[:links % movies]] += 1
    slots = np.repeat(np.arange(movies), per_movie)
    rng.shuffle(slots)
    who = np.full(links, -1)
    who[:people] = np.arange(people)  # everyone once
    favourite = movie_genre[slots[:people]]
    by_genre = [np.flatnonzero(favourite == g) for g in range(int(movie_genre.max()) + 1)]
    loyal = rng.random(links) < IMDB_LOYALTY
    for i in range(people, links):
        pool = by_genre[movie_genre[slots[i]]]
        who[i] = pool[rng.integers(0, len(pool))] if loyal[i] and len(pool) else rng.integers(0, people)
    pairs = np.unique(slots * people + who)  # a person listed twice for one movie counts once
    while pairs.size < links:  # top up with new pairs (rare)
        m, p = rng.integers(0, movies), rng.integers(0, people)
        pairs = np.unique(np.r_[pairs, m * people + p])
    return np.stack([pairs // people, pairs % people])


def movie_graph() -> dict[str, Any]:
    """The generated IMDB (see :data:`IMDB_SIZES`): ``{"x": {type: features}, "y", "masks": {split: mask},
    "edges": {(src, dst): edge_index}}``. Each movie has one director; keywords are 0/1 bag-of-words, a third of a
    movie's from its genre's share of the vocabulary, and a director's or actor's features are the keywords of
    their movies (as MAGNN builds them)."""
    spec = IMDB_SIZES
    rng = _rng("imdb")
    y = rng.permutation(np.arange(spec.movies) % spec.classes)
    # movie keywords: as the citation sets' words, a third from the genre's share of the vocabulary
    x_movie = np.zeros((spec.movies, spec.features), dtype=np.float32)
    counts = np.maximum(1, rng.poisson(IMDB_KEYWORDS, spec.movies))
    span = spec.features // spec.classes
    for i in range(spec.movies):
        k = counts[i]
        own = rng.random(k) < 1 / 3
        x_movie[i, np.where(own, y[i] * span + rng.integers(0, span, k), rng.integers(0, spec.features, k))] = 1.0
    # one director a movie: every director in at least one, loyal to a genre
    directed = _people(y, spec.directors, spec.movie_director, rng)
    acted = _people(y, spec.actors, spec.movie_actor, rng)

    def pooled(edges: np.ndarray, n: int) -> torch.Tensor:
        x = torch.zeros((n, spec.features)).index_add_(0, torch.from_numpy(edges[1]),
                                                       torch.from_numpy(x_movie)[torch.from_numpy(edges[0])])
        return x.clamp_(max=1.0)

    train, val, _ = spec.split
    order = rng.permutation(spec.movies)
    masks = {name: np.zeros(spec.movies, dtype=bool) for name in ("train", "val", "test")}
    masks["train"][order[:train]] = True
    masks["val"][order[train:train + val]] = True
    masks["test"][order[train + val:]] = True
    to_t = (lambda a: torch.from_numpy(np.ascontiguousarray(a)).long())  # noqa: E731
    return {"x": {"movie": torch.from_numpy(x_movie), "director": pooled(directed, spec.directors),
                  "actor": pooled(acted, spec.actors)},
            "y": torch.from_numpy(y).long(), "masks": {k: torch.from_numpy(v) for k, v in masks.items()},
            "edges": {("movie", "director"): to_t(directed), ("movie", "actor"): to_t(acted),
                      ("director", "movie"): to_t(_sorted(directed[::-1])), ("actor", "movie"): to_t(_sorted(acted[::-1]))}}


def _sorted(edges: np.ndarray) -> np.ndarray:
    """Edges in row-major order, as PyG's IMDB reads them from a sparse matrix (COO of a CSR)."""
    order = np.lexsort((edges[1], edges[0]))
    return edges[:, order]


def _classes() -> tuple[type, type, type, type]:
    """The dataset classes, made on first use (they subclass PyG's InMemoryDataset)."""
    from torch_geometric.data import Data, HeteroData, InMemoryDataset

    class Planetoid(InMemoryDataset):
        """``torch_geometric.datasets.Planetoid(root, name, split="public", num_train_per_class=20, num_val=500,
        num_test=1000, transform=None, pre_transform=None, force_reload=False)`` over the generated graph of
        :func:`citation_graph` (the module docstring says what it is). Nothing is read from or written to
        ``root``."""

        def __init__(self, root: Any = None, name: str = "Cora", split: str = "public",
                     num_train_per_class: int = 20, num_val: int = 500, num_test: int = 1000,
                     transform: Any = None, pre_transform: Any = None, force_reload: bool = False) -> None:
            if name.lower() not in PLANETOID:
                raise ValueError(f"Planetoid has no set called {name!r}: Cora, CiteSeer or PubMed")
            split = split.lower()
            if split not in ("public", "full", "random"):
                raise ValueError(f"Planetoid's split {split!r} is not made here: 'public', 'full' or 'random'")
            self.name, self.split = name, split
            super().__init__(None, transform, pre_transform)
            g = citation_graph(name)
            n, spec = len(g["y"]), PLANETOID[name.lower()]
            classes = len(spec.class_sizes)
            data = Data(**g)
            train = torch.zeros(n, dtype=torch.bool)
            val = torch.zeros(n, dtype=torch.bool)
            test = torch.zeros(n, dtype=torch.bool)
            if split == "random":
                gen = torch.Generator().manual_seed(0)
                for c in range(classes):
                    idx = (data.y == c).nonzero().view(-1)
                    train[idx[torch.randperm(idx.numel(), generator=gen)[:num_train_per_class]]] = True
                rest = (~train).nonzero().view(-1)
                rest = rest[torch.randperm(rest.numel(), generator=gen)]
                val[rest[:num_val]] = True
                test[rest[num_val:num_val + num_test]] = True
            else:
                train[:20 * classes] = True
                val[20 * classes:20 * classes + 500] = True
                test[n - 1000:] = True
                if split == "full":
                    train[:] = True
                    train[val | test] = False
            data.train_mask, data.val_mask, data.test_mask = train, val, test
            if pre_transform is not None:
                data = pre_transform(data)
            self._data, self.slices = self.collate([data])
            say(f"torch_geometric.datasets.Planetoid(name={name!r}) is a generated citation graph at {name}'s sizes "
                f"({n:,} papers, {spec.features:,} word features, {classes} classes, {spec.edges:,} edges, the public "
                "split's masks), nothing downloaded: its papers cite their own class as often as the real ones do, "
                "so a GCN learns it, but the accuracies are not the papers'")

        def __repr__(self) -> str:
            return f"{self.name}()"

    class TUDataset(InMemoryDataset):
        """``torch_geometric.datasets.TUDataset(root, name, transform=None, pre_transform=None, pre_filter=None,
        force_reload=False, use_node_attr=False, use_edge_attr=False, cleaned=False)`` over the generated graphs of
        :func:`molecules`. Nothing is read from or written to ``root``."""

        def __init__(self, root: Any = None, name: str = "MUTAG", transform: Any = None, pre_transform: Any = None,
                     pre_filter: Any = None, force_reload: bool = False, use_node_attr: bool = False,
                     use_edge_attr: bool = False, cleaned: bool = False) -> None:
            if name not in TU:
                raise ValueError(f"TUDataset {name!r} is not made here (no download on this machine): one of "
                                 f"{', '.join(TU)}")
            self.name, self.cleaned = name, cleaned
            super().__init__(None, transform, pre_transform, pre_filter)
            graphs = [Data(**g) for g in molecules(name)]
            if pre_filter is not None:
                graphs = [d for d in graphs if pre_filter(d)]
            if pre_transform is not None:
                graphs = [pre_transform(d) for d in graphs]
            self._data, self.slices = self.collate(graphs)
            spec = TU[name]
            say(f"torch_geometric.datasets.TUDataset(name={name!r}) is {spec.graphs} generated graphs at {name}'s "
                f"sizes ({spec.node_labels} node labels, {len(spec.class_sizes)} classes, about {spec.mean_nodes:g} "
                "nodes a graph), nothing downloaded: a graph's node labels lean to its class, so a GNN learns them, "
                "but the accuracies are not the papers'")

        def __repr__(self) -> str:
            return f"{self.name}({len(self)})"

    class QM9(InMemoryDataset):
        """``torch_geometric.datasets.QM9(root, transform=None, pre_transform=None, pre_filter=None,
        force_reload=False)`` over :func:`small_molecules`. Nothing is read from or written to ``root``."""

        def __init__(self, root: Any = None, transform: Any = None, pre_transform: Any = None,
                     pre_filter: Any = None, force_reload: bool = False) -> None:
            super().__init__(None, transform, pre_transform, pre_filter)
            graphs = [Data(**g) for g in small_molecules()]
            if pre_filter is not None:
                graphs = [d for d in graphs if pre_filter(d)]
            if pre_transform is not None:
                graphs = [pre_transform(d) for d in graphs]
            self._data, self.slices = self.collate(graphs)
            say(f"torch_geometric.datasets.QM9 is {QM9_MOLECULES:,} generated molecules at QM9's sizes (up to 9 "
                "heavy atoms with their hydrogens, 11 atom features, 4 bond types, positions, 19 targets), nothing "
                "downloaded: the targets are standardized sums over the atoms, not QM9's properties")

        def __repr__(self) -> str:
            return f"QM9({len(self)})"

    class IMDB(InMemoryDataset):
        """``torch_geometric.datasets.IMDB(root, transform=None, pre_transform=None, force_reload=False)`` over
        :func:`movie_graph`, in PyG's ``HeteroData`` layout (node types movie, director, actor; edge types
        (movie, to, director), (movie, to, actor) and their reverses). Nothing is read from or written to ``root``."""

        def __init__(self, root: Any = None, transform: Any = None, pre_transform: Any = None,
                     force_reload: bool = False) -> None:
            super().__init__(None, transform, pre_transform)
            g = movie_graph()
            data = HeteroData()
            for node_type in ("movie", "director", "actor"):  # PyG's order
                data[node_type].x = g["x"][node_type]
            data["movie"].y = g["y"]
            for name, mask in g["masks"].items():
                data["movie"][f"{name}_mask"] = mask
            for (src, dst), edge_index in g["edges"].items():
                data[src, dst].edge_index = edge_index
            if pre_transform is not None:
                data = pre_transform(data)
            self._data, self.slices = self.collate([data])
            spec = IMDB_SIZES
            say(f"torch_geometric.datasets.IMDB is a generated movie graph at IMDB's sizes ({spec.movies:,} movies, "
                f"{spec.directors:,} directors, {spec.actors:,} actors, {spec.features:,} keyword features, 3 genres, "
                f"the {'/'.join(map(str, spec.split))} split), nothing downloaded: a movie's genre shows in its "
                "keywords, director and actors, so a GNN learns it, but the accuracies are not the papers'")

        def __repr__(self) -> str:
            return "IMDB()"

    return Planetoid, TUDataset, QM9, IMDB


def refuse_download(url: str, folder: str, *args: Any, **kwargs: Any) -> str:
    """PyG's ``download_url`` during a ``--synthetic-data`` run: another set than those made here would be fetched
    from the network, which a workshop machine does not reach: refused, naming the URL and what to do."""
    from accelkit.errors import AccelkitError

    raise AccelkitError(f"PyTorch Geometric would download {url} into {folder}: --synthetic-data makes Planetoid "
                        f"(Cora, CiteSeer, PubMed), TUDataset ({', '.join(TU)}), QM9 and IMDB on this machine, not "
                        "this set, "
                        "and nothing is downloaded here",
                        fix=f"put the set's raw files in {folder} (PyG reads them there instead of downloading), or "
                            "use one of the sets made here")


_made: dict[str, type] = {}


def stand_ins() -> dict[str, type]:
    """``{"Planetoid": ..., "TUDataset": ..., "QM9": ..., "IMDB": ...}``: the classes above (made once)."""
    if not _made:
        _made["Planetoid"], _made["TUDataset"], _made["QM9"], _made["IMDB"] = _classes()
    return dict(_made)


__all__ = ["IMDB_SIZES", "PLANETOID", "QM9_MOLECULES", "TU", "citation_graph", "molecules", "movie_graph",
           "refuse_download", "small_molecules", "stand_ins"]
