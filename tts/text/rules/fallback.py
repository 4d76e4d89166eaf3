"""Numbers for languages without their own rules module, through num2words.

Used only when a request asks for normalization "on" (and for SSML
``say-as``): espeak-ng already reads plain numbers in most languages, so in
"auto" mode such languages are left alone. Only unambiguous tokens are
touched: whole numbers without separators, because "1.000" is a thousand in
German and one in English.
"""

from __future__ import annotations

import re

from num2words import num2words

from ..rewrite import Rewritten, rewrite_matches

_INTEGER = re.compile(r"(?<![\w.,])(?P<n>\d{1,15})(?![\w]|[.,]\d)")


def _spell(value: int, language: str, to: str = "cardinal") -> str | None:
    try:
        return str(num2words(value, lang=language, to=to))
    except (NotImplementedError, OverflowError, ValueError, TypeError):
        # num2words knows fewer languages for ordinals than for cardinals.
        return None


def normalize(text: str, language: str) -> Rewritten:
    """Spell whole numbers in ``language`` if num2words knows it."""
    if _spell(1, language) is None:
        return Rewritten(text)
    return rewrite_matches(text, _INTEGER, lambda m: _spell(int(m["n"]), language))


def say_as(interpret_as: str, text: str, fmt: str | None, language: str) -> str | None:
    kind = interpret_as.lower()
    if kind in ("characters", "spell-out", "verbatim"):
        return " ".join(ch for ch in text if not ch.isspace())
    found = re.fullmatch(r"\s*(\d{1,15})\s*\.?\s*", text)
    if kind in ("cardinal", "number") and found:
        return _spell(int(found.group(1)), language)
    if kind == "ordinal" and found:
        return _spell(int(found.group(1)), language, "ordinal")
    if kind in ("digits", "telephone") and any(ch.isdigit() for ch in text):
        words = [_spell(int(ch), language) or ch for ch in text if ch.isdecimal()]
        return " ".join(words)
    return None
