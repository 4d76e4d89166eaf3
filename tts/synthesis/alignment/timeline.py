"""Character timestamps from word timings: the ElevenLabs ``alignment`` and ``normalized_alignment``
tracks of a whole utterance (``AlignmentTimeline``) and the chunks a stream sends.

``AlignmentChunk`` (absolute seconds, both tracks) is the one alignment type live speech hands
around: a timeline's chunk where the engine reported timings, else an even estimate
(``estimate_alignment``). ``websocket_alignment`` is the one conversion to the WebSockets' JSON,
``MessageClock`` the per-message convention it follows. The word timings themselves come from
``tts.synthesis.alignment.timestamps``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from tts.synthesis.alignment.timestamps import SegmentTiming
from tts.text.segment import Segment

#: A word in text: a run of non-space characters; only letters and digits are timed.
_TOKEN = re.compile(r"\S+")


def _is_letter(ch: str) -> bool:
    return ch.isalnum()


def _text_words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text``: from its first to its last letter or digit."""
    words = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = next((i for i, c in enumerate(token) if _is_letter(c)), -1)
        if first < 0:
            continue  # "—", "&": spoken or not, no letters to time
        last = max(i for i, c in enumerate(token) if _is_letter(c))
        words.append((match.start() + first, match.start() + last + 1))
    return words


def _positional_words(text: str, words: list[tuple[int, int]], timing: SegmentTiming) -> list[tuple[float, float]]:
    """Word times when text and speech disagree on the word count: by letter position."""
    letters = timing.letters
    counts = [sum(1 for c in text[a:b] if _is_letter(c)) for a, b in words]
    total = sum(counts) or 1
    # Boundary k of n letter phonemes: the start of the k-th one (or the end of the last).
    edges = [start for start, _ in letters] + [letters[-1][1]]

    def at(fraction: float) -> float:
        x = fraction * len(letters)
        k = min(int(x), len(letters) - 1)
        start, end = letters[k]
        return start + (end - start) * (x - k) if x < len(letters) else edges[-1]

    result = []
    done = 0
    for count in counts:
        start = at(done / total)
        done += count
        result.append((start, max(start, at(done / total))))
    return result


def character_times(text: str, timing: SegmentTiming, offset: float) -> tuple[list[float], list[float]]:
    """Start and end (seconds, absolute) of every character of one segment's ``text``."""
    n = len(text)
    starts = [offset] * n
    ends = [offset] * n
    end_all = offset + timing.duration
    words = _text_words(text)
    if timing.text_words is not None and timing.text == text and len(timing.text_words) == len(timing.words):
        words = timing.text_words  # the engine said which characters each word was read from
    if not words or not timing.letters:  # the timing is known (``SegmentTiming.known``)
        # No durations (or nothing to time): the segment's time spread evenly.
        step = timing.duration / max(1, n)
        for i in range(n):
            starts[i] = offset + i * step
            ends[i] = offset + (i + 1) * step
        return starts, ends
    same = len(words) == len(timing.words)
    word_times = timing.words if same else _positional_words(text, words, timing)

    def spread(a: int, b: int, t0: float, t1: float) -> None:
        if b <= a:
            return
        step = (t1 - t0) / (b - a)
        for i in range(a, b):
            starts[i] = t0 + (i - a) * step
            ends[i] = t0 + (i - a + 1) * step

    cursor = 0
    prev_end = 0.0
    for (a, b), (t0, t1) in zip(words, word_times, strict=True):
        spread(cursor, a, offset + prev_end, offset + t0)  # spaces and punctuation before the word
        spread(a, b, offset + t0, offset + t1)
        cursor, prev_end = b, t1
    spread(cursor, n, offset + prev_end, end_all)  # trailing punctuation keeps the trailing silence
    return starts, ends


@dataclass
class CharTrack:
    """One alignment in ElevenLabs' shape, built up chunk by chunk."""

    characters: list[str] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)

    def extend(self, chars: Sequence[str], starts: Sequence[float], ends: Sequence[float]) -> None:
        self.characters.extend(chars)
        self.starts.extend(starts)
        self.ends.extend(ends)

    def as_json(self) -> dict[str, Any]:
        return {
            "characters": list(self.characters),
            "character_start_times_seconds": [round(t, 3) for t in self.starts],
            "character_end_times_seconds": [round(t, 3) for t in self.ends],
        }

    def __bool__(self) -> bool:
        return bool(self.characters)

    def take_before(self, t: float) -> CharTrack:
        """Remove and return the leading characters that start before ``t`` (seconds)."""
        n = 0
        while n < len(self.starts) and self.starts[n] < t:
            n += 1
        taken = CharTrack(self.characters[:n], self.starts[:n], self.ends[:n])
        del self.characters[:n], self.starts[:n], self.ends[:n]
        return taken


@dataclass
class AlignmentChunk:
    """The characters spoken in one chunk of audio, both tracks, absolute times.

    A chunk sent with a live stream's audio also carries how its message is timed (set by
    ``MessageClock``; seconds from the utterance's start): ``origin``, where the message's
    times count from, and ``audio_end``, where its audio ends, which its last character lasts
    at least to (``None``: not stretched).
    """

    alignment: CharTrack = field(default_factory=CharTrack)
    normalized: CharTrack = field(default_factory=CharTrack)
    origin: float = 0.0
    audio_end: float | None = None

    def take_before(self, t: float) -> AlignmentChunk:
        """Remove and return the characters (both tracks) that start before ``t``: what audio up to ``t`` covers."""
        return AlignmentChunk(self.alignment.take_before(t), self.normalized.take_before(t))

    def merge(self, other: AlignmentChunk) -> None:
        self.alignment.extend(other.alignment.characters, other.alignment.starts, other.alignment.ends)
        self.normalized.extend(other.normalized.characters, other.normalized.starts, other.normalized.ends)

    def as_json(self) -> dict[str, Any]:
        return {
            "alignment": self.alignment.as_json() if self.alignment else None,
            "normalized_alignment": self.normalized.as_json() if self.normalized else None,
        }


class AlignmentTimeline:
    """The whole utterance's alignment, fed one synthesized segment at a time.

    ``original`` is the request text; ``None`` (SSML, live WebSocket text)
    makes ``alignment`` follow the spoken text. ``take_pending`` hands out what
    was added since the last call, for chunked responses.
    """

    def __init__(self, original: str | None) -> None:
        self.original = original
        self.full = AlignmentChunk()
        self._pending = AlignmentChunk()
        self._cursor = 0  # next original character not yet placed
        self._end = 0.0
        self._closed = False

    @classmethod
    def for_segments(cls, text: str, segments: Sequence[Segment]) -> AlignmentTimeline:
        mapped = bool(segments) and all(s.source_start >= 0 and s.source_end >= s.source_start for s in segments)
        return cls(text if mapped else None)

    def add(self, segment: Segment, timing: SegmentTiming, offset: float) -> None:
        chunk = AlignmentChunk()
        text = segment.text
        starts, ends = character_times(text, timing, offset)
        if self.full.normalized and text and not segment.continuation:
            chunk.normalized.extend([" "], [offset], [offset])  # the space that joins sentences
        chunk.normalized.extend(list(text), starts, ends)
        if self.original is None:
            chunk.alignment = CharTrack(
                list(chunk.normalized.characters), list(chunk.normalized.starts), list(chunk.normalized.ends)
            )
        else:
            self._add_original(chunk, segment, timing, offset)
        self._end = offset + timing.duration
        self.full.merge(chunk)
        self._pending.merge(chunk)

    def _add_original(self, chunk: AlignmentChunk, segment: Segment, timing: SegmentTiming, offset: float) -> None:
        assert self.original is not None
        start = max(segment.source_start, self._cursor)
        end = max(start, min(segment.source_end, len(self.original)))
        gap = self.original[self._cursor : start]
        # Characters between segments (spaces, skipped symbols) take no time.
        chunk.alignment.extend(list(gap), [offset] * len(gap), [offset] * len(gap))
        source = self.original[start:end]
        starts, ends = character_times(source, timing, offset)
        chunk.alignment.extend(list(source), starts, ends)
        self._cursor = end

    def finish(self, total: float | None = None) -> None:
        """Place what follows the last segment; the last character ends with the audio."""
        if self._closed:
            return
        self._closed = True
        end = max(self._end, total or 0.0)
        chunk = AlignmentChunk()
        if self.original is not None and self._cursor < len(self.original):
            rest = self.original[self._cursor :]
            chunk.alignment.extend(list(rest), [self._end] * len(rest), [end] * len(rest))
            self._cursor = len(self.original)
        self.full.merge(chunk)
        self._pending.merge(chunk)
        for track in (self.full.alignment, self.full.normalized):
            if track.ends and track.ends[-1] < end:
                track.ends[-1] = end

    def take_pending(self) -> AlignmentChunk | None:
        """What was added since the last call (``None`` if nothing)."""
        pending, self._pending = self._pending, AlignmentChunk()
        if not pending.alignment and not pending.normalized:
            return None
        return pending

    def as_json(self) -> dict[str, Any]:
        """``{"alignment": ..., "normalized_alignment": ...}`` for the whole utterance."""
        return self.full.as_json()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AlignmentTimeline:
        """A finished timeline from a stored ``as_json`` (a cache hit), pending in full."""
        timeline = cls(None)
        for name, track in (("alignment", timeline.full.alignment), ("normalized_alignment", timeline.full.normalized)):
            part = data.get(name) or {}
            track.extend(
                part.get("characters") or [],
                part.get("character_start_times_seconds") or [],
                part.get("character_end_times_seconds") or [],
            )
        timeline._pending.merge(timeline.full)
        timeline._closed = True
        return timeline


def estimate_alignment(text: str, start: float, seconds: float) -> AlignmentChunk:
    """``text`` spread evenly over the speech of ``seconds`` of audio from ``start``, both tracks.

    For engines that report no timings (Piper gives none per character): good enough for
    captions and barge-in bookkeeping. The speech is the audio less its sentence silence; the
    characters sit on a millisecond grid so their durations add up to it in the WebSockets' ms.
    """
    chars = list(text)
    speech_ms = max(0.0, seconds * 1000 - settings.TTS_SENTENCE_SILENCE_MS)
    step = speech_ms / max(1, len(chars))
    start_ms = round(start * 1000)
    starts = [(start_ms + round(i * step)) / 1000 for i in range(len(chars))]
    ends = [(start_ms + round((i + 1) * step)) / 1000 for i in range(len(chars))]
    return AlignmentChunk(CharTrack(chars, starts, ends), CharTrack(list(chars), list(starts), list(ends)))


def websocket_alignment(
    chunk: AlignmentChunk | None, chunk_start: float | None = None, *, normalized: bool = False
) -> dict | None:
    """ElevenLabs' WebSocket shape (``chars``, ``charStartTimesMs``, ``charDurationsMs``) of ``chunk``.

    Times are milliseconds from ``chunk_start`` (seconds from the utterance's start; by default
    the chunk's ``origin``), and the last character lasts at least to the chunk's ``audio_end``
    when it has one. Every WebSocket message's alignment is made here (``MessageClock``).
    """
    if chunk is None:
        return None
    track = chunk.normalized if normalized else chunk.alignment
    if not track:
        return None
    origin_ms = round((chunk.origin if chunk_start is None else chunk_start) * 1000)
    starts = [max(0, round(t * 1000) - origin_ms) for t in track.starts]
    durations = [max(0, round((e - s) * 1000)) for s, e in zip(track.starts, track.ends, strict=True)]
    if chunk.audio_end is not None:
        durations[-1] = max(durations[-1], round(chunk.audio_end * 1000) - origin_ms - starts[-1])
    return {"chars": list(track.characters), "charStartTimesMs": starts, "charDurationsMs": durations}


class MessageClock:
    """The alignment times of live audio messages, by ElevenLabs' conventions.

    By default each message's times restart at zero and its alignment spans its audio, so a
    client's clock advances by each message's span, the last character's start plus duration
    (pipecat adds them up so). Here zero is where the characters sent before end, which is the
    message's first sample unless audio went out with no character starting in it (a sentence's
    trailing silence), and a message's last character lasts at least to the end of its audio: the
    sum of the spans is always where the next message's characters start. The clock counts in
    the milliseconds the messages carry (``websocket_alignment``), so no rounding drifts. With
    ``sync_alignment`` (``from_start``) the times run from the start of the utterance instead, as
    LiveKit Agents (which sends it) reads them.
    """

    def __init__(self, *, from_start: bool) -> None:
        self.from_start = from_start
        self.origin_ms = 0  # the end of the characters sent so far, ms from the utterance's start

    def place(self, chunk: AlignmentChunk | None, audio_end: float) -> AlignmentChunk | None:
        """``chunk`` (absolute times) framed as the message whose audio ends at ``audio_end`` sends it;
        ``None`` when it holds no character."""
        if chunk is None or not (chunk.alignment or chunk.normalized):
            return None
        if self.from_start:
            return chunk
        chunk.origin = self.origin_ms / 1000
        chunk.audio_end = audio_end
        message = websocket_alignment(chunk)
        if message is not None:
            self.origin_ms += message["charStartTimesMs"][-1] + message["charDurationsMs"][-1]
        return chunk
