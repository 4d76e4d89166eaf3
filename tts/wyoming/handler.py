"""One Wyoming connection: events in, the utterance driver's audio out.

A protocol adapter and nothing more (the utterance driver owns buffering,
sentence cuts, look-ahead and cancel). Two tasks per connection:

* the reader takes events off the socket within their bounds
  (:mod:`.framing`: what an event does not need is skipped unread), at most
  ``TTS_WYOMING_MAX_EVENTS_PER_S`` (and, over all the connections of its
  address, ``TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS``: :mod:`.address_limits`),
  keeps of each only the fields the server reads (:data:`DATA_FIELDS`), and
  holds them in a read-ahead bounded in events and in bytes
  (:mod:`.read_ahead`); it notices a client that leaves (its run is cancelled
  and refunded) or stays silent past ``TTS_WYOMING_IDLE_TIMEOUT_S``; a framing
  error, or anything else the reader cannot take, is an ``error`` event, logged;
* the processor handles them in order, as wyoming-piper does:
  ``describe`` -> ``info`` (from the per-tenant cache, :mod:`.describe_cache`);
  ``synthesize`` -> ``audio-start``, ``audio-chunk``..., ``audio-stop``;
  ``synthesize-start``, ``synthesize-chunk``..., ``synthesize-stop`` -> the
  audio of each sentence as soon as it is ready, then ``audio-stop`` and
  ``synthesize-stopped``. A ``synthesize`` inside a stream is the full text
  sent for older servers (Home Assistant does so) and is ignored.

Refusals (quota, limits, an unknown voice, a revoked key) are ``error``
events with the pipeline's codes, and end the connection; a misplaced or
unknown event, or one whose strings hold NUL or a lone surrogate
(``invalid_characters``, the check every door runs: ``tts.text.characters``),
gets an ``error`` and the connection goes on.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Coroutine
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped, SynthesizeVoice

from accounts.authentication import MissingScope, api_key_for_scope
from accounts.keys import InvalidApiKey
from accounts.models import ApiKey, Scope
from infra.logging import current_request_id
from tts.audio.formats import pcm_format
from tts.errors import SynthesisError
from tts.models import SynthesisRecord
from tts.synthesis import (
    AlignmentChunk,
    ClientGone,
    SynthesisRequest,
    TextBuffer,
    UtteranceDriver,
    strict_sentence_ends,
)
from tts.text.characters import check_json_strings
from tts.text.errors import TextError

from .address_limits import TokenBucket
from .catalog import choose_voice, tenant_info
from .describe_cache import describe_cache
from .framing import FramingError, IdleTimeout, SendTimeout, read_event, write_bytes, write_event
from .listeners import Listener
from .metrics import REFUSALS
from .read_ahead import ReadAhead

logger = logging.getLogger(__name__)

SOURCE = SynthesisRecord.Source.WYOMING.value
#: Events a TTS server may be sent that it has nothing to answer to.
_IGNORED = ("select-program",)
#: The events whose data the server reads, and the fields it reads: everything else a client
#: sends (the data of ``describe`` and ``ping``, other fields, payloads) is never kept.
DATA_FIELDS: dict[str, tuple[str, ...]] = {
    "synthesize": ("text", "voice"),
    "synthesize-start": ("voice",),
    "synthesize-chunk": ("text",),
}
_VOICE_FIELDS = ("name", "speaker", "language")
#: Stands for a value of the wrong type once the event is compacted (the handler says so, in order).
_MALFORMED = False


class EventError(Exception):
    """A misplaced or malformed event: an ``error`` event, and the connection goes on."""

    def __init__(self, message: str, *, code: str = "invalid_event") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class _AudioSink:
    """The driver's output as Wyoming audio: one ``audio-start`` before the first chunk, chunks of
    ``TTS_WYOMING_SAMPLES_PER_CHUNK`` samples, ``audio-stop`` (and ``synthesize-stopped`` for a stream)."""

    def __init__(self, connection: WyomingConnection, *, streaming: bool) -> None:
        self.connection = connection
        self.streaming = streaming
        self.driver: UtteranceDriver | None = None
        self.rate = 0

    async def audio(self, data: bytes, alignment: AlignmentChunk | None) -> None:
        conn = self.connection
        conn.last_activity = time.monotonic()
        if not self.rate:
            assert self.driver is not None
            self.rate = self.driver.sample_rate or 0
            await conn.send(AudioStart(rate=self.rate, width=2, channels=1).event())
        step = 2 * settings.TTS_WYOMING_SAMPLES_PER_CHUNK
        for offset in range(0, len(data), step):
            chunk = AudioChunk(rate=self.rate, width=2, channels=1, audio=data[offset : offset + step])
            await conn.send(chunk.event())

    async def done(self) -> None:
        conn = self.connection
        if self.rate or not self.streaming:
            await conn.send(AudioStop().event())
        if self.streaming:
            await conn.send(SynthesizeStopped().event())

    async def failed(self, error: SynthesisError) -> None:
        await self.connection.refuse(error)


class WyomingConnection(AsyncEventHandler):
    """A client of one listener: its key's tenant speaks, within its plan."""

    def __init__(
        self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, address: str = ""
    ) -> None:
        super().__init__(reader, writer)
        self.listener = listener
        #: The client's address as the per-address limits count it (``address_limits.client_address``).
        self.address = address
        self.request_id = uuid.uuid4().hex
        self.read_ahead = ReadAhead()
        self.driver: UtteranceDriver | None = None
        self.streaming = False
        self.working = False
        self.closing = False
        self.last_activity = time.monotonic()
        self._events = TokenBucket(settings.TTS_WYOMING_MAX_EVENTS_PER_S)

    # --- the two tasks -----------------------------------------------------

    async def run(self) -> None:
        """Until the client leaves or either task ends the connection (a refusal, a bad event)."""
        token = current_request_id.set(self.request_id)
        tasks = {
            asyncio.create_task(self._read(), name="wyoming reader"),
            asyncio.create_task(self._process(), name="wyoming processor"),
        }
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.closing = True
            if self.driver is not None:
                self.driver.cancel()  # a client gone mid-utterance: cancelled, refunded (no-op once done)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._abort()
            current_request_id.reset(token)

    async def handle_event(self, event: Event) -> bool:  # the library's hook; events go through the read-ahead
        await self.read_ahead.put(_compact(event), 0)
        return True

    async def _read(self) -> None:
        idle = settings.TTS_WYOMING_IDLE_TIMEOUT_S
        while not self.closing:
            await self.read_ahead.wait_for_room()  # full: stop reading (TCP backpressure)
            # While an event is handled (a synthesis under way) the clock waits for it to end.
            wait = idle if self.working else self.last_activity + idle - time.monotonic()
            try:
                received = await read_event(self.reader, wait=max(0.05, wait), wants_data=DATA_FIELDS.__contains__)
            except IdleTimeout:
                if self.working or time.monotonic() - self.last_activity < idle:
                    continue
                await self._refuse_client(
                    f"No event for {idle:g} s (TTS_WYOMING_IDLE_TIMEOUT_S); closing the connection.",
                    "input_timeout_exceeded",
                )
                return
            except FramingError as exc:
                logger.warning(
                    "wyoming port %d: %s from %s: %s", self.listener.port, exc.code, self.address or "?", exc.message
                )
                await self._refuse_client(exc.message, exc.code)
                return
            except (ConnectionError, OSError):
                return
            except Exception:  # anything else the reader cannot take: the client hears why, the log has it
                logger.exception("wyoming port %d: unreadable event from %s", self.listener.port, self.address or "?")
                await self._refuse_client("The event could not be read.", "invalid_event")
                return
            if received is None:
                return
            self.last_activity = time.monotonic()
            if not self._events.take():
                await self._refuse_client(
                    f"More than {settings.TTS_WYOMING_MAX_EVENTS_PER_S} events a second "
                    "(TTS_WYOMING_MAX_EVENTS_PER_S); send text in larger pieces.",
                    "too_many_events",
                )
                return
            if not self.listener.limits.event_allowed(self.address):
                await self._refuse_client(
                    f"More than {settings.TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS} events a second from "
                    "this address (TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS).",
                    "too_many_events",
                )
                return
            await self.read_ahead.put(_compact(received.event), received.size)

    async def _process(self) -> None:
        while not self.closing:
            event = await self.read_ahead.get()
            self.working = True
            try:
                await self._handle(event)
            except EventError as exc:
                await self._say_error(exc.message, exc.code)
            except SynthesisError as exc:
                await self.refuse(exc)
                return
            except (ClientGone, ConnectionError):
                self._close()
                return
            except Exception:
                logger.exception("wyoming event %s failed", event.type)
                await self._fatal("Internal error.", "internal_error")
                return
            finally:
                self.working = False

    # --- events ------------------------------------------------------------

    async def _handle(self, event: Event) -> None:
        kind = event.type
        if event.data:
            try:
                check_json_strings(event.data)
            except TextError as exc:
                raise EventError(f"{kind}: {exc}", code=exc.code) from None
        if Describe.is_type(kind):
            key = await self._describe_key()
            await self.send_bytes(await describe_cache.answer(key.tenant, tenant_info))
        elif Ping.is_type(kind):
            await self.send(Pong().event())  # a ping's data is skipped unread: no text to echo
        elif Synthesize.is_type(kind):
            if self.streaming:
                return  # the full text, sent inside a stream for servers that cannot stream
            text = _text(event.data)
            driver = await self._open(event.data, streaming=False)
            await driver.say(text)
            await driver.wait()
        elif SynthesizeStart.is_type(kind):
            if self.streaming:
                raise EventError("synthesize-start: a stream is already open; send synthesize-stop first.")
            self.driver = await self._open(event.data, streaming=True)
            self.streaming = True
        elif SynthesizeChunk.is_type(kind):
            if not self.streaming or self.driver is None:
                raise EventError("synthesize-chunk: no stream is open; send synthesize-start first.")
            await self.driver.add_text(_text(event.data))
        elif SynthesizeStop.is_type(kind):
            if not self.streaming or self.driver is None:
                raise EventError("synthesize-stop: no stream is open; send synthesize-start first.")
            await self.driver.end()
            await self.driver.wait()
            self.streaming = False
        elif kind in _IGNORED:
            return
        else:
            raise EventError(f"Unknown event type {kind!r} for a text-to-speech server.", code="unknown_event")

    async def _key(self) -> ApiKey:
        """The listener's key, checked now (revoked, expired, suspended tenant, scope)."""
        try:
            key = await database_sync_to_async(api_key_for_scope)(self.listener.api_key, Scope.TTS)
        except InvalidApiKey as exc:
            raise SynthesisError(str(exc), code=exc.code, status=401) from None
        except MissingScope as exc:
            raise SynthesisError(str(exc), code="missing_scope", status=403) from None
        self.listener.checked_key = (time.monotonic(), key)
        return key

    async def _describe_key(self) -> ApiKey:
        """The key for a ``describe``: checked as :meth:`_key` does, at most once per
        ``TTS_LOOKUP_CACHE_S`` per listener (the lookup cache's own freshness), so that a describe
        flood costs no trip to the database thread every listener shares."""
        checked = self.listener.checked_key
        if checked is not None and time.monotonic() - checked[0] < settings.TTS_LOOKUP_CACHE_S:
            return checked[1]
        return await self._key()

    async def _open(self, data: dict[str, Any], *, streaming: bool) -> UtteranceDriver:
        """An utterance for this request's voice (``SynthesisError`` if the key or voice is refused)."""
        key = await self._key()
        requested = _voice(data.get("voice"))
        chosen = await database_sync_to_async(choose_voice)(key.tenant, requested, default_voice_id=self.listener.voice)
        output_format = pcm_format(self.listener.sample_rate)
        request_id = self.request_id

        def request_for(text: str) -> SynthesisRequest:
            return SynthesisRequest(
                tenant=key.tenant,
                api_key=key,
                voice_id=chosen.voice_id,
                text=text,
                output_format=output_format,
                source=SOURCE,
                language=chosen.language,
                request_id=request_id,
                voice_field="voice.name",
                sentence_silence_ms=settings.TTS_WYOMING_SENTENCE_SILENCE_MS,
            )

        sink = _AudioSink(self, streaming=streaming)
        # Sentences cut where wyoming-piper cuts them (Home Assistant's rule): not at ; or :, nor before a nonce.
        buffer = TextBuffer(auto_mode=True, sentence_ends=strict_sentence_ends)
        driver = sink.driver = UtteranceDriver(request_for, sink, buffer=buffer)
        self.driver = driver
        return driver

    # --- out ---------------------------------------------------------------

    async def send(self, event: Event) -> None:
        """Write ``event``; ``ClientGone`` (the socket aborted) if the client left or stopped reading."""
        await self._write(write_event(self.writer, event))

    async def send_bytes(self, data: bytes) -> None:
        """Write events encoded beforehand (``framing.encode_event``), as :meth:`send`."""
        await self._write(write_bytes(self.writer, data))

    async def _write(self, writing: Coroutine[Any, Any, None]) -> None:
        if self.closing:
            writing.close()
            raise ClientGone
        try:
            await writing
        except SendTimeout:
            logger.warning(
                "wyoming client %s read nothing for %d s (TTS_STREAM_SEND_TIMEOUT_S): aborted",
                self.listener.port,
                settings.TTS_STREAM_SEND_TIMEOUT_S,
            )
            self._close()
            raise ClientGone from None
        except (ConnectionError, OSError):
            self._close()
            raise ClientGone from None

    async def refuse(self, error: SynthesisError) -> None:
        """A refusal or failure of a synthesis: its code in an ``error`` event, then the close."""
        await self._fatal(error.message, error.code)

    async def _say_error(self, message: str, code: str) -> None:
        try:
            await self.send(Error(text=message, code=code).event())
        except ClientGone:
            pass

    async def _fatal(self, message: str, code: str) -> None:
        await self._say_error(message, code)
        self._close()

    async def _refuse_client(self, message: str, code: str) -> None:
        """A bound the client passed, or bytes it sent that cannot be read: counted, said, closed."""
        REFUSALS.labels(code).inc()
        await self._fatal(message, code)

    def _close(self) -> None:
        """Stop both tasks: the reader sees the end of the stream, the utterance is cancelled."""
        self.closing = True
        if self.driver is not None:
            self.driver.cancel()
        self.reader.feed_eof()

    def _abort(self) -> None:
        transport = self.writer.transport
        if not transport.is_closing():
            transport.close()


def _compact(event: Event) -> Event:
    """``event`` with only the data the server reads (:data:`DATA_FIELDS`): strings, or
    ``_MALFORMED`` where a value had another type. What a hostile client nested in its data is
    dropped here, before the event waits in the read-ahead."""
    fields = DATA_FIELDS.get(event.type)
    if not fields or not event.data:
        return Event(type=event.type)
    data: dict[str, Any] = {}
    for name in fields:
        if name not in event.data:
            continue
        value = event.data[name]
        if name == "voice" and isinstance(value, dict):
            voice = {k: value[k] for k in _VOICE_FIELDS if value.get(k) is not None}
            data[name] = voice if all(isinstance(v, str) for v in voice.values()) else _MALFORMED
        elif name == "voice":
            data[name] = None if value is None else _MALFORMED
        else:
            data[name] = value if isinstance(value, str) else _MALFORMED
    return Event(type=event.type, data=data)


def _text(data: dict[str, Any]) -> str:
    text = data.get("text")
    if not isinstance(text, str):
        raise EventError("text: must be a string.")
    return text


def _voice(value: object) -> SynthesizeVoice | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise EventError('voice: expected {"name", "speaker"?} or {"language"} as strings.')
    return SynthesizeVoice.from_dict(value)
