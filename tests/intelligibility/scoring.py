"""How far what Whisper heard is from what a listener should hear: CER, WER and toned-pinyin error.

Both sides are brought to one spoken form before they are compared:

- the reference (``Case.reference``) is written as it should sound: numbers
  in words (二零二六年, "twenty twenty-six"), Japanese in katakana as OpenJTalk
  writes pronunciations (コーヒー, ワ for the particle は);
- the hypothesis is Whisper's text, which writes what it hears its own way
  (digits, ``%``, kanji or kana): each number in it is expanded in the ways a
  speaker may say it (a cardinal, digit by digit, a year, with 两 or 二) and the
  expansion closest to the reference is kept, so "2026" counts as right when
  the voice said 二零二六 and wrong when it said 二零二二六. Japanese is read
  into katakana by OpenJTalk (so 珈琲, こーひー and コーヒー are one word), and
  ヲ/オ, ヂ/ジ, ヅ/ズ, ヴァ/バ and long vowels written with ー or a vowel are one sound;
- Chinese: a character counts as heard when Whisper wrote it or a homophone
  of it (same syllable and tone, traditional forms included); the strict count
  is kept beside it.

Units: Chinese characters (a Latin word counts as one), Japanese kana, and
words elsewhere. Punctuation, case and full-/half-width forms never count.
"""

# Chinese and Japanese text: full-width forms are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

CER_LANGUAGES = frozenset({"zh", "ja"})

# A number as Whisper writes one: a sign only where it cannot be a dash between digit groups.
_NUMBER = re.compile(r"(?:(?<![0-9A-Za-z])[-−])?\d+(?:[,，.]\d{3})*(?:[.．,]\d+)?(?:\s?%)?")
_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_ZH_UNIT = re.compile(rf"[{_HAN}]|[a-z]+(?:['’][a-z]+)*")
_KATAKANA = re.compile(r"[\u30a1-\u30f4\u30fc]")


def edit_distance(reference: Sequence[Hashable], hypothesis: Sequence[Hashable]) -> int:
    """Levenshtein distance between two sequences of units."""
    previous = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        current = [i]
        for j, h in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class Score:
    """``errors`` edits against ``units`` units of the reference (CER or WER = errors / units)."""

    errors: int
    units: int
    reference: str
    hypothesis: str
    #: Chinese: the errors when a character is only right if it is the same character (homophones wrong).
    strict_errors: int | None = None

    @property
    def rate(self) -> float:
        return self.errors / self.units if self.units else 0.0


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


# --- Chinese -------------------------------------------------------------------------------

_ZH_DIGITS = "零一二三四五六七八九"


def _zh_units(text: str) -> list[str]:
    return _ZH_UNIT.findall(_fold(text))


def _zh_candidates(token: str) -> list[str]:
    import cn2an

    percent = token.endswith("%")
    number = token.rstrip("% ").replace(",", "").replace("，", "").replace("．", ".").replace("−", "-")
    negative, bare = number.startswith("-"), number.lstrip("-")
    digits = "".join(_ZH_DIGITS[int(c)] if c.isdigit() else "点" for c in bare)
    out = [digits, digits.replace("一", "幺")]  # 1 read 幺 in phone numbers
    try:
        cardinal = cn2an.an2cn(bare, "low")
    except (ValueError, KeyError, IndexError):
        cardinal = ""
    if cardinal:
        out += [cardinal, "两" + cardinal[1:]] if cardinal.startswith("二") else [cardinal]
    if negative:
        out = [sign + o for sign in ("负", "零下") for o in out]
    return ["百分之" + o for o in out] if percent else out


def _zh_hypothesis(hypothesis: str, reference: str) -> str:
    text = _fold(hypothesis).replace("°c", "摄氏度").replace("°", "度")
    return _expand_numbers(text, _zh_candidates, lambda text: edit_distance(_zh_units(reference), _zh_units(text)))


def _zh_sounds(units: list[str]) -> list[str]:
    """Each unit's toned reading (pypinyin, each run of characters read as one text), a Latin word itself."""
    from pypinyin import Style, lazy_pinyin

    out: list[str] = []
    run: list[str] = []
    for unit in [*units, ""]:
        if len(unit) == 1 and re.match(rf"[{_HAN}]", unit):
            run.append(unit)
            continue
        if run:
            out += lazy_pinyin("".join(run), style=Style.TONE3, neutral_tone_with_five=True)
            run = []
        if unit:
            out.append(unit)
    return out


def zh_cer(reference: str, hypothesis: str) -> Score:
    """Character errors, a character counting as heard when Whisper wrote it or a homophone of it
    (same syllable, same tone: 客服 / 克服, 奖 / 獎): the audio cannot say which of two homophones
    it is, so that choice is the recognizer's (``strict_errors`` counts it too)."""
    spoken = _zh_hypothesis(hypothesis, reference)
    ref, hyp = _zh_units(reference), _zh_units(spoken)
    sounds = edit_distance(_zh_sounds(ref), _zh_sounds(hyp))
    return Score(min(sounds, edit_distance(ref, hyp)), len(ref), "".join(ref), "".join(hyp), edit_distance(ref, hyp))


def zh_pinyin_error(reference: str, hypothesis: str) -> Score:
    """Toned syllables (pypinyin's reading of both texts; a Latin word is one unit)."""
    from pypinyin import Style, lazy_pinyin

    def syllables(text: str) -> list[str]:
        # Read as one text (pypinyin's phrases settle polyphones: 银行 háng), a Latin word one unit.
        spoken = " ".join(re.findall(rf"[{_HAN}]+|[a-z]+(?:['’][a-z]+)*", _fold(text)))
        return [s for s in lazy_pinyin(spoken, style=Style.TONE3, neutral_tone_with_five=True) for s in s.split()]

    spoken = _zh_hypothesis(hypothesis, reference)
    ref, hyp = syllables(reference), syllables(spoken)
    return Score(edit_distance(ref, hyp), len(ref), " ".join(ref), " ".join(hyp))


# --- Japanese ------------------------------------------------------------------------------

_JA_SAME = str.maketrans({"ヲ": "オ", "ヂ": "ジ", "ヅ": "ズ", "ヮ": "ワ"})
_VOWEL_OF = {}
for _row, _vowel in (
    ("アカガサザタダナハバパマヤャラワァ", "ア"),
    ("イキギシジチニヒビピミリィ", "イ"),
    ("ウクグスズツヌフブプムユュルゥヴ", "ウ"),
    ("エケゲセゼテデネヘベペメレェ", "エ"),
    ("オコゴソゾトドノホボポモヨョロォ", "オ"),
):
    for _kana in _row:
        _VOWEL_OF[_kana] = _vowel


def ja_kana(text: str) -> str:
    """``text`` in katakana as OpenJTalk pronounces it, one spelling per sound."""
    import pyopenjtalk

    kana = "".join(_KATAKANA.findall(pyopenjtalk.g2p(unicodedata.normalize("NFKC", text), kana=True)))
    return _one_spelling(kana)


_JA_V = (("ヴァ", "バ"), ("ヴィ", "ビ"), ("ヴェ", "ベ"), ("ヴォ", "ボ"), ("ヴ", "ブ"))


def _one_spelling(kana: str) -> str:
    kana = kana.translate(_JA_SAME)
    for written, said in _JA_V:  # ヴァイオリン and バイオリン are one word
        kana = kana.replace(written, said)
    out: list[str] = []
    for ch in kana:
        # A long vowel is the vowel again, and オウ / エイ are said オー / エー.
        if ch == "ー" and out:
            ch = _VOWEL_OF.get(out[-1], "ー")
        elif ch == "ウ" and out and _VOWEL_OF.get(out[-1]) == "オ":
            ch = "オ"
        elif ch == "イ" and out and _VOWEL_OF.get(out[-1]) == "エ":
            ch = "エ"
        out.append(ch)
    return "".join(out)


def _ja_candidates(token: str) -> list[str]:
    plain = token.replace(",", "").replace("，", "")
    digits = "".join(("〇一二三四五六七八九"[int(c)] if c.isdigit() else c) for c in plain)
    # A phone number's groups written with dots ("0.31234.5678"): digits, no decimal point.
    return [plain, digits, "".join(c for c in digits if c not in ".．")]


def ja_cer(reference: str, hypothesis: str) -> Score:
    """Kana error rate: ``reference`` in katakana (as it should sound), ``hypothesis`` read by OpenJTalk."""
    ref = _one_spelling("".join(_KATAKANA.findall(unicodedata.normalize("NFKC", reference))))
    spoken = _expand_numbers(
        _fold(hypothesis), _ja_candidates, lambda text: edit_distance(ref, ja_kana(text)), space=""
    )
    hyp = ja_kana(spoken)
    return Score(edit_distance(ref, hyp), len(ref), ref, hyp)


# --- words ---------------------------------------------------------------------------------

_PERCENT = {
    "en": "percent",
    "es": "por ciento",
    "fr": "pour cent",
    "it": "per cento",
    "pt": "por cento",
    "hi": "प्रतिशत",
}
_CURRENCY = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
}
_WORD_NUMBER = re.compile(
    r"\d{1,2}[:.]\d{2}\s?(?:[ap]\.?m\.?)?(?!\d)|[$€£]?\d+(?:[,.]\d{3})*(?:[.,]\d+)?(?:st|nd|rd|th|\s?%)?"
)
_CLOCK = re.compile(r"(\d{1,2})[:.](\d{2})\s?(?:([ap])\.?m\.?)?")


def _word_candidates(language: str) -> Callable[[str], list[str]]:
    from num2words import num2words

    def say(value: float | int, to: str = "cardinal") -> str | None:
        try:
            return str(num2words(value, lang=language, to=to)).replace("-", " ").replace(",", "")
        except (NotImplementedError, OverflowError, TypeError, ValueError):
            return None

    def candidates(token: str) -> list[str]:
        clock = _CLOCK.fullmatch(token)
        if clock and language == "en":
            hour, minute, half = int(clock.group(1)), int(clock.group(2)), clock.group(3)
            said = f"{say(hour)} {'o clock' if not minute else ('oh ' if minute < 10 else '') + str(say(minute))}"
            out = [said, f"{say(hour)} {say(minute)}"]
            return [f"{o} {half} m" for o in out] if half else out
        currency = token[0] if token[0] in _CURRENCY else ""
        ordinal = token[-2:] in ("st", "nd", "rd", "th")
        percent = token.endswith("%")
        number = token.removeprefix(currency).rstrip("% ").removesuffix(token[-2:] if ordinal else "")
        number = number.replace("−", "-")
        decimal_comma = language != "en" and re.fullmatch(r"-?\d+,\d{1,2}", number)
        number = number.replace(",", ".") if decimal_comma else number.replace(",", "")
        value: float | int = float(number) if "." in number else int(number)
        if ordinal:
            return [o for o in (say(value, "ordinal"),) if o]
        if currency and language == "en":
            one, many, cent, cents = _CURRENCY[currency]
            whole, _, fraction = number.partition(".")
            unit = one if whole == "1" else many
            out = [f"{say(int(whole))} {unit}"]
            if fraction and int(fraction):
                cents_word = cent if int(fraction) == 1 else cents
                out = [
                    f"{say(int(whole))} {unit} and {say(int(fraction))} {cents_word}",
                    f"{say(int(whole))} {unit} {say(int(fraction))}",
                    f"{say(int(whole))} {say(int(fraction))}",
                ]
            return out
        out = [" ".join(d for d in (say(int(c)) for c in number if c.isdigit()) if d)]
        out += [o for o in (say(value), say(value, "year"), isinstance(value, int) and say(value, "ordinal")) if o]
        out += [o.replace(" and ", " ") for o in out if " and " in o]  # "two hundred and five": British
        return [f"{o} {_PERCENT[language]}" for o in out] if percent and language in _PERCENT else out

    return candidates


def _words(text: str) -> list[str]:
    """Words: punctuation and symbols are spaces (combining marks, as in Devanagari, stay in their word)."""
    kept = "".join(" " if unicodedata.category(ch)[0] in "PSZ" else ch for ch in _fold(text))
    return kept.split()


def wer(reference: str, hypothesis: str, language: str) -> Score:
    ref = _words(reference)
    spoken = _expand_numbers(
        _fold(hypothesis),
        _word_candidates(language),
        lambda text: edit_distance(ref, _words(text)),
        _WORD_NUMBER,
    )
    hyp = _words(spoken)
    return Score(edit_distance(ref, hyp), len(ref), " ".join(ref), " ".join(hyp))


def letter_error(reference: str, hypothesis: str, language: str) -> Score:
    """For a word language, the error over letters (spaces left out; Devanagari's marks are letters):
    a finer measure where the recognizer misses most whole words (Whisper base in Hindi)."""
    words = wer(reference, hypothesis, language)
    ref, hyp = words.reference.replace(" ", ""), words.hypothesis.replace(" ", "")
    return Score(edit_distance(ref, hyp), len(ref), ref, hyp)


# --- shared --------------------------------------------------------------------------------


def _expand_numbers(
    text: str,
    candidates: Callable[[str], list[str]],
    distance: Callable[[str], int],
    pattern: re.Pattern[str] = _NUMBER,
    space: str = " ",
) -> str:
    """Each number of ``text`` replaced, left to right, by the reading of it closest to the reference
    (the numbers are found in Whisper's text once, so a reading never becomes a number to read).
    ``space`` goes around each reading (none for Japanese: OpenJTalk reads 三 時 apart from 三時)."""
    done = ""
    position = 0
    for match in pattern.finditer(text):
        before = done + text[position : match.start()]
        rest = text[match.end() :]
        options = candidates(match.group()) or [match.group()]
        best = min(options, key=lambda option: distance(f"{before}{space}{option}{space}{rest}"))
        done = f"{before}{space}{best}{space}"
        position = match.end()
    return done + text[position:]


def score(language: str, reference: str, hypothesis: str) -> Score:
    """CER for Chinese and Japanese, WER elsewhere."""
    if language == "zh":
        return zh_cer(reference, hypothesis)
    if language == "ja":
        return ja_cer(reference, hypothesis)
    return wer(reference, hypothesis, language)
