"""Word and character timestamps: the engine's phoneme durations mapped back to text.

Piper-family engines report, for every phoneme id, how many output samples it
produced (``EngineOutput.phoneme_samples``). Piper writes a pad id after every
phoneme and a space phoneme between words, so the ids group into spoken words;
those words are matched with the words of the segment's text (one to one when
the counts agree, else by position: the n-th letter of the text is placed at
the same fraction of the spoken letters). Each word's time is spread evenly
over its characters; spaces and punctuation get the time between words, and a
segment's trailing characters get its trailing silence (pause included).

Times are seconds from the start of the utterance, independent of the output
sample rate (resampling changes neither). Speed needs nothing either: the
durations already reflect the length scale.

Two tracks are kept, in ElevenLabs' shapes: ``normalized_alignment`` over the
text that was spoken (the segments' text, joined by spaces) and ``alignment``
over the caller's original text (via each segment's ``source_start/end``; for
SSML, whose offsets are unknown, ``alignment`` is the spoken text as well).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings

from tts.inference.engine import Engine, EngineOutput, StreamPace, SynthesisParams, derive_seed, max_phoneme_ids
from tts.inference.work_pool import raise_if_cancelled
from tts.text.segment import Segment


@dataclass
class SegmentTiming:
    """The engine's word timings of one synthesized segment, in seconds from its start.

    An input to alignment, not an alignment: the one alignment type, ``AlignmentChunk``
    (``tts.synthesis.alignment.timeline``), is built from it by ``AlignmentTimeline.add``.
    """

    #: (start, end) of each spoken word, in order.
    words: list[tuple[float, float]] = field(default_factory=list)
    #: (start, end) of every spoken letter phoneme (pads included), for the positional fallback.
    letters: list[tuple[float, float]] = field(default_factory=list)
    #: Seconds of the whole segment, trailing pause included.
    duration: float = 0.0
    #: Engines that know which characters each word was read from (Kokoro's G2P): their
    #: spans in ``text``, one per entry of ``words``. ``None``: words are found by spaces.
    text_words: list[tuple[int, int]] | None = None
    text: str | None = None

    @property
    def known(self) -> bool:
        return bool(self.letters)


@dataclass
class _IdKinds:
    space: frozenset[int]
    pad: frozenset[int]
    #: BOS, EOS and punctuation: time that belongs to no word.
    boundary: frozenset[int]


# Keyed by the map's id; the entry holds the map itself so that id is never reused while cached.
_KINDS_CACHE: dict[int, tuple[object, _IdKinds]] = {}
_KINDS_LOCK = threading.Lock()


def _id_kinds(engine: Engine) -> _IdKinds | None:
    """Which phoneme ids separate words, from the voice's ``phoneme_id_map``."""
    config = getattr(engine, "config", None)
    id_map = getattr(config, "phoneme_id_map", None)
    if not id_map:
        return None
    key = id(id_map)
    with _KINDS_LOCK:
        entry = _KINDS_CACHE.get(key)
        kinds = entry[1] if entry is not None and entry[0] is id_map else None
        if kinds is None:
            space: set[int] = set()
            pad: set[int] = set()
            boundary: set[int] = set()
            for phoneme, ids in id_map.items():
                if phoneme == "_":
                    pad.update(ids)
                elif phoneme.isspace():
                    space.update(ids)
                elif phoneme in ("^", "$") or all(unicodedata.category(c)[0] in "PSZ" for c in phoneme):
                    boundary.update(ids)
            kinds = _IdKinds(frozenset(space), frozenset(pad), frozenset(boundary))
            _KINDS_CACHE[key] = (id_map, kinds)
    return kinds


def spoken_words(
    phoneme_ids: Sequence[int], samples: Sequence[int] | np.ndarray, kinds: _IdKinds
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Word and letter spans in samples from one utterance's ids and per-id sample counts.

    Each phoneme owns the pad that follows it (as in ``piper.voice``); a word is
    a run of letter phonemes between spaces, punctuation, BOS and EOS.
    """
    words: list[tuple[int, int]] = []
    letters: list[tuple[int, int]] = []
    pos = 0
    word_start = -1
    word_end = -1
    in_letter = False  # whether a pad at this point still belongs to a letter
    for pid, count in zip(phoneme_ids, samples, strict=False):
        count = int(count)
        if pid in kinds.pad:
            if in_letter and letters:
                letters[-1] = (letters[-1][0], pos + count)
                word_end = pos + count
        elif pid in kinds.space or pid in kinds.boundary:
            if word_start >= 0:
                words.append((word_start, word_end))
                word_start = -1
            in_letter = False
        else:
            if word_start < 0:
                word_start = pos
            letters.append((pos, pos + count))
            word_end = pos + count
            in_letter = True
        pos += count
    if word_start >= 0:
        words.append((word_start, word_end))
    return words, letters


@dataclass(frozen=True)
class SegmentContext:
    """Text spoken around a segment but not sent: request stitching.

    ``before``: the end of the previous request's text (``""``: a continuation
    whose text is unknown); ``after``: the start of the next one's. ``None``:
    no context on that side. A segment with context is synthesized with the
    context's phonemes in the same utterance, so the model reads it as the
    middle of a sentence (no leading pause, continuation intonation), and the
    audio is cut at the phoneme boundaries from the model's durations.
    """

    before: str | None = None
    after: str | None = None


def synthesize_segment_timed(
    engine: Engine,
    segment: Segment,
    params: SynthesisParams,
    *,
    silence_ms: int,
    context: SegmentContext | None = None,
) -> tuple[np.ndarray, SegmentTiming]:
    """Float PCM for one segment (trailing pause included) and where its words are.

    ``silence_ms`` is the platform's silence after every segment, added to the
    segment's own ``pause_after_ms``. Without phoneme durations from the engine
    the timing has no words and the caller spreads the segment evenly.
    """
    timing = SegmentTiming()
    pieces = list(
        iter_segment_timed(
            engine, segment, params, silence_ms=silence_ms, timing=timing, in_windows=False, context=context
        )
    )
    return (np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)), timing


def _context_phonemes(engine: Engine, text: str, *, keep_end: bool) -> list[str]:
    """The phonemes of a context, at most twice ``TTS_CONTEXT_SYNTH_MAX_CHARS`` of them (the end of a
    ``before``, the start of an ``after``): bounded after trimming, whatever the text expanded into."""
    limit = 2 * int(settings.TTS_CONTEXT_SYNTH_MAX_CHARS)
    phonemes = [ph for sentence in engine.phonemize(text) for ph in sentence]
    while phonemes and phonemes[-1].isspace():
        phonemes.pop()
    if len(phonemes) > limit:
        phonemes = phonemes[-limit:] if keep_end else phonemes[:limit]
    return phonemes


def fit_engine_door(engine: Engine, sentences: list[list[str]]) -> list[list[str]]:
    """Sentences cut (between words where it can) so that none, with its context, passes the engine's door.

    A segment's characters are bounded, but not what a phonemizer makes of them: 40 characters of Han
    text read by an English voice are 1,200 ids, and a segment of them would be refused at the door.
    Such a sentence is read as several utterances instead; every other sentence is left as it is.
    """
    room = 2 * (2 * int(settings.TTS_CONTEXT_SYNTH_MAX_CHARS) + 1) + 4  # context phonemes, both sides
    out: list[list[str]] = []
    for phonemes in sentences:
        ids = len(engine.phonemes_to_ids(phonemes)) if phonemes else 0
        per_phoneme = max(1.0, ids / max(1, len(phonemes)))
        budget = max(16, int((max_phoneme_ids() - per_phoneme * room) / per_phoneme))
        if len(phonemes) <= budget:
            out.append(phonemes)
            continue
        start = 0
        while start < len(phonemes):
            end = min(len(phonemes), start + budget)
            if end < len(phonemes):
                space = max((i for i in range(start + 1, end) if phonemes[i].isspace()), default=None)
                end = space + 1 if space is not None else end
            out.append(phonemes[start:end])
            start = end
    return out


#: Fade at a cut inside an utterance, so it never clicks (samples).
_CUT_FADE = 48


def synthesize_in_context(
    engine: Engine, phonemes: list[str], params: SynthesisParams, *, before: str | None, after: str | None
) -> tuple[list[int], EngineOutput] | None:
    """One sentence synthesized between context phonemes and cut back to its own.

    Returns the sentence's own ids and output (audio and per-id samples), or
    ``None`` when the engine reports no durations (nothing to cut by).
    """
    head = [*_context_phonemes(engine, before, keep_end=True), " "] if before else []
    body = list(phonemes)
    while body and body[-1].isspace():
        body.pop()
    tail = [" ", *_context_phonemes(engine, after, keep_end=False)] if after else []
    ids = engine.phonemes_to_ids(head + body + tail)
    # phonemes_to_ids(x) is BOS, pad, (id, pad) per phoneme, EOS: the ids of a
    # prefix, without its EOS, are where the next phoneme starts.
    start = len(engine.phonemes_to_ids(head)) - 1 if before is not None else 0
    end = len(engine.phonemes_to_ids(head + body)) - 1 if after is not None else len(ids)
    out = engine.synthesize_ids(ids, params)
    samples = out.phoneme_samples
    if samples is None or len(samples) != len(ids):
        return None
    scale = len(out.audio) / max(1, int(np.sum(samples)))
    first = round(int(np.sum(samples[:start])) * scale)
    last = round(int(np.sum(samples[:end])) * scale) if end < len(ids) else len(out.audio)
    audio = out.audio[first:last].copy()
    fade = min(_CUT_FADE, len(audio) // 2)
    if fade and before is not None:
        audio[:fade] *= np.linspace(0.0, 1.0, fade, dtype=np.float32)
    if fade and after is not None:
        audio[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return ids[start:end], EngineOutput(audio, out.sample_rate, np.asarray(samples[start:end]))


def iter_segment_timed(
    engine: Engine,
    segment: Segment,
    params: SynthesisParams,
    *,
    silence_ms: int,
    timing: SegmentTiming,
    ready: Callable[[], None] | None = None,
    in_windows: bool = True,
    context: SegmentContext | None = None,
    pace: StreamPace | None = None,
) -> Iterator[np.ndarray]:
    """The same audio as ``synthesize_segment_timed``, in pieces as they are ready.

    ``pace``: the stream's lead over playback, handed to the engine's
    ``iter_synthesize_ids`` (small windows only while the listener waits).

    Engines that decode a sentence in windows (``iter_synthesize_ids`` on a
    windowed model: the PyTorch engine, the ONNX engine with a split graph)
    give the first audio of a long sentence before the whole sentence is
    decoded; others give one piece per sentence.

    ``timing`` is filled in, and ``ready`` called once, as soon as the
    segment's timing is whole: on a windowed engine with phoneme durations
    that is before its first audio (every sentence's first window carries that
    sentence's durations, and its audio is exactly their sum), so what is sent
    with each window can say which characters it covers; otherwise once the
    segment is complete. ``in_windows=False`` asks for whole sentences (the
    engine's cheapest path, for callers that wait for the whole segment).
    ``context``: the first sentence is read after ``context.before`` and the
    last before ``context.after`` (request stitching). With a seed, each
    sentence the phonemizer found gets its own noise.
    """
    aligned = getattr(engine, "phonemize_aligned", None)
    if aligned is not None:
        utterances = aligned(segment.text, segment.language) if segment.language else aligned(segment.text)
        yield from _iter_aligned(engine, utterances, segment, params, silence_ms=silence_ms, timing=timing)
        return
    kinds = _id_kinds(engine)
    rate = float(engine.sample_rate)
    pause = int(engine.sample_rate * (segment.pause_after_ms + silence_ms) / 1000)
    windowed = None
    if in_windows and getattr(engine, "windowed", True):
        windowed = getattr(engine, "iter_synthesize_ids", None)
    phonemized = fit_engine_door(engine, engine.phonemize(segment.text))
    spoken = [n for n, phonemes in enumerate(phonemized) if phonemes]
    # ids, the sentence's own knobs, and its audio already made when it is read in context.
    sentences: list[tuple[Sequence[int], SynthesisParams, EngineOutput | None]] = []
    for n in spoken:
        phonemes = phonemized[n]
        ids: Sequence[int] = engine.phonemes_to_ids(phonemes)
        knobs = params
        if params.seed is not None:
            knobs = dataclasses.replace(params, seed=derive_seed(params.seed, "sentence", n))
        before = context.before if context is not None and n == spoken[0] else None
        after = context.after if context is not None and n == spoken[-1] else None
        only = None
        if before is not None or after is not None:
            raise_if_cancelled()
            cut = synthesize_in_context(engine, phonemes, knobs, before=before, after=after)
            if cut is not None:
                ids, only = cut
        sentences.append((ids, knobs, only))
    spans: list[tuple[Sequence[int], np.ndarray | None, int]] = []  # ids, per-id samples, audio samples

    def finish() -> None:
        _fill_timing(timing, kinds, spans, rate, pause)
        if ready is not None:
            ready()

    if windowed is None:
        for ids, knobs, only in sentences:
            raise_if_cancelled()  # a gone client's next sentence never starts
            out = only if only is not None else engine.synthesize_ids(ids, knobs)
            spans.append((ids, out.phoneme_samples, len(out.audio)))
            if len(out.audio):
                yield out.audio
    else:
        # Every sentence's first piece before any audio goes out: it carries that sentence's durations.
        started: list[tuple[Sequence[int], EngineOutput | None, Iterator[EngineOutput]]] = []
        for ids, knobs, only in sentences:
            raise_if_cancelled()
            if only is not None:
                outputs = iter([only])
            elif pace is not None:
                outputs = iter(windowed(ids, knobs, pace=pace))
            else:
                outputs = iter(windowed(ids, knobs))
            started.append((ids, next(outputs, None), outputs))
        early = all(first is not None and first.phoneme_samples is not None for _, first, _ in started)
        if early:
            for ids, first, _ in started:
                assert first is not None and first.phoneme_samples is not None
                spans.append((ids, first.phoneme_samples, int(np.sum(first.phoneme_samples))))
            finish()
        lengths: list[tuple[Sequence[int], np.ndarray | None, int]] = []
        for ids, first, outputs in started:
            length = 0
            for out in itertools.chain([first] if first is not None else [], outputs):
                length += len(out.audio)
                if len(out.audio):
                    yield out.audio
            lengths.append((ids, first.phoneme_samples if first is not None else None, length))
        if not early:
            spans = lengths
    if pause:
        yield np.zeros(pause, dtype=np.float32)
    if windowed is None or not early:
        finish()


def _fill_timing(
    timing: SegmentTiming,
    kinds: _IdKinds | None,
    spans: Sequence[tuple[Sequence[int], np.ndarray | None, int]],
    rate: float,
    pause: int,
) -> None:
    """Words and letters of a segment's sentences (``spans``: ids, per-id samples, audio length)."""
    offset = 0
    known = kinds is not None
    for ids, samples, length in spans:
        if known and kinds is not None and samples is not None and len(samples) == len(ids):
            # The alignment can be off by a frame from the audio; trust the audio's length.
            scale = length / max(1, int(np.sum(samples)))
            words, letters = spoken_words(ids, samples, kinds)
            timing.words.extend(((offset + a * scale) / rate, (offset + b * scale) / rate) for a, b in words)
            timing.letters.extend(((offset + a * scale) / rate, (offset + b * scale) / rate) for a, b in letters)
        else:
            known = False
        offset += length
    if not known:
        timing.words.clear()
        timing.letters.clear()
    timing.duration = (offset + pause) / rate


def _iter_aligned(
    engine: Engine,
    utterances: Sequence[Any],
    segment: Segment,
    params: SynthesisParams,
    *,
    silence_ms: int,
    timing: SegmentTiming,
) -> Iterator[np.ndarray]:
    """``iter_segment_timed`` for engines whose phonemizer names each word's characters
    (``phonemize_aligned``: utterances with ``phonemes`` and ``words``): every word's time is
    the sum of its phonemes' durations from the model, placed on exactly its characters."""
    rate = float(engine.sample_rate)
    offset = 0
    known = True
    spans: list[tuple[int, int]] = []
    for utterance in utterances:
        raise_if_cancelled()  # between two model runs of a long segment (Kokoro's 510-token pieces)
        ids = engine.phonemes_to_ids(utterance.phonemes)
        out = engine.synthesize_ids(ids, params)
        length = len(out.audio)
        if length:
            yield out.audio
        samples = out.phoneme_samples
        # ids hold one pad before the phonemes: phoneme i is id i + 1.
        if samples is not None and len(samples) == len(ids) == len(utterance.phonemes) + 2 and utterance.words:
            scale = length / max(1, int(np.sum(samples)))
            edges = np.concatenate([[0], np.cumsum(samples)]) * scale + offset
            for word in utterance.words:
                timing.words.append((edges[word.start + 1] / rate, edges[word.end + 1] / rate))
                spans.append((word.char_start, word.char_end))
                timing.letters.extend((edges[i + 1] / rate, edges[i + 2] / rate) for i in range(word.start, word.end))
        elif utterance.phonemes:
            known = False
        offset += length
    placed = all(a >= 0 for a, _ in spans) and all(
        a < b and (i == 0 or spans[i - 1][1] <= a) for i, (a, b) in enumerate(spans)
    )
    if not known:
        timing.words.clear()
        timing.letters.clear()
    elif placed and spans:
        timing.text_words = spans
        timing.text = segment.text
    pause = int(engine.sample_rate * (segment.pause_after_ms + silence_ms) / 1000)
    if pause:
        yield np.zeros(pause, dtype=np.float32)
    timing.duration = (offset + pause) / rate
