"""Chinese normalization: numbers, dates, times, money, percentages, ranges and phone numbers
read the Chinese way, and full-width letters and digits folded, with cn2an for the numerals.

cn2an's own ``transform`` guesses on whole sentences and misreads times,
ISO dates and thousands separators, so this module finds the tokens itself
and lets cn2an only convert the numbers inside them:

- ``2024年1月2日`` -> 二零二四年一月二日 (years digit by digit, ``10年`` ten years);
  ``2024-01-02``, ``2024/1/2``, ``2024.1.2`` the same;
- ``10:30`` -> 十点三十分, ``14:05:09`` -> 十四点零五分九秒, ``2:00`` -> 两点,
  ``9:00-17:00`` -> 九点到十七点, a score ``3:2`` -> 三比二;
- ``¥1,299`` -> 一千二百九十九元, ``$20`` 美元, ``HK$`` 港元, ``¥100-200`` -> 一百到二百元;
- ``50%`` -> 百分之五十, ``3‰`` -> 千分之三, ``10%-20%`` and ``10-20%`` -> 百分之十到百分之二十;
- ranges ``3-5个``, ``3~5天``, ``3～5`` -> 三到五, ``2020-2024年`` -> 二零二零到二零二四年;
- phone numbers digit by digit, 1 as 幺 and groups apart: ``13812345678``,
  ``010-62345678``, ``+86 138 1234 5678``, ``400-800-1234``, and any digits
  after 电话/热线/拨打/手机/客服 (``拨打10086``); other long digit strings
  (IDs) digit by digit with 一;
- 两 where Chinese says it: ``2个`` 两个, ``2点`` 两点, ``2000`` 两千, ``2万`` 两万
  (but ``第2`` 第二, ``2月`` 二月);
- ``25℃`` 二十五摄氏度, ``-3℃`` 零下三摄氏度, ``5km`` 五公里, ``3kg`` 三千克;
- ``1/2`` 二分之一, ``1+1=2`` 一加一等于二, ``1.2.3`` 一点二点三, ``80后`` 八零后;
- numbers glued to Latin letters are read too (``Python3`` -> Python三, ``A4`` -> A四).

Full-width digits, letters and ``％＋＝＄`` become ASCII one for one
(``Ｐｙｔｈｏｎ`` -> Python), so offsets into the text stay exact; full-width
punctuation is kept (it is where sentences and clauses end).
"""

# This module reads real-world text: its look-alike punctuation (full-width,
# curly quotes, minus signs, dashes) is deliberate.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import re
from collections.abc import Callable

import cn2an

from ..rewrite import Replacement, Rewritten

# cn2an refuses integers longer than this; such strings are IDs anyway.
_MAX_DIGITS = 16

_CURRENCY = {"¥": "元", "￥": "元", "$": "美元", "€": "欧元", "£": "英镑", "₩": "韩元", "₽": "卢布", "₹": "卢比"}
_CURRENCY_PREFIX = {"HK$": "港元", "US$": "美元", "NT$": "新台币", "S$": "新加坡元", "A$": "澳元", "C$": "加元"}
_UNITS = {
    "km/h": "公里每小时", "km²": "平方公里", "m²": "平方米", "㎡": "平方米", "m³": "立方米", "km": "公里",
    "kg": "千克", "cm": "厘米", "mm": "毫米", "ml": "毫升", "mL": "毫升", "mg": "毫克", "g": "克",
    "m": "米", "L": "升", "℃": "摄氏度", "°C": "摄氏度", "°F": "华氏度", "°": "度",
}  # fmt: skip
# Words a standalone 2 counts, read 两 before them ("两个", "两点"); 二 stays before 月, 号, 楼 ...
_LIANG_BEFORE = frozenset("个位名人次本张条只件双对天周年岁点倍辆台部家种样份杯瓶碗盒包箱斤克米块角毛小分秒场遍口")
_PHONE_DIGITS = str.maketrans("0123456789", "零幺二三四五六七八九")
_PLAIN_DIGITS = str.maketrans("0123456789", "零一二三四五六七八九")


def _digits(text: str) -> str:
    """Digit by digit: years and IDs are read this way."""
    return "".join(ch for ch in text if ch in "0123456789").translate(_PLAIN_DIGITS)


def _phone(text: str) -> str:
    """A phone number digit by digit, 1 as 幺, its groups apart (a short pause); a mobile
    number written in one piece is grouped 3-4-4, as it is said."""
    groups = re.findall(r"\+|\d+", text)
    if groups and re.fullmatch(r"1[3-9]\d{9}", groups[-1]):
        mobile = groups.pop()
        groups += [mobile[:3], mobile[3:7], mobile[7:]]
    spoken = [("加" if group == "+" else group.translate(_PHONE_DIGITS)) for group in groups]
    return "，".join(spoken).replace("加，", "加")


def _number(text: str) -> str:
    text = text.replace(",", "")
    negative = text.startswith(("-", "−"))
    text = text.lstrip("-−")
    integer, _, fraction = text.partition(".")
    if len(integer) > _MAX_DIGITS or (len(integer) > 1 and integer.startswith("0") and not fraction):
        spoken = _digits(integer)
    else:
        spoken = cn2an.an2cn(integer, "low")
        # 2000, 20000: 两千, 两万 (cn2an writes 二千).
        spoken = re.sub("^二(?=[千万亿])", "两", spoken)
    if fraction:
        spoken += "点" + _digits(fraction)
    return ("负" + spoken) if negative else spoken


def _count(text: str, following: str, preceding: str) -> str:
    """A number as a count: a lone 2 before a measure word is 两 ("两个"), not after 第 ("第二")."""
    if text == "2" and following[:1] in _LIANG_BEFORE and preceding != "第" and following[:2] != "分之":
        return "两"
    return _number(text)


def _date(year: str | None, month: str | None, day: str | None) -> str | None:
    if (month and not 1 <= int(month) <= 12) or (day and not 1 <= int(day) <= 31):
        return None
    out = ""
    if year:
        out += _digits(year) + "年"
    if month:
        out += _number(str(int(month))) + "月"
    if day:
        out += _number(str(int(day))) + "日"
    return out


def _clock(hour: str, minute: str, second: str | None = None) -> str | None:
    h, m = int(hour), int(minute)
    if h > 24 or m > 59 or (second is not None and int(second) > 59):
        return None
    spoken = ("两" if h == 2 else _number(str(h))) + "点"
    if m or second:
        spoken += ("零" if m < 10 else "") + _number(str(m)) + "分"
    if second and int(second):
        spoken += _number(str(int(second))) + "秒"
    return spoken


_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_RANGE = r"\s*[-~～—–至到]\s*"
_UNIT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_SYMBOL = "|".join(re.escape(s) for s in sorted([*_CURRENCY_PREFIX, *_CURRENCY], key=len, reverse=True))
_PHONE_WORDS = "电话|热线|拨打|致电|手机|号码|客服|座机|传真|呼叫"

_RULES: list[tuple[str, str]] = [
    # Phone numbers: mobile (with or without +86), landline with an area code, 400/800 numbers.
    ("phone", r"(?<![\d.])(?:\+86[-\s]?)?1[3-9]\d[-\s]?\d{4}[-\s]?\d{4}(?![\d.])"),
    ("phone", r"(?<![\d.])(?:0\d{2,3}-\d{7,8}|[48]00-?\d{3}-?\d{4})(?![\d.])"),
    ("phone_after", rf"(?<={_PHONE_WORDS})[:：是为]?\s*(?P<pa_n>\+?\d[\d\s-]{{1,18}}\d)(?![\d.])"),
    ("date_sep", r"(?<!\d)(?P<ds_y>\d{4})(?P<ds_s>[-/.])(?P<ds_m>\d{1,2})(?P=ds_s)(?P<ds_d>\d{1,2})(?![\d.])"),
    ("year_range", r"(?<!\d)(?P<yr_a>\d{4})\s*[-~～—–至到]\s*(?P<yr_b>\d{4})(?=\s*年)"),
    ("year", r"(?<![\d.])(?:\d{4}|\d{2}(?=年\d{1,2}月))(?=\s?年)"),
    ("month", r"(?<![\d.])(?:1[0-2]|0?[1-9])(?=\s?月)"),
    ("day", r"(?<![\d.])(?:3[01]|[12]\d|0?[1-9])(?=\s?[日号])"),
    ("generation", r"(?<!\d)(?P<g_n>\d)0(?=后)"),
    (
        "time",
        r"(?<![\d:])(?P<t_h>\d{1,2}):(?P<t_m>\d{2})(?::(?P<t_s>\d{2}))?"
        rf"(?:{_RANGE}(?P<t_h2>\d{{1,2}}):(?P<t_m2>\d{{2}}))?(?![\d:])",
    ),
    ("ratio", r"(?<![\d:.])(?P<r_a>\d+):(?P<r_b>\d+)(?![\d:])"),
    ("version", r"(?<![\d.])\d+(?:\.\d+){2,}(?![\d.])"),
    (
        "money",
        rf"(?<![\d.,A-Za-z])(?P<m_sym>{_SYMBOL})\s?(?P<m_n>{_NUM})(?:{_RANGE}(?:{_SYMBOL})?(?P<m_n2>{_NUM}))?",
    ),
    (
        "percent",
        rf"(?<![\d.,])(?P<p_neg>(?<![A-Za-z\d])[-−])?(?P<p_n>{_NUM})(?P<p_s1>[%‰])?"
        rf"(?:{_RANGE}(?P<p_n2>{_NUM}))?(?P<p_s>[%‰])",
    ),
    (
        "range",
        rf"(?<![\d.,])(?P<rg_a>{_NUM})(?P<rg_u>{_UNIT})?\s*[~～—–至到-]\s*(?P<rg_b>{_NUM})"
        rf"(?P<rg_u2>{_UNIT})?(?![\d.,:/-])",
    ),
    ("fraction", r"(?<![\d/])(?P<f_a>\d+)/(?P<f_b>\d+)(?![\d/])"),
    ("math", r"(?<=\d)\s?(?P<op>[+=×÷])\s?(?=[\d-])"),
    ("long_digits", r"(?<![\d.,])\d{7,}(?![\d.,])"),
    ("measure", rf"(?<![\d.,])(?P<u_neg>(?<![A-Za-z\d])[-−](?=\d))?(?P<u_n>{_NUM})\s?(?P<u>{_UNIT})(?![A-Za-z])"),
    ("number", rf"(?<![\d.,])(?P<n_neg>(?<![A-Za-z\d])[-−](?=\d))?(?P<n>{_NUM})(?!\d)"),
]

Spoken = str | list[tuple[int, int, str]] | None


def _after(m: re.Match[str]) -> str:
    return m.string[m.end() : m.end() + 2]


def _before(m: re.Match[str]) -> str:
    return m.string[m.start() - 1] if m.start() else ""


def _phone_after(m: re.Match[str]) -> Spoken:
    return [(m.start("pa_n"), m.end("pa_n"), _phone(m["pa_n"]))]


def _time(m: re.Match[str]) -> Spoken:
    start = _clock(m["t_h"], m["t_m"], m["t_s"])
    if start is None or m["t_h2"] is None:
        return start
    end = _clock(m["t_h2"], m["t_m2"])
    return None if end is None else start + "到" + end


def _ratio(m: re.Match[str]) -> Spoken:
    return _number(m["r_a"]) + "比" + _number(m["r_b"])


def _version(m: re.Match[str]) -> Spoken:
    return "点".join(_digits(part) if len(part) > 2 else _number(part) for part in m.group().split("."))


def _money(m: re.Match[str]) -> Spoken:
    unit = _CURRENCY_PREFIX.get(m["m_sym"]) or _CURRENCY[m["m_sym"]]
    spoken = _money_amount(m["m_n"])
    if m["m_n2"]:
        spoken += "到" + _money_amount(m["m_n2"])
    return spoken + unit


def _money_amount(amount: str) -> str:
    # "¥1,299.00" is not "... point zero zero".
    if "." in amount:
        amount = amount.rstrip("0").rstrip(".")
    return _number(amount)


def _percent(m: re.Match[str]) -> Spoken:
    ratio = "千分之" if m["p_s"] == "‰" else "百分之"
    sign = "负" if m["p_neg"] else ""
    if m["p_n2"] is None:
        return sign + ratio + _number(m["p_n"])
    first = "千分之" if m["p_s1"] == "‰" else "百分之"
    return sign + first + _number(m["p_n"]) + "到" + ratio + _number(m["p_n2"])


def _range(m: re.Match[str]) -> Spoken:
    unit = m["rg_u2"] or m["rg_u"]
    first = _number(m["rg_a"]) + (_UNITS[m["rg_u"]] if m["rg_u"] and m["rg_u"] != unit else "")
    following = _after(m)
    second = _count(m["rg_b"], following, "") if not unit else _number(m["rg_b"])
    return first + "到" + second + (_UNITS[unit] if unit else "")


def _measure(m: re.Match[str]) -> Spoken:
    unit = _UNITS[m["u"]]
    if m["u_neg"] and unit == "摄氏度":
        return "零下" + _number(m["u_n"]) + unit
    return _number(("-" if m["u_neg"] else "") + m["u_n"]) + unit


def _plain(m: re.Match[str]) -> Spoken:
    if m["n_neg"]:
        return _number("-" + m["n"])
    return _count(m["n"], _after(m), _before(m))


_HANDLERS: dict[str, Callable[[re.Match[str]], Spoken]] = {
    "phone": lambda m: _phone(m.group()),
    "phone_after": _phone_after,
    "date_sep": lambda m: _date(m["ds_y"], m["ds_m"], m["ds_d"]),
    "year_range": lambda m: _digits(m["yr_a"]) + "到" + _digits(m["yr_b"]),
    "year": lambda m: _digits(m.group()),
    "month": lambda m: _number(str(int(m.group()))),
    "day": lambda m: _number(str(int(m.group()))),
    "generation": lambda m: _digits(m["g_n"] + "0"),
    "time": _time,
    "ratio": _ratio,
    "version": _version,
    "money": _money,
    "percent": _percent,
    "range": _range,
    # A zero denominator is no fraction; never int() of it (past 4,300 digits int() refuses).
    "fraction": lambda m: _number(m["f_b"]) + "分之" + _number(m["f_a"]) if m["f_b"].strip("0") else None,
    "math": lambda m: {"+": "加", "=": "等于", "×": "乘", "÷": "除以"}[m["op"]],
    "long_digits": lambda m: _digits(m.group()),
    "measure": _measure,
    "number": _plain,
}

# ASCII: cn2an converts 0-9 only; other digits (fullwidth ones are mapped
# below, Arabic-Indic ones are left) must not reach it.
_PATTERN = re.compile("|".join(f"(?P<rule{i}>{pattern})" for i, (_, pattern) in enumerate(_RULES)), re.ASCII)
_RULE_NAMES = [name for name, _ in _RULES]
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?", re.ASCII)

# Full-width ASCII (digits, letters, a few symbols) and the ideographic space, one for one.
_FULLWIDTH = str.maketrans(
    {
        **{chr(0xFF10 + i): chr(0x30 + i) for i in range(10)},
        **{chr(0xFF21 + i): chr(0x41 + i) for i in range(26)},
        **{chr(0xFF41 + i): chr(0x61 + i) for i in range(26)},
        "％": "%", "＋": "+", "＝": "=", "＄": "$", "＆": "&", "＠": "@", "＃": "#", "／": "/", "\u3000": " ",
    }
)  # fmt: skip
# Full-width marks that mean a number's punctuation only between digits ("３．５", "１０：３０", "３～５").
_BETWEEN_DIGITS = re.compile(r"(?<=\d)[．：－～](?=\d)")
_BETWEEN_DIGITS_MAP = str.maketrans("．：－～", ".:-~")


def fold_fullwidth(text: str) -> str:
    """Full-width digits, letters and number symbols as ASCII, one character for one."""
    text = text.translate(_FULLWIDTH)
    return _BETWEEN_DIGITS.sub(lambda m: m.group().translate(_BETWEEN_DIGITS_MAP), text)


def _replacements(match: re.Match[str]) -> list[Replacement]:
    group = match.lastgroup or ""
    spoken = _HANDLERS[_RULE_NAMES[int(group[4:])]](match)
    if spoken is None:
        # A token that does not read as what it looked like ("2024-13-45"): its numbers, plainly.
        return [Replacement(match.start() + n.start(), match.start() + n.end(), _number(n.group()))
                for n in _ANY_NUMBER.finditer(match.group())]  # fmt: skip
    if isinstance(spoken, str):
        return [] if spoken == match.group() else [Replacement(match.start(), match.end(), spoken)]
    return [Replacement(start, end, text) for start, end, text in spoken]


def normalize(text: str, language: str = "zh") -> Rewritten:
    """Rewrite numerals in Chinese text into Chinese readings; offsets map back to ``text``."""
    source = fold_fullwidth(text)
    replacements = [rep for match in _PATTERN.finditer(source) for rep in _replacements(match)]
    return Rewritten(source, replacements)


def say_as(interpret_as: str, text: str, fmt: str | None = None, language: str = "zh") -> str | None:
    """SSML ``say-as`` for Chinese; None when the text does not fit."""
    # ASCII digits only, as in normalize: cn2an converts 0-9 and nothing else ("٣" raised).
    text = fold_fullwidth(text)
    kind = interpret_as.lower()
    if kind in ("characters", "spell-out", "verbatim"):
        return " ".join(_digits(ch) if ch in "0123456789" else ch for ch in text if not ch.isspace())
    if kind == "telephone":
        return _phone(text) if re.search(r"[0-9]", text) else None
    if kind == "digits":
        groups = re.findall(r"[0-9]+", text)
        return " ".join(_digits(group) for group in groups) or None
    found = re.fullmatch(r"\s*([-−]?(?:" + _NUM + r"))\s*", text, re.ASCII)
    if kind in ("cardinal", "number"):
        return _number(found.group(1)) if found else None
    if kind == "ordinal":
        digits_only = re.fullmatch(r"\s*第?(\d{1,16})\s*", text, re.ASCII)
        return "第" + _number(digits_only.group(1)) if digits_only else None
    if kind == "time":
        clock = re.fullmatch(r"\s*(\d{1,2})[:：](\d{2})(?:[:：](\d{2}))?\s*", text, re.ASCII)
        return _clock(*clock.groups()) if clock else None
    if kind == "date":
        fields = re.findall(r"[0-9]{1,4}", text)
        order = (fmt or ("ymd" if fields and len(fields[0]) == 4 else "mdy")).lower()
        if len(fields) != len(order) or not set(order) <= set("ymd"):
            return None
        values = dict(zip(order, fields, strict=True))
        return _date(values.get("y"), values.get("m"), values.get("d"))
    return None
