"""Real-time protocols: the WebSocket consumers (ElevenLabs' ``stream-input`` and
multi-context sockets, the playground, job progress) and the utterance driver they share
with the Wyoming server (``driver``: text in as it arrives, audio out as it is made,
``text_buffer``: where an incoming text is cut).

The entry point (this module) exports the driver side only: the consumers are above the
API layer and are named by ``tts.routing`` directly.

May import (the driver): synthesis, jobs, the catalogue, models and accounts.
"""

from tts.realtime.driver import ClientGone, UtteranceDriver
from tts.realtime.text_buffer import DEFAULT_CHUNK_SCHEDULE, TextBuffer, strict_sentence_ends

__all__ = [
    "DEFAULT_CHUNK_SCHEDULE",
    "ClientGone",
    "TextBuffer",
    "UtteranceDriver",
    "strict_sentence_ends",
]
