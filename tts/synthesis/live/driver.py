"""One utterance driver for every streaming protocol.

ElevenLabs' stream-input and multi-context WebSockets (``tts.api.websocket.consumers``) and
Wyoming (``tts.wyoming``) all speak utterances whose text may arrive in
pieces, and whose audio goes out while it is being synthesized. The
:class:`UtteranceDriver` is the one place that does it; a protocol adapter
only translates its events into the driver's calls and the driver's
callbacks (:class:`UtteranceSink`) into its events.

The driver owns:

* text buffering and sentence cutting (its :class:`TextBuffer`: the chunk
  schedule, or each sentence as soon as it ends), and the bound on text
  received and not yet spoken (``TTS_WS_MAX_BUFFER_CHARS``);
* the run: the first piece opens it through the one pipeline
  (``synthesis_prepare``: admission, quota, history record), later pieces are
  reserved and queued on it (``LiveUtterance``); a text known in full
  (:meth:`UtteranceDriver.say`) is one ordinary run, cacheable;
* look-ahead: one segment synthesized ahead of what the client has taken
  (``ThreadedStream``), so a slow client holds back the engine;
* cancel: :meth:`UtteranceDriver.cancel` (a client gone, a context closed)
  stops before the next segment; the run refunds what was never spoken;
* timestamps: each audio chunk comes with the characters it covers
  (an ``AlignmentChunk``: absolute times, both tracks, framed for its message),
  for the protocols that send them (``websocket_alignment`` makes their JSON).

Blocking work (the ORM, the engine) never runs on the event loop: in a
worker thread (``database_sync_to_async``) or on the stream's own thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from channels.db import database_sync_to_async
from django.conf import settings

from tts.errors import SynthesisError
from tts.synthesis.alignment.timeline import AlignmentChunk
from tts.synthesis.live.streaming import LiveUtterance, ThreadedStream, stream_synthesis
from tts.synthesis.live.text_buffer import TextBuffer
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.engine import ensure_engine
from tts.synthesis.stages.pipeline import synthesis_prepare

logger = logging.getLogger(__name__)

#: Builds the pipeline's request for the utterance's first (or only) piece of text.
RequestFactory = Callable[[str], SynthesisRequest]


class UtteranceSink(Protocol):
    """What a protocol adapter does with the driver's output (called on the event loop)."""

    async def audio(self, data: bytes, alignment: AlignmentChunk | None) -> None:
        """One encoded chunk, in order, with the characters its audio covers (``None``: none, or
        a text known in full, whose chunks carry none); awaiting it is the backpressure towards the engine."""

    async def done(self) -> None:
        """Everything was spoken (or nothing ever was: no run, no record): the utterance is over."""

    async def failed(self, error: SynthesisError) -> None:
        """The synthesis failed or was refused after it started; the run ended failed."""


class ClientGone(Exception):
    """Raised by a sink that can deliver nothing more (the client left, or stopped reading):
    the run is cancelled and refunded, and the sink hears nothing more."""


def internal_error() -> SynthesisError:
    return SynthesisError("Internal error.", code="internal_error", status=500)


class UtteranceDriver:
    """One utterance: text in (pieces, or whole), audio out through ``sink``.

    ``label`` names the utterance in messages (``" in context 'a'"``).
    Calls come from one event loop; none may run concurrently with another
    on the same driver (the adapters await each before the next event).
    """

    def __init__(
        self,
        request_for: RequestFactory,
        sink: UtteranceSink,
        *,
        buffer: TextBuffer | None = None,
        label: str = "",
    ) -> None:
        self._request_for = request_for
        self.sink = sink
        self.buffer = buffer if buffer is not None else TextBuffer(auto_mode=True)
        self.label = label
        self.utterance: LiveUtterance | None = None
        self.run: SynthesisRun | None = None
        self._stream: ThreadedStream[bytes] | None = None
        self._pump: asyncio.Task[None] | None = None
        self._cancelled = False
        self._ended = False
        self._finished = False

    # --- state -------------------------------------------------------------

    @property
    def started(self) -> bool:
        """A run was opened (a history record exists)."""
        return self.run is not None

    @property
    def ended(self) -> bool:
        """No more text is accepted (``end``, ``say`` or ``cancel`` was called)."""
        return self._ended or self._cancelled

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def finished(self) -> bool:
        """The sink was told ``done``."""
        return self._finished

    @property
    def sample_rate(self) -> int | None:
        """The rate of the audio sent, once the first chunk went out."""
        run = self.run
        if run is None or run.encoder is None:
            return None
        return run.encoder.format.sample_rate

    def unspoken_characters(self) -> int:
        """Characters received and not yet spoken: buffered here, or reserved and queued."""
        queued = self.utterance.unspoken_characters() if self.utterance is not None else 0
        return len(self.buffer.pending) + queued

    # --- text in -----------------------------------------------------------

    async def add_text(self, text: str, *, flush: bool = False) -> None:
        """Buffer ``text`` and speak what the buffer hands out (all of it with ``flush``).

        ``SynthesisError`` when refused: ``buffer_full`` (413) past the bound on
        unspoken text, or whatever the pipeline refuses (quota, limits, voice).
        """
        if self.ended:
            raise SynthesisError(
                "The utterance has ended; no more text is accepted.", code="stream_ended", status=400, field="text"
            )
        limit = settings.TTS_WS_MAX_BUFFER_CHARS
        if self.unspoken_characters() + len(text) > limit:
            raise SynthesisError(
                f"text: more than {limit} characters received and not yet spoken{self.label} "
                "(TTS_WS_MAX_BUFFER_CHARS); wait for audio before sending more.",
                code="buffer_full",
                status=413,
                field="text",
            )
        pieces = self.buffer.add(text) if text else []
        if flush:
            pieces.append(self.buffer.flush())
        for piece in pieces:
            await self._speak(piece)

    async def flush(self) -> None:
        """Speak everything buffered now, whatever the schedule."""
        await self._speak(self.buffer.flush())

    async def end(self) -> None:
        """No more text: speak what is buffered, then tell the sink ``done`` after the last audio
        (at once if nothing was ever spoken: then there is no record and nothing is billed)."""
        if self.ended:
            return
        await self._speak(self.buffer.flush())
        self._ended = True
        if self._cancelled:
            return
        if self.utterance is None:
            self._finished = True
            await self.sink.done()
            return
        self.utterance.end()

    async def say(self, text: str) -> None:
        """A text known in full: one run like an HTTP stream's (a cache hit answers it without
        the engine), its audio out through the sink, then ``done``. Ends the utterance."""
        if self.ended or self.started:
            raise SynthesisError("The utterance has already started.", code="stream_ended", status=400)
        self._ended = True
        run = await database_sync_to_async(synthesis_prepare)(self._request_for(text))
        self.run = run
        try:
            await database_sync_to_async(ensure_engine)(run)
        except BaseException:
            await database_sync_to_async(run.cancel)()  # a no-op if the engine check already failed it
            raise
        self._stream = stream_synthesis(run)
        if self._cancelled:  # the client went away while the run was prepared
            self._stream.close()
            return
        self._pump = asyncio.create_task(self._pump_audio(_without_alignment(self._stream)))

    # --- stop --------------------------------------------------------------

    def cancel(self) -> None:
        """Stop now (never blocks): no segment after the one in the engine; the run ends
        cancelled and refunds what was not spoken. The sink hears nothing more."""
        self._cancelled = True
        if self.utterance is not None:
            self.utterance.cancel()  # a no-op once it finished
        if self._stream is not None:
            self._stream.close()
        pump = self._pump
        if pump is not None and pump is not asyncio.current_task():
            pump.cancel()

    async def stop(self) -> None:
        """:meth:`cancel`, the live utterance's part in a worker thread, waited for."""
        if self.utterance is not None:
            await database_sync_to_async(self.utterance.cancel)()
        self.cancel()

    async def wait(self) -> None:
        """Until the audio is out (or the utterance stopped)."""
        pump = self._pump
        if pump is not None:
            await asyncio.gather(pump, return_exceptions=True)

    # --- inside ------------------------------------------------------------

    async def _speak(self, text: str) -> None:
        if not text.strip() or self._cancelled:
            return
        if self.utterance is not None:
            await database_sync_to_async(self.utterance.add_text)(text)
            return
        run = await database_sync_to_async(synthesis_prepare)(self._request_for(text))
        self.run = run
        try:
            await database_sync_to_async(ensure_engine)(run)
            utterance = LiveUtterance(run)
        except BaseException:
            await database_sync_to_async(run.cancel)()  # a no-op if the engine check already failed it
            raise
        self.utterance = utterance
        if self._cancelled:  # the client went away while the run was prepared
            utterance.cancel()
            return
        self._pump = asyncio.create_task(self._pump_audio(utterance.stream))

    async def _pump_audio(self, chunks: AsyncIterator[tuple[bytes, AlignmentChunk | None]]) -> None:
        completed = False
        try:
            async for data, alignment in chunks:
                await self.sink.audio(data, alignment)
            completed = True
        except ClientGone:
            return
        except SynthesisError as exc:
            await self.sink.failed(exc)
            return
        except Exception:
            logger.exception("utterance pump failed")
            await self.sink.failed(internal_error())
            return
        finally:
            if not completed:
                self.cancel()  # a sink that failed to send: stop the run (no-op once it ended)
        if self._cancelled or (self.utterance is not None and self.utterance.cancelled):
            return
        self._finished = True
        await self.sink.done()


async def _without_alignment(stream: ThreadedStream[bytes]) -> AsyncIterator[tuple[bytes, AlignmentChunk | None]]:
    async for data in stream:
        yield data, None
