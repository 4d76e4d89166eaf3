"""ElevenLabs' ``/v1/text-to-speech/{voice_id}/multi-stream-input``: up to ``MAX_CONTEXTS``
utterances on one connection, each a ``context_id`` with its own driver, spoken and closed
independently (protocol in docs/websocket.md). The connection set-up (``connect``: the query's
options and key; ``_initialize``: the first message's settings, key or session and voice), the
message checks and the making of a driver are ``StreamInputConsumer``'s
(``tts.api.websocket.consumers``); this class says only what the first message opens.

``close_context`` ends a context as ElevenLabs does: the text sent to it is spoken to its end,
then comes its ``isFinal`` (what pipecat and LiveKit Agents wait for after
``flush`` + ``close_context``). A closing context still speaking counts towards
``MAX_CONTEXTS``; opening one more stops the oldest of them (a client that opened a new
context after closing one has moved on: barge-in). ``"immediate": true`` on ``close_context``
(this platform's) stops a context at once, as closing the socket stops them all."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Any

from tts.api.websocket.consumers import StreamInputConsumer, protocol_error
from tts.api.websocket.protocol import (
    CLOSE_POLICY,
    ProtocolError,
)
from tts.errors import SynthesisError
from tts.synthesis import AlignmentChunk, UtteranceDriver, websocket_alignment

#: Open contexts per connection, as ElevenLabs allows.
MAX_CONTEXTS = 5


@dataclass(eq=False)
class Context:
    id: str
    driver: UtteranceDriver


class _ContextSink:
    """One context's side of its utterance driver: audio with ``contextId``, then its
    ``{"isFinal": true, "contextId"}`` (and the close, once the socket is ending and none is left)."""

    def __init__(self, consumer: MultiStreamInputConsumer, context_id: str) -> None:
        self.consumer = consumer
        self.context_id = context_id
        self.driver: UtteranceDriver | None = None  # set once made: a reopened id is another context

    async def audio(self, data: bytes, alignment: AlignmentChunk | None) -> None:
        self.consumer.last_activity = time.monotonic()
        await self.consumer._send_context_audio(self.context_id, data, alignment)

    async def done(self) -> None:
        await self.consumer._context_done(self.context_id, self.driver)

    async def failed(self, error: SynthesisError) -> None:
        await self.consumer.fail(protocol_error(error))


class MultiStreamInputConsumer(StreamInputConsumer):
    """Several independent utterances over one connection, each named by its context id."""

    async def connect(self) -> None:
        self.contexts: dict[str, Context] = {}
        #: Closed by the client and still speaking what was sent to them, oldest first.
        self.closing_contexts: list[Context] = []
        self.socket_ending = False
        await super().connect()

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        for ctx in self._all_contexts():
            self._stop(ctx)

    def _all_contexts(self) -> list[Context]:
        return [*self.contexts.values(), *self.closing_contexts]

    def _stop(self, ctx: Context) -> None:
        ctx.driver.cancel()  # a no-op once it finished

    async def fail(self, exc: ProtocolError) -> None:
        await super().fail(exc)
        if exc.close_code is not None:
            for ctx in self._all_contexts():
                self._stop(ctx)

    # --- messages -----------------------------------------------------------

    def _check_opening_text(self, msg: dict[str, Any]) -> None:
        """The first message may open a context with text already (none is an initializing " ")."""
        if not isinstance(msg.get("text", " "), str):
            raise ProtocolError(
                "text: must be a string.", code="invalid_message", field="text", close_code=CLOSE_POLICY
            )

    async def _open(self, msg: dict[str, Any]) -> None:
        """No utterance of the connection's own: the first message is a context's, as any other."""
        await self._text(msg)

    async def _text(self, msg: dict[str, Any]) -> None:
        if msg.get("close_socket") is True:
            await self._close_socket()
            return
        if self.socket_ending:
            raise ProtocolError("The connection is closing; no more text is accepted.", code="stream_ended")
        context_id = msg.get("context_id", msg.get("contextId"))
        if not isinstance(context_id, str) or not context_id.strip() or len(context_id) > 100:
            raise ProtocolError(
                "context_id: every message must name its context (a string of at most 100 characters).",
                code="invalid_message",
                field="context_id",
            )
        if msg.get("close_context") is True:
            immediate = msg.get("immediate", False)
            if not isinstance(immediate, bool):
                raise ProtocolError("immediate: must be true or false.", code="invalid_message", field="immediate")
            await self._close_context(context_id, immediate=immediate)
            return
        text = msg.get("text", "")
        if not isinstance(text, str):
            raise ProtocolError("text: must be a string.", code="invalid_message", field="text")
        flush = msg.get("flush", False)
        if not isinstance(flush, bool):
            raise ProtocolError("flush: must be true or false.", code="invalid_message", field="flush")
        ctx = self.contexts.get(context_id)
        if ctx is None:
            await self._make_room_for_a_context()
            voice_settings = self.voice_settings
            if msg.get("voice_settings") is not None:
                voice_settings = self._voice_settings(msg.get("voice_settings"))
            sink = _ContextSink(self, context_id)
            driver = sink.driver = self._driver(sink, voice_settings, label=f" in context '{context_id}'")
            ctx = Context(context_id, driver)
            self.contexts[context_id] = ctx
        # Any message naming a context is activity here: {"text": ""} is the protocol's keep-alive.
        self.last_activity = time.monotonic()
        # "": a keep-alive; " " before any text: a context's initializing message.
        opening = not text.strip() and not ctx.driver.started and not ctx.driver.buffer.pending.strip()
        await ctx.driver.add_text(text if not opening else "", flush=flush)

    async def _make_room_for_a_context(self) -> None:
        """At most ``MAX_CONTEXTS`` contexts open or still speaking after their close. At the
        limit, the oldest closing context is stopped (the client has moved on); with none
        closing, the new context is refused."""
        if len(self.contexts) + len(self.closing_contexts) < MAX_CONTEXTS:
            return
        if not self.closing_contexts:
            raise ProtocolError(
                f"context_id: at most {MAX_CONTEXTS} contexts may be open on one connection; "
                "close one (close_context) before opening another.",
                code="max_active_contexts_exceeded",
                field="context_id",
            )
        await self._stop_now(self.closing_contexts.pop(0))

    async def _close_context(self, context_id: str, *, immediate: bool = False) -> None:
        ctx = self.contexts.pop(context_id, None)
        if ctx is None:
            raise ProtocolError(
                f"context_id: no open context '{context_id}'.", code="context_not_found", field="context_id"
            )
        if immediate:
            await self._stop_now(ctx)
            await self._maybe_close()
            return
        # Speak what was sent to the end; its isFinal comes after its last audio (_context_done), at
        # once when nothing was ever spoken.
        self.closing_contexts.append(ctx)
        try:
            await ctx.driver.end()
        except BaseException:  # what was buffered was refused (quota, limits): the context ends here
            if ctx in self.closing_contexts:
                self.closing_contexts.remove(ctx)
            await ctx.driver.stop()
            raise

    async def _stop_now(self, ctx: Context) -> None:
        """No segment after the one in flight; the run refunds what was not spoken."""
        await ctx.driver.stop()
        await self._send_json({"isFinal": True, "contextId": ctx.id})

    async def _close_socket(self) -> None:
        self.socket_ending = True
        for ctx in list(self.contexts.values()):
            await ctx.driver.end()  # done at once if nothing was spoken, else after its last audio
        await self._maybe_close()

    async def _maybe_close(self) -> None:
        if self.socket_ending and not self.contexts and not self.closing_contexts:
            await self._close(1000)

    # --- synthesis ----------------------------------------------------------

    async def _context_done(self, context_id: str, driver: UtteranceDriver | None) -> None:
        if self.closing or driver is None or driver.cancelled:
            return
        closing = [c for c in self.closing_contexts if c.driver is driver]
        if closing:
            self.closing_contexts.remove(closing[0])
        elif (ctx := self.contexts.get(context_id)) is not None and ctx.driver is driver:
            self.contexts.pop(context_id)
        else:
            return
        await self._send_json({"isFinal": True, "contextId": context_id})
        await self._maybe_close()

    async def _send_context_audio(self, context_id: str, data: bytes, alignment: AlignmentChunk | None) -> None:
        aligned = websocket_alignment(alignment) if self.options.alignment else None
        await self._send_json(
            {
                "audio": base64.b64encode(data).decode("ascii"),
                "isFinal": None,
                "normalizedAlignment": aligned,
                "alignment": aligned,
                "contextId": context_id,
            }
        )
