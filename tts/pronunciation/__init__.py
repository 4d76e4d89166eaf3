"""Pronunciation dictionaries: a tenant's lexicons (``dictionaries``: PLS and JSON rules,
versions, defaults, bounds) and how a request's text is rewritten with them
(``apply``: locators resolved, rules applied, billed characters, uses recorded).

May import: the catalogue, models, accounts, text and ``tts.errors``. Never synthesis,
jobs, usage or realtime.
"""

from tts.pronunciation.apply import AppliedDictionaries, billed_characters, dictionaries_for, record_dictionary_uses
from tts.pronunciation.dictionaries import (
    dictionary_change,
    dictionary_create,
    dictionary_create_from_pls,
    dictionary_get,
    latest_version,
    rules_from_pls,
    version_get,
)

__all__ = [
    "AppliedDictionaries",
    "billed_characters",
    "dictionaries_for",
    "dictionary_change",
    "dictionary_create",
    "dictionary_create_from_pls",
    "dictionary_get",
    "latest_version",
    "record_dictionary_uses",
    "rules_from_pls",
    "version_get",
]
