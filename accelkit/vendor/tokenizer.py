"""A small tokenizer built on this machine, standing in for ``AutoTokenizer.from_pretrained(...)`` offline.

A tutorial's tokenizer is a download (its vocabulary file). Under ``accelkit vendor-run --synthetic-data``
``from_pretrained`` of any tokenizer returns this one instead, and says so: a WordPiece tokenizer (BERT's
kind: lower-cased, ``[CLS] text [SEP]``, ``[PAD]``, ``[UNK]``, ``[MASK]``) whose vocabulary is made here, in
milliseconds, with :data:`VOCAB_SIZE` tokens: the specials, every printable ASCII character and its ``##``
continuation (so any lower-case text splits into known pieces), English's common suffixes as continuations,
then the words of accelkit's own text corpus (``datasets/corpus``, what the stand-in datasets are made of) and
the most frequent English words (``accelkit/data/english_words.txt``, from wordfreq, CC BY-SA 4.0). A
sentence of everyday English therefore takes about as many tokens as BERT's own vocabulary gives it (a
tutorial's "question + context in 32 tokens, stride 16" example fits), and a rare word splits into a known
stem and suffix or into characters. The ids fit the small models ``--synthetic-data`` builds (their
``vocab_size`` is the same number). It is a ``transformers`` ``PreTrainedTokenizerFast``: ``tokenizer(texts,
padding=..., truncation=..., max_length=..., stride=..., return_tensors="pt")``, ``decode``, ``pad_token_id``...
behave as the real one's do. What differs: the vocabulary, so token ids (and a pretrained model's outputs) are
not the checkpoint's.
"""

from __future__ import annotations

import functools
from typing import Any

from accelkit.errors import AccelkitError

VOCAB_SIZE = 8000  # the --synthetic-data models' vocab_size (accelkit.vendor.synthetic.SMALL_TRANSFORMER)
# English's common endings, as WordPiece continuations: a word outside the vocabulary splits into stem + ending
SUFFIXES = ("s", "es", "ed", "d", "ing", "ly", "er", "ers", "est", "ion", "ions", "tion", "al", "ity", "ness", "ment",
            "ments", "able", "ful", "less", "ize", "ized", "ise", "ism", "ist", "ists", "ian", "ians", "ic", "ical",
            "ous", "ive", "en", "y", "ies", "ied", "ty", "ship", "ward", "wise")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def english_words() -> list[str]:
    """The most frequent English words, most frequent first (``accelkit/data/english_words.txt``; empty when an
    installed copy lacks the file: the characters still tokenize everything)."""
    from importlib import resources

    try:
        text = resources.files("accelkit.data").joinpath("english_words.txt").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return []
    return [w for line in text.splitlines() if (w := line.strip()) and not w.startswith("#") and w.isalpha()]


def _vocabulary() -> dict[str, int]:
    """Specials, every printable ASCII character and its ``##`` continuation, the common suffixes, then the
    corpus's words (most frequent first) and the most frequent English words, up to :data:`VOCAB_SIZE`."""
    import string
    from collections import Counter

    from accelkit.data.text import corpus_text, words

    chars = sorted(set(string.ascii_lowercase + string.digits + string.punctuation))
    pieces = [*SPECIALS, *chars, *("##" + c for c in chars), *("##" + s for s in SUFFIXES if len(s) > 1)]
    try:
        counts = Counter(w for w in words(corpus_text()) if len(w) > 1 and w.isalnum())
    except AccelkitError:  # an installed copy without the corpus
        counts = Counter()
    seen = set(pieces)
    for w in [*sorted(counts, key=lambda w: (-counts[w], w)), *english_words()]:
        if len(pieces) >= VOCAB_SIZE:
            break
        if w not in seen:
            seen.add(w)
            pieces.append(w)
    return {piece: i for i, piece in enumerate(pieces)}


@functools.lru_cache(maxsize=1)
def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = _vocabulary()
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.decoder = decoders.WordPiece()
    return str(tok.to_str())


def _v4_keywords(kwargs: dict[str, Any]) -> dict[str, Any]:
    """transformers 3/4 keywords the tutorials still pass: ``pad_to_max_length`` (padding to ``max_length``), and
    a ``max_length`` without ``truncation``, which transformers 4 truncated "longest_first"."""
    if kwargs.pop("pad_to_max_length", False):
        kwargs.setdefault("padding", "max_length")
    if kwargs.get("max_length") is not None:
        kwargs.setdefault("truncation", "longest_first")
    return kwargs


@functools.lru_cache(maxsize=1)
def _tokenizer_class() -> Any:
    from transformers import PreTrainedTokenizerFast

    class LocalTokenizer(PreTrainedTokenizerFast):  # type: ignore[misc, valid-type]
        """A ``PreTrainedTokenizerFast`` that also answers transformers 4's ``encode_plus`` and
        ``batch_encode_plus`` (gone from transformers 5), which tutorials written for the SDKs call."""

        def encode_plus(self, text: Any, text_pair: Any = None, **kwargs: Any) -> Any:
            if text_pair is None and isinstance(text, (tuple, list)) and len(text) == 2 \
                    and all(isinstance(t, str) for t in text):
                text, text_pair = text  # transformers 4 encoded a (question, context) tuple as one pair
            return self(text, text_pair, **_v4_keywords(kwargs))

        def batch_encode_plus(self, batch_text_or_text_pairs: Any, **kwargs: Any) -> Any:
            items = list(batch_text_or_text_pairs)
            if items and all(isinstance(t, (tuple, list)) and len(t) == 2 for t in items):
                return self([t[0] for t in items], [t[1] for t in items], **_v4_keywords(kwargs))
            return self(items, **_v4_keywords(kwargs))

    if hasattr(PreTrainedTokenizerFast, "encode_plus"):  # transformers 4 (installed beside a vendor's script): its
        del LocalTokenizer.encode_plus                     # own, which its __call__ calls in turn
        del LocalTokenizer.batch_encode_plus
    return LocalTokenizer


def local_tokenizer(name: str = "local", model_max_length: int = 128, **kwargs: Any) -> Any:
    """A fresh ``PreTrainedTokenizerFast`` over the local WordPiece vocabulary (see the module docstring), with
    transformers 4's ``encode_plus`` / ``batch_encode_plus`` too. ``model_max_length`` (128) keeps padding to the
    longest allowed length cheap on this CPU; the small models take as many positions as the real ones."""
    from tokenizers import Tokenizer

    keep = {k: v for k, v in kwargs.items()
            if k in ("padding_side", "truncation_side", "model_max_length", "model_input_names")}
    tok = _tokenizer_class()(tokenizer_object=Tokenizer.from_str(_tokenizer_json()), unk_token="[UNK]",
                             pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                             bos_token="[CLS]", eos_token="[SEP]", **{"model_max_length": model_max_length, **keep})
    tok.name_or_path = f"accelkit-local-wordpiece (standing in for {name})"
    return tok


__all__ = ["SPECIALS", "SUFFIXES", "VOCAB_SIZE", "english_words", "local_tokenizer"]
