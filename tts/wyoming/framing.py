"""Wyoming events on the wire, read with bounds and written with a deadline.

An event is a JSON header line (``type``, optional ``data``, ``data_length``,
``payload_length``), then ``data_length`` bytes of JSON merged into its data,
then ``payload_length`` bytes of binary payload. The ``wyoming`` library's
reader trusts all three lengths; this one does not:

* a header line longer than ``TTS_WYOMING_MAX_EVENT_BYTES`` (the stream
  reader's limit), a data block longer than that, or a payload longer than
  ``TTS_WYOMING_MAX_PAYLOAD_BYTES`` is refused before it is read
  (``event_too_large``);
* once a header arrived, its data and payload must follow within
  ``TTS_WYOMING_EVENT_TIMEOUT_S``: lengths that promise more than is sent
  are ``incomplete_event``; lengths that promise less leave bytes that are no
  header, which is ``invalid_event``;
* a header that is not a JSON object with a string ``type`` and
  non-negative whole lengths is ``invalid_event``.

Each of these ends the connection: past a framing error the stream cannot be
trusted to find the next event. Writing uses the library's encoder, with the
slow reader's bound (``TTS_STREAM_SEND_TIMEOUT_S``) on the wait for the
client to take it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django.conf import settings
from wyoming.event import Event, async_write_event


class FramingError(Exception):
    """What is wrong with the bytes a client sent; ``code`` goes in the ``error`` event."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class IdleTimeout(Exception):
    """No header arrived in the time allowed (the caller decides whether that is idle)."""


class SendTimeout(Exception):
    """The client did not take what was written within ``TTS_STREAM_SEND_TIMEOUT_S``."""


def _length(header: dict[str, Any], name: str, limit: int) -> int:
    value = header.get(name)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FramingError(f"{name}: expected a whole number of bytes, got {value!r}.", code="invalid_event")
    if value > limit:
        setting = "TTS_WYOMING_MAX_PAYLOAD_BYTES" if name == "payload_length" else "TTS_WYOMING_MAX_EVENT_BYTES"
        raise FramingError(f"{name}: {value} bytes; the limit is {limit} ({setting}).", code="event_too_large")
    return value


async def read_event(reader: asyncio.StreamReader, *, wait: float | None) -> Event | None:
    """The next event, None at the end of the stream; ``IdleTimeout`` if no header began within
    ``wait`` seconds, ``FramingError`` for anything out of bounds or malformed."""
    try:
        line = await asyncio.wait_for(reader.readuntil(b"\n"), wait)
    except TimeoutError:
        raise IdleTimeout from None
    except asyncio.IncompleteReadError:
        return None  # the client closed (mid-line or not)
    except asyncio.LimitOverrunError:
        limit = settings.TTS_WYOMING_MAX_EVENT_BYTES
        raise FramingError(
            f"An event header longer than {limit} bytes (TTS_WYOMING_MAX_EVENT_BYTES).", code="event_too_large"
        ) from None
    try:
        header = json.loads(line)
    except ValueError:
        raise FramingError("An event header is not JSON.", code="invalid_event") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str) or not header["type"]:
        raise FramingError("An event header must be a JSON object with a string 'type'.", code="invalid_event")
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise FramingError("data: must be a JSON object.", code="invalid_event")
    data_length = _length(header, "data_length", settings.TTS_WYOMING_MAX_EVENT_BYTES)
    payload_length = _length(header, "payload_length", settings.TTS_WYOMING_MAX_PAYLOAD_BYTES)
    payload: bytes | None = None
    try:
        async with asyncio.timeout(settings.TTS_WYOMING_EVENT_TIMEOUT_S):
            if data_length:
                block = await reader.readexactly(data_length)
                try:
                    more = json.loads(block)
                except ValueError:
                    raise FramingError("The event's data block is not JSON.", code="invalid_event") from None
                if not isinstance(more, dict):
                    raise FramingError("The event's data block must be a JSON object.", code="invalid_event")
                data = {**data, **more}
            if payload_length:
                payload = await reader.readexactly(payload_length)
    except TimeoutError:
        raise FramingError(
            f"The event's data or payload did not arrive within {settings.TTS_WYOMING_EVENT_TIMEOUT_S:g} s "
            "(TTS_WYOMING_EVENT_TIMEOUT_S): its lengths promise more than was sent.",
            code="incomplete_event",
        ) from None
    except asyncio.IncompleteReadError:
        return None  # closed mid-event
    return Event(type=header["type"], data=data, payload=payload)


async def write_event(writer: asyncio.StreamWriter, event: Event) -> None:
    """Send ``event``; ``SendTimeout`` if the client leaves it unread too long, ``ConnectionError``
    if it is gone."""
    if writer.is_closing():
        raise ConnectionResetError("connection closed")
    try:
        async with asyncio.timeout(settings.TTS_STREAM_SEND_TIMEOUT_S):
            await async_write_event(event, writer)
    except TimeoutError:
        raise SendTimeout from None
