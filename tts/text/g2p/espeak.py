"""espeak-ng read into Kokoro's phonemes, the way Kokoro was trained, with each word's characters.

Kokoro-82M learnt its non-English languages from espeak-ng's IPA (misaki's
``espeak.py``: phonemizer's espeak backend with stress marks and a tie
between the letters of one phoneme, then a fixed table of replacements:
``t͡ʃ`` -> ``ʧ``, ``a͡ɪ`` -> ``I``...). This module does the same with the
espeak-ng that ``piper-tts`` bundles (its library and data, already loaded
for Piper's voices): no other package, no other data. The language modules
beside it (``es``, ``fr``, ``hi``, ``it``, ``pt``, ``en``) name their
espeak-ng voice and their replacements.

espeak-ng gives phonemes per clause, with its punctuation; a word's
characters are found by reading each whitespace-separated word of the text
alone (cached) to count the words it becomes (``1234`` is five), and those
counts must add up to the words of the clause reading, else the words are
left unplaced (``char_start`` -1: timestamps then fall back to positions).
Reading clauses whole keeps what a word alone would lose: liaison in
French, weak forms ("a" is ``ɐ``, not the letter's name), stress.

espeak-ng is not thread-safe: every call holds piper's own lock, so Piper's
voices and these front ends never run it at once.
"""

# IPA is the point of this module: its look-alike letters are deliberate.
# ruff: noqa: RUF001, RUF002, RUF003

from __future__ import annotations

import ctypes
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from .base import PUNCTUATION, PhonemeWord, PhonemizedText

#: Kokoro v1.0's phoneme vocabulary (the model's config): anything else is dropped before it.
KOKORO_VOCAB = frozenset(
    ';:,.!?—…"()“” \u0303ʣʥʦʨᵝꭧAIOQSTWYᵊabcdefhijklmnopqrstuvwxyz'
    "ɑɐɒæβɔɕçɖðʤəɚɛɜɟɡɥɨɪʝɯɰŋɳɲɴøɸθœɹɾɻʁɽʂʃʈʧʊʋʌɣɤχʎʒʔˈˌːʰʲ↓→↗↘ᵻ"
)

# espeak-ng's phoneme output: IPA (bit 1) with a tie (bit 7) written as "^" (bits 8-23) inside a
# phoneme of several letters, as phonemizer's tie="^" asks and misaki's tables expect.
_TIE = "^"
_PHONEME_MODE = 0x02 | 0x80 | (ord(_TIE) << 8)
_CHARS_UTF8 = 1
# Clause terminators (espeak-ng's translate.h): the punctuation a clause ended with.
_CLAUSE_PUNCTUATION = {
    40 | 0x00000000 | 0x00080000: ".",
    20 | 0x00001000 | 0x00040000: ",",
    40 | 0x00002000 | 0x00080000: "?",
    45 | 0x00003000 | 0x00080000: "!",
    30 | 0x00000000 | 0x00040000: ":",
    30 | 0x00001000 | 0x00040000: ";",
}
# espeak-ng's language-switch marks around a foreign word: "(en)fˈeɪsbʊk(es)".
_SWITCH = re.compile(r"\([a-z]{2,3}(?:-[a-z0-9]+)?\)")


class _Espeak:
    """piper's espeak-ng (its ``espeakbridge`` library), called through ctypes for the tie mode."""

    def __init__(self) -> None:
        from piper import espeakbridge
        from piper.phonemize_espeak import ESPEAK_DATA_DIR
        from piper.voice import _ESPEAK_PHONEMIZER_LOCK

        self.lock = _ESPEAK_PHONEMIZER_LOCK
        with self.lock:
            espeakbridge.initialize(str(ESPEAK_DATA_DIR))
        lib = ctypes.CDLL(espeakbridge.__file__)
        self._to_phonemes = lib.espeak_TextToPhonemesWithTerminator
        self._to_phonemes.restype = ctypes.c_char_p
        self._to_phonemes.argtypes = [
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_int),
        ]
        self._set_voice = espeakbridge.set_voice

    def clauses(self, voice: str, text: str) -> list[tuple[str, str]]:
        """``text`` in ``voice``'s reading: (phonemes, the punctuation that ended the clause) per clause."""
        encoded = text.encode("utf-8")  # kept alive while espeak-ng walks through it
        data = ctypes.c_char_p(encoded)
        pointer = ctypes.pointer(data)
        terminator = ctypes.c_int(0)
        out: list[tuple[str, str]] = []
        with self.lock:
            self._set_voice(voice)
            while data.value:
                raw = self._to_phonemes(pointer, _CHARS_UTF8, _PHONEME_MODE, ctypes.byref(terminator))
                phonemes = (raw or b"").decode("utf-8", errors="ignore")
                out.append((phonemes, _CLAUSE_PUNCTUATION.get(terminator.value & 0x000FFFFF, "")))
        return out


_espeak: _Espeak | None = None
_espeak_lock = threading.Lock()


def _engine() -> _Espeak:
    global _espeak
    with _espeak_lock:
        if _espeak is None:
            _espeak = _Espeak()
        return _espeak


@dataclass(frozen=True)
class EspeakReading:
    """How one language reads espeak-ng's IPA into Kokoro's phonemes."""

    #: espeak-ng's voice (piper's data: ``es``, ``fr``, ``hi``, ``it``, ``pt-br``, ``en-us``).
    voice: str
    #: Replacements on the tied IPA, longest first as applied.
    table: tuple[tuple[str, str], ...]

    def convert(self, ipa: str) -> str:
        for old, new in self.table:
            ipa = ipa.replace(old, new)
        return ipa


# misaki's EspeakG2P table (version 1.0: what Kokoro v1.0 was trained with).
OTHER_LANGUAGES = (
    ("a^ɪ", "I"),
    ("a^ʊ", "W"),
    ("d^z", "ʣ"),
    ("d^ʒ", "ʤ"),
    ("e^ɪ", "A"),
    ("o^ʊ", "O"),
    ("ə^ʊ", "Q"),
    ("s^s", "S"),
    ("t^s", "ʦ"),
    ("t^ʃ", "ʧ"),
    ("ɔ^ɪ", "Y"),
    (_TIE, ""),
    ("-", ""),
)


class EspeakG2P:
    """A language read by espeak-ng into Kokoro's phonemes, with word spans (``base.G2P``)."""

    reading: EspeakReading

    def phonemize(self, text: str) -> PhonemizedText:
        if not text.strip():
            return PhonemizedText("", [])
        parts: list[str] = []
        for ipa, punctuation in _engine().clauses(self.reading.voice, _clean(text)):
            spoken = self._kokoro(ipa)
            if spoken:
                parts.append(spoken + punctuation)
        phonemes = re.sub(r"\s+", " ", " ".join(parts)).strip()
        return PhonemizedText(phonemes, self._words(phonemes, text))

    def _kokoro(self, ipa: str) -> str:
        ipa = _SWITCH.sub("", unicodedata.normalize("NFC", ipa))
        return in_vocabulary(self.reading.convert(ipa)).strip()

    def _words(self, phonemes: str, text: str) -> list[PhonemeWord]:
        """Spoken words (runs between spaces and punctuation), each with the characters it was read from."""
        runs = _runs(phonemes)
        tokens = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        counts = [_word_count(self.reading, text[a:b]) for a, b in tokens]
        if sum(counts) != len(runs):
            return [PhonemeWord(start, end, -1, -1) for start, end in runs]
        words: list[PhonemeWord] = []
        index = 0
        for (a, b), count in zip(tokens, counts, strict=True):
            if not count:
                continue
            first, last = runs[index], runs[index + count - 1]
            a, b = _letters(text, a, b)
            words.append(PhonemeWord(first[0], last[1], a, b))
            index += count
        return words


def _runs(phonemes: str) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    start = -1
    for i, ch in enumerate([*phonemes, " "]):
        if ch in PUNCTUATION:
            if start >= 0:
                runs.append((start, i))
                start = -1
        elif start < 0:
            start = i
    return runs


@lru_cache(maxsize=8192)
def _word_count(reading: EspeakReading, token: str) -> int:
    """How many spoken words espeak-ng makes of ``token`` read alone (``1234``: five; ``—``: none)."""
    if not any(ch.isalnum() for ch in token):
        return 0
    spoken = " ".join(ipa for ipa, _ in _engine().clauses(reading.voice, _clean(token)))
    return len(_runs(in_vocabulary(reading.convert(_SWITCH.sub("", spoken)))))


def in_vocabulary(phonemes: str) -> str:
    """``phonemes`` in Kokoro's symbols: a letter the vocabulary lacks is written decomposed when its parts
    are in it (a nasal vowel: ``ĩ`` -> ``i`` and the combining tilde, as misaki writes it), else dropped.

    Composed, Portuguese and Hindi lost their nasal vowels whole: "vinte e cinco" was read ``vˈnʧɪʲ
    isˈŋkw`` and heard as "venti e senku" (intelligibility bench, #35)."""
    out: list[str] = []
    for ch in phonemes:
        if ch in KOKORO_VOCAB:
            out.append(ch)
            continue
        parts = unicodedata.normalize("NFD", ch)
        if all(part in KOKORO_VOCAB for part in parts):
            out.append(parts)
    return "".join(out)


def _letters(text: str, start: int, end: int) -> tuple[int, int]:
    """A token's span without the punctuation around it ("«Hola," -> "Hola")."""
    while start < end and not _spelt(text[start]):
        start += 1
    while end > start and not _spelt(text[end - 1]):
        end -= 1
    return start, end


def _spelt(ch: str) -> bool:
    # Letters, digits, and the vowel signs and marks of scripts such as Devanagari ("नमस्ते").
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def _clean(text: str) -> str:
    # espeak-ng reads some symbols aloud that a reader would not ("_", "*", "#"), and brackets as words.
    return re.sub(r"[_*#<>{}\[\]|~^`]", " ", text)
