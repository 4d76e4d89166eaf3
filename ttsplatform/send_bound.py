"""A slow reader cannot make daphne buffer a whole synthesis: backpressure on send.

daphne hands every ``http.response.body`` and ``websocket.send`` message to
Twisted's transport, which keeps whatever the socket does not take at once in
memory, without bound, and returns at once; the application never waits. So
a client that opens a stream and stops reading made the server synthesize the
whole text and hold all of it (measured in docs/limits.md: a 1,500-character
``pcm_48000`` stream, 7.8 MB, was finished and buffered while the client had
read nothing).

Here daphne's ``Server.handle_reply``, the coroutine the application awaits
for each message it sends, waits after writing while more than
``TTS_STREAM_MAX_UNSENT_BYTES`` are still queued in the connection's transport,
until half of it went out. The stream's producer waits on that ``send`` and
synthesizes at most one segment ahead (``ThreadedStream``), so synthesis
pauses with it. A connection that stays over the bound for
``TTS_STREAM_SEND_TIMEOUT_S`` is aborted: the application sees the disconnect
and the run ends cancelled, the unspoken characters refunded.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from django.conf import settings

from infra.client_address import client_address_from_headers

logger = logging.getLogger(__name__)

_BOUNDED = ("http.response.body", "websocket.send")


def protocol_client_address(protocol: Any) -> str | None:
    """The client's address of a daphne connection (HTTP request or WebSocket), for log lines."""
    peer = getattr(protocol, "client_addr", None)
    headers = getattr(protocol, "requestHeaders", None)
    if headers is not None:
        forwarded = headers.getRawHeaders(b"x-forwarded-for") or []
    else:
        pairs = getattr(protocol, "clean_headers", None) or ()
        forwarded = [value for name, value in pairs if name == b"x-forwarded-for"]
    return client_address_from_headers(peer[0] if peer else None, forwarded)


def tcp_transport(protocol: Any) -> Any | None:
    """The connection's Twisted transport that buffers writes (a ``FileDescriptor``), if found."""
    transport = getattr(protocol, "transport", None)
    if transport is None:  # daphne's HTTP request after the channel let go of it
        transport = getattr(getattr(protocol, "channel", None), "transport", None)
    for _ in range(4):  # through protocol wrappers (e.g. TLS, policies) to the socket's transport
        if transport is None or hasattr(transport, "dataBuffer"):
            return transport
        transport = getattr(transport, "transport", None)
    return None


def unsent_bytes(transport: Any) -> int:
    """Bytes written to the transport that the socket has not taken yet."""
    return len(transport.dataBuffer) - transport.offset + transport._tempDataLen


async def wait_drained(protocol: Any, transport: Any, limit: int) -> None:
    """Wait until at most ``limit // 2`` bytes are queued; abort the connection after the timeout."""
    loop = asyncio.get_running_loop()
    timeout = settings.TTS_STREAM_SEND_TIMEOUT_S
    deadline = loop.time() + timeout
    delay = 0.01
    while unsent_bytes(transport) > limit // 2:
        if transport.disconnected or transport.disconnecting:
            return
        if loop.time() >= deadline:
            logger.warning(
                "client %s read nothing of %d queued bytes for %d s: connection aborted",
                protocol_client_address(protocol),
                unsent_bytes(transport),
                timeout,
            )
            transport.abortConnection()
            return
        await asyncio.sleep(delay)
        delay = min(0.25, delay * 2)


def install_daphne_send_bound() -> bool:
    """Patch daphne's server once; False when daphne is not the server's library."""
    try:
        from daphne import server
    except ImportError:
        return False
    cls = server.Server
    if getattr(cls, "_tts_send_bound", False):
        return True
    original = cls.handle_reply

    async def handle_reply(self: Any, protocol: Any, message: dict[str, Any]) -> None:
        await original(self, protocol, message)
        limit = settings.TTS_STREAM_MAX_UNSENT_BYTES
        if limit <= 0 or message.get("type") not in _BOUNDED:
            return
        transport = tcp_transport(protocol)
        if transport is not None and unsent_bytes(transport) > limit:
            await wait_drained(protocol, transport, limit)

    cls.handle_reply = handle_reply
    cls._tts_send_bound = True
    return True
