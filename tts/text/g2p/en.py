"""English text to Kokoro phonemes: espeak-ng's ``en-us`` voice through misaki's English table.

Kokoro v1.0 learnt English from misaki's own English G2P (its gold and silver
dictionaries, a spaCy tagger for the words whose reading depends on their
part of speech, espeak-ng for the words in neither). That G2P needs spaCy
and its ``en_core_web_sm`` model, which spaCy publishes outside PyPI (the
names on PyPI are other people's re-uploads), and spaCy loads (or downloads)
it at run time: nothing this platform may fetch or run. So English goes to
espeak-ng, as misaki's own fallback sends its unknown words: the same
espeak-ng that Piper's voices use, its IPA mapped into misaki's symbols
(``eɪ`` -> ``A``, ``oʊ`` -> ``O``, the flap ``ɾ`` -> ``T``, ...). The
result is General American; British voices (``bf_``, ``bm_``) read it
with their own timbre and an American reading of the words. Expect an
espeak-like reading of names and rare words, never a letter spelt out.
"""

# IPA is the point of this module: its look-alike letters are deliberate.
# ruff: noqa: RUF001, RUF002

from __future__ import annotations

import re

from .espeak import EspeakG2P, EspeakReading

# misaki's EspeakFallback (American English), longest keys first; then its American rules.
_TABLE = (
    ("ʔˌn\u0329", "ʔn"),
    ("ʔn\u0329", "ʔn"),
    ("a^ɪ", "I"),
    ("a^ʊ", "W"),
    ("d^ʒ", "ʤ"),
    ("e^ɪ", "A"),
    ("t^ʃ", "ʧ"),
    ("ɔ^ɪ", "Y"),
    ("ə^l", "ᵊl"),
    ("ʲo", "jo"),
    ("ʲə", "jə"),
    ("ʲ", ""),
    ("ɚ", "əɹ"),
    ("e", "A"),
    ("r", "ɹ"),
    ("x", "k"),
    ("ç", "k"),
    ("ɐ", "ə"),
    ("ɬ", "l"),
    ("\u0303", ""),
)
_AMERICAN = (
    ("o^ʊ", "O"),
    ("ɜːɹ", "ɜɹ"),
    ("ɜː", "ɜɹ"),
    ("ɪə", "iə"),
    ("ː", ""),
    ("o", "ɔ"),  # espeak-ng before 1.52
    ("ɾ", "T"),
    ("ʔ", "t"),
)


class _EnglishReading(EspeakReading):
    def convert(self, ipa: str) -> str:
        ipa = super().convert(ipa)
        ipa = re.sub(r"(\S)\u0329", r"ᵊ\1", ipa).replace("\u0329", "")
        for old, new in _AMERICAN:
            ipa = ipa.replace(old, new)
        return ipa.replace("^", "")


class EnglishG2P(EspeakG2P):
    """English (``en``) for Kokoro: espeak-ng ``en-us`` in misaki's symbols. Shared between threads."""

    reading = _EnglishReading("en-us", _TABLE)
