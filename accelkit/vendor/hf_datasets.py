"""Hugging Face ``datasets`` (and ``evaluate``) for small text sets, made on this machine.

Tutorials download their text: ``load_dataset("glue", "sst2")``, ``load_dataset("imdb")``,
``load_dataset("wikitext", "wikitext-2-raw-v1")``, ``load_dataset("squad")``, then score with
``load_metric("squad")`` / ``evaluate.load("accuracy")``. Under ``accelkit vendor-run --synthetic-data``, where
the ``datasets`` package is not installed, ``import datasets`` (and ``import evaluate``) is answered by this
module, and each load says what it made:

- the **rows have the real set's columns** (SST-2: ``sentence``, ``label``, ``idx``; SST: ``sentence``, ``label`` a
  float in [0, 1]; IMDB: ``text``, ``label``; WikiText: ``text`` lines; SQuAD: ``id``, ``title``, ``context``,
  ``question``, ``answers`` with ``text`` and ``answer_start``) and its splits, each :data:`SPLIT_ROWS` rows
  (SQuAD at its real 87,599 / 10,570: :data:`REAL_ROWS`);
- the **text is accelkit's own corpus** (``datasets/corpus``), so it reads as prose, and the labels can be
  learned: a sentiment row is a corpus sentence with a positive or a negative phrase woven in (the label says
  which); a SQuAD answer is the span of the context that follows the words the question quotes;
- a :class:`Dataset` answers what tutorials call: ``len``, rows by index, columns by name, ``map`` (``batched``,
  ``remove_columns``), ``filter``, ``select``, ``shuffle``, ``train_test_split``, ``remove_columns``,
  ``rename_column``, ``set_format("torch")`` / ``with_format``; ``load_dataset(...)`` without ``split`` gives a
  :class:`DatasetDict`;
- **metrics** compute what the real ones do on the values given: ``accuracy``, ``f1``, ``precision``,
  ``recall``, ``matthews_correlation``, ``glue`` (by task), ``squad`` (exact match and token F1 after SQuAD's
  normalisation), with ``compute`` and ``add_batch``.

A set or a metric not listed is refused with an error naming it and what is answered.
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from accelkit.errors import AccelkitError

SPLIT_ROWS = {"train": 512, "validation": 128, "dev": 128, "test": 128}
# sets made at their real size (cheap to make, and tutorials index into them): SQuAD v1.1's 87,599 training and
# 10,570 validation questions (Rajpurkar et al., EMNLP 2016; the Hugging Face dataset card's split sizes), so
# Graphcore's BERT fine-tuning tutorial finds the row 10,016 it shows
REAL_ROWS: dict[str, dict[str, int]] = {"squad": {"train": 87599, "validation": 10570}}


def rows_of(kind: str, split: str) -> int:
    """How many rows the stand-in for ``kind``'s ``split`` has: the real set's where :data:`REAL_ROWS` has it,
    else :data:`SPLIT_ROWS`."""
    return REAL_ROWS.get(kind, SPLIT_ROWS)[split]
POSITIVE = ("a real delight", "wonderful and clear", "a joy to read", "brilliant work", "warm and moving")
NEGATIVE = ("a dull mess", "tedious and flat", "a waste of time", "awful work", "cold and boring")


class DatasetsError(AccelkitError):
    """A ``datasets`` / ``evaluate`` call the stand-in cannot answer."""


class DatasetIndexError(DatasetsError, IndexError):
    """A row index past the stand-in's rows (an IndexError still, as iteration by index expects)."""


def _say(text: str) -> None:
    from accelkit.vendor.notices import say

    say(text)


# ---- Dataset --------------------------------------------------------------------------------------
class Feature(str):
    """A column's type: its Python type name (equal to that string, as before), with datasets' ``dtype`` and, for a
    class label, ``names`` / ``num_classes`` / ``int2str``."""

    names: list[str] | None

    def __new__(cls, type_name: str, names: list[str] | None = None) -> Feature:
        out = super().__new__(cls, type_name)
        out.names = names
        return out

    @property
    def dtype(self) -> str:
        return {"int": "int64", "float": "float32", "str": "string", "bool": "bool"}.get(str(self), "list")

    @property
    def num_classes(self) -> int:
        return len(self.names or [])

    def int2str(self, value: int) -> str:
        return (self.names or [])[value]


LABEL_NAMES = {"sst2": ["negative", "positive"], "imdb": ["neg", "pos"]}  # the real sets' ClassLabel names


class Dataset:
    """``datasets.Dataset``'s common interface over columns held as Python lists."""

    def __init__(self, columns: dict[str, list[Any]], split: str | None = None) -> None:
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise DatasetsError(f"columns of different lengths: {({k: len(v) for k, v in columns.items()})}",
                                fix="return the same number of values for every column from map(batched=True)")
        self._columns = columns
        self.split = split
        self._format: str | None = None
        self._format_columns: list[str] | None = None
        self._transform: Callable[[dict[str, list[Any]]], Any] | None = None
        self._label_names: dict[str, list[str]] = {}

    @classmethod
    def from_dict(cls, mapping: dict[str, list[Any]]) -> Dataset:
        return cls({k: list(v) for k, v in mapping.items()})

    @classmethod
    def from_list(cls, rows: list[dict[str, Any]]) -> Dataset:
        return cls({k: [r[k] for r in rows] for k in (rows[0] if rows else {})})

    @property
    def num_rows(self) -> int:
        return len(next(iter(self._columns.values()), []))

    @property
    def column_names(self) -> list[str]:
        return list(self._columns)

    @property
    def features(self) -> dict[str, str]:
        """Each column's type name; a class-label column's (``label`` of glue/sst2, imdb) also has ``names``, and
        every one ``dtype`` as datasets spells it (``int64``, ``float32``, ``string``), which Hugging Face's example
        scripts read (``features["label"].names``)."""
        names = getattr(self, "_label_names", {})
        return {k: Feature(type(v[0]).__name__ if v else "null", names.get(k)) for k, v in self._columns.items()}

    @property
    def shape(self) -> tuple[int, int]:
        return (self.num_rows, len(self._columns))

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return f"Dataset({{\n    features: {self.column_names},\n    num_rows: {self.num_rows}\n}})"

    def _formatted(self, value: Any) -> Any:
        if self._format != "torch":
            return value
        import torch

        try:
            return torch.tensor(value)
        except (TypeError, ValueError):
            return value

    def _row(self, i: int) -> dict[str, Any]:
        cols = self._format_columns or self.column_names
        if self._transform is not None:  # set_transform: the function sees a batch of one row, as in datasets
            out = self._transform({k: [_loaded(self._columns[k][i])] for k in cols})
            return {k: v[0] for k, v in dict(out).items()}
        return {k: self._formatted(_loaded(self._columns[k][i])) for k in cols}

    def __getitem__(self, key: int | slice | str | Sequence[int]) -> Any:
        if isinstance(key, str):
            if key not in self._columns:
                raise KeyError(f"Column {key} not in the dataset. Current columns in the dataset: {self.column_names}")
            return self._formatted(self._columns[key])
        if isinstance(key, int):
            if not -self.num_rows <= key < self.num_rows:
                raise DatasetIndexError(
                    f"Index {key} out of range for dataset of size {self.num_rows} (accelkit's --synthetic-data "
                    f"stand-in: {self.num_rows} rows, where the real split has more)",
                    fix="index rows below len(dataset), or run with the real data set")
            return self._row(key % self.num_rows)
        idx = range(self.num_rows)[key] if isinstance(key, slice) else list(key)
        cols = self._format_columns or self.column_names
        if self._transform is not None:
            return dict(self._transform({k: [_loaded(self._columns[k][i]) for i in idx] for k in cols}))
        return {k: self._formatted([_loaded(self._columns[k][i]) for i in idx]) for k in cols}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self._row(i) for i in range(self.num_rows))

    def _new(self, columns: dict[str, list[Any]]) -> Dataset:
        out = Dataset(columns, self.split)
        out._format, out._format_columns = self._format, None
        out._transform = self._transform
        return out

    def set_transform(self, transform: Callable[[dict[str, list[Any]]], Any] | None,
                      columns: list[str] | None = None, output_all_columns: bool = False) -> None:
        """``Dataset.set_transform``: ``transform`` is applied to a batch (a dict of lists: one row's values for
        ``dataset[i]``, several for a slice) each time rows are read, as in datasets; None removes it."""
        self._transform, self._format_columns = transform, columns

    def with_transform(self, transform: Callable[[dict[str, list[Any]]], Any] | None,
                       columns: list[str] | None = None, output_all_columns: bool = False) -> Dataset:
        out = self._new(dict(self._columns))
        out.set_transform(transform, columns, output_all_columns)
        return out

    def reset_format(self) -> None:
        self._format, self._format_columns, self._transform = None, None, None

    def map(self, function: Callable[..., Any] | None = None, with_indices: bool = False, batched: bool = False,
            batch_size: int | None = 1000, remove_columns: str | list[str] | None = None, **_: Any) -> Dataset:
        """Apply ``function`` to each row (or to batches: a dict of lists); its returned keys become columns."""
        if function is None:
            return self
        drop = {remove_columns} if isinstance(remove_columns, str) else set(remove_columns or ())
        step = self.num_rows if not batch_size or batch_size <= 0 else batch_size
        out: dict[str, list[Any]] = {}
        pieces = range(0, self.num_rows, step) if batched else range(self.num_rows)
        for start in pieces:
            if batched:
                batch = {k: v[start:start + step] for k, v in self._columns.items()}
                idx = list(range(start, min(start + step, self.num_rows)))
                result = function(batch, idx) if with_indices else function(batch)
                for k, v in (result or {}).items():
                    out.setdefault(k, []).extend(list(v))
            else:
                row = {k: v[start] for k, v in self._columns.items()}
                result = function(row, start) if with_indices else function(row)
                for k, v in (result or {}).items():
                    out.setdefault(k, []).append(v)
        n = len(next(iter(out.values()), [])) if out else self.num_rows
        kept = {k: v for k, v in self._columns.items() if k not in drop and k not in out and len(v) == n}
        return self._new({**kept, **out})

    def filter(self, function: Callable[..., bool], with_indices: bool = False, **_: Any) -> Dataset:
        keep = [i for i in range(self.num_rows)
                if (function(self._row(i), i) if with_indices else function(self._row(i)))]
        return self.select(keep)

    def select(self, indices: Sequence[int] | range) -> Dataset:
        idx = list(indices)
        return self._new({k: [v[i] for i in idx] for k, v in self._columns.items()})

    def shuffle(self, seed: int | None = None, **_: Any) -> Dataset:
        order = list(range(self.num_rows))
        random.Random(seed).shuffle(order)
        return self.select(order)

    def train_test_split(self, test_size: float | int = 0.25, seed: int | None = None, shuffle: bool = True,
                         **_: Any) -> DatasetDict:
        n_test = test_size if isinstance(test_size, int) else round(self.num_rows * test_size)
        ds = self.shuffle(seed) if shuffle else self
        return DatasetDict(train=ds.select(range(self.num_rows - n_test)),
                           test=ds.select(range(self.num_rows - n_test, self.num_rows)))

    def remove_columns(self, column_names: str | list[str]) -> Dataset:
        drop = {column_names} if isinstance(column_names, str) else set(column_names)
        return self._new({k: v for k, v in self._columns.items() if k not in drop})

    def rename_column(self, original_column_name: str, new_column_name: str) -> Dataset:
        return self._new({new_column_name if k == original_column_name else k: v for k, v in self._columns.items()})

    def rename_columns(self, column_mapping: dict[str, str]) -> Dataset:
        return self._new({column_mapping.get(k, k): v for k, v in self._columns.items()})

    def set_format(self, type: str | None = None, columns: list[str] | None = None, **_: Any) -> None:  # noqa: A002
        self._format, self._format_columns, self._transform = type, columns, None

    def with_format(self, type: str | None = None, columns: list[str] | None = None, **_: Any) -> Dataset:  # noqa: A002
        out = self._new(dict(self._columns))
        out.set_format(type, columns)
        return out

    def to_dict(self) -> dict[str, list[Any]]:
        return {k: [_loaded(x) for x in v] for k, v in self._columns.items()}


class _ImageFile:
    """An image of an ``imagefolder`` set, opened (as a PIL image) when a row is read, as datasets' ``Image``
    feature decodes it."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def open(self) -> Any:
        from PIL import Image

        with Image.open(self.path) as img:
            img.load()
            return img

    def __repr__(self) -> str:
        return f"<image {self.path}>"


def _loaded(value: Any) -> Any:
    return value.open() if isinstance(value, _ImageFile) else value


class DatasetDict(dict[str, Dataset]):
    """``datasets.DatasetDict``: splits by name; ``map`` / ``filter`` / ``shuffle`` / formats apply to each."""

    def map(self, *args: Any, **kwargs: Any) -> DatasetDict:
        return DatasetDict({k: v.map(*args, **kwargs) for k, v in self.items()})

    def filter(self, *args: Any, **kwargs: Any) -> DatasetDict:
        return DatasetDict({k: v.filter(*args, **kwargs) for k, v in self.items()})

    def shuffle(self, seed: int | None = None, **_: Any) -> DatasetDict:
        return DatasetDict({k: v.shuffle(seed) for k, v in self.items()})

    def remove_columns(self, column_names: str | list[str]) -> DatasetDict:
        return DatasetDict({k: v.remove_columns(column_names) for k, v in self.items()})

    def rename_column(self, original_column_name: str, new_column_name: str) -> DatasetDict:
        return DatasetDict({k: v.rename_column(original_column_name, new_column_name) for k, v in self.items()})

    def rename_columns(self, column_mapping: dict[str, str]) -> DatasetDict:
        return DatasetDict({k: v.rename_columns(column_mapping) for k, v in self.items()})

    def set_format(self, *args: Any, **kwargs: Any) -> None:
        for v in self.values():
            v.set_format(*args, **kwargs)

    def set_transform(self, *args: Any, **kwargs: Any) -> None:
        for v in self.values():
            v.set_transform(*args, **kwargs)

    def with_format(self, *args: Any, **kwargs: Any) -> DatasetDict:
        return DatasetDict({k: v.with_format(*args, **kwargs) for k, v in self.items()})

    @property
    def column_names(self) -> dict[str, list[str]]:
        return {k: v.column_names for k, v in self.items()}


# ---- the sets ---------------------------------------------------------------------------------------
def _sentences() -> list[str]:
    from accelkit.data.text import corpus_text

    text = re.sub(r"\s+", " ", corpus_text())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 6]


def _paragraphs() -> list[tuple[str, str]]:
    from accelkit.data.text import corpus_topics

    return [(topic, re.sub(r"\s+", " ", p).strip()) for topic, text in corpus_topics().items()
            for p in text.split("\n\n") if len(p.split()) >= 25]


def _sentiment(split: str, n: int) -> tuple[list[str], list[int]]:
    """Corpus sentences each with a positive or a negative phrase woven in; the label says which (1: positive)."""
    rng = random.Random(f"sentiment-{split}")
    sentences = _sentences()
    texts, labels = [], []
    for _ in range(n):
        words = rng.choice(sentences).rstrip(".!?").split()
        label = rng.randrange(2)
        phrase = rng.choice(POSITIVE if label else NEGATIVE)
        cut = rng.randrange(1, len(words))
        texts.append(" ".join([*words[:cut], "-", phrase, "-", *words[cut:]]) + ".")
        labels.append(label)
    return texts, labels


def _squad(split: str, n: int) -> dict[str, list[Any]]:
    rng = random.Random(f"squad-{split}")
    paragraphs = _paragraphs()
    cols: dict[str, list[Any]] = {k: [] for k in ("id", "title", "context", "question", "answers")}
    for i in range(n):
        topic, context = rng.choice(paragraphs)
        words = list(re.finditer(r"\S+", context))
        at = rng.randrange(4, len(words) - 3)
        quoted = " ".join(w.group() for w in words[at - 4:at])
        span = words[at:at + rng.randrange(1, 4)]
        answer = context[span[0].start():span[-1].end()]
        cols["id"].append(f"{split}-{i:05d}")
        cols["title"].append(topic)
        cols["context"].append(context)
        cols["question"].append(f"What comes after '{quoted}'?")
        cols["answers"].append({"text": [answer], "answer_start": [span[0].start()]})
    return cols


def _similarity(split: str, n: int) -> dict[str, list[Any]]:
    """STS-B's columns (``sentence1``, ``sentence2``, ``similarity_score`` from 0 to 5): half the pairs a corpus
    sentence and the same with a few words dropped, half two unrelated sentences; the score is 5 x the share of
    words the two have in common (Jaccard), so related pairs score high and unrelated ones low."""
    rng = random.Random(f"stsb-{split}")
    sentences = _sentences()
    cols: dict[str, list[Any]] = {"sentence1": [], "sentence2": [], "similarity_score": []}
    for _ in range(n):
        first = rng.choice(sentences)
        words = first.split()
        if rng.random() < 0.5 and len(words) > 4:
            keep = sorted(rng.sample(range(len(words)), k=max(3, len(words) - rng.randrange(1, 4))))
            second = " ".join(words[i] for i in keep)
        else:
            second = rng.choice(sentences)
        a, b = set(first.lower().split()), set(second.lower().split())
        cols["sentence1"].append(first)
        cols["sentence2"].append(second)
        cols["similarity_score"].append(round(5.0 * len(a & b) / max(1, len(a | b)), 2))
    return cols


NER_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")  # CoNLL-2003's order


def _conll(split: str, n: int) -> dict[str, list[Any]]:
    """CoNLL-2003's columns (``id``, ``tokens``, ``pos_tags``, ``chunk_tags``, ``ner_tags``) over corpus sentences
    split into words: a run of capitalised words after the first is tagged a miscellaneous entity (B-MISC, then
    I-MISC), every other word O; the part-of-speech and chunk tags are 0 (not modelled)."""
    rng = random.Random(f"conll-{split}")
    sentences = _sentences()
    cols: dict[str, list[Any]] = {k: [] for k in ("id", "tokens", "pos_tags", "chunk_tags", "ner_tags")}
    for i in range(n):
        words = re.findall(r"\w+|[^\w\s]", rng.choice(sentences))
        tags, inside = [], False
        for j, w in enumerate(words):
            entity = j > 0 and w[:1].isupper()
            tags.append(NER_TAGS.index("I-MISC" if entity and inside else "B-MISC" if entity else "O"))
            inside = entity
        cols["id"].append(str(i))
        cols["tokens"].append(words)
        cols["pos_tags"].append([0] * len(words))
        cols["chunk_tags"].append([0] * len(words))
        cols["ner_tags"].append(tags)
    return cols


def _wikitext(split: str, n: int) -> dict[str, list[Any]]:
    lines: list[str] = []
    for topic, p in _paragraphs():
        lines += ["", f" = {topic.title()} = ", "", f" {p} "]
    start = {"train": 0, "validation": len(lines) // 2, "test": len(lines) // 4}[split]
    return {"text": [lines[(start + i) % len(lines)] for i in range(n)]}


def _build(kind: str, split: str) -> dict[str, list[Any]]:
    n = rows_of(kind, split)
    if kind == "sst2":
        texts, labels = _sentiment(split, n)
        return {"sentence": texts, "label": labels if split != "test" else [-1] * n, "idx": list(range(n))}
    if kind == "sst":
        texts, labels = _sentiment(split, n)
        return {"sentence": texts, "label": [0.8 if y else 0.2 for y in labels],
                "tokens": ["|".join(t.split()) for t in texts], "tree": [""] * n}
    if kind == "imdb":
        texts, labels = _sentiment(split, n)
        return {"text": texts, "label": labels}
    if kind == "squad":
        return _squad(split, n)
    if kind == "stsb":
        return _similarity(split, n)
    if kind == "conll2003":
        return _conll(split, n)
    return _wikitext(split, n)


# (path, name) -> (kind, splits)
SETS: dict[tuple[str, str | None], tuple[str, tuple[str, ...]]] = {
    ("glue", "sst2"): ("sst2", ("train", "validation", "test")),
    ("sst2", None): ("sst2", ("train", "validation", "test")),
    ("stanfordnlp/sst2", None): ("sst2", ("train", "validation", "test")),
    ("sst", None): ("sst", ("train", "validation", "test")),
    ("sst", "default"): ("sst", ("train", "validation", "test")),
    ("imdb", None): ("imdb", ("train", "test")),
    ("stanfordnlp/imdb", None): ("imdb", ("train", "test")),
    ("squad", None): ("squad", ("train", "validation")),
    ("rajpurkar/squad", None): ("squad", ("train", "validation")),
    # CoNLL-2003 named entities (GroqFlow's RoBERTa proof point)
    ("conll2003", None): ("conll2003", ("train", "validation", "test")),
    ("eriktks/conll2003", None): ("conll2003", ("train", "validation", "test")),
    # STS-B in English, as its multilingual copy names it (GroqFlow's MiniLM proof point)
    ("stsb_multi_mt", "en"): ("stsb", ("train", "dev", "test")),
    ("PhilipMay/stsb_multi_mt", "en"): ("stsb", ("train", "dev", "test")),
    **{(w, c): ("wikitext", ("train", "validation", "test")) for w in ("wikitext", "Salesforce/wikitext")
       for c in ("wikitext-2-raw-v1", "wikitext-2-v1", "wikitext-103-raw-v1", "wikitext-103-v1")},
}


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def _imagefolder(data_dir: Any, split: str | None) -> Dataset | DatasetDict:
    """``load_dataset("imagefolder", data_dir=...)``: the user's own folder, read as datasets reads it (nothing is
    made here): an ``image`` column (opened when a row is read) and, where ``metadata.jsonl`` is beside the images,
    its other columns, matched by ``file_name``; without metadata, a ``label`` column from the class folders' names
    (sorted). One ``train`` split."""
    import json
    from pathlib import Path

    if data_dir is None:
        raise DatasetsError("load_dataset('imagefolder') needs data_dir (the folder of images)",
                            fix="load_dataset('imagefolder', data_dir='path/to/images')")
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(2, f"load_dataset('imagefolder'): no folder {root}", str(root))
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    metadata = sorted(root.rglob("metadata.jsonl"))
    columns: dict[str, list[Any]]
    if metadata:
        rows = []
        for meta in metadata:
            for line in meta.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    if "file_name" not in row:
                        raise DatasetsError(f"{meta}: a row without file_name ({line[:80]})",
                                            fix="give every metadata.jsonl row the image's file_name")
                    row["_path"] = meta.parent / row.pop("file_name")
                    rows.append(row)
        on_disk = {p.resolve() for p in files}
        absent = [r["_path"] for r in rows if Path(r["_path"]).resolve() not in on_disk]
        if absent:
            raise DatasetsError(f"metadata.jsonl names {len(absent)} image(s) the folder does not have (the first: "
                                f"{absent[0]})", fix="list only the images in the folder in metadata.jsonl")
        columns = {"image": [_ImageFile(str(r["_path"])) for r in rows]}
        for key in (k for k in rows[0] if k != "_path") if rows else ():
            columns[key] = [r.get(key) for r in rows]
    else:
        classes = sorted({p.parent.name for p in files if p.parent != root})
        columns = {"image": [_ImageFile(str(p)) for p in files]}
        if classes:
            columns["label"] = [classes.index(p.parent.name) if p.parent != root else -1 for p in files]
    if split not in (None, "train"):
        raise DatasetsError(f"load_dataset('imagefolder') of one folder has the split 'train', not {split!r}",
                            fix="use split='train' (or none), then train_test_split")
    ds = Dataset(columns, "train")
    return ds if split else DatasetDict(train=ds)


def load_dataset(path: str, name: str | None = None, split: str | None = None, **kwargs: Any) -> Dataset | DatasetDict:
    """``datasets.load_dataset``: the small local stand-in for ``path`` / ``name`` (see the module docstring);
    ``"imagefolder"`` reads the user's own folder (``data_dir``)."""
    if str(path) == "imagefolder":
        return _imagefolder(kwargs.get("data_dir") or kwargs.get("data_files"), split)
    key = (str(path), name)
    if key not in SETS:
        known = ", ".join(sorted(f"{p}/{n}" if n else p for p, n in SETS))
        raise DatasetsError(f"--synthetic-data has no stand-in for load_dataset({path!r}"
                            + (f", {name!r}" if name else "") + ")",
                            fix=f"the sets made here: {known}; or install datasets and download the set")
    kind, splits = SETS[key]
    base, _sep, sub = (split or "").partition("[")
    if split and base not in splits:
        raise DatasetsError(f"load_dataset({path!r}) has no split {base!r}", fix=f"use one of {', '.join(splits)}")
    sizes = " / ".join(f"{rows_of(kind, s):,}" for s in splits)
    _say(f"load_dataset({path!r}" + (f", {name!r}" if name else "") + f") is {sizes} rows ({', '.join(splits)})"
         + (", the real set's sizes," if kind in REAL_ROWS else "") + " with the real set's columns, made from "
         "accelkit's own text corpus"
         + (" (sentiment: a positive or negative phrase in each sentence; the label says which)"
            if kind in ("sst2", "sst", "imdb") else "") + "; nothing downloaded")
    if split:
        ds = Dataset(_build(kind, base), base)
        if sub:  # "train[:10%]", "validation[:64]"
            m = re.fullmatch(r"(\d*):(\d*)(%?)\]", sub)
            if m:
                scale = ds.num_rows / 100 if m.group(3) else 1
                lo, hi = (round(int(g) * scale) if g else None for g in m.group(1, 2))
                ds = ds.select(range(ds.num_rows)[lo:hi])
        ds._label_names = {"label": LABEL_NAMES[kind]} if kind in LABEL_NAMES else {}
        return ds
    out = DatasetDict({s: Dataset(_build(kind, s), s) for s in splits})
    for part in out.values():
        part._label_names = {"label": LABEL_NAMES[kind]} if kind in LABEL_NAMES else {}
    return out


# ---- metrics ----------------------------------------------------------------------------------------
def _normalize_answer(s: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def _token_f1(prediction: str, truth: str) -> float:
    p, t = _normalize_answer(prediction).split(), _normalize_answer(truth).split()
    common = sum((Counter(p) & Counter(t)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(t)
    return 2 * precision * recall / (precision + recall)


def _classification(kind: str, predictions: list[Any], references: list[Any], average: str = "binary",
                    **_: Any) -> dict[str, float]:
    from sklearn import metrics as skm

    if kind == "accuracy":
        return {"accuracy": float(skm.accuracy_score(references, predictions))}
    if kind == "matthews_correlation":
        return {"matthews_correlation": float(skm.matthews_corrcoef(references, predictions))}
    fn = {"f1": skm.f1_score, "precision": skm.precision_score, "recall": skm.recall_score}[kind]
    return {kind: float(fn(references, predictions, average=average))}


class Metric:
    """``datasets.Metric`` / ``evaluate.EvaluationModule``: ``compute(predictions=, references=)``, ``add_batch``."""

    def __init__(self, name: str, config_name: str | None = None) -> None:
        self.name, self.config_name = name, config_name
        self._predictions: list[Any] = []
        self._references: list[Any] = []

    def add_batch(self, *, predictions: Any = None, references: Any = None, **_: Any) -> None:
        self._predictions += list(_plain(predictions))
        self._references += list(_plain(references))

    def add(self, *, prediction: Any = None, reference: Any = None, **_: Any) -> None:
        self._predictions.append(prediction)
        self._references.append(reference)

    def compute(self, *, predictions: Any = None, references: Any = None, **kwargs: Any) -> dict[str, float]:
        if self.name == "roc_auc" and kwargs.get("prediction_scores") is not None:  # its input is named so
            predictions = kwargs.pop("prediction_scores")
        if predictions is not None:
            self.add_batch(predictions=predictions, references=references)
        preds, refs = self._predictions, self._references
        self._predictions, self._references = [], []
        if self.name == "squad":
            by_id = {r["id"]: r["answers"]["text"] for r in refs}
            em = f1 = 0.0
            for p in preds:
                truths = by_id[p["id"]]
                em += max(float(_normalize_answer(p["prediction_text"]) == _normalize_answer(t)) for t in truths)
                f1 += max(_token_f1(p["prediction_text"], t) for t in truths)
            return {"exact_match": 100 * em / len(preds), "f1": 100 * f1 / len(preds)}
        if self.name == "roc_auc":
            return _roc_auc(self.config_name, refs, preds, **kwargs)
        if self.name == "glue":
            if self.config_name == "cola":
                return _classification("matthews_correlation", preds, refs)
            out = _classification("accuracy", preds, refs)
            if self.config_name in ("mrpc", "qqp"):
                out.update(_classification("f1", preds, refs))
            return out
        return _classification(self.name, preds, refs, **kwargs)


def _roc_auc(config: str | None, references: list[Any], scores: list[Any], average: str | None = "macro",
             sample_weight: Any = None, max_fpr: float | None = None, multi_class: str = "raise",
             labels: Any = None) -> dict[str, Any]:
    """The ``roc_auc`` metric as evaluate's computes it, with scikit-learn's ``roc_auc_score``: ``multiclass``
    passes ``multi_class`` and ``labels``; ``multilabel`` and binary do not (a multilabel ``multi_class`` is
    ignored, as there)."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    y, s = np.asarray(references), np.asarray(scores)
    if config == "multiclass":
        value = roc_auc_score(y, s, labels=labels, average=average, sample_weight=sample_weight, max_fpr=max_fpr,
                              multi_class=multi_class)
    else:
        value = roc_auc_score(y, s, average=average, sample_weight=sample_weight, max_fpr=max_fpr)
    return {"roc_auc": value.tolist() if isinstance(value, np.ndarray) else float(value)}


def _plain(values: Any) -> list[Any]:
    if values is None:
        return []
    tolist = getattr(values, "tolist", None)
    return list(tolist() if callable(tolist) else values)


METRICS = ("accuracy", "f1", "precision", "recall", "matthews_correlation", "glue", "squad", "roc_auc")


def load_metric(path: str, config_name: str | None = None, **_: Any) -> Metric:
    """``datasets.load_metric`` (and ``evaluate.load``): a metric computed here (see the module docstring)."""
    name = str(path).rsplit("/", 1)[-1]
    if name == "roc_auc" and config_name not in (None, "default", "binary", "multiclass", "multilabel"):
        raise DatasetsError(f"load_metric('roc_auc', {config_name!r}): the metric's configurations are 'binary' (or "
                            "none), 'multiclass' and 'multilabel'", fix="name one of them")
    if name not in METRICS:
        raise DatasetsError(f"--synthetic-data has no stand-in for the metric {path!r}",
                            fix=f"the metrics computed here: {', '.join(METRICS)}; or install evaluate")
    _say(f"load_metric({path!r}" + (f", {config_name!r}" if config_name else "") + ") is computed here, as the "
         "real metric computes it; nothing downloaded")
    return Metric(name, config_name)


def evaluate_load(path: str, config_name: str | None = None, **kwargs: Any) -> Metric:
    return load_metric(path, config_name, **kwargs)


class DownloadConfig:
    """``datasets.utils.DownloadConfig(cache_dir=..., ...)``: where and how a download is kept. Nothing is
    downloaded under ``--synthetic-data``, so its settings are kept (``vars(config)``) and change nothing."""

    def __init__(self, **settings: Any) -> None:
        vars(self).update(settings)


def cached_path(url_or_filename: Any, download_config: Any = None, **_: Any) -> str:
    """``datasets.utils.file_utils.cached_path``: a local file is given back as it is; Imagenette's archive (GroqFlow's
    demo helpers download it) is generated here (:mod:`accelkit.vendor.imagenette`); any other URL is a download,
    which ``--synthetic-data`` never makes, so it is refused, naming the URL (e.g. COCO's archive)."""
    import os

    from accelkit.vendor import imagenette

    path = os.fspath(url_or_filename)
    if "://" not in path:
        if not os.path.exists(path):
            raise DatasetsError(f"cached_path: no file {path}", fix="give the path of a file that exists")
        return path
    if imagenette.is_imagenette(path):  # GroqFlow's computer-vision proof points: an archive generated here
        return imagenette.archive(path)
    raise DatasetsError(f"cached_path({path!r}) downloads a file: under --synthetic-data nothing is downloaded, and "
                        "accelkit makes no stand-in for that archive",
                        fix="download it on a machine with network access and pass the local path, or use a data "
                            f"set the stand-in makes (load_dataset with one of {sorted({p for p, _ in SETS})[:6]}...)")


def _logging_module() -> Any:
    """``datasets.logging``: the library's verbosity switches (``logging.set_verbosity(logging.ERROR)``, as GroqFlow's
    quantization proof point calls), on the ``datasets`` logger of Python's logging, as the real module does."""
    import logging as std
    import types

    logger = std.getLogger("datasets")
    mod = types.ModuleType("datasets.logging", "accelkit's stand-in for datasets.logging (verbosity switches)")
    for level in ("CRITICAL", "FATAL", "ERROR", "WARNING", "WARN", "INFO", "DEBUG", "NOTSET"):
        setattr(mod, level, getattr(std, level))
    progress = {"enabled": True}
    mod.get_logger = lambda name=None: std.getLogger(name or "datasets")  # type: ignore[attr-defined]
    mod.get_verbosity = logger.getEffectiveLevel  # type: ignore[attr-defined]
    mod.set_verbosity = logger.setLevel  # type: ignore[attr-defined]
    for name, number in (("error", std.ERROR), ("warning", std.WARNING), ("info", std.INFO), ("debug", std.DEBUG)):
        setattr(mod, f"set_verbosity_{name}", lambda number=number: logger.setLevel(number))
    mod.disable_progress_bar = lambda: progress.update(enabled=False)  # type: ignore[attr-defined]
    mod.enable_progress_bar = lambda: progress.update(enabled=True)  # type: ignore[attr-defined]
    mod.is_progress_bar_enabled = lambda: progress["enabled"]  # type: ignore[attr-defined]
    return mod


__all__ = ["METRICS", "SETS", "Dataset", "DatasetDict", "DatasetIndexError", "DatasetsError", "DownloadConfig", "Metric", "cached_path",
           "load_dataset", "load_metric"]
