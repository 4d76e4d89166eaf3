"""English normalization: written tokens to the words a reader would say.

One left-to-right pass with a single alternation of rules, most specific
first (a URL before a domain before a number), so every replacement maps back
to exactly the characters it came from and no rule rewrites another's output.
"""

# This module reads real-world text: its look-alike punctuation (full-width,
# curly quotes, minus signs, dashes) is deliberate.
# ruff: noqa: RUF001

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ..rewrite import Rewritten, rewrite_matches
from . import en_numbers as say
from .en_say_as import say_as
from .en_words import (
    ABBREVIATIONS,
    PLACE_OR_TITLE,
    REGNAL_NAMES,
    ROMAN_KEYWORDS,
    SENTENCE_STARTERS,
    SET_PHRASES,
    SYMBOLS,
    TITLES,
    TLDS,
    UNITS,
    URL_SYMBOLS,
    VULGAR_FRACTIONS,
    spell,
)


def _alternation(words: Iterable[str]) -> str:
    parts = []
    for word in sorted(words, key=len, reverse=True):
        # A key ending in a letter must end at a word boundary ("vs" not "vsx").
        parts.append(re.escape(word) + (r"(?!\w)" if word[-1].isalnum() else ""))
    return "|".join(parts)


_NUM = r"\d{1,3}(?:,\d{3})+|\d+"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_UNIT = _alternation(UNITS)
_CODES = "USD|EUR|GBP|JPY|CNY|INR|CHF|CAD|AUD"
_PICTO = "\U0001f000-\U0001faff\u2600-\u27bf\u2b05-\u2b55\u231a\u231b\u23e9-\u23fa\u3030\u303d"
_JOINERS = "\ufe0e\ufe0f\u200d\u20e3\U000e0020-\U000e007f"
_URL_END = r"[^\s<>\"'.,;:!?)\]\[]"

# (name, pattern) in priority order; group names are prefixed by rule so they
# stay unique inside the combined pattern.
_RULES: list[tuple[str, str]] = [
    ("url", rf"(?<![\w@])(?:https?://|ftp://|www\.)[^\s<>\"'\[\]]*{_URL_END}"),
    ("email", r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}(?!\w)"),
    ("domain", rf"(?<![\w@./-])(?:[A-Za-z0-9-]+\.)+(?i:{TLDS})(?![\w-]|\.\w)(?:/[^\s<>\"']*{_URL_END})?"),
    ("emoji", rf"[{_PICTO}][{_PICTO}{_JOINERS}]*|[\ufe0e\ufe0f\u20e3]+"),
    (
        "time",
        r"(?<![\w:.])(?P<t_h>[01]?\d|2[0-4]):(?P<t_m>[0-5]\d)(?::(?P<t_s>[0-5]\d))?"
        r"(?:\s?(?P<t_ap>[AaPp]\.[Mm]\.|[AaPp][Mm](?!\w)))?(?![\w:])",
    ),
    ("hour", r"(?<![\w:.,])(?P<h_h>1[0-2]|0?[1-9])\s?(?P<h_ap>[AaPp]\.[Mm]\.|[AaPp][Mm](?!\w))"),
    ("date_slash", r"(?<![\w/.])(?P<ds_a>\d{1,2})/(?P<ds_b>\d{1,2})/(?P<ds_y>\d{4}|\d{2})(?![\w/])"),
    ("date_iso", r"(?<![\w-])(?P<di_y>\d{4})-(?P<di_m>\d{2})-(?P<di_d>\d{2})(?![\w-])"),
    ("date_dot", r"(?<![\w.])(?P<dd_d>\d{1,2})\.(?P<dd_m>\d{1,2})\.(?P<dd_y>\d{4})(?!\w|\.\d)"),
    (
        "date_md",
        rf"\b(?P<md_m>{_MONTH})\.?\s(?P<md_d>\d{{1,2}})(?:st|nd|rd|th)?(?![\w:])(?:,?\s(?P<md_y>\d{{4}})(?!\w))?",
    ),
    (
        "date_dm",
        rf"(?<![\w.,])(?P<dm_d>\d{{1,2}})(?:st|nd|rd|th)?\s(?:of\s)?(?P<dm_m>{_MONTH})\b\.?"
        r"(?:,?\s(?P<dm_y>\d{4})(?!\w))?",
    ),
    ("phone", r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?!\w)"),
    ("phone", r"(?<![\w+])\+\d{1,3}(?:[\s.-]\(?\d{1,4}\)?){2,5}(?!\w)"),
    ("phone", r"(?<![\w.,/-])[2-9]\d{2}-\d{4}(?![\w-])"),
    (
        "money",
        rf"(?<!\w)(?P<mp_neg>[-−])?(?P<mp_sym>US\$|A\$|C\$|[$€£¥₹₩₽₿])\s?(?P<mp_int>{_NUM})(?:\.(?P<mp_frac>\d+))?"
        r"(?:\s?(?P<mp_scale>thousand|million|billion|trillion)|(?P<mp_abbr>[kKmMbBtT]|bn|mn|tn))?(?![\w]|[.,]\d)",
    ),
    ("money_after", rf"(?<![\w.,])(?P<ma_int>{_NUM})(?:\.(?P<ma_frac>\d+))?\s?(?P<ma_code>{_CODES}|€|£)(?!\w)"),
    ("money_code", rf"(?<!\w)(?P<mc_code>{_CODES})\s?(?P<mc_int>{_NUM})(?:\.(?P<mc_frac>\d+))?(?![\w]|[.,]\d)"),
    ("cents", r"(?<![\w.,])(?P<c_n>\d{1,15})\s?¢"),
    ("percent", rf"(?<![\w.,])(?P<p_neg>[-−])?(?P<p_int>{_NUM})(?:\.(?P<p_frac>\d+))?\s?%"),
    ("decade", r"(?<![\w'’])(?P<dc_y>1\d\d0|20\d0)s(?!\w)|(?<!\w)['’](?P<dc_2>\d)0s(?!\w)"),
    ("ordinal", r"(?<![\w.,])(?P<o_n>\d{1,15})(?:st|nd|rd|th|ST|ND|RD|TH)(?!\w)"),
    (
        "range",
        r"(?<![\w.,/-])(?P<r_a>\d+(?:\.\d+)?)(?:-|\s?–\s?)(?P<r_b>\d+(?:\.\d+)?)(?![\w/-]|[.,]\d)"
        rf"(?:\s?(?P<r_unit>%|{_UNIT})(?![\w/²³]))?",
    ),
    ("unit", rf"(?<![\w.,])(?P<u_neg>[-−])?(?P<u_int>{_NUM})(?:\.(?P<u_frac>\d+))?\s?(?P<u_unit>{_UNIT})(?![\w/²³])"),
    ("fraction", r"(?<![\w/.,])(?P<f_a>\d{1,15})/(?P<f_b>\d{1,15})(?![\w/]|[.,]\d)"),
    ("vulgar", r"(?<!\d)(?P<v_int>\d+)?(?P<v_frac>[½⅓⅔¼¾⅛⅜⅝⅞])"),
    ("dotted_numbers", r"(?<![\w.])\d+(?:\.\d+){2,}(?!\w|\.\d)"),
    ("number", rf"(?<![\w.,])(?P<n_neg>[-−](?=\d))?(?P<n_int>{_NUM})(?:\.(?P<n_frac>\d+))?(?![\w]|[.,]\d)"),
    ("bare_decimal", r"(?<![\w.,])\.(?P<bd>\d+)(?![\w]|[.,]\d)"),
    ("roman_keyword", rf"\b(?P<rk_kw>{ROMAN_KEYWORDS})\s(?P<rk_n>[IVXLCDM]{{1,7}})(?!\w)"),
    ("roman_name", r"\b(?P<rn_name>[A-Z][a-z]+)\s(?P<rn_n>[IVX]{2,6})(?!\w)"),
    ("place_or_title", r"(?<![\w.])(?:Dr|St)\.(?!\w)"),
    ("number_sign", r"(?<![\w.])(?:Nos?|no)\.(?=\s?\d)|№(?=\s?\d)|(?<![\w&])#(?=\d)"),
    ("hashtag", r"(?<![\w&])#(?P<ht>[A-Za-z]\w*)"),
    ("abbreviation", rf"(?<![\w.])(?:{_alternation(ABBREVIATIONS)})"),
    ("acronym", r"(?<![\w.])(?:[A-Za-z]\.){2,}(?!\w)"),
    ("initial", r"(?<![\w.])[A-Z]\.(?=\s[A-Z])"),
    ("symbol", "[" + re.escape("".join(SYMBOLS)) + "]"),
    ("approximately", r"~(?=\s?\d)"),
    ("emphasis", r"(?<!\*)\*+(?=\w)|(?<=\w)\*+|_{2,}|(?m:^#{1,6}(?=\s))"),
]

_SENTENCE_FOLLOWS = re.compile(r"\s*\Z|\s+[\"“‘(\[]?[A-Z]")
# A capitalized word before "St." that is not the first word of its sentence.
_NAME_BEFORE = re.compile(r"[^.!?\s]\s+[A-Z][\w'-]*\s+$")


_NEXT_WORD = re.compile(r"\s+[\"“‘(\[]?([A-Za-z]+)")


def _keeps_period(match: re.Match[str], *, before_names: bool) -> bool:
    """True when the abbreviation's period also ends the sentence ("... etc. Then").

    After "U.S." or "p.m." a capital is usually a name ("the U.S. Army"), so
    for those (``before_names``) only a typical sentence opener counts, as in
    ``tts.text.sentences``.
    """
    if not match.group(0).endswith("."):
        return False
    if _SENTENCE_FOLLOWS.match(match.string, match.end()) is None:
        return False
    if not before_names:
        return True
    following = _NEXT_WORD.match(match.string, match.end())
    return following is None or following.group(1) in SENTENCE_STARTERS


def _with_period(spoken: str, match: re.Match[str], *, before_names: bool = False) -> str:
    return spoken + "." if _keeps_period(match, before_names=before_names) else spoken


def _spell_words(text: str, separators: dict[str, str]) -> str:
    """Addresses: words as words, digits one by one, punctuation by name."""
    out: list[str] = []
    for token in re.findall(r"[^\W\d_]+|\d+|.", text):
        if token.isdigit():
            out.append(say.digits(token))
        elif token in separators:
            out.append(separators[token])
        elif token.isalpha():
            out.append(token)
    return " ".join(out)


def _url(m: re.Match[str]) -> str:
    text = re.sub(r"^(?:https?://)", "", m.group(0))
    prefix = ""
    if text.lower().startswith("www."):
        prefix, text = "W W W dot ", text[4:]
    return prefix + _spell_words(text, URL_SYMBOLS)


def _email(m: re.Match[str]) -> str:
    return _spell_words(m.group(0), URL_SYMBOLS)


def _number_or_year(text: str) -> str:
    integer, _, frac = text.partition(".")
    if not frac and len(integer) == 4 and 1100 <= int(integer) <= 2099:
        return say.year(int(integer))
    return say.number(integer, frac or None)


def _time(m: re.Match[str]) -> str | None:
    seconds = int(m["t_s"]) if m["t_s"] else None
    spoken = say.clock_time(int(m["t_h"]), int(m["t_m"]), seconds, m["t_ap"])
    return None if spoken is None else _with_period(spoken, m, before_names=True)


def _hour(m: re.Match[str]) -> str:
    return _with_period(f"{say.cardinal(int(m['h_h']))} {say.meridiem(m['h_ap'])}", m, before_names=True)


def _date_slash(m: re.Match[str]) -> str:
    first, second = int(m["ds_a"]), int(m["ds_b"])
    # US order unless the first field cannot be a month.
    month, day = (second, first) if first > 12 else (first, second)
    spoken = say.date(month, day, m["ds_y"])
    if spoken is None:
        return " slash ".join(_number_or_year(part) for part in m.group(0).split("/"))
    return spoken


def _date_iso(m: re.Match[str]) -> str | None:
    return say.date(int(m["di_m"]), int(m["di_d"]), m["di_y"])


def _date_dot(m: re.Match[str]) -> str | None:
    return say.day_first_date(int(m["dd_d"]), int(m["dd_m"]), m["dd_y"])


def _date_md(m: re.Match[str]) -> str | None:
    return say.date(say.month_number(m["md_m"]), int(m["md_d"]), m["md_y"])


def _date_dm(m: re.Match[str]) -> str | None:
    spoken = say.day_first_date(int(m["dm_d"]), say.month_number(m["dm_m"]), m["dm_y"])
    if spoken and m.string[max(0, m.start() - 4) : m.start()].lower() == "the ":
        spoken = spoken.removeprefix("the ")
    return spoken


def _money(m: re.Match[str]) -> str:
    scale = m["mp_scale"] or m["mp_abbr"]
    code = say.CURRENCY_SYMBOLS[m["mp_sym"]]
    return say.money(m["mp_int"], m["mp_frac"], code, scale=scale, negative=bool(m["mp_neg"]))


def _money_after(m: re.Match[str]) -> str:
    code = say.CURRENCY_SYMBOLS.get(m["ma_code"], m["ma_code"])
    return say.money(m["ma_int"], m["ma_frac"], code)


def _money_code(m: re.Match[str]) -> str:
    return say.money(m["mc_int"], m["mc_frac"], m["mc_code"])


def _cents(m: re.Match[str]) -> str:
    return f"{say.cardinal(int(m['c_n']))} cent{'' if m['c_n'] == '1' else 's'}"


def _percent(m: re.Match[str]) -> str:
    return say.number(m["p_int"], m["p_frac"], negative=bool(m["p_neg"])) + " percent"


def _decade(m: re.Match[str]) -> str:
    if m["dc_y"]:
        return say.plural_of(say.year(int(m["dc_y"])))
    return say.plural_of(say.cardinal(int(m["dc_2"]) * 10))


def _unit_name(unit: str, singular: bool) -> str:
    one, many = UNITS[unit]
    return one if singular else many


def _range(m: re.Match[str]) -> str:
    spoken = f"{_number_or_year(m['r_a'])} to {_number_or_year(m['r_b'])}"
    unit = m["r_unit"]
    if unit == "%":
        spoken += " percent"
    elif unit:
        spoken += " " + _unit_name(unit, singular=False)
    return spoken


def _unit(m: re.Match[str]) -> str:
    amount = say.number(m["u_int"], m["u_frac"], negative=bool(m["u_neg"]))
    return f"{amount} {_unit_name(m['u_unit'], say.is_one(m['u_int'], m['u_frac']))}"


def _fraction(m: re.Match[str]) -> str:
    text = m.group(0)
    if text in SET_PHRASES:
        return SET_PHRASES[text]
    spoken = say.fraction(int(m["f_a"]), int(m["f_b"]))
    return spoken or f"{say.number(m['f_a'])} slash {say.number(m['f_b'])}"


def _vulgar(m: re.Match[str]) -> str:
    alone, after_whole = VULGAR_FRACTIONS[m["v_frac"]]
    return f"{say.number(m['v_int'])} {after_whole}" if m["v_int"] else alone


def _dotted_numbers(m: re.Match[str]) -> str:
    return " dot ".join(say.number(part) for part in m.group(0).split("."))


def _number(m: re.Match[str]) -> str:
    if not m["n_neg"] and not m["n_frac"]:
        return _number_or_year(m["n_int"])
    return say.number(m["n_int"], m["n_frac"], negative=bool(m["n_neg"]))


def _roman_keyword(m: re.Match[str]) -> str | None:
    value = say.roman(m["rk_n"])
    return None if value is None else f"{m['rk_kw']} {say.cardinal(value)}"


def _roman_name(m: re.Match[str]) -> str | None:
    value = say.roman(m["rn_n"])
    if value is None:
        return None
    if m["rn_name"] in REGNAL_NAMES:
        return f"{m['rn_name']} the {say.ordinal(value)}"
    # "World War II" style: espeak-ng would otherwise say "roman two".
    return f"{m['rn_name']} {say.cardinal(value)}"


def _place_or_title(m: re.Match[str]) -> str:
    title, place = PLACE_OR_TITLE[m.group(0)]
    before = m.string[max(0, m.start() - 40) : m.start()]
    if _NAME_BEFORE.search(before):
        return _with_period(place, m)
    following = re.match(r"\s+([A-Z][\w'-]*)", m.string[m.end() : m.end() + 40])
    if following and following.group(1) not in SENTENCE_STARTERS:
        return title
    return _with_period(place, m)


def _abbreviation(m: re.Match[str]) -> str:
    text = m.group(0)
    spoken = ABBREVIATIONS[text]
    return spoken if text in TITLES else _with_period(spoken, m)


def _acronym(m: re.Match[str]) -> str:
    return _with_period(spell(m.group(0)), m, before_names=True)


__all__ = ["normalize", "say_as"]

_HANDLERS: dict[str, Callable[[re.Match[str]], str | None]] = {
    "url": _url,
    "email": _email,
    "domain": _url,
    "emoji": lambda m: " " if m.group(0)[0] not in "\ufe0e\ufe0f\u20e3" else "",
    "time": _time,
    "hour": _hour,
    "date_slash": _date_slash,
    "date_iso": _date_iso,
    "date_dot": _date_dot,
    "date_md": _date_md,
    "date_dm": _date_dm,
    "phone": lambda m: say.telephone(m.group(0)),
    "money": _money,
    "money_after": _money_after,
    "money_code": _money_code,
    "cents": _cents,
    "percent": _percent,
    "decade": _decade,
    "ordinal": lambda m: say.ordinal(int(m["o_n"])),
    "range": _range,
    "unit": _unit,
    "fraction": _fraction,
    "vulgar": _vulgar,
    "dotted_numbers": _dotted_numbers,
    "number": _number,
    "bare_decimal": lambda m: "point " + say.digits(m["bd"]),
    "roman_keyword": _roman_keyword,
    "roman_name": _roman_name,
    "place_or_title": _place_or_title,
    "number_sign": lambda m: "numbers " if m.group(0).startswith("Nos") else "number ",
    "hashtag": lambda m: "hashtag " + m["ht"],
    "abbreviation": _abbreviation,
    "acronym": _acronym,
    "initial": lambda m: spell(m.group(0)[0]),
    "symbol": lambda m: SYMBOLS[m.group(0)],
    "approximately": lambda m: "about ",
    "emphasis": lambda m: " ",
}

# Several rules share a name (three phone formats); each alternative gets a
# numbered group and this list maps the number back to the rule's handler.
# No rule starts at a space or at a letter inside a word; the guard says so
# up front, so the engine skips the forty alternatives at most positions.
_NOT_MID_WORD = r"(?!\s)(?:(?<![^\W\d_])|(?![^\W\d_]))"
_PATTERN = re.compile(
    _NOT_MID_WORD + "(?:" + "|".join(f"(?P<rule{i}>{pattern})" for i, (_, pattern) in enumerate(_RULES)) + ")"
)
_RULE_NAMES = [name for name, _ in _RULES]


def _dispatch(match: re.Match[str]) -> str | None:
    group = match.lastgroup or ""
    if not group.startswith("rule"):
        # lastgroup names the outermost group that closed last; that is always
        # a ruleN group, because every inner group closes before its rule.
        raise AssertionError(group)
    return _HANDLERS[_RULE_NAMES[int(group[4:])]](match)


def normalize(text: str, language: str = "en") -> Rewritten:
    """Rewrite English text into speakable words; offsets map back via ``Rewritten``."""
    return rewrite_matches(text, _PATTERN, _dispatch)
