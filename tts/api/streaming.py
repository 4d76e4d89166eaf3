"""Chunked HTTP streaming: ``POST /v1/text-to-speech/{voice_id}/stream`` (ElevenLabs)
and the streamed responses of ``POST /v1/audio/speech`` (OpenAI raw audio and SSE).

The view validates, reserves and opens the record like the non-streamed
endpoint (errors are still plain JSON in the caller's dialect), then answers
with an async iterator over the pipeline (``tts.services.streaming``): each
segment's bytes go out as soon as they are encoded. When the client goes away
Django cancels the iterator and closes the response; both stop the stream, so
no later segment is synthesized and the record ends up cancelled.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any, cast

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from tts.services.streaming import ThreadedStream, stream_synthesis
from tts.services.synthesis import (
    SynthesisError,
    SynthesisRun,
    ensure_engine,
    synthesis_iter_bytes,
    synthesis_prepare,
)

from .elevenlabs import TextToSpeechInputSerializer, audio_headers, synthesis_request_from
from .errors import to_api_error
from .openapi import ENABLE_LOGGING_PARAM, OUTPUT_FORMAT_PARAM, audio_responses, error_responses


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


def _set_headers(response: StreamingHttpResponse, prep: SynthesisRun) -> None:
    audio_headers(response, prep.record, request_id=prep.request.request_id)
    # Proxies (nginx) buffer responses by default, which would hold back the first audio.
    response["X-Accel-Buffering"] = "no"
    response["Cache-Control"] = "no-cache"


def audio_stream_response(request: HttpRequest | Request, prep: SynthesisRun) -> StreamingHttpResponse:
    """Raw encoded audio, chunked, one piece per segment."""
    ensure_engine(prep)
    content_type = prep.request.output_format.content_type
    if is_asgi(request):
        stream = stream_synthesis(prep)
        response: StreamingHttpResponse = AudioStreamResponse(stream, stream, content_type=content_type)
    else:
        # WSGI (and Django's test client): the plain generator streams there.
        response = StreamingHttpResponse(synthesis_iter_bytes(prep), content_type=content_type)
    _set_headers(response, prep)
    return response


def _sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


def _delta(chunk: bytes) -> bytes:
    return _sse({"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode("ascii")})


def _done(prep: SynthesisRun) -> bytes:
    # OpenAI reports tokens; characters are what this platform counts.
    usage = {"input_tokens": prep.characters, "output_tokens": 0, "total_tokens": prep.characters}
    return _sse({"type": "speech.audio.done", "usage": usage})


def _error_event(exc: SynthesisError) -> bytes:
    err = to_api_error(exc)
    assert err is not None
    return _sse(
        {"type": "error", "error": {"message": err.message, "type": "api_error", "param": err.field, "code": err.code}}
    )


async def _sse_async(stream: ThreadedStream[bytes], prep: SynthesisRun) -> AsyncIterator[bytes]:
    try:
        async for chunk in stream:
            yield _delta(chunk)
    except SynthesisError as exc:
        yield _error_event(exc)
        return
    yield _done(prep)


def _sse_sync(prep: SynthesisRun) -> Iterator[bytes]:
    gen = cast(Generator[bytes, None, None], synthesis_iter_bytes(prep))
    try:
        for chunk in gen:
            yield _delta(chunk)
    except SynthesisError as exc:
        yield _error_event(exc)
        return
    finally:
        gen.close()
    yield _done(prep)


def sse_stream_response(request: HttpRequest | Request, prep: SynthesisRun) -> StreamingHttpResponse:
    """OpenAI's ``stream_format=sse``: ``speech.audio.delta`` events, then ``speech.audio.done``."""
    ensure_engine(prep)
    if is_asgi(request):
        stream = stream_synthesis(prep)
        response: StreamingHttpResponse = AudioStreamResponse(
            stream, _sse_async(stream, prep), content_type="text/event-stream"
        )
    else:
        response = StreamingHttpResponse(_sse_sync(prep), content_type="text/event-stream")
    _set_headers(response, prep)
    return response


@extend_schema_view(
    post=extend_schema(
        operation_id="text_to_speech_stream",
        tags=["text-to-speech"],
        summary="Convert text to speech, streamed while it is synthesized",
        request=TextToSpeechInputSerializer,
        parameters=[OUTPUT_FORMAT_PARAM, ENABLE_LOGGING_PARAM],
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
        req = synthesis_request_from(request, voice_id, source="elevenlabs_stream")
        prep = synthesis_prepare(req)
        return audio_stream_response(request, prep)
