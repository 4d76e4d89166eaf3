"""A dialogue's voice segments: which turn, in which voice, is heard when (ElevenLabs'
``voice_segments`` of text-to-dialogue with timestamps).

A dialogue's turns are prepared one after the other into one text (``tts.synthesis.stages.prepare``):
each turn's characters are a span of the alignment's characters (``TurnSpan``). A voice segment is
the part of a span an answer covers, timed by the alignment's first and last character in it, so the
whole answer's segments and a stream's chunk by chunk come from the same tracks (a cache hit's too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TurnSpan:
    """Turn ``index`` of a dialogue, spoken by ``voice_id``: characters ``start`` (inclusive) to
    ``end`` (exclusive) of the dialogue's alignment (the turns' texts as spoken, one after the other)."""

    index: int
    voice_id: str
    start: int
    end: int


def voice_segments(spans: Sequence[TurnSpan], track: dict[str, Any] | None, *, first: int = 0) -> list[dict[str, Any]]:
    """The voice segments of an alignment ``track`` (``{"characters", "character_start_times_seconds",
    "character_end_times_seconds"}``) whose first character is the dialogue's character ``first``
    (a stream's chunk: the characters sent before it), in order; ``[]`` without characters."""
    if not track or not spans:
        return []
    starts: list[float] = track.get("character_start_times_seconds") or []
    ends: list[float] = track.get("character_end_times_seconds") or []
    count = len(starts)
    segments = []
    for span in spans:
        a, b = max(span.start, first), min(span.end, first + count)
        if a >= b:
            continue
        segments.append(
            {
                "voice_id": span.voice_id,
                "start_time_seconds": starts[a - first],
                "end_time_seconds": max(ends[a - first : b - first]),
                "character_start_index": a,
                "character_end_index": b,
                "dialogue_input_index": span.index,
            }
        )
    return segments
