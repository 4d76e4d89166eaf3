"""The text front end's single entry point: raw request text to segments.

Every synthesis path (REST, streaming, WebSocket, jobs) calls
``prepare_text``, so the same input always yields the same segments. Plain
text is split into sentences on the original characters first and each
sentence normalized afterwards, which keeps offsets exact; SSML is parsed
into runs and pauses, each run normalized, then segmented the same way.
"""

from __future__ import annotations

from dataclasses import replace

from .errors import TextError
from .language import script_weights, strip_markup
from .normalize import MODES, Mode, clean_text, normalize_aligned, normalize_text, primary_language, rules_for
from .rewrite import Rewritten
from .segment import DEFAULT_MAX_CHARS, Segment, segment_text
from .ssml import Pause, Run, is_ssml, parse_ssml

Normalization = Mode

__all__ = ["Normalization", "Segment", "TextError", "prepare_text"]


def _guess_language(text: str) -> str | None:
    """The rules language for text whose language the caller did not give.

    Only the writing system is consulted (cheap, no model): Latin means
    English rules, Chinese characters without kana mean Chinese, kana (with
    or without Chinese characters) Japanese; anything else gets no language
    rules rather than English ones.
    """
    weights = script_weights(text)
    if not weights:
        return "en"
    dominant = weights.most_common(1)[0][0]
    if dominant in ("Han", "Kana") and weights.get("Kana"):
        return "ja"
    if dominant == "Han":
        return "zh"
    return "en" if dominant == "Latin" else None


# Languages whose model takes fewer characters per utterance than the platform's
# segment limit: Kokoro reads at most 510 phonemes, and a kanji is often three or four.
# Shorter segments also start the first audio sooner. Chinese (measured on the reference
# articles, after normalization): 3.75 phonemes per character (p99 4.45), at most 5.9 for
# text made of the longest syllables; 85 x 5.9 = 502 phonemes fits in one model call.
LANGUAGE_MAX_CHARS = {"ja": 120, "zh": 85}


def _segment_limit(language: str | None, max_chars: int) -> int:
    return min(max_chars, LANGUAGE_MAX_CHARS.get(language or "", max_chars))


def _plain_segments(text: str, language: str | None, mode: Mode, max_chars: int) -> list[Segment]:
    if rules_for(language or "und", mode) is None:
        return segment_text(text, max_chars=max_chars)

    def rewrite(sentence: str) -> Rewritten:
        return normalize_aligned(sentence, language=language, mode=mode)

    return segment_text(text, max_chars=max_chars, rewrite=rewrite)


def _merge_runs(runs: list[Run]) -> list[Run]:
    merged: list[Run] = []
    for run in runs:
        if merged and merged[-1].normalize == run.normalize and merged[-1].rate == run.rate:
            merged[-1] = Run(merged[-1].text + run.text, run.rate, run.normalize)
        else:
            merged.append(run)
    return merged


def _ssml_segments(text: str, language: str | None, mode: Mode, max_chars: int) -> list[Segment]:
    # The guess is only used when neither the request nor xml:lang names a language.
    guess = None if language else _guess_language(strip_markup(text))
    document = parse_ssml(text, language=language, fallback_language=guess)
    language = document.language
    segments: list[Segment] = []
    chunk: list[Run] = []

    def flush() -> None:
        if not chunk:
            return
        spoken = "".join(
            normalize_text(run.text, language=language or "und", mode=mode) if run.normalize else run.text
            for run in _merge_runs(chunk)
        )
        # SSML offsets cannot be mapped back through the markup: -1, as documented.
        for segment in segment_text(spoken, max_chars=max_chars, rate=chunk[0].rate):
            segments.append(replace(segment, source_start=-1, source_end=-1))
        chunk.clear()

    items = document.items
    # A paragraph's pause after the last words would only delay the end.
    while items and isinstance(items[-1], Pause) and items[-1].kind != "break":
        items = items[:-1]
    for item in items:
        if isinstance(item, Run):
            if chunk and chunk[-1].rate != item.rate:
                flush()
            chunk.append(item)
            continue
        flush()
        if item.ms and segments:
            # A break before any speech has nothing to follow; it is dropped.
            last = segments[-1]
            segments[-1] = replace(last, pause_after_ms=last.pause_after_ms + item.ms)
    flush()
    return segments


def prepare_text(
    text: str,
    *,
    language: str | None = None,
    normalization: Normalization = "auto",
    max_segment_chars: int = DEFAULT_MAX_CHARS,
) -> list[Segment]:
    """Segments to synthesize for a request's ``text``.

    ``language`` (ISO 639-1, region ignored) picks the normalization rules;
    without it the writing system decides. ``normalization`` is "auto", "on"
    or "off" (see ``tts.text.normalize``). Raises ``TextError`` for malformed
    SSML (400, "invalid_ssml") or an invalid normalization value (400).
    """
    if normalization not in MODES:
        raise TextError(
            f"apply_text_normalization must be one of {', '.join(MODES)}",
            code="invalid_normalization",
            status=400,
            field="apply_text_normalization",
        )
    text = clean_text(text)
    wanted = primary_language(language)
    if is_ssml(text):
        guess = wanted or _guess_language(strip_markup(text))
        return _ssml_segments(text, wanted, normalization, _segment_limit(guess, max_segment_chars))
    chosen = wanted or _guess_language(text)
    return _plain_segments(text, chosen, normalization, _segment_limit(chosen, max_segment_chars))
