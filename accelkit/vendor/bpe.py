"""A byte-level BPE built on this machine, standing in for ``tiktoken.get_encoding(...)`` offline.

``tiktoken`` downloads its vocabulary (a ``.tiktoken`` file of merges) the first time an encoding is asked
for. Under ``accelkit vendor-run --synthetic-data``, where tiktoken is not installed, ``import tiktoken``
is answered by this module instead, and the run says so: ``get_encoding(name)`` / ``encoding_for_model(name)``
return an :class:`Encoding` whose merges are learned here, in well under a second, from accelkit's own text
corpus (``datasets/corpus``), with at most :data:`MERGED_TOKENS` ordinary tokens.

What holds, as with the real encodings: it is byte-level, so every string encodes and
``decode(encode(text)) == text`` exactly; ``<|endoftext|>`` is refused inside text unless
``allowed_special`` admits it; the special token keeps the real encoding's id (GPT-2's ``eot_token`` is
50256) and ``n_vocab`` is the real one, so a model sized for the real vocabulary takes these ids.
What differs: the merges, so the ids of ordinary text are not the real encoding's. An id the local
vocabulary lacks (a model sampling from the full vocabulary may produce one) decodes as U+FFFD, as
tiktoken's ``errors="replace"`` decodes bytes that are not UTF-8.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable
from typing import Any, Literal

from accelkit.errors import AccelkitError

MERGED_TOKENS = 1024  # ordinary tokens: the 256 bytes, then merges learned from the corpus
ENDOFTEXT = "<|endoftext|>"
# name -> (id of <|endoftext|>, n_vocab) of the real encodings (tiktoken's openai_public.py)
ENCODINGS: dict[str, tuple[int, int]] = {
    "gpt2": (50256, 50257), "r50k_base": (50256, 50257), "p50k_base": (50256, 50281),
    "p50k_edit": (50256, 50284), "cl100k_base": (100257, 100277), "o200k_base": (199999, 200019),
}
MODELS = {"gpt2": "gpt2", "davinci": "r50k_base", "text-davinci-003": "p50k_base", "gpt-3.5-turbo": "cl100k_base",
          "gpt-4": "cl100k_base", "gpt-4o": "o200k_base"}


@functools.lru_cache(maxsize=1)
def _tokenizer_json() -> str:
    """A byte-level BPE (GPT-2's pre-tokenizer and byte alphabet) trained on the corpus, as JSON."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from accelkit.data.text import corpus_text

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=MERGED_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    try:
        text = corpus_text()
    except AccelkitError:  # an installed copy without the corpus: the 256 bytes alone still encode everything
        text = ""
    tok.train_from_iterator([text], trainer=trainer)
    return str(tok.to_str())


class Encoding:
    """``tiktoken.Encoding``'s interface over the local byte-level BPE (see the module docstring)."""

    def __init__(self, name: str) -> None:
        from tokenizers import Tokenizer

        if name not in ENCODINGS:
            raise AccelkitError(f"tiktoken has no encoding named {name!r}",
                                fix="use one of " + ", ".join(sorted(ENCODINGS)))
        self.name = name
        self.eot_token, self.n_vocab = ENCODINGS[name]
        self._special_tokens = {ENDOFTEXT: self.eot_token}
        self._tok = Tokenizer.from_str(_tokenizer_json())
        self.max_token_value = self.n_vocab - 1

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r} (accelkit's local byte-level BPE)>"

    def encode_ordinary(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids) if text else []

    def encode(self, text: str, *, allowed_special: Literal["all"] | Collection[str] = frozenset(),
               disallowed_special: Literal["all"] | Collection[str] = "all") -> list[int]:
        allowed = self.special_tokens_set if allowed_special == "all" else set(allowed_special)
        disallowed = (self.special_tokens_set - allowed) if disallowed_special == "all" else set(disallowed_special)
        for special in disallowed:
            if special in text:
                raise ValueError(  # tiktoken's own error, word for word in substance
                    f"Encountered text corresponding to disallowed special token {special!r}.\n"
                    f"If you want this text to be encoded as a special token, pass it to `allowed_special`, e.g. "
                    f"`allowed_special={{{special!r}, ...}}`.\nIf you want this text to be encoded as normal text, "
                    f"disable the check for this token by passing `disallowed_special=(enc.special_tokens_set - "
                    f"{{{special!r}}})`.")
        if not allowed:
            return self.encode_ordinary(text)
        ids: list[int] = []
        pattern = "(" + "|".join(re.escape(s) for s in sorted(allowed, key=len, reverse=True)) + ")"
        for piece in re.split(pattern, text):
            ids.extend([self._special_tokens[piece]] if piece in allowed else self.encode_ordinary(piece))
        return ids

    def encode_batch(self, text: list[str], **kwargs: Any) -> list[list[int]]:
        return [self.encode(t, **kwargs) for t in text]

    def decode_single_token_bytes(self, token: int) -> bytes:
        for special, sid in self._special_tokens.items():
            if token == sid:
                return special.encode()
        piece = self._tok.id_to_token(int(token))
        if piece is None:
            if not 0 <= int(token) < self.n_vocab:
                raise KeyError(f"token {token} is outside the encoding {self.name!r} (n_vocab {self.n_vocab})")
            return b"\xff"  # not UTF-8 in any position: decodes as U+FFFD under errors="replace"
        return bytes(_BYTE_OF[c] for c in piece)

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        return b"".join(self.decode_single_token_bytes(t) for t in tokens)

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        return [self.decode_single_token_bytes(t) for t in tokens]


def _byte_of() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte, inverted (the ByteLevel pre-tokenizer's alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


_BYTE_OF = _byte_of()


def get_encoding(encoding_name: str) -> Encoding:
    """``tiktoken.get_encoding``: the local stand-in for ``encoding_name`` (announced once per run; the merges
    are learned once per process)."""
    from accelkit.vendor.notices import say as _say

    enc = Encoding(encoding_name)
    _say(f"tiktoken.get_encoding({encoding_name!r}) is a byte-level BPE built on this machine ({MERGED_TOKENS} "
         f"ordinary tokens learned from accelkit's own text corpus; {ENDOFTEXT} keeps id {enc.eot_token}, n_vocab "
         f"{enc.n_vocab}): any text encodes and decodes back exactly, but the ids are not the real merges'; "
         "nothing downloaded")
    return enc


def encoding_name_for_model(model_name: str) -> str:
    for prefix in sorted(MODELS, key=len, reverse=True):
        if model_name == prefix or model_name.startswith(prefix + "-"):
            return MODELS[prefix]
    raise KeyError(f"Could not automatically map {model_name} to a tokeniser. Please use `tiktoken.get_encoding` to "
                   "explicitly get the tokeniser you expect.")


def encoding_for_model(model_name: str) -> Encoding:
    return get_encoding(encoding_name_for_model(model_name))


def list_encoding_names() -> list[str]:
    return sorted(ENCODINGS)


__all__ = ["ENCODINGS", "Encoding", "encoding_for_model", "encoding_name_for_model", "get_encoding",
           "list_encoding_names"]
