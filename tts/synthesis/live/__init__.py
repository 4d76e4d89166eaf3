"""Live speech: text that arrives while audio is already going out.

Owns the bridge from the pipeline's sync generators to asyncio (``streaming``:
``ThreadedStream``, ``run_stream``, ``stream_synthesis``), the live utterance whose
pieces of text are inputs to the pipeline's stages (``LiveUtterance``), where an incoming
text is cut (``text_buffer``) and the utterance driver every live protocol shares: the
stream-input and multi-context WebSockets (``tts.api.websocket``) and the Wyoming server
(``driver``).

May import: the stages, runs, engine time, alignment and cache rooms of synthesis, and what
they may import. Never an API, consumer or the Wyoming server (they import it).
"""

from tts.synthesis.live.driver import ClientGone, RequestFactory, UtteranceDriver, UtteranceSink
from tts.synthesis.live.text_buffer import DEFAULT_CHUNK_SCHEDULE, TextBuffer, strict_sentence_ends

__all__ = [
    "DEFAULT_CHUNK_SCHEDULE",
    "ClientGone",
    "RequestFactory",
    "TextBuffer",
    "UtteranceDriver",
    "UtteranceSink",
    "strict_sentence_ends",
]
