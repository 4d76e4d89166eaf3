"""Japanese normalization: width, kana, and numbers read the Japanese way.

Numbers become kanji numerals (1,234 -> 千二百三十四, 10000 -> 一万), which
the reading front end (OpenJTalk) voices with the right sound changes and
counter readings: 三百 sanbyaku, 六分 roppun, 三月一日 sangatsu tsuitachi,
四時 yoji. Dates (2024年3月1日, 2024-03-01, 2024/3/1), times (10:30, 午後3時),
money (¥1,000, $20, 1000円), percentages, temperatures, fractions, ranges
(3～5) and common units are recognized as tokens first, so no digit of
theirs is read alone. Full-width Latin letters and digits become half-width
and half-width katakana full-width, one character for one where possible, so
offsets into the caller's text stay exact.
"""

# This module reads real-world Japanese text: full-width forms are the point.
# ruff: noqa: RUF001, RUF002

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from ..rewrite import Replacement, Rewritten, rewrite_matches

_DIGITS = "〇一二三四五六七八九"
_SMALL_UNITS = ((1000, "千"), (100, "百"), (10, "十"))
_LARGE_UNITS = ("", "万", "億", "兆", "京")
# Longer digit runs are identifiers (phone, account numbers): read digit by digit.
_MAX_DIGITS = 20

# One for one: full-width ASCII to ASCII, the ideographic space to a space.
_WIDTH = {chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)}
_WIDTH["\u3000"] = " "
# Half-width katakana (and its marks) to full-width, one for one; a following
# half-width voiced mark is merged below.
for _c in range(0xFF61, 0xFFA0):
    _full = unicodedata.normalize("NFKC", chr(_c))
    if len(_full) == 1:
        _WIDTH[chr(_c)] = _full
_WIDTH["\uff9e"] = "\u309b"  # ﾞ -> ゛
_WIDTH["\uff9f"] = "\u309c"  # ﾟ -> ゜
_WIDTH_TABLE = str.maketrans(_WIDTH)

_CURRENCY_BEFORE = {"¥": "円", "￥": "円", "$": "ドル", "€": "ユーロ", "£": "ポンド", "₩": "ウォン"}
_CURRENCY_CENTS = {"ドル": "セント", "ユーロ": "セント", "ポンド": "ペンス"}
_UNITS = {
    "km": "キロメートル",
    "cm": "センチメートル",
    "mm": "ミリメートル",
    "m": "メートル",
    "kg": "キログラム",
    "mg": "ミリグラム",
    "g": "グラム",
    "t": "トン",
    "L": "リットル",
    "l": "リットル",
    "mL": "ミリリットル",
    "ml": "ミリリットル",
    "GB": "ギガバイト",
    "MB": "メガバイト",
    "KB": "キロバイト",
    "TB": "テラバイト",
    "km/h": "キロメートル毎時",
    "kHz": "キロヘルツ",
    "Hz": "ヘルツ",
    "W": "ワット",
    "kW": "キロワット",
    "V": "ボルト",
    "℃": "度",
    "°C": "度",
    "°": "度",
}
_WEEKDAYS = {
    "月": "月曜日",
    "火": "火曜日",
    "水": "水曜日",
    "木": "木曜日",
    "金": "金曜日",
    "土": "土曜日",
    "日": "日曜日",
}


def kanji_number(value: int) -> str:
    """An integer in kanji numerals, as it is read: 1234 -> 千二百三十四, 10000 -> 一万, 0 -> 零."""
    if value == 0:
        return "零"
    if value < 0:
        return "マイナス" + kanji_number(-value)
    groups: list[str] = []
    index = 0
    while value:
        value, group = divmod(value, 10000)
        if group:
            if index >= len(_LARGE_UNITS):
                raise ValueError("number too large")
            groups.append(_four_digits(group, leading_one=index > 0 and group >= 1000) + _LARGE_UNITS[index])
        index += 1
    return "".join(reversed(groups))


def _four_digits(value: int, *, leading_one: bool) -> str:
    out = ""
    for unit, name in _SMALL_UNITS:
        count, value = divmod(value, unit)
        if count:
            # 一千万 is said "issenman"; on its own 千 is "sen", not "issen".
            out += ("" if count == 1 and not (leading_one and unit == 1000) else _DIGITS[count]) + name
    if value:
        out += _DIGITS[value]
    return out


def digit_by_digit(text: str) -> str:
    """Each digit on its own, zero as ゼロ: phone numbers, codes."""
    # isdecimal, not isdigit: "²".isdigit() but int("²") fails.
    return "".join("ゼロ" if ch == "0" else _DIGITS[int(ch)] for ch in text if ch.isdecimal())


def _whole_number(integer: str) -> str:
    """A whole number as counted (kanji numerals), or digit by digit past ``_MAX_DIGITS``: never
    ``int()`` of a longer run (kanji numerals end at 京; past 4,300 digits ``int()`` refuses)."""
    if len(integer) > _MAX_DIGITS:
        return digit_by_digit(integer)
    return kanji_number(int(integer or "0"))


def read_number(text: str) -> str:
    """A written number ("1,234.5", "-3", "007") as read aloud."""
    text = text.replace(",", "")
    negative = text.startswith(("-", "−", "－"))
    text = text.lstrip("-−－")
    integer, _, fraction = text.partition(".")
    spoken = digit_by_digit(integer) if len(integer) > 1 and integer.startswith("0") else _whole_number(integer)
    if fraction:
        spoken += "点" + "".join(_DIGITS[int(ch)] if ch != "0" else "ゼロ" for ch in fraction)
    return ("マイナス" + spoken) if negative else spoken


_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNIT_NAMES = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))

_RULES: list[tuple[str, str]] = [
    ("dakuten", r"(?P<dk_base>[\u3041-\u3096\u30a1-\u30fa])(?P<dk_mark>[\u309b\u309c\u3099\u309a])"),
    ("iteration", r"(?P<it_prev>[\u3041-\u3096\u30a1-\u30fa])(?P<it_mark>[ゝゞヽヾ])"),
    (
        "date_sep",
        r"(?<![\d.])(?P<ds_y>\d{4})(?P<ds_sep>[-/.])(?P<ds_m>\d{1,2})(?P=ds_sep)(?P<ds_d>\d{1,2})(?![\d.])"
        r"(?:\s?[(（](?P<ds_w>[月火水木金土日])[)）])?",
    ),
    (
        "date_ja",
        r"(?<!\d)(?=\d{1,4}年|\d{1,2}月|\d{1,2}日)"
        r"(?:(?P<dj_y>\d{1,4})年)?(?:(?P<dj_m>\d{1,2})月)?(?:(?P<dj_d>\d{1,2})日)?"
        r"(?:\s?[(（](?P<dj_w>[月火水木金土日])[)）])?",
    ),
    ("month_day", r"(?<![\d/])(?P<md_m>\d{1,2})/(?P<md_d>\d{1,2})\s?[(（](?P<md_w>[月火水木金土日])[)）]"),
    (
        "time",
        r"(?:(?P<t_ampm_pre>午前|午後)\s?)?(?<![\d:])(?P<t_h>\d{1,2}):(?P<t_m>\d{2})(?::(?P<t_s>\d{2}))?(?![\d:])"
        r"(?:\s?(?P<t_ampm>[AaPp]\.?[Mm]\.?))?",
    ),
    ("money_before", rf"(?P<mb_sym>[¥￥$€£₩])\s?(?P<mb_n>{_NUM})"),
    ("percent", rf"(?<![\d.,])(?P<p_neg>[-−])?(?P<p_n>{_NUM})\s?[%％]"),
    ("range", rf"(?<![\d.,])(?P<r_a>{_NUM})\s?[～〜~]\s?(?P<r_b>{_NUM})(?![\d.,])"),
    ("fraction", r"(?<![\d/])(?P<f_a>\d+)/(?P<f_b>\d+)(?![\d/])"),
    ("unit", rf"(?<![\d.,])(?P<u_neg>[-−])?(?P<u_n>{_NUM})\s?(?P<u_unit>{_UNIT_NAMES})(?![A-Za-z])"),
    ("ordinal", r"第(?P<o_n>\d+)"),
    ("phone", r"(?<![\d-])0\d{1,4}-\d{1,4}-\d{3,4}(?![\d-])"),
    ("number", rf"(?<![A-Za-z\d.,])(?P<n_neg>[-−](?=\d))?(?P<n>{_NUM})(?![\dA-Za-z])"),
]


def _date(year: str | None, month: str | None, day: str | None, weekday: str | None) -> str | None:
    if (month and not 1 <= int(month) <= 12) or (day and not 1 <= int(day) <= 31):
        return None
    out = ""
    if year:
        out += kanji_number(int(year)) + "年"
    if month:
        out += kanji_number(int(month)) + "月"
    if day:
        out += kanji_number(int(day)) + "日"
    if weekday:
        out += "、" + _WEEKDAYS[weekday]
    return out


def _time(m: re.Match[str]) -> str | None:
    hour, minute = int(m["t_h"]), int(m["t_m"])
    second = int(m["t_s"]) if m["t_s"] else 0
    if hour > 24 or minute > 59 or second > 59:
        return None
    prefix = m["t_ampm_pre"] or ""
    if m["t_ampm"]:
        if hour > 12:
            return None
        prefix = "午前" if m["t_ampm"][0] in "Aa" else "午後"
    spoken = prefix + kanji_number(hour) + "時"
    if minute:
        spoken += kanji_number(minute) + "分"
    if second:
        spoken += kanji_number(second) + "秒"
    return spoken


def _money(m: re.Match[str]) -> str:
    unit = _CURRENCY_BEFORE[m["mb_sym"]]
    amount = m["mb_n"].replace(",", "")
    integer, _, fraction = amount.partition(".")
    cents = _CURRENCY_CENTS.get(unit)
    if fraction and cents and len(fraction) == 2:
        spoken = _whole_number(integer) + unit
        return spoken + (kanji_number(int(fraction)) + cents if int(fraction) else "")
    return read_number(amount) + unit


def _unit(m: re.Match[str]) -> str:
    return ("マイナス" if m["u_neg"] else "") + read_number(m["u_n"]) + _UNITS[m["u_unit"]]


def _voiced(m: re.Match[str]) -> str | None:
    mark = "\u3099" if m["dk_mark"] in "\u309b\u3099" else "\u309a"
    composed = unicodedata.normalize("NFC", m["dk_base"] + mark)
    return composed if len(composed) == 1 else None


def _iterated(m: re.Match[str]) -> str:
    previous, mark = m["it_prev"], m["it_mark"]
    repeated = previous
    if mark in "ゞヾ":
        voiced = unicodedata.normalize("NFC", previous + "\u3099")
        repeated = voiced if len(voiced) == 1 else previous
    return previous + repeated


_HANDLERS: dict[str, Callable[[re.Match[str]], str | None]] = {
    "dakuten": _voiced,
    "iteration": _iterated,
    "date_sep": lambda m: _date(m["ds_y"], m["ds_m"], m["ds_d"], m["ds_w"]),
    "date_ja": lambda m: _date(m["dj_y"], m["dj_m"], m["dj_d"], m["dj_w"]),
    "month_day": lambda m: _date(None, m["md_m"], m["md_d"], m["md_w"]),
    "time": _time,
    "money_before": _money,
    "percent": lambda m: ("マイナス" if m["p_neg"] else "") + read_number(m["p_n"]) + "パーセント",
    "range": lambda m: read_number(m["r_a"]) + "から" + read_number(m["r_b"]),
    "fraction": lambda m: read_number(m["f_b"]) + "分の" + read_number(m["f_a"]) if m["f_b"] != "0" else None,
    "unit": _unit,
    "ordinal": lambda m: "第" + read_number(m["o_n"]),
    "phone": lambda m: "、".join(digit_by_digit(part) for part in m.group(0).split("-")),
    "number": lambda m: read_number(("-" if m["n_neg"] else "") + m["n"]),
}

# ASCII: digits of other scripts (Arabic-Indic...) are not ours to read; full-width ones
# were folded to ASCII before matching.
_PATTERN = re.compile("|".join(f"(?P<rule{i}>{pattern})" for i, (_, pattern) in enumerate(_RULES)), re.ASCII)
_RULE_NAMES = [name for name, _ in _RULES]


def _dispatch(match: re.Match[str]) -> str | None:
    group = match.lastgroup or ""
    return _HANDLERS[_RULE_NAMES[int(group[4:])]](match)


def normalize(text: str, language: str = "ja") -> Rewritten:
    """Japanese text as read aloud, with the map back to ``text``."""
    # One-for-one width folding keeps offsets; the rules then run on the folded text.
    folded = text.translate(_WIDTH_TABLE)
    rewritten = rewrite_matches(folded, _PATTERN, _dispatch)
    if folded == text:
        return rewritten
    # Same offsets, the caller's characters as the source.
    return Rewritten(text, _with_width_changes(text, folded, list(rewritten.replacements)))


def _with_width_changes(text: str, folded: str, replacements: list[Replacement]) -> list[Replacement]:
    """``replacements`` plus one per folded character outside them, so ``Rewritten(text, ...)``
    spells the folded characters while its source stays the caller's text."""
    merged: list[Replacement] = []
    pos = 0
    for rep in [*replacements, Replacement(len(text), len(text), "")]:
        for i in range(pos, rep.start):
            if text[i] != folded[i]:
                merged.append(Replacement(i, i + 1, folded[i]))
        if rep.end > rep.start or rep.text:
            merged.append(rep)
        pos = rep.end
    return merged


def say_as(interpret_as: str, text: str, fmt: str | None = None, language: str = "ja") -> str | None:
    """SSML ``say-as`` for Japanese; None when the text does not fit."""
    kind = interpret_as.lower()
    text = text.translate(_WIDTH_TABLE)
    if kind in ("characters", "spell-out", "verbatim"):
        return "、".join(digit_by_digit(ch) if ch.isdecimal() else ch for ch in text if not ch.isspace())
    if kind in ("digits", "telephone"):
        groups = re.findall(r"[0-9]+", text)
        return "、".join(digit_by_digit(group) for group in groups) or None
    found = re.fullmatch(r"\s*([-−]?(?:" + _NUM + r"))\s*", text)
    if kind in ("cardinal", "number"):
        return read_number(found.group(1)) if found else None
    if kind == "ordinal":
        digits_only = re.fullmatch(r"\s*第?(\d{1,16})\s*", text)
        return "第" + read_number(digits_only.group(1)) if digits_only else None
    if kind == "date":
        fields = re.findall(r"\d{1,4}", text)
        order = (fmt or ("ymd" if fields and len(fields[0]) == 4 else "md")).lower()
        if len(fields) != len(order) or not set(order) <= set("ymd"):
            return None
        values = dict(zip(order, fields, strict=True))
        return _date(values.get("y"), values.get("m"), values.get("d"), None)
    if kind == "time":
        found_time = re.fullmatch(r"\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*", text)
        if not found_time:
            return None
        return _read_time(found_time)
    return None


def _read_time(found: re.Match[str]) -> str | None:
    hour, minute = int(found.group(1)), int(found.group(2))
    second = int(found.group(3) or 0)
    if hour > 24 or minute > 59 or second > 59:
        return None
    return (
        kanji_number(hour)
        + "時"
        + (kanji_number(minute) + "分" if minute else "")
        + (kanji_number(second) + "秒" if second else "")
    )
