"""Grapheme-to-phoneme front ends, one module per language, picked by language code.

Each module (``ja``, ``zh``; ``en``, ``es``, ``fr``, ``hi``, ``it``, ``pt`` through
espeak-ng in ``espeak``; the others beside them) owns its language's
reading rules and offers a class with ``phonemize(text) -> PhonemizedText``
(``base.G2P``). ``g2p_for`` loads a language's front end on first use (some
load dictionaries for a second or more) and shares one instance per process.
To add a language: write its module and name it in ``FRONT_ENDS``.
"""

from __future__ import annotations

import importlib
import threading

from .base import G2P, PUNCTUATION, PhonemeWord, PhonemizedText

__all__ = ["FRONT_ENDS", "G2P", "PUNCTUATION", "PhonemeWord", "PhonemizedText", "g2p_for", "has_g2p"]

#: Language code (ISO 639-1) -> "module:Class" of its front end, under this package.
FRONT_ENDS: dict[str, str] = {
    "en": "en:EnglishG2P",
    "es": "es:SpanishG2P",
    "fr": "fr:FrenchG2P",
    "hi": "hi:HindiG2P",
    "it": "it:ItalianG2P",
    "ja": "ja:JapaneseG2P",
    "pt": "pt:PortugueseG2P",
    "zh": "zh:ChineseG2P",
}

_loaded: dict[str, G2P] = {}
_lock = threading.Lock()


def has_g2p(language: str) -> bool:
    return language in FRONT_ENDS


def g2p_for(language: str) -> G2P:
    """The process's front end for ``language``; ``KeyError`` if there is none."""
    with _lock:
        front_end = _loaded.get(language)
        if front_end is None:
            module_name, _, class_name = FRONT_ENDS[language].partition(":")
            module = importlib.import_module(f"{__name__}.{module_name}")
            front_end = _loaded[language] = getattr(module, class_name)()
        return front_end
