"""Chinese normalization: Arabic numerals to Chinese readings, with cn2an.

cn2an's own ``transform`` guesses on whole sentences and misreads times,
ISO dates and thousands separators, so this module finds the tokens itself
and lets cn2an only convert the numbers inside them.
"""

# This module reads real-world text: its look-alike punctuation (full-width,
# curly quotes, minus signs, dashes) is deliberate.
# ruff: noqa: RUF001

from __future__ import annotations

import re
from collections.abc import Callable

import cn2an

from ..rewrite import Rewritten, rewrite_matches

# cn2an refuses integers longer than this; such strings are IDs anyway.
_MAX_DIGITS = 16

_CURRENCY = {"¥": "元", "￥": "元", "$": "美元", "€": "欧元", "£": "英镑"}


def _digits(text: str) -> str:
    """Digit by digit: years and phone numbers are read this way."""
    return "".join(cn2an.an2cn(ch, "direct") for ch in text if ch in "0123456789")


def _number(text: str) -> str:
    text = text.replace(",", "")
    negative = text.startswith(("-", "−"))
    text = text.lstrip("-−")
    integer, _, fraction = text.partition(".")
    if len(integer) > _MAX_DIGITS or (len(integer) > 1 and integer.startswith("0") and not fraction):
        spoken = _digits(integer)
    else:
        spoken = cn2an.an2cn(integer, "low")
    if fraction:
        spoken += "点" + _digits(fraction)
    return ("负" + spoken) if negative else spoken


def _date(year: str | None, month: str | None, day: str | None) -> str | None:
    if (month and not 1 <= int(month) <= 12) or (day and not 1 <= int(day) <= 31):
        return None
    out = ""
    if year:
        # "2024年" is read digit by digit; "10年" is a duration, ten years.
        out += (_digits(year) if len(year) == 4 else _number(year)) + "年"
    if month:
        out += _number(str(int(month))) + "月"
    if day:
        out += _number(str(int(day))) + "日"
    return out


def _time(m: re.Match[str]) -> str | None:
    hour, minute = int(m["t_h"]), int(m["t_m"])
    if hour > 24 or minute > 59:
        return None
    spoken = _number(m["t_h"]) + "点"
    if minute:
        spoken += ("零" if minute < 10 else "") + _number(str(minute)) + "分"
    return spoken


_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"

_RULES: list[tuple[str, str]] = [
    ("date_sep", r"(?<!\d)(?P<ds_y>\d{4})[-/.](?P<ds_m>\d{1,2})[-/.](?P<ds_d>\d{1,2})(?!\d)"),
    # The lookahead guarantees the first part matches, so this never matches empty.
    (
        "date_cn",
        r"(?<!\d)(?=\d{1,4}年|\d{1,2}[月日号])"
        r"(?:(?P<dc_y>\d{1,4})年)?(?:(?P<dc_m>\d{1,2})月)?(?:(?P<dc_d>\d{1,2})(?P<dc_suffix>[日号]))?",
    ),
    ("time", r"(?<![\d:])(?P<t_h>\d{1,2}):(?P<t_m>\d{2})(?![\d:])"),
    ("percent", rf"(?<![\d.,])(?P<p_neg>[-−])?(?P<p_n>{_NUM})[%％]"),
    ("fraction", r"(?<![\d/])(?P<f_a>\d+)/(?P<f_b>\d+)(?![\d/])"),
    ("money", rf"(?<![\d.,])(?P<m_sym>[¥￥$€£])\s?(?P<m_n>{_NUM})"),
    ("ordinal", r"第(?P<o_n>\d+)"),
    ("long_digits", r"(?<![\d.,])\d{7,}(?![\d.,])"),
    # Latin letters glued to digits ("Python3", "4K") are names, not numbers.
    ("number", rf"(?<![A-Za-z\d.,])(?P<n_neg>[-−](?=\d))?(?P<n>{_NUM})(?![\dA-Za-z])"),
]


def _date_cn(m: re.Match[str]) -> str | None:
    spoken = _date(m["dc_y"], m["dc_m"], m["dc_d"])
    # Keep the writer's 号 (colloquial) rather than turning it into 日.
    return spoken[:-1] + "号" if spoken and m["dc_suffix"] == "号" else spoken


_HANDLERS: dict[str, Callable[[re.Match[str]], str | None]] = {
    "date_sep": lambda m: _date(m["ds_y"], m["ds_m"], m["ds_d"]),
    "date_cn": _date_cn,
    "time": _time,
    "percent": lambda m: ("负" if m["p_neg"] else "") + "百分之" + _number(m["p_n"]),
    "fraction": lambda m: _number(m["f_b"]) + "分之" + _number(m["f_a"]) if m["f_b"] != "0" else None,
    "money": lambda m: _number(m["m_n"]) + _CURRENCY[m["m_sym"]],
    "ordinal": lambda m: "第" + _number(m["o_n"]),
    "long_digits": lambda m: _digits(m.group(0)),
    "number": lambda m: _number(("-" if m["n_neg"] else "") + m["n"]),
}

# ASCII: cn2an converts 0-9 only; other digits (fullwidth ones are mapped
# below, Arabic-Indic ones are left) must not reach it.
_PATTERN = re.compile("|".join(f"(?P<rule{i}>{pattern})" for i, (_, pattern) in enumerate(_RULES)), re.ASCII)
_FULLWIDTH = str.maketrans("０１２３４５６７８９％", "0123456789%")
_RULE_NAMES = [name for name, _ in _RULES]


def _dispatch(match: re.Match[str]) -> str | None:
    group = match.lastgroup or ""
    return _HANDLERS[_RULE_NAMES[int(group[4:])]](match)


def normalize(text: str, language: str = "zh") -> Rewritten:
    """Rewrite numerals in Chinese text into Chinese readings."""
    # One-for-one mapping, so offsets into the source stay valid.
    return rewrite_matches(text.translate(_FULLWIDTH), _PATTERN, _dispatch)


def say_as(interpret_as: str, text: str, fmt: str | None = None, language: str = "zh") -> str | None:
    """SSML ``say-as`` for Chinese; None when the text does not fit."""
    kind = interpret_as.lower()
    if kind in ("characters", "spell-out", "verbatim"):
        return " ".join(_digits(ch) if ch in "0123456789" else ch for ch in text if not ch.isspace())
    if kind in ("digits", "telephone"):
        groups = re.findall(r"[0-9]+", text)
        return " ".join(_digits(group) for group in groups) or None
    found = re.fullmatch(r"\s*([-−]?(?:" + _NUM + r"))\s*", text)
    if kind in ("cardinal", "number"):
        return _number(found.group(1)) if found else None
    if kind == "ordinal":
        digits_only = re.fullmatch(r"\s*第?(\d{1,16})\s*", text)
        return "第" + _number(digits_only.group(1)) if digits_only else None
    if kind == "date":
        fields = re.findall(r"\d{1,4}", text)
        order = (fmt or ("ymd" if fields and len(fields[0]) == 4 else "mdy")).lower()
        if len(fields) != len(order) or not set(order) <= set("ymd"):
            return None
        values = dict(zip(order, fields, strict=True))
        return _date(values.get("y"), values.get("m"), values.get("d"))
    return None
