"""Chinese characters to pinyin, one syllable per character, read in context; pinyin to Kokoro's phonemes.

misaki's Chinese reader for Kokoro v1.0 (``misaki.zh.ZHG2P`` without a
version, the one Kokoro-82M was trained with) cuts a run of characters into
words with jieba, reads each word with pypinyin's phrase dictionary and turns
each syllable into IPA with tone arrows (``ZHG2P.py2ipa``). This module does
the same, keeps the syllables one per character, and adds what that reader
lacks, each a small table below:

- readings that depend on the neighbours, for characters jieba leaves alone
  (``一行字`` háng, ``你得去`` děi, ``跑得快`` de, ``慢慢地`` de, ``还书`` huán,
  ``很长`` cháng, ``两只`` zhī, ``受不了`` liǎo);
- words pypinyin reads wrongly (``大夫`` dàifu, banking's ``开户行``);
- neutral tones of common words (``头发``, ``妈妈``; misaki's own list);
- the tone changes of 一 and 不 (``不是`` bú, ``一定`` yí, ``一天`` yì, ``看一看``).
  Kokoro follows the written tone of 不 and 一 (``pu↘ʂɨ↘`` falls, measured),
  so they are written out. Third-tone pairs (``你好``) are left as written:
  the model already raises the first of two (the F0 of ``ni↓xau↓`` rises like
  ``ni↗xau↓``), as in the labels it learned from.

jieba and pypinyin load their dictionaries once per process (about 1.5 s and
130 MB); nothing is fetched: jieba's dictionary is in its wheel (it may
write a parse cache to the temporary directory).
"""

# Chinese text processing: the characters are the point.
# ruff: noqa: RUF003

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from functools import lru_cache

_HAN_CLASS = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A run of Chinese characters (CJK unified ideographs, extension A, compatibility ideographs and 〇).
HAN_RUN = re.compile(f"[{_HAN_CLASS}]+")

_NUMERALS = frozenset("零〇一二三四五六七八九十百千万亿两幺")
_DIGIT_NUMERALS = frozenset("零〇一二三四五六七八九十幺")
# What comes before a measure word: numerals and demonstratives.
_COUNTERS = frozenset("一二两三四五六七八九十几每这那哪半各某第")

# Words pypinyin reads wrongly (misaki's additions, and a few more); jieba is told they are words.
WORD_READINGS: dict[str, list[str]] = {
    "开户行": ["kai1", "hu4", "hang2"],
    "发卡行": ["fa1", "ka3", "hang2"],
    "放款行": ["fang4", "kuan3", "hang2"],
    "行号": ["hang2", "hao4"],
    "各地": ["ge4", "di4"],
    "借还款": ["jie4", "huan2", "kuan3"],
    "为准": ["wei2", "zhun3"],
    "色差": ["se4", "cha1"],
    "掺和": ["chan1", "huo5"],
    "大夫": ["dai4", "fu5"],
    "一行人": ["yi4", "xing2", "ren2"],
    "姓曾": ["xing4", "zeng1"],
    "数一数": ["shu3", "yi5", "shu3"],
}

# Words whose last syllable is neutral (misaki's tone_sandhi list, PaddleSpeech's), and the
# reduplicated kinship and everyday words pypinyin writes with two full tones.
# fmt: off
_REDUPLICATED = frozenset({
    "妈妈", "爸爸", "爷爷", "奶奶", "哥哥", "姐姐", "弟弟", "妹妹", "叔叔", "舅舅", "姑姑",
    "姥姥", "姥爷", "伯伯", "婆婆", "公公", "宝宝", "娃娃", "星星", "太太", "看看", "试试",
    "听听", "走走", "说说", "问问", "谢谢", "等等", "聊聊", "坐坐", "玩玩", "尝尝",
})
# fmt: on
_PARTICLES = frozenset("吗呢吧啊呀啦嘛哦呗哒喽咯的")


def _neutral_words() -> frozenset[str]:
    from misaki.tone_sandhi import ToneSandhi

    sandhi = ToneSandhi()
    return frozenset(sandhi.must_neural_tone_words) - frozenset(sandhi.must_not_neural_tone_words) | _REDUPLICATED


# Readings chosen by the neighbours, for a character that jieba left as a word of its own:
# char -> [(text before it ends with, text after it starts with, not after, reading)], first match wins.
# Patterns are regular expressions on at most four characters either side, within the run.
_Rule = tuple[str, str, str, str]
CONTEXT_READINGS: dict[str, list[_Rule]] = {
    # 得: děi "must" after a pronoun, de after a verb or adjective ("跑得快"), dé "obtain" before 了/到.
    "得": [("", "^[了到]", "", "de2"), ("[我你他她它们咱您]$", "^[\u4e00-\u9fff]", "", "dei3"), (".$", "", "", "de5")],
    # 地: de after a two-character adverb or adjective ("慢慢地走", "高兴地说"); dì as a noun ("这块地").
    "地": [("(?:个|块|片|亩|这|那)$", "", "", "di4")],
    # 还: huán "give back" before what is given back.
    "还": [("", "^(?:[我你他她它]们?)?(?:给|钱|款|债|书|清|贷|账|回来|回去)", "", "huan2")],
    # 行: háng as a measure word ("一行字", "几行代码"), not in "一行人" (a party).
    "行": [("[一二两三四五六七八九十几每多数第]$", "", "^[人动走程]", "hang2")],
    # 只: zhī as a measure word ("两只猫", "这只"), zhǐ "only" before a verb ("这只是").
    "只": [("[一二两三四五六七八九十几每这那哪半]$", "", "^[是有能要会不在好可]", "zhi1")],
    # 长: cháng "long" after a degree word ("很长", "太长了"), not zhǎng "grow" ("长大").
    "长": [("(?:很|太|真|好|最|更|挺|较|越|多|么|又|不|够|特别|非常)$", "", "^[大高得出成]", "chang2")],
    # 了: liǎo in "V不了" ("受不了", "来不了").
    "了": [("[\u4e00-\u9fff]不$", "", "", "liao3")],
    # 数: shǔ "count" before what is counted or in "数数".
    "数": [("", "^(?:一数|数|钱|不清|到)", "", "shu3"), ("数一?$", "", "", "shu3")],
    # 种: zhǒng "kind" after a numeral or demonstrative.
    "种": [("[一二两三四五六七八九十几这那哪各每某]$", "", "", "zhong3")],
    # 差: chà "poor" after a degree word.
    "差": [("(?:很|太|真|好|最|更|挺|较|越|不)$", "", "", "cha4")],
    # 重: zhòng "heavy" after a degree word.
    "重": [("(?:很|太|真|好|最|更|挺|较|越|多|么)$", "", "^[新复]", "zhong4")],
}

# 地 reads as "de" only after an adverb or adjective of two or more characters; this is its test.
_DE_AFTER_WORD = 2

_lock = threading.Lock()
_ready = False


def load() -> None:
    """Load jieba's dictionary and the tables (once per process; about 1.5 s)."""
    global _ready
    with _lock:
        if _ready:
            return
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        for word in WORD_READINGS:
            jieba.add_word(word, freq=100_000)
        _neutral.update(_neutral_words())
        _ready = True


_neutral: set[str] = set()


def _lazy_pinyin(word: str) -> list[str | None]:
    from pypinyin import Style, lazy_pinyin

    def unknown(chars: str) -> list[None]:
        return [None] * len(chars)

    # pypinyin's stubs say the callback returns a string; a list of readings is what it takes.
    readings: list[str | None] = list(
        lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True, errors=unknown)  # type: ignore[arg-type]
    )
    return readings if len(readings) == len(word) else [None] * len(word)


def _with_tone(reading: str | None, tone: str) -> str | None:
    return reading[:-1] + tone if reading and reading[-1].isdigit() else reading


def _word_readings(word: str) -> list[str | None]:
    if word in WORD_READINGS:
        return list(WORD_READINGS[word])
    readings = _lazy_pinyin(word)
    if len(word) > 1 and (word in _neutral or word[-2:] in _neutral):
        readings[-1] = _with_tone(readings[-1], "5")
    elif len(word) == 1 and word in _PARTICLES:
        readings[0] = _with_tone(readings[0], "5")
    return readings


def _trusted(word: str) -> bool:
    """Whether a word's reading comes from a dictionary that knew the word itself (its characters'
    neighbours then need no rules), except a measure word after its numeral ("一行": yī xíng there)."""
    from pypinyin.constants import PHRASES_DICT

    if word in WORD_READINGS:
        return True
    return len(word) > 1 and word in PHRASES_DICT and not (len(word) == 2 and word[0] in _COUNTERS)


def _context_reading(run: str, index: int, word_start: int, starts: dict[int, int]) -> str | None:
    """The reading the neighbours of ``run[index]`` ask for, if a rule applies."""
    char = run[index]
    if char == "地":
        return _de_or_di(run, index, word_start, starts)
    before = run[max(0, index - 4) : index]
    after = run[index + 1 : index + 5]
    for left, right, not_right, reading in CONTEXT_READINGS.get(char, ()):
        if left and not re.search(left, before):
            continue
        if right and not re.match(right, after):
            continue
        if not_right and re.match(not_right, after):
            continue
        return reading
    return None


def _de_or_di(run: str, index: int, word_start: int, starts: dict[int, int]) -> str | None:
    before = run[max(0, index - 4) : index]
    for left, _, _, reading in CONTEXT_READINGS["地"]:
        if re.search(left, before):
            return reading
    if index + 1 >= len(run):
        return "di4"
    if index > word_start:
        # Inside a word jieba made up ("慢慢地"): what precedes it in the word is the adverb.
        return "de5" if index - word_start >= _DE_AFTER_WORD else "di4"
    # The word before: it starts at starts[word_start] (the start of the word ending where this one starts).
    previous_start = starts.get(word_start)
    return "de5" if previous_start is not None and word_start - previous_start >= _DE_AFTER_WORD else "di4"


def _tone(reading: str | None) -> str:
    return reading[-1] if reading and reading[-1].isdigit() else ""


def _yi_bu(run: str, readings: list[str | None], words: list[tuple[int, int]]) -> None:
    """The tone changes of 一 and 不, in place, from the next syllable's tone."""
    long_word_ends = {b for a, b in words if b - a > 1}
    for i, char in enumerate(run):
        if char not in "一不" or readings[i] is None:
            continue
        prev = run[i - 1] if i else ""
        nxt = run[i + 1] if i + 1 < len(run) else ""
        if not nxt:
            continue
        if prev and prev == nxt:
            readings[i] = _with_tone(readings[i], "5")  # 看一看, 是不是
            continue
        if char == "一":
            words_ending_here = i + 1 in long_word_ends
            if (
                prev in _NUMERALS
                or (prev and prev in "第月")
                or nxt in _DIGIT_NUMERALS
                or nxt in "月号楼"
                or (nxt == "点" and i + 2 < len(run) and run[i + 2] in _DIGIT_NUMERALS)
                or words_ending_here
            ):
                readings[i] = _with_tone(readings[i], "1")
                continue
            following = _tone(readings[i + 1])
            readings[i] = _with_tone(readings[i], "2" if following in ("4", "5") else "4")
        else:
            following = _tone(readings[i + 1])
            readings[i] = _with_tone(readings[i], "2" if following == "4" else "4")


def read_run(run: str) -> tuple[list[str | None], list[tuple[int, int]]]:
    """Pinyin (tone digits, 5 neutral; None where there is none) for each character of a run of
    Chinese characters, and the run's words as ``(start, end)``."""
    if not _ready:
        load()
    import jieba

    words: list[tuple[int, int]] = []
    readings: list[str | None] = []
    pos = 0
    for word in jieba.lcut(run):
        words.append((pos, pos + len(word)))
        readings.extend(_word_readings(word))
        pos += len(word)
    starts = {end: start for start, end in words}  # word end -> its start
    for start, end in words:
        if _trusted(run[start:end]):
            continue
        for index in range(start, end):
            if run[index] in CONTEXT_READINGS and readings[index] is not None:
                reading = _context_reading(run, index, start, starts)
                if reading is not None:
                    readings[index] = reading
    _yi_bu(run, readings, words)
    return readings, words


def word_boundaries(run: str) -> list[int]:
    """Offsets inside ``run`` where jieba ends a word (the end of the run excluded)."""
    if not _ready:
        load()
    import jieba

    bounds = []
    pos = 0
    for word in jieba.lcut(run):
        pos += len(word)
        bounds.append(pos)
    return bounds[:-1]


@lru_cache(maxsize=4096)
def pinyin_phonemes(reading: str) -> str:
    """One syllable (``hang2``) as Kokoro's phonemes (``xa↗ŋ``), as misaki writes it for Kokoro v1.0;
    "" when it is not a Mandarin syllable."""
    from misaki.zh import ZHG2P

    try:
        return ZHG2P.py2ipa(reading).replace("\u032f", "")
    except (ValueError, AssertionError, IndexError, KeyError):
        return ""


ReadRun = Callable[[str], tuple[list[str | None], list[tuple[int, int]]]]
