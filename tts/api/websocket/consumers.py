"""WebSocket consumers: ElevenLabs' ``/v1/text-to-speech/{voice_id}/stream-input`` and
``multi-stream-input`` (``MultiStreamInputConsumer``, in ``tts.api.websocket.multi_context``).

One connection speaks one utterance (protocol in docs/websocket.md). The first
message initializes (``{"text": " "}`` plus ``voice_settings``,
``generation_config.chunk_length_schedule`` and the key as ``xi_api_key``);
text then arrives in pieces as an LLM writes it, is buffered by the chunk
schedule and spoken through the one pipeline by the utterance driver
(``tts.synthesis.live.driver``, shared with Wyoming); ``flush``
forces out the buffer and ``{"text": ""}`` ends: the last audio, then
``{"isFinal": true}`` and a normal close.

Who is speaking: an API key (``xi-api-key`` header, ``?xi-api-key=`` for
browsers, or ``xi_api_key`` in the first message) with the ``tts`` scope, or,
with no key, a dashboard session whose ``current_tenant_id`` the user is a
member of (source ``playground``). Errors are JSON ``{"message", "error",
"code"}``; ``code`` is the close code when the connection cannot go on. A
message with NUL or a lone surrogate in any string is refused whole
(``invalid_characters`` naming the field), like any malformed message.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from accounts.authentication import MissingScope, api_key_for_scope, raw_key_from_message, raw_key_from_scope
from accounts.keys import InvalidApiKey, api_key_still_valid
from accounts.models import ApiKey, Scope, Tenant
from accounts.tenancy import websocket_session_tenant
from tts.api.elevenlabs import VoiceSettingsSerializer
from tts.api.websocket.protocol import (
    CLOSE_INTERNAL,
    CLOSE_POLICY,
    CLOSE_TOO_BIG,
    MAX_MESSAGE_CHARS,
    ProtocolError,
    StreamOptions,
    parse_chunk_schedule,
    parse_options,
)
from tts.catalogue import voice_get
from tts.errors import SynthesisError
from tts.synthesis import (
    AlignmentChunk,
    RequestFactory,
    SynthesisRequest,
    TextBuffer,
    UtteranceDriver,
    UtteranceSink,
    websocket_alignment,
)
from tts.text.characters import check_json_strings
from tts.text.errors import TextError

logger = logging.getLogger(__name__)


def protocol_error(exc: SynthesisError) -> ProtocolError:
    close = CLOSE_INTERNAL if exc.status >= 500 else CLOSE_TOO_BIG if exc.status == 413 else CLOSE_POLICY
    return ProtocolError(exc.message, code=exc.code, field=exc.field, close_code=close)


class StreamInputConsumer(AsyncWebsocketConsumer):
    """Text in as it is written, audio out as it is synthesized."""

    options: StreamOptions

    async def connect(self) -> None:
        self.voice_id: str = self.scope["url_route"]["kwargs"]["voice_id"]
        self.tenant: Tenant | None = None
        self.api_key: ApiKey | None = None
        self.source = "websocket"
        self.initialized = False
        self.ended = False
        self.closing = False
        self.voice_settings: dict[str, Any] = {}
        self.dictionary_locators: list[dict[str, Any]] = []
        self.schedule: tuple[int, ...] = ()
        self.driver: UtteranceDriver | None = None
        self.watchdog: asyncio.Task[None] | None = None
        self.last_activity = time.monotonic()
        self._tokens = 2.0 * settings.TTS_WS_MAX_MESSAGES_PER_S
        self._tokens_at = time.monotonic()
        # Accept first, so that what is wrong can be said in a message before the close.
        await self.accept()
        try:
            self.options = parse_options(self.scope.get("query_string", b""))
            raw_key = raw_key_from_scope(self.scope)
            if raw_key:
                await self._authenticate_key(raw_key)
        except ProtocolError as exc:
            await self.fail(exc)
            return
        self.watchdog = asyncio.create_task(self._watch_inactivity())

    async def disconnect(self, code: int) -> None:
        self.closing = True
        if self.driver is not None:
            self.driver.cancel()  # no-op once the utterance has finished
        if self.watchdog is not None and self.watchdog is not asyncio.current_task():
            self.watchdog.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.closing:
            return
        if not self._message_allowed():
            await self.fail(
                ProtocolError(
                    f"More than {settings.TTS_WS_MAX_MESSAGES_PER_S} messages a second "
                    "(TTS_WS_MAX_MESSAGES_PER_S); send text in larger pieces.",
                    code="too_many_messages",
                    close_code=CLOSE_POLICY,
                )
            )
            return
        try:
            await self._receive(text_data, bytes_data)
        except ProtocolError as exc:
            await self.fail(exc)
        except SynthesisError as exc:
            await self.fail(protocol_error(exc))

    # --- messages -----------------------------------------------------------

    async def _receive(self, text_data: str | None, bytes_data: bytes | None) -> None:
        if text_data is None:
            raise ProtocolError(
                "Binary frames are not accepted: send JSON text messages.",
                code="invalid_message",
                close_code=None if self.initialized else CLOSE_POLICY,
            )
        if len(text_data) > MAX_MESSAGE_CHARS:
            raise ProtocolError(
                f"Message of {len(text_data)} characters; the limit is {MAX_MESSAGE_CHARS}.",
                code="message_too_large",
                close_code=CLOSE_TOO_BIG,
            )
        fatal = None if self.initialized else CLOSE_POLICY
        try:
            msg = json.loads(text_data)
        except ValueError:
            raise ProtocolError("Message is not valid JSON.", code="invalid_json", close_code=fatal) from None
        if not isinstance(msg, dict):
            raise ProtocolError("Message must be a JSON object.", code="invalid_message", close_code=fatal)
        try:
            check_json_strings(msg)  # the platform's one character check (REST and Wyoming run it too)
        except TextError as exc:
            raise ProtocolError(str(exc), code=exc.code, field=exc.field, close_code=fatal) from None
        if not self.initialized:
            await self._initialize(msg)
        else:
            await self._text(msg)

    async def _initialize(self, msg: dict[str, Any]) -> None:
        """The first message: the one connection set-up of stream-input and multi-stream-input.

        Its text checked (``_check_opening_text``); voice settings, dictionaries and the chunk
        schedule read (a policy close naming the field); the key or the dashboard session
        authenticated unless the query or a header did; the voice looked up; then what the
        connection speaks is opened (``_open``).
        """
        self._check_opening_text(msg)
        self.voice_settings = self._voice_settings(msg.get("voice_settings"))
        locators = msg.get("pronunciation_dictionary_locators") or []
        if not isinstance(locators, list) or not all(isinstance(x, dict) for x in locators):
            raise ProtocolError(
                "pronunciation_dictionary_locators: must be a list of objects with pronunciation_dictionary_id.",
                code="invalid_message",
                field="pronunciation_dictionary_locators",
                close_code=CLOSE_POLICY,
            )
        self.dictionary_locators = locators
        config = msg.get("generation_config")
        if config is not None and not isinstance(config, dict):
            raise ProtocolError(
                "generation_config: must be an object.",
                code="invalid_message",
                field="generation_config",
                close_code=CLOSE_POLICY,
            )
        self.schedule = parse_chunk_schedule((config or {}).get("chunk_length_schedule"))
        if self.tenant is None:
            raw_key = raw_key_from_message(msg)
            if raw_key:
                await self._authenticate_key(raw_key)
            else:
                await self._authenticate_session()
        assert self.tenant is not None
        if await database_sync_to_async(voice_get)(self.tenant, self.voice_id) is None:
            raise ProtocolError(
                f"A voice with voice_id '{self.voice_id}' was not found.",
                code="voice_not_found",
                field="voice_id",
                close_code=CLOSE_POLICY,
            )
        self.initialized = True
        await self._open(msg)

    def _check_opening_text(self, msg: dict[str, Any]) -> None:
        """stream-input's first message only initializes: it carries ``"text": " "``."""
        text = msg.get("text")
        if not isinstance(text, str):
            raise ProtocolError(
                'text: the first message initializes the stream and must carry "text": " ".',
                code="invalid_message",
                field="text",
                close_code=CLOSE_POLICY,
            )
        if text.strip():
            raise ProtocolError(
                'text: text arrived before the stream was initialized; send {"text": " "} with the '
                "settings first, then the text.",
                code="init_required",
                field="text",
                close_code=CLOSE_POLICY,
            )

    async def _open(self, msg: dict[str, Any]) -> None:
        """stream-input's one utterance, for the text that follows."""
        self.driver = self._driver(_StreamSink(self), self.voice_settings)

    def _driver(self, sink: UtteranceSink, voice_settings: dict[str, Any], *, label: str = "") -> UtteranceDriver:
        """An utterance of this connection: its requests (``_request_factory``), its text cut on
        the connection's chunk schedule."""
        return UtteranceDriver(
            self._request_factory(voice_settings),
            sink,
            buffer=TextBuffer(self.schedule, auto_mode=self.options.auto_mode),
            label=label,
        )

    def _voice_settings(self, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        serializer = VoiceSettingsSerializer(data=value)
        if not isinstance(value, dict) or not serializer.is_valid():
            errors = serializer.errors if isinstance(value, dict) else {"": ["must be an object"]}
            name, problems = next(iter(errors.items()))
            field = f"voice_settings.{name}" if name and name != "non_field_errors" else "voice_settings"
            raise ProtocolError(
                f"{field}: {problems[0]}", code="invalid_voice_settings", field=field, close_code=CLOSE_POLICY
            )
        return {k: v for k, v in serializer.validated_data.items() if v is not None}

    async def _text(self, msg: dict[str, Any]) -> None:
        assert self.driver is not None
        if self.ended:
            raise ProtocolError("The stream has ended; no more text is accepted.", code="stream_ended")
        text = msg.get("text")
        if not isinstance(text, str):
            raise ProtocolError("text: must be a string.", code="invalid_message", field="text")
        flush = msg.get("flush", False)
        if not isinstance(flush, bool):
            raise ProtocolError("flush: must be true or false.", code="invalid_message", field="flush")
        if text.strip() or flush or text == "":
            # Only text to speak (or a flush or the end) counts as activity: keep-alive
            # whitespace does not keep a connection open past its inactivity timeout.
            self.last_activity = time.monotonic()
        if text == "":
            self.ended = True
            await self.driver.end()
            return
        await self.driver.add_text(text, flush=flush)

    def _message_allowed(self) -> bool:
        """A token bucket per connection: a flood of tiny frames costs the event loop every
        tenant shares, so past the rate (with a burst of as many again) the socket is closed."""
        rate = settings.TTS_WS_MAX_MESSAGES_PER_S
        now = time.monotonic()
        self._tokens = min(2.0 * rate, self._tokens + (now - self._tokens_at) * rate)
        self._tokens_at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    # --- synthesis ----------------------------------------------------------

    def _request_factory(self, voice_settings: dict[str, Any]) -> RequestFactory:
        """The pipeline's request for an utterance of this connection (its first piece of text)."""
        tenant, api_key, options = self.tenant, self.api_key, self.options
        assert tenant is not None

        def request_for(text: str) -> SynthesisRequest:
            return SynthesisRequest(
                tenant=tenant,
                api_key=api_key,
                voice_id=self.voice_id,
                text=text,
                output_format=options.output_format,
                source=self.source,
                # The playground's Stop keeps (and bills) what was spoken, for its download.
                keep_cancelled_audio=self.source == "playground",
                model_id=options.model_id,
                speed=float(voice_settings.get("speed") or 1.0),
                language=options.language_code,
                enable_logging=options.enable_logging,
                normalization=options.apply_text_normalization,
                settings=voice_settings,
                pronunciation_dictionary_locators=self.dictionary_locators,
                request_id=self.scope.get("request_id", ""),
                alignment_from_start=options.sync_alignment,
            )

        return request_for

    async def _send_audio(self, data: bytes, alignment: AlignmentChunk | None) -> None:
        # Both fields carry the original text's track, as they always have.
        aligned = websocket_alignment(alignment) if self.options.alignment else None
        if self.options.binary_audio:
            await self.send(bytes_data=data)
            await self._send_json(
                {
                    "audio": None,
                    "audioBytes": len(data),
                    "isFinal": None,
                    "normalizedAlignment": aligned,
                    "alignment": aligned,
                }
            )
            return
        await self._send_json(
            {
                "audio": base64.b64encode(data).decode("ascii"),
                "isFinal": None,
                "normalizedAlignment": aligned,
                "alignment": aligned,
            }
        )

    # --- authentication -----------------------------------------------------

    async def _authenticate_key(self, raw_key: str) -> None:
        try:
            key = await database_sync_to_async(api_key_for_scope)(raw_key, Scope.TTS)
        except InvalidApiKey as exc:
            raise ProtocolError(str(exc), code=exc.code, close_code=CLOSE_POLICY) from None
        except MissingScope as exc:
            raise ProtocolError(str(exc), code="missing_scope", close_code=CLOSE_POLICY) from None
        self.api_key, self.tenant, self.source = key, key.tenant, "websocket"

    async def _authenticate_session(self) -> None:
        tenant = await database_sync_to_async(websocket_session_tenant)(self.scope)
        if tenant is None:
            raise ProtocolError(
                "Missing API key: send it as 'xi-api-key' (header, query or first message).",
                code="missing_api_key",
                close_code=CLOSE_POLICY,
            )
        self.tenant, self.api_key, self.source = tenant, None, "playground"

    # --- plumbing -----------------------------------------------------------

    async def _watch_inactivity(self) -> None:
        timeout = self.options.inactivity_timeout
        recheck = settings.TTS_WS_AUTH_RECHECK_S
        next_check = time.monotonic() + recheck
        while not self.closing:
            now = time.monotonic()
            remaining = self.last_activity + timeout - now
            if remaining <= 0:
                await self.fail(
                    ProtocolError(
                        f"No text received for {timeout} seconds (inactivity_timeout); closing the connection.",
                        code="input_timeout_exceeded",
                        close_code=CLOSE_POLICY,
                    )
                )
                return
            if now >= next_check:
                next_check = now + recheck
                reason = await database_sync_to_async(self._still_authorized)()
                if reason is not None:
                    await self.fail(reason)
                    return
            await asyncio.sleep(max(0.05, min(remaining, next_check - now)))

    def _still_authorized(self) -> ProtocolError | None:
        """A revoked or expired key, or a suspended tenant, ends an open socket (checked every few seconds)."""
        if self.api_key is not None:
            invalid = api_key_still_valid(self.api_key.pk)
            if invalid is not None:
                return ProtocolError(str(invalid), code=invalid.code, close_code=CLOSE_POLICY)
        elif self.tenant is not None and websocket_session_tenant(self.scope) is None:
            return ProtocolError(
                "The dashboard session behind this connection ended.", code="session_ended", close_code=CLOSE_POLICY
            )
        return None

    async def fail(self, exc: ProtocolError) -> None:
        """Tell the client what went wrong; close if the connection cannot go on."""
        await self._send_json(exc.as_message())
        if exc.close_code is not None:
            if self.driver is not None:
                self.driver.cancel()
            await self._close(exc.close_code)

    async def _send_json(self, payload: dict[str, Any]) -> None:
        if not self.closing:
            await self.send(text_data=json.dumps(payload, separators=(",", ":")))

    async def _close(self, code: int) -> None:
        if not self.closing:
            self.closing = True
            await self.close(code=code)


class _StreamSink:
    """The stream-input connection's side of its utterance driver: audio messages, then
    ``{"isFinal": true}`` and a normal close."""

    def __init__(self, consumer: StreamInputConsumer) -> None:
        self.consumer = consumer

    async def audio(self, data: bytes, alignment: AlignmentChunk | None) -> None:
        self.consumer.last_activity = time.monotonic()
        await self.consumer._send_audio(data, alignment)

    async def done(self) -> None:
        if self.consumer.closing:
            return
        await self.consumer._send_json({"isFinal": True})
        await self.consumer._close(1000)

    async def failed(self, error: SynthesisError) -> None:
        await self.consumer.fail(protocol_error(error))


# --- multi-stream-input ------------------------------------------------------
# WebSocket consumer: ElevenLabs' ``/v1/text-to-speech/{voice_id}/multi-stream-input``.
#
# One connection, up to ``MAX_CONTEXTS`` open contexts (agent frameworks use one
# per turn, for barge-in). Every message names its ``context_id``; a new id
# opens a context with its own utterance driver (text buffer and, once it has
# text, its own ``SynthesisRun``, history record, alignment and billing).
# Audio messages carry ``contextId``.
#
# - ``{"text": " ", "context_id", "voice_settings"?, "generation_config"?, "xi_api_key"?}``:
#   the first message authenticates (as on stream-input); any message may open a context;
# - ``{"text": "...", "context_id"}``: text for that context (``flush: true`` speaks its buffer now);
# - ``{"text": "", "context_id"}``: keep-alive (resets the inactivity timer, nothing else);
# - ``{"context_id", "close_context": true}``: that context speaks what was sent to it to the end,
#   then ``{"isFinal": true, "contextId"}``; with ``"immediate": true`` it stops where it is and the
#   characters not spoken are refunded (the run's cancel), ``isFinal`` at once;
# - ``{"close_socket": true}``: every open context speaks what it holds and ends, each with
#   ``{"isFinal": true, "contextId"}``, then the connection closes normally.
#
# Contexts still speaking after their close count towards the limit; a new context stops the
# oldest of them, and with none closing a sixth is refused with ``max_active_contexts_exceeded``;
# the connection and the other contexts go on.
