"""Per-language normalization rules, one module per language.

A language module offers two functions, matching ``LanguageRules``:
``normalize(text, language)`` returns a ``Rewritten`` (spoken words plus the
map back to the source) and ``say_as(interpret_as, text, fmt, language)``
returns the SSML ``say-as`` reading or None. To add a language, write the
module and name it in ``tts.text.normalize.RULE_MODULES``.
"""

from __future__ import annotations

from typing import Protocol

from ..rewrite import Rewritten


class LanguageRules(Protocol):
    def normalize(self, text: str, language: str) -> Rewritten: ...

    def say_as(self, interpret_as: str, text: str, fmt: str | None, language: str) -> str | None: ...
