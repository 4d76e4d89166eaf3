"""What every grapheme-to-phoneme front end gives back: phonemes, and where each word came from.

A front end turns the text of one language into the phoneme characters of the
model it feeds (Kokoro's IPA-like vocabulary) and keeps, for every spoken word,
the span of the characters it was read from: timestamps follow the model's own
durations through those spans. Nothing here knows a model or Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# Phoneme characters that end a word without being spoken (Kokoro's punctuation).
PUNCTUATION = frozenset(';:,.!?¡¿—…"«»“”()[] ')


@dataclass(frozen=True)
class PhonemeWord:
    """One spoken word: ``phonemes[start:end]`` of its sentence, read from ``text[char_start:char_end]``.

    ``char_start`` is -1 when the word could not be placed in the text (the
    front end rewrote it beyond recognition); callers then fall back to positions.
    """

    start: int
    end: int
    char_start: int
    char_end: int


@dataclass(frozen=True)
class PhonemizedText:
    phonemes: str
    words: list[PhonemeWord]


class G2P(Protocol):
    """One language's front end. Safe to share between threads (it keeps no state between calls)."""

    def phonemize(self, text: str) -> PhonemizedText: ...
