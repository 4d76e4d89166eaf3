"""Reading words and pauses out of an ElevenLabs alignment and out of decoded audio."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tests.audio_checks import frame_rms


def alignment_words(track: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(word, start, end) of each whitespace-separated run that holds a letter or digit."""
    chars = track["characters"]
    starts = track["character_start_times_seconds"]
    ends = track["character_end_times_seconds"]
    assert len(chars) == len(starts) == len(ends)
    words: list[tuple[str, float, float]] = []
    current: list[int] = []
    for i, ch in enumerate([*chars, " "]):
        if ch.isspace():
            letters = [j for j in current if chars[j].isalnum()]
            if letters:
                word = "".join(chars[j] for j in range(letters[0], letters[-1] + 1))
                words.append((word, starts[letters[0]], ends[letters[-1]]))
            current = []
        else:
            current.append(i)
    return words


def longest_quiet_gap(
    samples: np.ndarray, rate: int, *, frame_ms: int = 10, floor_db: float = -40
) -> tuple[float, float]:
    """(start, end) in seconds of the longest run of frames quieter than ``floor_db`` below the loudest,
    not counting leading or trailing silence."""
    rms = frame_rms(samples, rate, frame_ms=frame_ms)
    threshold = rms.max() * 10 ** (floor_db / 20)
    loud = np.flatnonzero(rms > threshold)
    best = (0.0, 0.0)
    for a, b in itertools.pairwise(loud):
        if b - a - 1 > (best[1] - best[0]) * 1000 / frame_ms:
            best = ((a + 1) * frame_ms / 1000, b * frame_ms / 1000)
    return best
