"""Spanish text to Kokoro phonemes with espeak-ng's ``es`` voice, as Kokoro v1.0 learnt Spanish (misaki's table)."""

from __future__ import annotations

from .espeak import OTHER_LANGUAGES, EspeakG2P, EspeakReading


class SpanishG2P(EspeakG2P):
    """Spanish (``es``): espeak-ng ``es``, the table Kokoro was trained with. Shared between threads."""

    reading = EspeakReading("es", OTHER_LANGUAGES)
