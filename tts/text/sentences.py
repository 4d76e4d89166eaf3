"""Sentence boundaries: where a reader would stop and take a breath.

Works on offsets into the caller's text so segments can point back at it.
Latin punctuation ends a sentence only when followed by a space ("3.14" and
"example.com" never split), not after an abbreviation ("Dr. Smith") and not
before a lowercase word ("at 3. then", as Piper reads it);
CJK punctuation (。！？；．) ends one wherever it stands, since CJK text has no
spaces, and so do ASCII ``. ; ! ?`` between Chinese or Japanese characters.
Blank lines end paragraphs, which get a longer pause.
"""

# This module reads real-world text: its look-alike punctuation (full-width,
# curly quotes, minus signs, dashes) is deliberate.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import re
from dataclasses import dataclass

from .phonemes import mask_phonemes
from .rules.en_words import SENTENCE_STARTERS

# Silence after a paragraph, on top of the voice's own sentence-final pause;
# roughly what narrators leave between paragraphs.
PARAGRAPH_PAUSE_MS = 500

# Words whose period never ends a sentence: they always precede something.
# fmt: off
_NEVER_FINAL = frozenset([
    "Mr", "Mrs", "Ms", "Mx", "Prof", "Mt", "Ft", "Gen", "Col", "Lt", "Sgt", "Capt", "Cmdr", "Adm", "Rev", "Hon",
    "Gov", "Sen", "Rep", "Pres", "Fr", "Messrs", "Mme", "Mlle", "Hr", "vs", "cf", "viz", "approx", "ca", "No",
    "no", "Nos", "Nr", "nr", "Fig", "fig", "Figs", "Vol", "vol", "pp", "Art", "Sec", "Ch", "ch", "Eq", "eq",
    "Ref", "ref", "bzw", "usw", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov",
    "Dec"
])
# fmt: on
# "Dr." and "St." usually precede a name, but "Elm St. Then..." ends a sentence.
_PLACE_WORDS = frozenset({"Dr", "St"})
# Abbreviations that often end a sentence: split only before a capital.
# fmt: off
_SOMETIMES_FINAL = frozenset([
    "etc", "Inc", "Ltd", "Corp", "Co", "Bros", "Jr", "Sr", "Dept", "Univ", "Ave", "Blvd", "Rd", "Hwy", "Apt",
    "est", "al", "incl", "esp", "min", "max", "hr", "hrs", "sec", "ft", "oz", "lb", "lbs", "yr", "yrs", "Mon",
    "Tue", "Tues", "Wed", "Thu", "Thur", "Thurs", "Fri", "Sat", "Sun"
])
# fmt: on

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_CLOSERS = "\"'”’)]}»›」』）】》〉"
_OPENERS = "\"'“‘([{«‹「『（【《〈"
_CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
# CJK full stops, exclamation and question marks and the full-width semicolon end a sentence wherever
# they stand; so does the full-width full stop "．" (Taiwan, scientific text) except inside a number.
# ASCII "!" and "?" end one right before Japanese or Chinese text ("本当!?すごい"), and ASCII "." and
# ";" between Chinese characters (text typed with ASCII punctuation: "你好.我是小明").
# (The lookbehinds keep a long run of "?" linear, as for _LATIN_END below.)
_CJK_END = re.compile(
    rf"(?:[。！？；｡]+|．(?![0-9０-９])|(?<![!?])[!?]+(?=[{re.escape(_CLOSERS)}]*[{_CJK}])"
    rf"|(?<=[{_CJK}])[.;]+(?=[{re.escape(_CLOSERS)}]*[{_CJK}]))"
    rf"[{re.escape(_CLOSERS)}]*"
)
# The lookbehind makes a run of dots start only once: without it, "....x"
# backtracks from every dot and a long run costs quadratic time.
_LATIN_END = re.compile(rf"(?<![.!?…؟।॥։።])(?P<term>[.!?…؟।॥։።]+)[{re.escape(_CLOSERS)}]*(?=\s|\Z)")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*•‣▪–—][ \t]|\d{1,3}[.)][ \t]|[A-Za-z][.)][ \t])")
_NEWLINE = re.compile(r"\n")
_LETTERS_WITH_DOTS = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
# A line this short without final punctuation, followed by a capitalized
# line, is a heading or a list entry rather than hard-wrapped prose.
_HEADING_MAX_CHARS = 60


@dataclass(frozen=True)
class Sentence:
    """``text[start:end]`` is one sentence, trimmed of surrounding whitespace."""

    start: int
    end: int
    pause_after_ms: int = 0


def _word_before(text: str, end: int) -> str:
    start = end
    while start > 0 and end - start < 40 and not text[start - 1].isspace():
        start -= 1
    return text[start:end].lstrip(_OPENERS)


_NEXT_WORD = re.compile(r"\s*[" + re.escape(_OPENERS) + r"]*(\S{0,40})")


def _next_word(text: str, pos: int, end: int) -> str:
    found = _NEXT_WORD.match(text, pos, end)
    return found.group(1) if found else ""


def _ends_sentence(text: str, match: re.Match[str], line_start: int, end: int) -> bool:
    """Does the Latin punctuation run in ``match`` end a sentence?"""
    term = match.group("term")
    following = _next_word(text, match.end(), end)
    if not following:
        return True
    if following[0].islower():
        # "Stop!" and left. A full stop too, as Piper reads it: espeak-ng reads "afternoon. a3f9c2d1"
        # or "at 3. then" as one clause with no pause; a cut there gave each part its own
        # sentence-final pause and edges, 0.5 s longer than Piper (#42 item 4).
        return False
    if "." not in term or "!" in term or "?" in term or "…" in term or ".." in term:
        return True
    token = _word_before(text, match.start())
    bare = token.rstrip(".")
    starter_next = following.rstrip(".,;:!?\"'”’)") in SENTENCE_STARTERS
    if not bare:
        return True
    if bare in _PLACE_WORDS:
        return starter_next
    if bare in _NEVER_FINAL:
        return False
    if bare in _SOMETIMES_FINAL:
        return following[0].isupper()
    if _LETTERS_WITH_DOTS.fullmatch(bare) or (len(bare) == 1 and bare.isalpha()):
        # "U.S.A.", "e.g.", "a.m.", an initial "J.": a capital after them is
        # usually a name, so only a typical sentence opener counts.
        return starter_next
    # "1. First item" at the start of a line is a list marker, not an ending.
    return not (bare.isdigit() and not text[line_start : match.start() - len(token)].strip())


def _line_breaks(text: str, start: int, end: int) -> list[int]:
    """Offsets of single newlines that separate list items or headings."""
    breaks = []
    line_start = start
    for newline in _NEWLINE.finditer(text, start, end):
        line = text[line_start : newline.start()].strip()
        after = newline.end()
        line_start = after
        if not line:
            continue
        if _LIST_ITEM.match(text, after, end):
            breaks.append(newline.start())
            continue
        next_char = text[after:end].lstrip()[:1]
        if len(line) <= _HEADING_MAX_CHARS and line[-1].isalnum() and next_char.isupper():
            breaks.append(newline.start())
    return breaks


def _paragraph_sentences(text: str, masked: str, start: int, end: int) -> list[tuple[int, int]]:
    cuts: set[int] = set()
    for match in _CJK_END.finditer(masked, start, end):
        cuts.add(match.end())
    line_starts = [start] + [m.end() for m in _NEWLINE.finditer(masked, start, end)]
    line_index = 0
    for match in _LATIN_END.finditer(masked, start, end):
        while line_index + 1 < len(line_starts) and line_starts[line_index + 1] <= match.start():
            line_index += 1
        if _ends_sentence(masked, match, line_starts[line_index], end):
            cuts.add(match.end())
    cuts.update(_line_breaks(masked, start, end))
    spans = []
    previous = start
    for cut in [*sorted(cuts), end]:
        spans.append((previous, cut))
        previous = cut
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str, *, paragraph_pause_ms: int = PARAGRAPH_PAUSE_MS) -> list[Sentence]:
    """Sentences of ``text`` in order, as trimmed offset spans."""
    masked = mask_phonemes(text)
    paragraphs = []
    previous = 0
    for match in _PARAGRAPH_BREAK.finditer(masked):
        paragraphs.append((previous, match.start()))
        previous = match.end()
    paragraphs.append((previous, len(text)))

    groups = []
    for p_start, p_end in paragraphs:
        spans = [_trim(text, s, e) for s, e in _paragraph_sentences(text, masked, p_start, p_end)]
        spans = [(s, e) for s, e in spans if e > s]
        if spans:
            groups.append(spans)

    sentences: list[Sentence] = []
    for index, spans in enumerate(groups):
        for number, (s, e) in enumerate(spans):
            paragraph_ends = number == len(spans) - 1 and index < len(groups) - 1
            sentences.append(Sentence(s, e, paragraph_pause_ms if paragraph_ends else 0))
    return sentences
