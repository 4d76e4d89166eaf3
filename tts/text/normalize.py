"""Text normalization: the switch (auto/on/off) and the per-language dispatch.

Like ElevenLabs' ``apply_text_normalization``: "auto" normalizes languages
that have a rules module here (English, Chinese, Japanese) and leaves the rest to
espeak-ng, which reads plain numbers itself; "on" additionally spells whole
numbers with num2words for other languages; "off" leaves words as given.
Language rules live in ``tts.text.rules.<code>``, one module per language,
loaded on first use.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from typing import Literal, cast

from .phonemes import phoneme_blocks
from .rewrite import Replacement, Rewritten
from .rules import LanguageRules

Mode = Literal["auto", "on", "off"]
MODES: tuple[Mode, ...] = ("auto", "on", "off")

RULE_MODULES = {
    "en": "tts.text.rules.en",
    "zh": "tts.text.rules.zh",
    "ja": "tts.text.rules.ja",
}
FALLBACK_MODULE = "tts.text.rules.fallback"

# Language codes that mean one we have rules for under another name.
_ALIASES = {"cmn": "zh", "yue": "zh", "eng": "en", "zho": "zh", "chi": "zh", "jpn": "ja"}

# Invisible characters that would reach the phonemizer or break its UTF-8
# encoding (lone surrogates from JSON "\ud800"). Each becomes one space, so
# offsets into the text stay valid.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u200b\u2060\ufeff\u202a-\u202e\u2066-\u2069]"
)
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")
_SPACE_RUNS = re.compile(r"[ \t]{2,}")


def primary_language(code: str | None) -> str | None:
    """Primary language subtag: en-US, en_us and EN give en; cmn gives zh; None stays None."""
    if not code:
        return None
    primary = re.split(r"[-_]", code.strip().lower(), maxsplit=1)[0]
    return _ALIASES.get(primary, primary) or None


def clean_text(text: str) -> str:
    """Replace control and invisible characters by spaces, one for one."""
    text = _INVISIBLE.sub(" ", text)
    return _LINE_SEPARATORS.sub("\n", text)


@cache
def _load(module_path: str) -> LanguageRules:
    return cast(LanguageRules, importlib.import_module(module_path))


def rules_for(language: str | None, mode: Mode) -> LanguageRules | None:
    """The rules module that normalizes ``language`` in ``mode``, if any."""
    if mode not in MODES:
        raise ValueError(f"normalization must be one of {', '.join(MODES)}, not {mode!r}")
    code = primary_language(language) or "en"
    if mode == "off":
        return None
    if code in RULE_MODULES:
        return _load(RULE_MODULES[code])
    return _load(FALLBACK_MODULE) if mode == "on" else None


def normalize_aligned(text: str, *, language: str | None = "en", mode: Mode = "auto") -> Rewritten:
    """Normalized text that still knows which source characters each word came from."""
    rules = rules_for(language, mode)
    if rules is None:
        return Rewritten(text)
    code = primary_language(language) or "en"
    blocks = phoneme_blocks(text)
    if not blocks:
        return rules.normalize(text, code)
    # Phoneme blocks are spoken as written: normalize only the text between them.
    replacements: list[Replacement] = []
    pos = 0
    for start, end in [*blocks, (len(text), len(text))]:
        for rep in rules.normalize(text[pos:start], code).replacements:
            replacements.append(Replacement(rep.start + pos, rep.end + pos, rep.text))
        pos = end
    return Rewritten(text, replacements)


def normalize_text(text: str, *, language: str = "en", mode: Mode = "auto") -> str:
    """Words a reader would say for ``text``: "$3.50" -> "three dollars and fifty cents"."""
    rewritten = normalize_aligned(text, language=language, mode=mode)
    if mode == "off":
        return rewritten.text
    return _SPACE_RUNS.sub(" ", rewritten.text)


def say_as(interpret_as: str, text: str, *, language: str | None = "en", fmt: str | None = None) -> str | None:
    """The SSML ``say-as`` reading of ``text``; None when unsupported.

    Explicit markup applies whatever the normalization mode: the author asked
    for this reading.
    """
    code = primary_language(language) or "en"
    rules = _load(RULE_MODULES.get(code, FALLBACK_MODULE))
    return rules.say_as(interpret_as, text, fmt, code)
