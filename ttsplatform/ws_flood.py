"""WebSocket message floods stopped where the frames are parsed, in daphne.

Every frame a client sends is parsed on the event loop that every tenant's
requests share, before any consumer sees it. The stream-input consumer
closes a socket that sends more than ``TTS_WS_MAX_MESSAGES_PER_S`` messages
a second (bursts of twice that), with an error message; but a graceful close
takes a round trip, and a client that keeps writing meanwhile has megabytes
of tiny frames queued that daphne would go on parsing (measured: a 2-socket
whitespace flood stalled ``/healthz`` for 15 s). Here daphne's protocol counts
frames itself and aborts the TCP connection at three times the consumer's
burst: no frame after that is parsed.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings

from .send_bound import protocol_client_address

logger = logging.getLogger(__name__)


def install_daphne_message_bound() -> bool:
    """Patch daphne's WebSocket protocol once; False when daphne is not the server's library."""
    try:
        from daphne import ws_protocol
    except ImportError:
        return False
    protocol = ws_protocol.WebSocketProtocol
    if getattr(protocol, "_tts_message_bound", False):
        return True
    original = protocol.onMessage

    def on_message(self: Any, payload: bytes, is_binary: bool) -> None:
        rate = settings.TTS_WS_MAX_MESSAGES_PER_S
        capacity = 6.0 * rate  # three times the consumer's burst: it speaks first, politely
        now = time.monotonic()
        tokens = min(capacity, getattr(self, "_tts_tokens", capacity) + (now - getattr(self, "_tts_at", now)) * rate)
        self._tts_at = now
        if tokens < 1:
            if not getattr(self, "_tts_dropped", False):
                self._tts_dropped = True
                logger.warning(
                    "WebSocket from %s sent over %d messages/s: aborted", protocol_client_address(self), rate
                )
                self.dropConnection(abort=True)
            return
        self._tts_tokens = tokens - 1
        original(self, payload, is_binary)

    protocol.onMessage = on_message
    protocol._tts_message_bound = True
    return True
