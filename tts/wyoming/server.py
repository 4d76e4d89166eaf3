"""The Wyoming server process: listeners, who may connect, how many, and a clean stop.

Each listener accepts TCP connections (the stream reader's line limit is
``TTS_WYOMING_MAX_EVENT_BYTES``). A client outside the listener's allowed
networks is closed at once, without a word: the protocol has no credentials,
so the network is the lock. Past ``TTS_WYOMING_MAX_CONNECTIONS`` open
connections, or ``TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS`` from its address
(:mod:`.address_limits`), a client gets an ``error`` (``too_many_connections``)
and the close. SIGTERM or SIGINT stops accepting, lets running syntheses finish for
``TTS_SHUTDOWN_DRAIN_S`` (new ones are refused), then cancels the rest with
refunds.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
from collections.abc import Callable

from channels.db import database_sync_to_async
from django.conf import settings
from wyoming.error import Error

from tts.synthesis import drain

from .address_limits import client_address
from .framing import write_event
from .handler import WyomingConnection
from .listeners import Listener
from .metrics import CONNECTIONS, REFUSALS

logger = logging.getLogger(__name__)


async def _turn_away(writer: asyncio.StreamWriter, message: str) -> None:
    REFUSALS.labels("too_many_connections").inc()
    try:
        await write_event(writer, Error(text=message, code="too_many_connections").event())
    except Exception:  # the client is turned away either way
        pass
    writer.transport.close()


async def _accept(
    listener: Listener, tasks: set[asyncio.Task[None]], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    peer = writer.get_extra_info("peername")
    address = client_address(str(peer[0])) if isinstance(peer, tuple) and peer else ""
    if not listener.allows(address):
        logger.warning("wyoming port %d: refused %s (not in its allowed networks)", listener.port, address or "?")
        writer.transport.abort()
        return
    if listener.connections >= settings.TTS_WYOMING_MAX_CONNECTIONS:
        limit = settings.TTS_WYOMING_MAX_CONNECTIONS
        await _turn_away(
            writer, f"More than {limit} connections are open (TTS_WYOMING_MAX_CONNECTIONS); try again later."
        )
        return
    if not listener.limits.connect(address):
        limit = settings.TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS
        await _turn_away(
            writer,
            f"This address has {limit} connections open (TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS); close one first.",
        )
        return
    task = asyncio.current_task()
    if task is not None:
        tasks.add(task)
    listener.connections += 1
    CONNECTIONS.inc()
    try:
        await WyomingConnection(listener, reader, writer, address=address).run()
    except asyncio.CancelledError:
        pass
    except Exception:
        logger.exception("wyoming connection failed")
    finally:
        listener.connections -= 1
        listener.limits.disconnect(address)
        CONNECTIONS.dec()
        if task is not None:
            tasks.discard(task)


async def listen(listeners: list[Listener], tasks: set[asyncio.Task[None]]) -> list[asyncio.Server]:
    """Open every listener's port on the running loop; each connection's task is kept in ``tasks``
    while it runs. A listener on port 0 gets a free port, written back on it (the tests' servers)."""
    servers = []
    for listener in listeners:
        server = await asyncio.start_server(
            functools.partial(_accept, listener, tasks),
            host=listener.host,
            port=listener.port,
            limit=settings.TTS_WYOMING_MAX_EVENT_BYTES,
        )
        servers.append(server)
        if not listener.port:
            listener.port = int(server.sockets[0].getsockname()[1])
    return servers


async def serve(listeners: list[Listener], *, on_ready: Callable[[list[Listener]], None] | None = None) -> None:
    """Serve until SIGTERM or SIGINT, then drain and stop."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
    tasks: set[asyncio.Task[None]] = set()
    servers = await listen(listeners, tasks)
    if on_ready is not None:
        on_ready(listeners)
    await stop.wait()
    for server in servers:
        server.close()
    timeout = settings.TTS_SHUTDOWN_DRAIN_S
    logger.warning("wyoming: stopping; draining for up to %d s, refusing new syntheses", timeout)
    left = await database_sync_to_async(drain, thread_sensitive=False)(timeout)
    if left:
        logger.warning("wyoming: drain ran out: %d syntheses stop at their next segment, refunded", left)
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
