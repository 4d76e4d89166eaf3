"""Splitting text into the segments the engine synthesizes one at a time.

A segment is a sentence (see ``sentences``). A sentence longer than the
model's maximum is split where a reader could pause: first at clause
punctuation (; : — and CJK ，：；…), then at commas (and 、), then before a conjunction,
then between words, and only as a last resort inside a run of characters
(CJK without punctuation, a 10,000-letter "word"). Pieces are balanced in
length rather than cut greedily at the maximum, so the last one is not a stub.

A Piper ``[[ phonemes ]]`` block is never cut in the middle (Piper would read
the brackets aloud); one longer than the maximum is rewritten as several
blocks that fit, cut between its phoneme words, so that no engine call ever
gets more than the maximum (a 5,000-character block was one engine call).
"""

# This module reads real-world text: its look-alike punctuation (full-width,
# curly quotes, minus signs, dashes) is deliberate.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import math
import re
import sys
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, replace

from .phonemes import mask_phonemes, phoneme_blocks
from .rewrite import Rewritten
from .sentences import PARAGRAPH_PAUSE_MS, split_sentences

DEFAULT_MAX_CHARS = 400


@dataclass(frozen=True)
class Segment:
    """One unit of synthesis.

    ``text`` is what the phonemizer reads (it may hold Piper ``[[ phonemes ]]``
    blocks); ``source_start``/``source_end`` locate it in the caller's original
    input (for timestamps; -1 when unknown, e.g. inside SSML); ``rate`` scales
    speed (1.0 = voice default, 2.0 = twice as fast); ``pause_after_ms`` is
    silence to insert after this segment; ``language`` (ISO 639-1) is the language it is spoken in,
    which picks a multilingual engine's front end (``None``: the engine's own).
    """

    text: str
    source_start: int = -1
    source_end: int = -1
    rate: float = 1.0
    pause_after_ms: int = 0
    language: str | None = None
    #: The sentence goes on in the next segment (its first clause, cut off for a stream's first
    #: audio: ``tts.text.first_clause``); ``continuation``: this is the rest of the previous one's.
    continued: bool = False
    continuation: bool = False
    #: The dialogue turn (``inputs[i]`` of text-to-dialogue) this segment speaks, whose voice speaks
    #: it; ``None`` outside a dialogue (the request's one voice).
    turn: int | None = None


# Cut positions, best first. Each pattern's match end is where a piece may end.
# CJK clause marks stand without a space; so does an ASCII comma or colon typed in Chinese text.
# A closing quote or bracket stays with its clause ("他说：“好。”").
_CJK_CHAR = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_CJK_CLOSERS = "”’」』）】》〉"
_CLAUSE = re.compile(rf"[;:](?=\s)|[—–]+|\s-(?=\s)|(?:[，：；؛﹐﹔]|…+|⋯+|[,:;](?=[{_CJK_CHAR}]))[{_CJK_CLOSERS}]*")
_COMMA = re.compile(r",(?=\s)|[、،﹑]")
_CONJUNCTION = re.compile(
    r"(?=\s(?:and|but|or|nor|so|yet|because|which|who|while|although|though|whereas|unless|until"
    r"|when|where|if|then|that|und|aber|oder|weil|et|mais|ou|y|pero|e|ma)\s)",
)
_SPACE = re.compile(r"(?=\s)")
_LEVELS = (_CLAUSE, _COMMA, _CONJUNCTION, _SPACE)
#: Where a reader pauses inside a sentence (clause marks, then commas): each match's end is a cut.
PAUSE_MARKS = (_CLAUSE, _COMMA)
# A clause cut closer to the start than this fraction of the maximum would
# leave a stub; a word boundary is preferred then.
_MIN_CLAUSE_FRACTION = 0.25
_GLUE = frozenset("\u200d\u200c\ufe0e\ufe0f\u20e3")
# How far a hard cut may move back to keep a character sequence whole; a
# longer run of combining marks is not a character anyone can say.
_MAX_CLUSTER = 16


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _inside(position: int, spans: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The span of sorted, disjoint ``spans`` that strictly contains ``position``."""
    index = bisect_right(spans, (position, sys.maxsize)) - 1
    if index >= 0 and spans[index][0] < position < spans[index][1]:
        return spans[index]
    return None


_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_NUMERALS = frozenset("零〇一二三四五六七八九十百千万亿两幺点")
# How far from the balanced cut a word boundary in Chinese text is looked for, and how much
# text either side jieba sees to find it.
_HAN_REACH = 8
_HAN_WINDOW = 16


def _han_word_cut(text: str, start: int, target: int, limit: int, whole: list[tuple[int, int]]) -> int | None:
    """Inside a run of Chinese characters (no spaces, no punctuation): the word boundary nearest
    ``target``, so that no word is cut in two (its reading, "银行", depends on the whole word)."""
    if not (0 < target < len(text) and _HAN.match(text, target - 1) and _HAN.match(text, target)):
        return None
    if text[target - 1] in _NUMERALS and text[target] in _NUMERALS:
        return None  # a number read digit by digit ("一三八…"): no word to keep whole
    from .g2p.zh_pinyin import word_boundaries  # jieba: loaded on first use, once per process

    lowest, highest = max(start + 1, target - _HAN_REACH), min(limit, target + _HAN_REACH)
    window_start, window_end = max(start, target - _HAN_WINDOW), min(len(text), target + _HAN_WINDOW)
    bounds = [window_start + b for b in word_boundaries(text[window_start:window_end])]
    candidates = [
        b for b in bounds if lowest <= b <= highest and window_start < b < window_end and _inside(b, whole) is None
    ]
    return min(candidates, key=lambda c: (abs(c - target), -c)) if candidates else None


def _hard_cut(text: str, start: int, target: int, whole: list[tuple[int, int]], limit: int) -> int:
    """A character boundary near ``target`` that breaks no phoneme block,
    normalized expansion, combining mark, emoji sequence or Chinese word."""
    span = _inside(target, whole)
    if span is not None:
        # A phoneme block longer than the maximum stays whole: cutting it
        # would make Piper read brackets and IPA letters aloud.
        return span[0] if span[0] > start else span[1]
    word_cut = _han_word_cut(text, start, target, limit, whole)
    if word_cut is not None:
        return word_cut
    cut = target
    lowest = max(start + 1, target - _MAX_CLUSTER)
    while cut > lowest and (unicodedata.combining(text[cut]) or text[cut] in _GLUE or text[cut - 1] in _GLUE):
        cut -= 1
    return cut if cut > lowest else target


def _best_cut(masked: str, start: int, end: int, max_chars: int, whole: list[tuple[int, int]]) -> int:
    length = end - start
    pieces = math.ceil(length / max_chars)
    target = start + math.ceil(length / pieces)
    limit = start + max_chars
    for pattern in _LEVELS:
        lowest = start + 1 if pattern is _SPACE else start + int(max_chars * _MIN_CLAUSE_FRACTION)
        candidates = [
            m.end()
            for m in pattern.finditer(masked, lowest, limit + 1)
            if lowest <= m.end() <= limit and _inside(m.end(), whole) is None
        ]
        if candidates:
            return min(candidates, key=lambda c: (abs(c - target), -c))
    return _hard_cut(masked, start, target, whole, limit)


def split_long(
    text: str, max_chars: int = DEFAULT_MAX_CHARS, *, expansions: list[tuple[int, int]] | None = None
) -> list[tuple[int, int]]:
    """Trimmed ``(start, end)`` pieces of ``text``, each at most ``max_chars``
    long unless a single phoneme block is longer (``bounded_pieces`` splits those).

    ``expansions`` (where normalization wrote "three dollars and fifty cents"
    for "$3.50") are kept whole when they fit, so no piece ends mid-amount
    and every piece maps back to whole source tokens.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    masked = mask_phonemes(text)
    fitting = [(s, e) for s, e in expansions or [] if e - s <= max_chars]
    whole = sorted([*phoneme_blocks(text), *fitting])
    pieces: list[tuple[int, int]] = []
    start, end = _trim(text, 0, len(text))
    while start < end:
        if end - start <= max_chars:
            pieces.append((start, end))
            break
        cut = _best_cut(masked, start, end, max_chars, whole)
        piece = _trim(text, start, cut)
        if piece[1] > piece[0]:
            pieces.append(piece)
        start, _ = _trim(text, cut, end)
    return pieces


def _cut_word(word: str, size: int) -> list[str]:
    """A phoneme word longer than ``size`` in pieces that keep combining marks with their letter."""
    pieces: list[str] = []
    start = 0
    while len(word) - start > size:
        cut = start + size
        while cut > start + 1 and (unicodedata.combining(word[cut]) or word[cut] in _GLUE):
            cut -= 1
        pieces.append(word[start:cut])
        start = cut
    pieces.append(word[start:])
    return pieces


def split_phoneme_block(block: str, max_chars: int) -> list[str]:
    """``[[ ... ]]`` longer than ``max_chars`` as consecutive blocks of at most ``max_chars`` each,
    cut between phoneme words (a word longer than a block can hold is cut between characters)."""
    inner_max = max(1, max_chars - len("[[  ]]"))
    words = [part for word in block[2:-2].split() for part in _cut_word(word, inner_max)]
    blocks: list[str] = []
    current: list[str] = []
    size = 0
    for word in words:
        if current and size + 1 + len(word) > inner_max:
            blocks.append("[[ " + " ".join(current) + " ]]")
            current, size = [], 0
        size += len(word) + (1 if current else 0)
        current.append(word)
    if current:
        blocks.append("[[ " + " ".join(current) + " ]]")
    return blocks


def _fit_phoneme_blocks(text: str, max_chars: int) -> str:
    """``text`` with every phoneme block longer than ``max_chars`` split into blocks that fit."""
    parts: list[str] = []
    pos = 0
    for start, end in phoneme_blocks(text):
        if end - start > max_chars:
            parts.append(text[pos:start])
            parts.append(" ".join(split_phoneme_block(text[start:end], max_chars)))
            pos = end
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


def bounded_pieces(text: str, max_chars: int) -> list[str]:
    """A piece ``split_long`` left longer than ``max_chars`` (it holds a phoneme block longer
    than that) as pieces that each fit; a piece that fits comes back as it is."""
    if len(text) <= max_chars:
        return [text]
    fitted = _fit_phoneme_blocks(text, max_chars)
    return [collapse_spaces(fitted[a:b]) for a, b in split_long(fitted, max_chars)]


def collapse_spaces(text: str) -> str:
    return " ".join(text.split())


def is_speakable(text: str) -> bool:
    """Whether the phonemizer would produce any sound from ``text``."""
    return "[[" in text or any(ch.isalnum() for ch in text)


def _append(segments: list[Segment], segment: Segment) -> None:
    if is_speakable(segment.text):
        segments.append(segment)
    elif segments and segment.pause_after_ms > segments[-1].pause_after_ms:
        # "Hello. ... World": the dots say nothing, but their pause still counts.
        segments[-1] = replace(segments[-1], pause_after_ms=segment.pause_after_ms)


def segment_text(
    text: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    rewrite: Callable[[str], Rewritten] | None = None,
    paragraph_pause_ms: int = PARAGRAPH_PAUSE_MS,
    rate: float = 1.0,
) -> list[Segment]:
    """Sentences of ``text``, long ones split, each at most ``max_chars``.

    ``rewrite`` (normalization) runs on each sentence after the boundaries are
    found in the original text, so offsets always point into ``text`` and a
    normalized "Dr." can never create a boundary of its own.
    """
    segments: list[Segment] = []
    for sentence in split_sentences(text, paragraph_pause_ms=paragraph_pause_ms):
        source = text[sentence.start : sentence.end]
        rewritten = rewrite(source) if rewrite else Rewritten(source)
        pieces = split_long(rewritten.text, max_chars, expansions=rewritten.output_spans())
        for index, (start, end) in enumerate(pieces):
            src_start, src_end = rewritten.source_span(start, end)
            pause = sentence.pause_after_ms if index == len(pieces) - 1 else 0
            # Only an oversized phoneme block makes more than one; they share the piece's source span.
            parts = bounded_pieces(collapse_spaces(rewritten.text[start:end]), max_chars)
            for number, part in enumerate(parts):
                segment = Segment(
                    part,
                    sentence.start + src_start,
                    sentence.start + src_end,
                    rate,
                    pause if number == len(parts) - 1 else 0,
                )
                _append(segments, segment)
        if not pieces and sentence.pause_after_ms:
            _append(segments, Segment("", -1, -1, rate, sentence.pause_after_ms))
    return segments
