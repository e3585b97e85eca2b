"""``torchaudio.datasets.SPEECHCOMMANDS`` for ``accelkit vendor-run --synthetic-data``, where torchaudio is not
installed (its wheels pull a CUDA torch, and the set is a 2.3 GB download).

GroqFlow's M5 keyword-spotting proof point reads Speech Commands v0.02 (Warden 2018, arXiv:1804.03209) through
torchaudio: items ``(waveform (1, samples), sample_rate, label, speaker_id, utterance_number)`` at 16 kHz, at most
one second each, over 35 words. The stand-in keeps that interface and those 35 labels, with
:data:`CLIPS_PER_WORD` clips a word for any subset (the real testing subset has 11,005 clips). A clip is not
speech: each word is a chord of three tones of its own under a syllable-like envelope, with noise; most clips last
one second and one in five less (0.75 s to 1 s), as recorded words do. A model trained on speech scores near chance on them; what runs is
the pipeline (padding, batching, the model on the chip and on the CPU), and the run says so once.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from accelkit.vendor.notices import say

# Speech Commands v0.02's 35 words (the dataset's folder names), in sorted order
WORDS = ("backward", "bed", "bird", "cat", "dog", "down", "eight", "five", "follow", "forward", "four", "go", "happy",
         "house", "learn", "left", "marvin", "nine", "no", "off", "on", "one", "right", "seven", "sheila", "six",
         "stop", "three", "tree", "two", "up", "visual", "wow", "yes", "zero")
SAMPLE_RATE = 16_000  # Hz, as recorded
CLIPS_PER_WORD = 10
REAL_SIZES = {"training": 84_843, "validation": 9_981, "testing": 11_005, None: 105_829}


def _clip(word: int, take: int) -> torch.Tensor:
    """One generated clip of word ``word``: (1, samples) float32 in [-1, 1]."""
    g = torch.Generator().manual_seed(1000 * word + take)
    short = take % 5 == 4  # most clips are a full second, as most of the real set's are; one in five shorter
    n = int(SAMPLE_RATE * (0.75 + 0.25 * torch.rand((), generator=g).item())) if short else SAMPLE_RATE
    t = torch.arange(n, dtype=torch.float64) / SAMPLE_RATE
    tones = [200.0 * 1.12 ** ((word * k) % 24) for k in (1, 3, 7)]  # the word's own chord, 200 Hz .. 2.7 kHz
    wave = sum(torch.sin(2 * math.pi * f * t) for f in tones) / 3
    envelope = torch.sin(math.pi * t / t[-1]) ** 2  # one syllable-like rise and fall
    noise = 0.05 * torch.randn(n, generator=g, dtype=torch.float64)
    return (0.5 * wave * envelope + noise).clamp(-1, 1).to(torch.float32)[None]


class SPEECHCOMMANDS(torch.utils.data.Dataset):  # noqa: N801 - torchaudio's name
    """``torchaudio.datasets.SPEECHCOMMANDS(root, url=..., folder_in_archive=..., download=False, subset=None)``:
    :data:`CLIPS_PER_WORD` generated clips for each of the 35 words (see the module docstring)."""

    def __init__(self, root: Any = None, url: str = "speech_commands_v0.02", folder_in_archive: str = "SpeechCommands",
                 download: bool = False, subset: str | None = None) -> None:
        if subset not in REAL_SIZES:
            raise ValueError(f"subset must be one of {sorted(k for k in REAL_SIZES if k)} or None, not {subset!r}")
        self.subset = subset
        self._items = [(w, k) for w in range(len(WORDS)) for k in range(CLIPS_PER_WORD)]
        say(f"torchaudio.datasets.SPEECHCOMMANDS(subset={subset!r}) is {len(self._items)} generated clips "
            f"({CLIPS_PER_WORD} for each of the 35 words; the real set has {REAL_SIZES[subset]}): 16 kHz tones, not "
            "speech, so a model trained on speech scores near chance on them; nothing downloaded")

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int, str, str, int]:
        word, take = self._items[index]
        return _clip(word, take), SAMPLE_RATE, WORDS[word], f"{word:04x}{take:04x}", take


__all__ = ["CLIPS_PER_WORD", "SAMPLE_RATE", "SPEECHCOMMANDS", "WORDS"]
