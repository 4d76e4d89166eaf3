"""Latin words inside Chinese text, read as a Chinese reader says them, in Kokoro's Chinese phonemes.

Chinese text names products, languages and acronyms in Latin letters
("用Python写代码", "AI芯片", "很多App"). misaki's Chinese reader for Kokoro
v1.0 passes them through as raw letters, and English phonemes (espeak-ng's,
in misaki's English symbols) are not what the Chinese voices learned: they
mumble them ("很多App" came back from a recognizer as "很多啊", "PPT" as
"弟弟", intelligibility bench, #35). So a Chinese reader's habits, in the
sounds the Chinese voices know:

- acronyms and short words (at most four capitals, at most three letters, or
  no vowel: PPT, GPU, AI, App, iOS, SQL) are spelled with the letter names
  Mainland speakers use (``P`` pī, ``G`` jī, ``W`` dābuliu), as pinyin;
- a run of capitals after a word is spelled on its own ("ChatGPT": Chat, G P T);
- other words are read in English by espeak-ng (the copy ``piper-tts`` bundles,
  which knows English spelling), and each English sound becomes the nearest
  Mandarin one, as a Chinese speaker says an English word: voiceless stops
  aspirated (``p`` -> ``pʰ``), voiced ones plain (``b`` -> ``p``), ``θ`` -> ``s``,
  ``v`` -> ``w``, diphthongs as Mandarin finals (``aɪ`` -> ``ai``), and a first
  tone on each stressed vowel (primary or secondary) ("Python" ``pʰai→sən``, "Windows" ``wi→ntouʦ``).

The voice keeps its own timbre, and every phoneme is one the Chinese voices were trained on.
"""

# IPA and typographic apostrophes are the point here.
# ruff: noqa: RUF001, RUF002

from __future__ import annotations

import re
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

_initialized = False


def english_ipa(word: str) -> str:
    """espeak-ng's American English IPA for ``word`` (words inside it, as espeak-ng reads them, apart)."""
    global _initialized
    from piper import espeakbridge
    from piper.phonemize_espeak import ESPEAK_DATA_DIR
    from piper.voice import _ESPEAK_PHONEMIZER_LOCK

    # espeak-ng keeps one voice for the whole process and is not thread-safe: piper's own lock
    # (Piper's voices and the espeak front ends hold it too), the voice set for each call.
    with _ESPEAK_PHONEMIZER_LOCK:
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
    return to_kokoro(english_ipa(word.replace("’", "'")))


# Letter names as Mainland speakers say them, in pinyin (one or more syllables each).
LETTER_NAMES: dict[str, tuple[str, ...]] = {
    "a": ("ei1",), "b": ("bi1",), "c": ("xi1",), "d": ("di1",), "e": ("yi1",), "f": ("ai1", "fu5"),
    "g": ("ji1",), "h": ("ei1", "qi1"), "i": ("ai1",), "j": ("jie1",), "k": ("kei1",), "l": ("ai1", "lou5"),
    "m": ("ai1", "mu5"), "n": ("en1",), "o": ("ou1",), "p": ("pi1",), "q": ("qiu1",), "r": ("a1", "er5"),
    "s": ("ai1", "si5"), "t": ("ti1",), "u": ("you1",), "v": ("wei1",), "w": ("da1", "bu5", "liu5"),
    "x": ("ai1", "ke5", "si5"), "y": ("wai1",), "z": ("zei1",),
}  # fmt: skip

# English sounds (misaki's symbols, after ``to_kokoro``) -> the nearest Mandarin ones (Kokoro's Chinese symbols).
_VOWELS = {"I": "ai", "A": "ei", "O": "ou", "W": "au", "Y": "oi", "æ": "ɛ", "ɑ": "a", "ɔ": "o", "ʌ": "a",
           "ɪ": "i", "ʊ": "u", "ɜ": "ə", "ᵊ": "ə", "i": "i", "u": "u", "e": "e", "o": "o", "a": "a", "ə": "ə",
           "ɛ": "ɛ", "ɚ": "ɚ"}  # fmt: skip
_CONSONANTS = {"p": "pʰ", "t": "tʰ", "k": "kʰ", "b": "p", "d": "t", "ɡ": "k", "g": "k", "v": "w", "θ": "s",
               "ð": "t", "z": "ʦ", "ʃ": "ʂ", "ʒ": "ɻ", "h": "x", "ʧ": "ꭧʰ", "ʤ": "ꭧ", "ɹ": "ɻ", "T": "t"}  # fmt: skip
_FIRST_TONE = "→"
_CAPITALS_AFTER_WORD = re.compile(r"(?<=[a-z])(?=[A-Z]{2,}$)")


def spelled(word: str) -> bool:
    """A Chinese reader spells it: an acronym (at most four capitals), a word of at most three
    letters ("App", "iOS"), or one without a vowel ("SQL", "mp")."""
    letters = "".join(ch for ch in word if ch.isalpha())
    return (
        (letters.isupper() and len(letters) <= 4)
        or len(letters) <= 3
        or not any(ch in "aeiouyAEIOUY" for ch in letters)
    )


def _letters(word: str) -> str:
    from .zh_pinyin import pinyin_phonemes

    return "".join(
        pinyin_phonemes(syllable) for ch in word.lower() if ch in LETTER_NAMES for syllable in LETTER_NAMES[ch]
    )


def _in_mandarin(english: str) -> str:
    """English phonemes (misaki's symbols) in the nearest Mandarin sounds, a first tone on stressed vowels."""
    english = english.replace("əɹ", "ɚ").replace("ɜɹ", "ɚ")
    out: list[str] = []
    stressed = False
    for i, ch in enumerate(english):
        if ch in "ˈˌ":
            stressed = True
        elif ch in _VOWELS:
            out.append(_VOWELS[ch])
            following = english[i + 1] if i + 1 < len(english) else ""
            if stressed and following not in _VOWELS:  # the end of the stressed nucleus
                out.append(_FIRST_TONE)
                stressed = False
        else:
            out.append(_CONSONANTS.get(ch, ch))
    return "".join(out)


@lru_cache(maxsize=2048)
def latin_phonemes(word: str) -> str:
    """``word`` (Latin letters, maybe with inner ``'.-&``) as a Chinese reader says it, in Kokoro's
    Chinese phonemes; parts are separated by a space."""
    parts: list[str] = []
    for piece in re.split(r"[.&]", word.replace("’", "'")):
        for part in _CAPITALS_AFTER_WORD.split(piece):
            if not part.strip("'"):
                continue
            parts.append(_letters(part) if spelled(part) else _in_mandarin(english_phonemes(part)))
    return " ".join(p for p in parts if p)
