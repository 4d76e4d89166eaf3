"""Events read ahead of the one being handled, bounded in events and in bytes.

While a synthesis runs, a client may send its next events (Home Assistant
sends a stream's chunks as the LLM writes them). The reader keeps them here
until the processor takes them, and stops reading (TCP backpressure) while
``TTS_WYOMING_MAX_PENDING_EVENTS`` events or ``TTS_WYOMING_MAX_PENDING_BYTES``
are held. The bytes are those each event took on the wire (its header line and
the data kept; payloads and unwanted data are never kept, ``framing``) plus a
fixed cost per event for its objects, so what is held in memory follows the
bound: a count alone let 64 events of 64 KiB headers and data blocks, parsed
(``[{},{},...]`` grows 24 times), hold gigabytes. One event may pass the byte
bound: the reader waits for room before it reads, not after.
"""

from __future__ import annotations

import asyncio
from collections import deque

from django.conf import settings
from wyoming.event import Event

#: Bytes counted for each held event beyond its wire size: the Event, its dict, the queue entry.
EVENT_OVERHEAD_BYTES = 1024


class ReadAhead:
    def __init__(self) -> None:
        self._items: deque[tuple[Event, int]] = deque()
        self._bytes = 0
        self._changed = asyncio.Condition()

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def _full(self) -> bool:
        return (
            len(self._items) >= settings.TTS_WYOMING_MAX_PENDING_EVENTS
            or self._bytes >= settings.TTS_WYOMING_MAX_PENDING_BYTES
        )

    async def wait_for_room(self) -> None:
        """Until another event may be read."""
        async with self._changed:
            await self._changed.wait_for(lambda: not self._full())

    async def put(self, event: Event, size: int) -> None:
        async with self._changed:
            self._items.append((event, size + EVENT_OVERHEAD_BYTES))
            self._bytes += size + EVENT_OVERHEAD_BYTES
            self._changed.notify_all()

    async def get(self) -> Event:
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._items))
            event, size = self._items.popleft()
            self._bytes -= size
            self._changed.notify_all()
            return event
