"""SSML ``say-as`` readings for English: characters, digits, dates, phones.

The author has said how to read the text, so these never guess; text that
does not fit the requested interpretation gets None and is read normally.
"""

# This module reads real-world text: its look-alike punctuation (full-width,
# curly quotes, minus signs, dashes) is deliberate.
# ruff: noqa: RUF001

from __future__ import annotations

import re

from . import en_numbers as say
from .en_words import spell


def _characters(text: str) -> str:
    names = []
    for ch in text:
        if ch.isdigit() and ch.isascii():
            names.append(say.DIGIT_WORDS[int(ch)])
        elif ch.isalpha():
            names.append(spell(ch))
    return " ".join(names)


def _parse_number(text: str) -> tuple[str, str | None, bool] | None:
    found = re.fullmatch(r"\s*([-−])?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s*", text)
    if found is None:
        return None
    return found.group(2), found.group(3), bool(found.group(1))


def _say_as_date(text: str, fmt: str | None) -> str | None:
    fields = re.findall(r"\d{1,4}|[A-Za-z]{1,12}", text)
    if not fmt:
        fmt = "ymd" if re.fullmatch(r"\s*\d{4}-\d{1,2}-\d{1,2}\s*", text) else "mdy"[: len(fields)]
    fmt = fmt.lower()
    if len(fields) != len(fmt) or not set(fmt) <= set("ymd"):
        return None
    values = dict(zip(fmt, fields, strict=True))
    try:
        month = int(values["m"]) if values.get("m", "").isdigit() else None
        if month is None and "m" in values:
            month = say.month_number(values["m"])
        day = int(values["d"]) if "d" in values else None
    except ValueError:
        return None
    year_text = values.get("y")
    if year_text is not None and not year_text.isdigit():
        return None
    if month is None:
        if day is not None:
            return say.ordinal(day)
        return say.year(int(year_text)) if year_text else None
    return say.date(month, day, year_text)


def say_as(interpret_as: str, text: str, fmt: str | None = None, language: str = "en") -> str | None:
    """The SSML ``say-as`` readings; None when this interpretation is unknown
    or the text does not fit it (the caller then speaks the text normally)."""
    kind = interpret_as.lower()
    if kind in ("characters", "spell-out", "verbatim"):
        return _characters(text)
    if kind == "digits":
        return say.digits(text) if any(ch.isdigit() for ch in text) else None
    if kind in ("cardinal", "number"):
        parsed = _parse_number(text)
        return None if parsed is None else say.number(parsed[0], parsed[1], negative=parsed[2])
    if kind == "ordinal":
        found = re.fullmatch(r"\s*(\d{1,15})(?:st|nd|rd|th)?\.?\s*", text)
        return say.ordinal(int(found.group(1))) if found else None
    if kind == "date":
        return _say_as_date(text, fmt)
    if kind == "telephone":
        return say.telephone(text) if any(ch.isdigit() for ch in text) else None
    if kind == "time":
        found = re.fullmatch(r"\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp]\.?[Mm]\.?)?\s*", text)
        if found is None:
            return None
        seconds = int(found.group(3)) if found.group(3) else None
        return say.clock_time(int(found.group(1)), int(found.group(2)), seconds, found.group(4))
    return None
