"""Brazilian Portuguese text to Kokoro phonemes with espeak-ng's ``pt-br`` voice (misaki's table).

Kokoro v1.0 learnt Portuguese from Brazilian speakers read this way.
"""

from __future__ import annotations

from .espeak import OTHER_LANGUAGES, EspeakG2P, EspeakReading


class PortugueseG2P(EspeakG2P):
    """Brazilian Portuguese (``pt``): espeak-ng ``pt-br``, the table Kokoro was trained with. Shared."""

    reading = EspeakReading("pt-br", OTHER_LANGUAGES)
