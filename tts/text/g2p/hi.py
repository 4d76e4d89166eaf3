"""Hindi text to Kokoro phonemes with espeak-ng's ``hi`` voice, as Kokoro v1.0 learnt Hindi (misaki's table)."""

from __future__ import annotations

from .espeak import OTHER_LANGUAGES, EspeakG2P, EspeakReading


class HindiG2P(EspeakG2P):
    """Hindi (``hi``): espeak-ng ``hi``, the table Kokoro was trained with. Shared between threads."""

    reading = EspeakReading("hi", OTHER_LANGUAGES)
