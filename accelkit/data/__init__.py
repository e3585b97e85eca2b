"""Datasets for the zoo, made by code or shipped in this repository; nothing is downloaded.

Every generator takes a ``seed`` and returns :class:`Samples` (named tensors, one row per
sample; a ``torch.utils.data.Dataset``). The same seed always gives the same tensors.

    digits(n, seed)            8x8 handwriting-like digits, 64 features, 10 classes
    bragg_peaks(n, seed)       11x11 detector patches of pseudo-Voigt Bragg peaks; label = centre
    shapes(n, seed)            32x32 circles / rectangles / triangles on noise; label = per-pixel class
    byte_windows(block)        the project's corpus as byte tokens for a language model
    topic_sentences(seed)      the corpus's sentences labelled by topic, word tokens

``datasets/README.md`` says how each is made and where it comes from.
"""

from __future__ import annotations

from accelkit.data.bragg import bragg_peaks, pseudo_voigt
from accelkit.data.digits import digits
from accelkit.data.samples import Samples
from accelkit.data.shapes import CLASSES as SHAPE_CLASSES
from accelkit.data.shapes import shapes
from accelkit.data.text import (
    Vocab,
    byte_windows,
    corpus_dir,
    corpus_text,
    corpus_topics,
    topic_sentences,
)

__all__ = [
    "SHAPE_CLASSES",
    "Samples",
    "Vocab",
    "bragg_peaks",
    "byte_windows",
    "corpus_dir",
    "corpus_text",
    "corpus_topics",
    "digits",
    "pseudo_voigt",
    "shapes",
    "topic_sentences",
]
