"""Chunked HTTP streaming: ``POST /v1/text-to-speech/{voice_id}/stream`` (ElevenLabs)
and the streamed responses of ``POST /v1/audio/speech`` (OpenAI raw audio and SSE).

The view validates, reserves and opens the record like the non-streamed
endpoint (errors are still plain JSON in the caller's dialect), then answers
with an async iterator over the pipeline (``tts.synthesis.live.streaming``): each
segment's bytes go out as soon as they are encoded. When the client goes away
Django cancels the iterator and closes the response; both stop the stream, so
no later segment is synthesized and the record ends up cancelled. A body that
wraps the audio (OpenAI's SSE events, the ``/tts`` JSON document) is a
``StreamBody`` written around the same stream (``body_stream_response``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from typing import Any, Protocol, cast

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from tts.errors import SynthesisError
from tts.synthesis import (
    SynthesisRun,
    ThreadedStream,
    ensure_engine,
    stream_synthesis,
    synthesis_iter_bytes,
    synthesis_prepare,
)

from .elevenlabs import TextToSpeechInputSerializer, audio_headers, synthesis_request_from
from .ignored import IgnoredField, set_ignored_header
from .openapi import (
    ENABLE_LOGGING_PARAM,
    OPTIMIZE_STREAMING_LATENCY_PARAM,
    OUTPUT_FORMAT_PARAM,
    audio_responses,
    error_responses,
)


class AudioStreamResponse(StreamingHttpResponse):
    """A streamed response that stops its synthesis stream when Django closes it.

    Django closes the response after the last byte and also after a client
    disconnect; closing a finished stream is a no-op.
    """

    def __init__(self, stream: ThreadedStream[Any] | None, content: Any, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._stream = stream

    def close(self) -> None:
        try:
            if self._stream is not None:
                self._stream.close()
        finally:
            super().close()


def is_asgi(request: HttpRequest | Request) -> bool:
    raw = request._request if isinstance(request, Request) else request
    return isinstance(raw, ASGIRequest)


def _set_headers(
    response: StreamingHttpResponse, prep: SynthesisRun, ignored: Mapping[str, IgnoredField] | None
) -> None:
    audio_headers(response, prep.record, request_id=prep.request.request_id)
    if ignored:
        # The voice is resolved before the first byte, so the engine is known with the headers.
        set_ignored_header(response, ignored, engine=prep.model_version.engine)
    # Proxies (nginx) buffer responses by default, which would hold back the first audio.
    response["X-Accel-Buffering"] = "no"
    response["Cache-Control"] = "no-cache"


def audio_stream_response(
    request: HttpRequest | Request, prep: SynthesisRun, *, ignored: Mapping[str, IgnoredField] | None = None
) -> StreamingHttpResponse:
    """Raw encoded audio, chunked, one piece per segment; ``ignored``: for ``X-Ignored-Fields``."""
    ensure_engine(prep)
    content_type = prep.request.output_format.content_type
    if is_asgi(request):
        stream = stream_synthesis(prep)
        response: StreamingHttpResponse = AudioStreamResponse(stream, stream, content_type=content_type)
    else:
        # WSGI (and Django's test client): the plain generator streams there.
        response = StreamingHttpResponse(synthesis_iter_bytes(prep), content_type=content_type)
    _set_headers(response, prep, ignored)
    return response


class StreamBody(Protocol):
    """What a streamed response writes around the encoded audio (SSE events, a JSON document)."""

    def head(self) -> bytes:
        """Before the first chunk."""

    def piece(self, chunk: bytes) -> bytes:
        """For one chunk of audio, as it comes (may be empty)."""

    def tail(self) -> bytes:
        """After the last chunk, once the synthesis succeeded."""

    def failure(self, exc: SynthesisError) -> bytes:
        """The end, when the synthesis failed after the response began."""


async def _body_async(stream: ThreadedStream[bytes], body: StreamBody) -> AsyncIterator[bytes]:
    if head := body.head():
        yield head
    try:
        async for chunk in stream:
            if out := body.piece(chunk):
                yield out
    except SynthesisError as exc:
        yield body.failure(exc)
        return
    yield body.tail()


def _body_sync(prep: SynthesisRun, body: StreamBody) -> Iterator[bytes]:
    if head := body.head():
        yield head
    gen = cast(Generator[bytes, None, None], synthesis_iter_bytes(prep))
    try:
        for chunk in gen:
            if out := body.piece(chunk):
                yield out
    except SynthesisError as exc:
        yield body.failure(exc)
        return
    finally:
        gen.close()
    yield body.tail()


def body_stream_response(
    request: HttpRequest | Request,
    prep: SynthesisRun,
    body: StreamBody,
    *,
    content_type: str,
    ignored: Mapping[str, IgnoredField] | None = None,
) -> StreamingHttpResponse:
    """The audio of ``prep`` inside ``body`` (SSE events, JSON), written as it is synthesized."""
    ensure_engine(prep)
    if is_asgi(request):
        stream = stream_synthesis(prep)
        response: StreamingHttpResponse = AudioStreamResponse(
            stream, _body_async(stream, body), content_type=content_type
        )
    else:
        response = StreamingHttpResponse(_body_sync(prep, body), content_type=content_type)
    _set_headers(response, prep, ignored)
    return response


def _sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


class _SpeechEvents:
    """OpenAI's ``stream_format=sse``: a ``speech.audio.delta`` per chunk, then ``speech.audio.done``."""

    def __init__(self, prep: SynthesisRun) -> None:
        self.prep = prep

    def head(self) -> bytes:
        return b""

    def piece(self, chunk: bytes) -> bytes:
        return _sse({"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode("ascii")})

    def tail(self) -> bytes:
        # OpenAI reports tokens; characters are what this platform counts.
        characters = self.prep.characters
        usage = {"input_tokens": characters, "output_tokens": 0, "total_tokens": characters}
        return _sse({"type": "speech.audio.done", "usage": usage})

    def failure(self, exc: SynthesisError) -> bytes:
        error = {"message": exc.message, "type": "api_error", "param": exc.field, "code": exc.code}
        return _sse({"type": "error", "error": error})


def sse_stream_response(
    request: HttpRequest | Request, prep: SynthesisRun, *, ignored: Mapping[str, IgnoredField] | None = None
) -> StreamingHttpResponse:
    """OpenAI's ``stream_format=sse``: ``speech.audio.delta`` events, then ``speech.audio.done``."""
    return body_stream_response(request, prep, _SpeechEvents(prep), content_type="text/event-stream", ignored=ignored)


@extend_schema_view(
    post=extend_schema(
        operation_id="text_to_speech_stream",
        tags=["text-to-speech"],
        summary="Convert text to speech, streamed while it is synthesized",
        request=TextToSpeechInputSerializer,
        parameters=[OUTPUT_FORMAT_PARAM, ENABLE_LOGGING_PARAM, OPTIMIZE_STREAMING_LATENCY_PARAM],
        responses={
            **audio_responses("Chunked audio, one piece per sentence as soon as it is ready."),
            **error_responses("elevenlabs", 400, 403, 404, 413, 429, 503),
        },
    )
)
class TextToSpeechStreamApi(APIView):
    """Convert text to speech and stream the audio while it is being synthesized."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request, voice_id: str) -> StreamingHttpResponse:
        req, ignored = synthesis_request_from(request, voice_id, source="elevenlabs_stream")
        prep = synthesis_prepare(req)
        return audio_stream_response(request, prep, ignored=ignored)
