"""Italian text to Kokoro phonemes with espeak-ng's ``it`` voice, as Kokoro v1.0 learnt Italian (misaki's table)."""

from __future__ import annotations

from .espeak import OTHER_LANGUAGES, EspeakG2P, EspeakReading


class ItalianG2P(EspeakG2P):
    """Italian (``it``): espeak-ng ``it``, the table Kokoro was trained with. Shared between threads."""

    reading = EspeakReading("it", OTHER_LANGUAGES)
