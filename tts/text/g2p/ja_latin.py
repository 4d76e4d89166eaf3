"""Latin words inside Japanese text, read as a Japanese reader says them: in katakana.

OpenJTalk's dictionary knows many English words (Google グーグル, Excel
エクセル, iPhone アイフォン) and spells the rest letter by letter: "Python"
came out ピーワイティーエイチオーエヌ, "GitHub" ジーアイティーエイチユービー
(intelligibility bench, #35), where a Japanese reader says パイソン and
ギットハブ. So before the tagger reads a text, each Latin word it does not
know and a reader would not spell is written in katakana:

- a word OpenJTalk reads (its reading is not the letters' names) is left to it;
- acronyms (at most four capitals, or no vowel: USB, NHK, SQL) are left to be spelled;
- a run of capitals after a word is spelled on its own ("ChatGPT": Chat, then G P T);
- any other word is read in English by espeak-ng (the copy ``piper-tts``
  bundles, through ``zh_latin.english_ipa``), its phonemes written in CMU's
  ARPAbet, and ``e2k``'s phoneme-to-katakana model (numpy only, its weights in
  its wheel) writes the katakana: "Python" パイソン, "GitHub" ギットハブ,
  "Slack" スラック.

``rewrite_latin`` returns a ``Rewritten``, so every word's span still points
into the caller's text.
"""

# Japanese and IPA text: full-width forms and look-alike letters are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

from ..rewrite import Rewritten, rewrite_matches
from .zh_latin import english_ipa

#: A Latin word (letters with inner apostrophes), and the capitals run that ends one ("ChatGPT").
LATIN_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")
_CAPITALS_AFTER_WORD = re.compile(r"(?<=[a-z])(?=[A-Z]{2,}$)")
_KATAKANA = re.compile(r"[\u30a0-\u30ff]+")

# espeak-ng's American IPA -> ARPAbet (CMU's symbols, what e2k's model reads), longest first.
_ARPABET_VOWELS = {
    "aɪ": "AY", "aʊ": "AW", "eɪ": "EY", "oʊ": "OW", "ɔɪ": "OY", "ɜː": "ER", "ɜ": "ER", "ɚ": "ER", "ɑː": "AA",
    "ɑ": "AA", "æ": "AE", "ʌ": "AH", "ə": "AH", "ɐ": "AH", "ɔː": "AO", "ɔ": "AO", "ɛ": "EH", "ɪ": "IH",
    "ᵻ": "IH", "iː": "IY", "i": "IY", "ʊ": "UH", "uː": "UW", "u": "UW", "o": "OW", "e": "EH", "a": "AA",
}  # fmt: skip
_ARPABET_CONSONANTS = {
    "tʃ": "CH", "dʒ": "JH", "b": "B", "d": "D", "ð": "DH", "f": "F", "ɡ": "G", "g": "G", "h": "HH", "j": "Y",
    "k": "K", "l": "L", "m": "M", "n": "N", "ŋ": "NG", "p": "P", "ɹ": "R", "r": "R", "s": "S", "ʃ": "SH",
    "t": "T", "θ": "TH", "v": "V", "w": "W", "z": "Z", "ʒ": "ZH", "ɾ": "T", "ʔ": "T", "x": "K",
}  # fmt: skip
_IPA_UNITS = sorted({**_ARPABET_VOWELS, **_ARPABET_CONSONANTS}, key=len, reverse=True)

_model: Any = None
_model_lock = threading.Lock()


def arpabet(ipa: str) -> list[str]:
    """espeak-ng's IPA for one word in ARPAbet, vowels with their stress (1 primary, 2 secondary, 0 none)."""
    out: list[str] = []
    stress = "0"
    i = 0
    while i < len(ipa):
        ch = ipa[i]
        if ch in "ˈˌ":
            stress = "1" if ch == "ˈ" else "2"
            i += 1
            continue
        unit = next((u for u in _IPA_UNITS if ipa.startswith(u, i)), None)
        if unit is None:
            i += 1  # length marks, syllabic marks, palatalization: no ARPAbet symbol of their own
            continue
        if unit in _ARPABET_VOWELS:
            symbol = _ARPABET_VOWELS[unit]
            # An unstressed schwa as a secondary-stressed AH: the model then writes the vowel katakana
            # loans take from the spelling (Python パイソン, not パイテン): 20 of 30 common names exactly
            # as written in Japanese, against 19 (Safari and Notion go wrong instead).
            out.append(symbol + ("2" if symbol == "AH" and stress == "0" else stress))
            stress = "0"
            # An r-coloured vowel's r is in ER already ("ɜːɹ").
            if unit in ("ɜː", "ɜ") and ipa.startswith("ɹ", i + len(unit)):
                i += 1
        else:
            out.append(_ARPABET_CONSONANTS[unit])
        i += len(unit)
    return out


def _katakana_model() -> Any:
    global _model
    with _model_lock:
        if _model is None:
            from e2k import P2K

            _model = P2K()
        return _model


def _spelled_by_openjtalk(word: str) -> bool:
    """OpenJTalk does not know ``word``: it reads it as the names of its letters (pyopenjtalk-plus
    tags such a word a filler, ``フィラー``, with the letters' names as its reading)."""
    import pyopenjtalk

    nodes = pyopenjtalk.run_frontend(word)
    return bool(nodes) and all(node["pos"] == "フィラー" for node in nodes)


def spelled(word: str) -> bool:
    """A Japanese reader spells it: an acronym (at most four capitals), a word of one or two
    letters, or one without a vowel."""
    return (word.isupper() and len(word) <= 4) or len(word) <= 2 or not any(ch in "aeiouyAEIOUY" for ch in word)


@lru_cache(maxsize=2048)
def katakana(word: str) -> str | None:
    """``word`` as a Japanese reader says it, in katakana; ``None``: leave it as it is (OpenJTalk
    knows it, or it is an acronym that it spells)."""
    import pyopenjtalk

    parts = [p for p in _CAPITALS_AFTER_WORD.split(word.replace("’", "'")) if p]
    out: list[str] = []
    changed = False
    for part in parts:
        letters = part.replace("'", "")
        if not letters or spelled(letters):
            out.append(part)
            continue
        if not _spelled_by_openjtalk(letters):
            # A word OpenJTalk knows: its own reading, written out when the word was cut from others
            # ("Chat" of "ChatGPT", which it would spell whole).
            reading = str(pyopenjtalk.g2p(letters, kana=True)) if len(parts) > 1 else ""
            if _KATAKANA.fullmatch(reading):
                out.append(reading)
                changed = True
            else:
                out.append(part)
            continue
        phonemes = [p for w in english_ipa(letters).split() for p in arpabet(w)]
        reading = _katakana_model()(phonemes) if phonemes else ""
        if not reading:
            out.append(part)
            continue
        out.append(reading)
        changed = True
    return "".join(out) if changed else None


def rewrite_latin(text: str) -> Rewritten:
    """``text`` with its Latin words in katakana where a Japanese reader would say them so."""
    return rewrite_matches(text, LATIN_WORD, lambda match: katakana(match.group()))
