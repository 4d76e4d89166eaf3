"""Wyoming events on the wire, read with bounds and written with a deadline.

An event is a JSON header line (``type``, optional ``data``, ``data_length``,
``payload_length``), then ``data_length`` bytes of JSON merged into its data,
then ``payload_length`` bytes of binary payload. The ``wyoming`` library's
reader trusts all three lengths and keeps whatever they hold; this one does not:

* a header line longer than ``TTS_WYOMING_MAX_EVENT_BYTES`` (the stream
  reader's limit), a data block longer than that, or a payload longer than
  ``TTS_WYOMING_MAX_PAYLOAD_BYTES`` is refused before it is read
  (``event_too_large``);
* once a header arrived, its data and payload must follow within
  ``TTS_WYOMING_EVENT_TIMEOUT_S``: lengths that promise more than is sent
  are ``incomplete_event``; lengths that promise less leave bytes that are no
  header, which is ``invalid_event``;
* a header that is not a JSON object with a string ``type`` and
  non-negative whole lengths is ``invalid_event``, and so is anything the JSON
  decoder cannot take (30,000 nested ``[`` raised ``RecursionError``, which
  ended the reader with no ``error`` event and nothing logged);
* what no event needs is skipped unread: a payload (no event a client sends a
  TTS server carries audio), and the data of an event whose type needs none
  (``describe``, ``ping``, unknown types): its data block is read in pieces
  and dropped, never parsed or kept (``wants_data``).

Each framing error ends the connection: past one the stream cannot be
trusted to find the next event. Writing encodes as the library does
(:func:`encode_event`, so an answer can be encoded once and sent many times),
with the slow reader's bound (``TTS_STREAM_SEND_TIMEOUT_S``) on the wait for
the client to take it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from wyoming.event import Event
from wyoming.version import __version__ as WYOMING_VERSION

#: A skipped block is read in pieces this large.
_SKIP_PIECE = 16 * 1024


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


@dataclass(frozen=True)
class Received:
    """An event as read, and the bytes it took on the wire (its header line and what was kept)."""

    event: Event
    size: int


def _length(header: dict[str, Any], name: str, limit: int) -> int:
    value = header.get(name)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FramingError(f"{name}: expected a whole number of bytes, got {value!r:.40}.", code="invalid_event")
    if value > limit:
        setting = "TTS_WYOMING_MAX_PAYLOAD_BYTES" if name == "payload_length" else "TTS_WYOMING_MAX_EVENT_BYTES"
        raise FramingError(f"{name}: {value} bytes; the limit is {limit} ({setting}).", code="event_too_large")
    return value


def _json_object(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: deeply nested arrays or objects
        raise FramingError(f"{what} is not JSON (or nests too deep).", code="invalid_event") from None


async def _skip(reader: asyncio.StreamReader, length: int) -> None:
    while length:
        piece = min(length, _SKIP_PIECE)
        await reader.readexactly(piece)
        length -= piece


async def read_event(
    reader: asyncio.StreamReader, *, wait: float | None, wants_data: Callable[[str], bool]
) -> Received | None:
    """The next event, None at the end of the stream; ``IdleTimeout`` if no header began within
    ``wait`` seconds, ``FramingError`` for anything out of bounds or malformed. The data of an
    event whose type ``wants_data`` refuses is skipped unread (the event comes with no data)."""
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
    header = _json_object(line, "An event header")
    if not isinstance(header, dict) or not isinstance(header.get("type"), str) or not header["type"]:
        raise FramingError("An event header must be a JSON object with a string 'type'.", code="invalid_event")
    kind: str = header["type"][:100]
    data_length = _length(header, "data_length", settings.TTS_WYOMING_MAX_EVENT_BYTES)
    payload_length = _length(header, "payload_length", settings.TTS_WYOMING_MAX_PAYLOAD_BYTES)
    keep = wants_data(kind)
    data = header.get("data") if keep else None
    del header  # what a hostile header held goes now, not when the event is handled
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FramingError("data: must be a JSON object.", code="invalid_event")
    size = len(line)
    try:
        async with asyncio.timeout(settings.TTS_WYOMING_EVENT_TIMEOUT_S):
            if data_length and keep:
                more = _json_object(await reader.readexactly(data_length), "The event's data block")
                if not isinstance(more, dict):
                    raise FramingError("The event's data block must be a JSON object.", code="invalid_event")
                data = {**data, **more}
                size += data_length
            elif data_length:
                await _skip(reader, data_length)
            if payload_length:
                await _skip(reader, payload_length)
    except TimeoutError:
        raise FramingError(
            f"The event's data or payload did not arrive within {settings.TTS_WYOMING_EVENT_TIMEOUT_S:g} s "
            "(TTS_WYOMING_EVENT_TIMEOUT_S): its lengths promise more than was sent.",
            code="incomplete_event",
        ) from None
    except asyncio.IncompleteReadError:
        return None  # closed mid-event
    return Received(Event(type=kind, data=data), size)


def encode_event(event: Event) -> bytes:
    """``event`` as the ``wyoming`` library writes it: a header line with ``version`` and the
    lengths, the data block (UTF-8 JSON), the payload."""
    header: dict[str, Any] = {"type": event.type, "version": WYOMING_VERSION}
    # backslashreplace: a lone surrogate (in an error message quoting a client) is written as its
    # JSON escape instead of failing the write.
    block = json.dumps(event.data, ensure_ascii=False).encode(errors="backslashreplace") if event.data else b""
    if block:
        header["data_length"] = len(block)
    if event.payload:
        header["payload_length"] = len(event.payload)
    line = json.dumps(header, ensure_ascii=False).encode(errors="backslashreplace") + b"\n"
    return line + block + (event.payload or b"")


async def write_bytes(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Send encoded events; ``SendTimeout`` if the client leaves them unread too long,
    ``ConnectionError`` if it is gone."""
    if writer.is_closing():
        raise ConnectionResetError("connection closed")
    writer.write(data)
    try:
        async with asyncio.timeout(settings.TTS_STREAM_SEND_TIMEOUT_S):
            await writer.drain()
    except TimeoutError:
        raise SendTimeout from None


async def write_event(writer: asyncio.StreamWriter, event: Event) -> None:
    """Send ``event`` (:func:`write_bytes`)."""
    await write_bytes(writer, encode_event(event))
