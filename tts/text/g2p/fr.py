"""French text to Kokoro phonemes with espeak-ng's ``fr`` voice, as Kokoro v1.0 learnt French (misaki's table)."""

from __future__ import annotations

from .espeak import OTHER_LANGUAGES, EspeakG2P, EspeakReading


class FrenchG2P(EspeakG2P):
    """French (``fr``): espeak-ng ``fr``, the table Kokoro was trained with. Shared between threads."""

    reading = EspeakReading("fr", OTHER_LANGUAGES)
