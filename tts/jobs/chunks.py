"""A job's plan (``Job.plan``): its prepared segments grouped into the chunks a worker runs one at a
time, each checkpointed. A text's segments are grouped into chunks of about ``TTS_JOB_CHUNK_CHARS``
(``plan_chunks``); a dialogue's are cut at its turn boundaries, a turn longer than a chunk cut by
the same grouping (``plan_dialogue_chunks``), so each chunk carries whole turns or part of one."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from tts.text.segment import Segment


def plan_chunks(item: int, segments: list[Segment], chunk_chars: int) -> list[dict[str, Any]]:
    """Consecutive segments grouped into chunks of about ``chunk_chars`` characters."""
    chunks: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for seg in segments:
        if current and size + len(seg.text) > chunk_chars:
            chunks.append({"item": item, "chars": size, "segments": current})
            current, size = [], 0
        current.append(dataclasses.asdict(seg))
        size += len(seg.text)
    if current:
        chunks.append({"item": item, "chars": size, "segments": current})
    return chunks


def plan_dialogue_chunks(segments: list[Segment], chunk_chars: int) -> list[dict[str, Any]]:
    """A dialogue's segments (each marked with its ``turn``) in chunks cut only between turns: whole
    turns together up to about ``chunk_chars`` characters, a longer turn alone in chunks of its own
    (``plan_chunks``). Each chunk names its ``turns``; each segment keeps its ``turn`` (its voice)."""
    chunks: list[dict[str, Any]] = []
    current: list[Segment] = []

    def close() -> None:
        if current:
            chunks.extend(plan_chunks(0, list(current), sum(len(seg.text) for seg in current)))
            current.clear()

    for _turn, group in itertools.groupby(segments, key=lambda seg: seg.turn):
        turn_segments = list(group)
        size = sum(len(seg.text) for seg in turn_segments)
        if size > chunk_chars:
            close()
            chunks.extend(plan_chunks(0, turn_segments, chunk_chars))
            continue
        if current and sum(len(seg.text) for seg in current) + size > chunk_chars:
            close()
        current.extend(turn_segments)
    close()
    for chunk in chunks:
        chunk["turns"] = list(dict.fromkeys(seg["turn"] for seg in chunk["segments"]))
    return chunks
