"""The project's own text corpus, as byte-level language-model windows and as topic-labelled sentences.

The corpus is ``accelkit/data/corpus/*.txt``: original short prose written for accelkit, one file
per topic (the file name is the topic). ``byte_windows`` feeds a small GPT: every byte is a
token (vocabulary 256, no tokenizer to train). ``topic_sentences`` feeds a small BERT: each
sentence labelled with its file's topic, tokenised into lower-case words with a vocabulary
built from the training sentences only.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

from accelkit.data.samples import Samples
from accelkit.errors import AccelkitError

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def corpus_dir() -> Path:
    """Where the corpus lives: ``$ACCELKIT_DATASETS_DIR/corpus`` if set, else ``accelkit/data/corpus`` (inside the
    package, so an installed wheel has it too)."""
    root = os.environ.get("ACCELKIT_DATASETS_DIR")
    return Path(root) / "corpus" if root else Path(__file__).resolve().parent / "corpus"


def corpus_topics() -> dict[str, str]:
    """``{topic: text}`` for every ``*.txt`` in the corpus, in file-name order."""
    folder = corpus_dir()
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise AccelkitError(f"no corpus found in {folder}",
                            fix="reinstall accelkit (it ships accelkit/data/corpus/*.txt), "
                                "or set ACCELKIT_DATASETS_DIR to a folder holding corpus/*.txt")
    return {f.stem: f.read_text(encoding="utf-8") for f in files}


def corpus_text() -> str:
    """All topics' text, one after the other."""
    return "\n".join(corpus_topics().values())


def _train_heldout_text(heldout_fraction: float) -> tuple[str, str]:
    """Each topic's last ``heldout_fraction`` (cut at a paragraph break) is held out, so every topic is in both."""
    train, held = [], []
    for text in corpus_topics().values():
        paragraphs = [p for p in text.split("\n\n") if p.strip()]
        cut = max(1, round(len(paragraphs) * (1 - heldout_fraction)))
        train.append("\n\n".join(paragraphs[:cut]))
        held.append("\n\n".join(paragraphs[cut:]))
    return "\n\n".join(train) + "\n", "\n\n".join(held) + "\n"


def _windows(text: str, block: int, stride: int, name: str, split: str) -> Samples:
    data = torch.tensor(list(text.encode("utf-8")), dtype=torch.int64)
    win = data.unfold(0, block + 1, stride)  # (N, block + 1), a view: no copy even with stride 1
    return Samples(f"{name}[{split}]", {"ids": win[:, :-1], "targets": win[:, 1:]},
                   info={"block": block, "stride": stride, "bytes": len(data), "vocab_size": 256})


def byte_windows(block: int = 64, *, heldout_fraction: float = 0.1) -> tuple[Samples, Samples]:
    """(train, heldout) windows of bytes: ``ids`` (N, block) int64 and ``targets`` = ``ids`` shifted by one.

    Training windows start at every byte (stride 1); held-out windows do not overlap (stride ``block``).
    """
    train, held = _train_heldout_text(heldout_fraction)
    return (_windows(train, block, 1, "corpus_bytes", "train"),
            _windows(held, block, block, "corpus_bytes", "heldout"))


def words(text: str) -> list[str]:
    """Lower-case words and single punctuation marks: ``"The RDU's PCUs."`` -> the, rdu, ', s, pcus, ."""
    return _WORD.findall(text.lower())


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.replace("\n", " ")) if len(s.strip()) > 1]


@dataclass
class Vocab:
    """Words to ids: the special tokens first (``[PAD]`` = 0), then words by falling count, ties alphabetical."""

    tokens: list[str]
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {t: i for i, t in enumerate(self.tokens)}

    @classmethod
    def build(cls, texts: list[str]) -> Vocab:
        counts = Counter(w for t in texts for w in words(t))
        return cls(list(SPECIALS) + sorted(counts, key=lambda w: (-counts[w], w)))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str, length: int) -> tuple[list[int], list[int]]:
        """``[CLS] words... [SEP]`` cut or padded to ``length``: (ids, attention mask)."""
        unk = self.index["[UNK]"]
        body = [self.index.get(w, unk) for w in words(text)][: length - 2]
        ids = [self.index["[CLS]"], *body, self.index["[SEP]"]]
        pad = length - len(ids)
        return ids + [self.index["[PAD]"]] * pad, [1] * len(ids) + [0] * pad


def topic_sentences(seed: int = 0, *, length: int = 40, heldout_fraction: float = 0.2
                    ) -> tuple[Samples, Samples, Vocab]:
    """(train, heldout, vocab): ``ids`` (N, length) int64, ``attention_mask`` (N, length) int64, ``y`` (N,) int64.

    ``y`` is the index of the sentence's topic in ``info["topics"]``. Each topic's sentences are
    shuffled with ``seed`` and split ``heldout_fraction`` apart, so both splits hold every topic.
    ``extras["text"]`` keeps the sentences themselves.
    """
    topics = corpus_topics()
    names = list(topics)
    g = torch.Generator().manual_seed(seed)
    split: dict[str, list[tuple[str, int]]] = {"train": [], "heldout": []}
    for label, name in enumerate(names):
        sents = sentences(topics[name])
        order = torch.randperm(len(sents), generator=g).tolist()
        n_held = max(1, round(len(sents) * heldout_fraction))
        split["heldout"] += [(sents[i], label) for i in order[:n_held]]
        split["train"] += [(sents[i], label) for i in order[n_held:]]
    vocab = Vocab.build([s for s, _ in split["train"]])
    out = []
    for part, rows in split.items():
        perm = torch.randperm(len(rows), generator=g).tolist()
        rows = [rows[i] for i in perm]
        encoded = [vocab.encode(s, length) for s, _ in rows]
        out.append(Samples(
            f"topic_sentences[{part}]",
            {"ids": torch.tensor([e[0] for e in encoded]), "attention_mask": torch.tensor([e[1] for e in encoded]),
             "y": torch.tensor([label for _, label in rows])},
            extras={"text": [s for s, _ in rows]},
            info={"seed": seed, "topics": names, "length": length, "vocab_size": len(vocab)},
        ))
    return out[0], out[1], vocab

