"""A small tokenizer built on this machine, standing in for ``AutoTokenizer.from_pretrained(...)`` offline.

A tutorial's tokenizer is a download (its vocabulary file). Under ``accelkit vendor-run --synthetic-data``
``from_pretrained`` of any tokenizer returns this one instead, and says so: a WordPiece tokenizer (BERT's
kind: lower-cased, ``[CLS] text [SEP]``, ``[PAD]``, ``[UNK]``, ``[MASK]``) trained here, in well under a
second, on the docstrings of accelkit's own modules, with at most :data:`VOCAB_SIZE` tokens, so its ids fit
the small models ``--synthetic-data`` builds (vocab_size 1000). It is a ``transformers``
``PreTrainedTokenizerFast``: ``tokenizer(texts, padding=..., truncation=..., max_length=...,
return_tensors="pt")``, ``decode``, ``pad_token_id``... behave as the real one's do. What differs: the
vocabulary, so token ids (and a pretrained model's outputs) are not the checkpoint's.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

VOCAB_SIZE = 1000  # the --synthetic-data models' vocab_size (accelkit.vendor.synthetic.SMALL_TRANSFORMER)
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _corpus() -> list[str]:
    """The docstrings of accelkit's modules, functions and classes (English prose, in a fixed order)."""
    root = Path(__file__).resolve().parents[1]
    texts: list[str] = []
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    texts.append(doc)
    return texts


@functools.lru_cache(maxsize=1)
def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(_corpus(), trainers.WordPieceTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIALS,
                                                                 show_progress=False))
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    tok.decoder = decoders.WordPiece()
    return str(tok.to_str())


def local_tokenizer(name: str = "local", model_max_length: int = 128, **kwargs: Any) -> Any:
    """A fresh ``PreTrainedTokenizerFast`` over the locally trained WordPiece vocabulary (see the module docstring).
    ``model_max_length`` matches the small models' ``max_position_embeddings``."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    keep = {k: v for k, v in kwargs.items() if k in ("padding_side", "truncation_side", "model_max_length")}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(_tokenizer_json()), unk_token="[UNK]",
                                  pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                  bos_token="[CLS]", eos_token="[SEP]",
                                  **{"model_max_length": model_max_length, **keep})
    tok.name_or_path = f"accelkit-local-wordpiece (standing in for {name})"
    return tok


__all__ = ["SPECIALS", "VOCAB_SIZE", "local_tokenizer"]
