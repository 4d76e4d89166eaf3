"""Latin words inside Chinese text, read in English: espeak-ng's American English in Kokoro's phonemes.

Chinese text names products, languages and acronyms in Latin letters
("用Python写代码", "AI芯片"). misaki's Chinese reader for Kokoro v1.0 passes
them through as raw letters (most of which are not even in Kokoro's
vocabulary, and the rest are not the sounds the letters make). Here each
word goes to espeak-ng (the copy ``piper-tts`` bundles, already loaded for
Piper's voices), which knows English spelling and spells acronyms itself
("CPU" as three letter names, "NASA" as a word), and its IPA is written the
way misaki writes English for Kokoro (``EspeakFallback``'s table:
diphthongs as one symbol, ``aɪ`` -> ``I``, ``dʒ`` -> ``ʤ``, flaps as ``T``),
so the model hears the English it learned. The Chinese voice keeps its own
timbre: the words come out in English with a Chinese speaker's voice.
"""

# IPA and typographic apostrophes are the point here.
# ruff: noqa: RUF001, RUF002

from __future__ import annotations

import re
import threading
from functools import lru_cache

# espeak-ng's IPA -> misaki's American English symbols, longest first (misaki.espeak.EspeakFallback,
# without the tie marks: piper's espeak bridge writes diphthongs as two letters).
_E2M = sorted(
    {
        "ʔn̩": "ʔn",
        "aɪ": "I",
        "aʊ": "W",
        "dʒ": "ʤ",
        "eɪ": "A",
        "e": "A",
        "tʃ": "ʧ",
        "ɔɪ": "Y",
        "oʊ": "O",
        "ʲ": "",
        "ɚ": "əɹ",
        "r": "ɹ",
        "x": "k",
        "ç": "k",
        "ɐ": "ə",
        "ɬ": "l",
        "\u0303": "",
        "ɜːɹ": "ɜɹ",
        "ɜː": "ɜɹ",
        "ɪə": "iə",
        "ː": "",
    }.items(),
    key=lambda kv: -len(kv[0]),
)
_E2M_PATTERN = re.compile("|".join(re.escape(old) for old, _ in _E2M))
_E2M_MAP = dict(_E2M)
_SYLLABIC = re.compile(r"(\S)\u0329")

#: A Latin word: letters, with inner apostrophes, hyphens, dots or ampersands ("don't", "Wi-Fi", "Node.js", "AT&T").
LATIN_WORD = re.compile(r"[A-Za-z]+(?:['’.\-&][A-Za-z]+)*")

_lock = threading.Lock()
_initialized = False


def _espeak_ipa(word: str) -> str:
    global _initialized
    from piper import espeakbridge
    from piper.phonemize_espeak import ESPEAK_DATA_DIR

    # espeak-ng keeps one voice for the whole process; set it for each call, under one lock.
    with _lock:
        if not _initialized:
            espeakbridge.initialize(str(ESPEAK_DATA_DIR))
            _initialized = True
        espeakbridge.set_voice("en-us")
        clauses = espeakbridge.get_phonemes(word)
    return " ".join(re.sub(r"\([^)]*\)", "", phonemes).strip() for phonemes, _, _ in clauses).strip()


def to_kokoro(ipa: str) -> str:
    """espeak-ng's American English IPA in misaki's symbols (Kokoro's English)."""
    out = _E2M_PATTERN.sub(lambda m: _E2M_MAP[m.group(0)], ipa)
    out = _SYLLABIC.sub(r"ᵊ\1", out).replace("\u0329", "")
    return out.replace("o", "ɔ").replace("ɾ", "T").replace("ʔ", "t")


@lru_cache(maxsize=2048)
def english_phonemes(word: str) -> str:
    """``word`` (Latin letters) read in American English, in Kokoro's phonemes; words inside it
    (espeak-ng reads "iPhone" as two) are separated by a space."""
    return to_kokoro(_espeak_ipa(word.replace("’", "'")))
