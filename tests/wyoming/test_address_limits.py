"""The per-address limits and the read-ahead on their own (no server): the bounds the server tests
meet through sockets, checked at their edges."""

from __future__ import annotations

import asyncio

from django.test import override_settings
from wyoming.event import Event

from tts.wyoming.address_limits import AddressLimits, client_address
from tts.wyoming.read_ahead import EVENT_OVERHEAD_BYTES, ReadAhead


@override_settings(TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS=2, TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS=5)
def test_an_address_has_its_connections_and_one_event_bucket_for_all_of_them() -> None:
    limits = AddressLimits()
    assert limits.connect("10.0.0.1") and limits.connect("10.0.0.1")
    assert not limits.connect("10.0.0.1")  # the third
    assert limits.connect("10.0.0.2")  # another address
    assert [limits.event_allowed("10.0.0.1") for _ in range(11)] == [True] * 10 + [False]  # bursts of 2 x 5
    limits.disconnect("10.0.0.1")
    limits.disconnect("10.0.0.1")
    assert limits.connections("10.0.0.1") == 0
    # Reconnecting does not refill the bucket: it outlives the connections until it is full again.
    assert limits.connect("10.0.0.1") and not limits.event_allowed("10.0.0.1")
    assert limits.event_allowed("10.0.0.2")


def test_addresses_are_counted_as_ips() -> None:
    assert client_address("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_address("fe80::1%eth0") == "fe80::1"
    assert client_address("not an address") == "not an address"


@override_settings(TTS_WYOMING_MAX_PENDING_BYTES=10_000, TTS_WYOMING_MAX_PENDING_EVENTS=64)
def test_the_read_ahead_stops_reading_at_its_bytes() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        ahead = ReadAhead()
        await ahead.put(Event("synthesize-chunk", {"text": "a" * 4000}), 4000)
        await ahead.put(Event("synthesize-chunk", {"text": "b" * 4000}), 4000)
        held = ahead.held_bytes
        waiting = asyncio.create_task(ahead.wait_for_room())
        await asyncio.sleep(0.05)
        full = not waiting.done()  # 8,000 + 2 x overhead >= 10,000: the reader waits
        first = await ahead.get()
        await asyncio.wait_for(waiting, 1)  # room again once one was taken
        return full, first.data["text"][0] == "a", held

    full, in_order, held = asyncio.run(scenario())
    assert full and in_order and held == 8000 + 2 * EVENT_OVERHEAD_BYTES
