"""A sentence's first clause, cut off for a stream's first audio (#35 item 5).

An engine that cannot decode a sentence in windows (Kokoro) makes its first
audio only once the whole sentence is made. On a streaming route the first
sentence is therefore cut at its first pause (, ， 、 ; ： — …) once the text
before that pause is long enough to sound natural on its own
(``TTS_FIRST_CLAUSE_MIN_CHARS``); the first clause is synthesized alone and
the rest of the sentence follows as one piece. The two pieces are one
sentence: the first ends with a clause's pause (``TTS_FIRST_CLAUSE_PAUSE_MS``)
rather than a sentence's, the second takes the sentence's place in billing,
and stitching context goes to the piece it belongs to.

Length is counted as a reader hears it: a CJK character (a syllable) counts
as three letters.
"""

# Punctuation of every script in the docstrings: full-width marks are the point.
# ruff: noqa: RUF002

from __future__ import annotations

import dataclasses
import re

from .phonemes import mask_phonemes
from .segment import PAUSE_MARKS, Segment

_SYLLABIC = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")
#: One CJK character (a syllable) is worth this many letters of a Latin-script word.
SYLLABLE_LETTERS = 3


def spoken_length(text: str) -> int:
    """How long ``text`` is to a listener, in letters: spaces and punctuation are free, a CJK character is three."""
    syllables = len(_SYLLABIC.findall(text))
    letters = sum(1 for c in text if c.isalnum()) - syllables
    return letters + SYLLABLE_LETTERS * syllables


def first_clause_cut(text: str, min_letters: int) -> int | None:
    """Where ``text`` may be cut after its first clause: the end of the first pause mark with at least
    ``min_letters`` (``spoken_length``) before it and after it; ``None`` when there is none."""
    if min_letters <= 0:
        return None
    masked = mask_phonemes(text)  # never inside a [[ phonemes ]] block
    ends = sorted({m.end() for pattern in PAUSE_MARKS for m in pattern.finditer(masked)})
    for end in ends:
        if spoken_length(text[:end]) < min_letters:
            continue
        if spoken_length(text[end:]) < min_letters:
            return None  # a stub after the pause: nothing to gain
        return end
    return None


def split_first_clause(segment: Segment, *, min_letters: int, pause_ms: int) -> tuple[Segment, Segment] | None:
    """``segment`` as its first clause and the rest, or ``None`` when it has no pause to cut at.

    The first piece is ``continued`` (the sentence goes on: ``pause_ms`` of silence
    after it, no sentence silence); the rest is a ``continuation`` and keeps the
    sentence's own pause. Source offsets are split where the text maps one to one
    onto the source, else in proportion.
    """
    if segment.continued or segment.continuation:
        return None
    cut = first_clause_cut(segment.text, min_letters)
    if cut is None:
        return None
    head_text, rest_text = segment.text[:cut].rstrip(), segment.text[cut:].lstrip()
    source_cut = -1
    if 0 <= segment.source_start <= segment.source_end:
        span = segment.source_end - segment.source_start
        at = cut if span == len(segment.text) else round(cut * span / max(1, len(segment.text)))
        source_cut = segment.source_start + at
    head = dataclasses.replace(
        segment,
        text=head_text,
        source_end=source_cut if source_cut >= 0 else segment.source_end,
        pause_after_ms=pause_ms,
        continued=True,
    )
    rest = dataclasses.replace(
        segment, text=rest_text, source_start=source_cut if source_cut >= 0 else segment.source_start, continuation=True
    )
    return head, rest
