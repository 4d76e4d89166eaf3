"""Audio with character timestamps (ElevenLabs) and captions from the history.

* ``POST /v1/text-to-speech/{voice_id}/with-timestamps``: one JSON object,
  ``{"audio_base64", "alignment", "normalized_alignment"}``.
* ``POST /v1/text-to-speech/{voice_id}/stream/with-timestamps``: newline-
  delimited JSON, one such object per audio chunk as soon as it is ready;
  each chunk's times are absolute from the start of the utterance.
* ``GET /v1/history/{id}/captions?format=srt|vtt``.

All of it runs on the one pipeline (``synthesis_prepare`` /
``synthesis_iter_bytes``); the timings come from the pipeline's
``AlignmentTimeline`` (``tts.synthesis.alignment.timestamps``).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any, cast

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from tts.errors import SynthesisError
from tts.synthesis import (
    AlignmentChunk,
    SynthesisRun,
    ThreadedStream,
    ensure_engine,
    run_stream,
    synthesis_create,
    synthesis_iter_bytes,
    synthesis_prepare,
)
from tts.usage import captions_srt, captions_vtt, history_item_get

from .elevenlabs import TextToSpeechInputSerializer, audio_headers, synthesis_request_from
from .ignored import set_ignored_header
from .openapi import ENABLE_LOGGING_PARAM, OPTIMIZE_STREAMING_LATENCY_PARAM, OUTPUT_FORMAT_PARAM, error_responses
from .streaming import AudioStreamResponse, is_asgi

logger = logging.getLogger(__name__)

NDJSON = "application/x-ndjson"


def _chunk_json(data: bytes, alignment: AlignmentChunk | None) -> dict[str, Any]:
    timed = alignment.as_json() if alignment is not None else {"alignment": None, "normalized_alignment": None}
    return {"audio_base64": base64.b64encode(data).decode("ascii"), **timed}


def timed_chunks(prep: SynthesisRun) -> Iterator[tuple[bytes, AlignmentChunk | None]]:
    """The pipeline's audio chunks, each with the characters synthesized since the previous one.

    Runs where the pipeline runs (the stream's thread): the timeline is read
    right after each chunk, before the next segment is synthesized.
    """
    gen = cast(Generator[bytes, None, None], synthesis_iter_bytes(prep))
    try:
        for data in gen:
            yield data, prep.timeline.take_pending() if prep.timeline is not None else None
    finally:
        gen.close()
    rest = prep.timeline.take_pending() if prep.timeline is not None else None
    if rest is not None:
        yield b"", rest  # characters after the last audio (trailing spaces): no audio of their own


def _ndjson_line(data: bytes, alignment: AlignmentChunk | None) -> bytes:
    return json.dumps(_chunk_json(data, alignment), separators=(",", ":")).encode() + b"\n"


async def _ndjson_async(stream: ThreadedStream[tuple[bytes, AlignmentChunk | None]]) -> AsyncIterator[bytes]:
    try:
        async for data, alignment in stream:
            yield _ndjson_line(data, alignment)
    except SynthesisError as exc:
        # The status line is gone; the stream ends early and the record says why.
        logger.warning("timestamped stream ended early: %s", exc.message)


def _ndjson_sync(prep: SynthesisRun) -> Iterator[bytes]:
    try:
        for data, alignment in timed_chunks(prep):
            yield _ndjson_line(data, alignment)
    except SynthesisError as exc:
        logger.warning("timestamped stream ended early: %s", exc.message)


class _AlignmentSerializer(serializers.Serializer):
    characters = serializers.ListField(child=serializers.CharField())
    character_start_times_seconds = serializers.ListField(child=serializers.FloatField())
    character_end_times_seconds = serializers.ListField(child=serializers.FloatField())


class AudioWithTimestampsSerializer(serializers.Serializer):
    audio_base64 = serializers.CharField()
    alignment = _AlignmentSerializer(allow_null=True)
    normalized_alignment = _AlignmentSerializer(allow_null=True)


@extend_schema_view(
    post=extend_schema(
        operation_id="text_to_speech_with_timestamps",
        tags=["text-to-speech"],
        summary="Convert text to speech with character timestamps",
        request=TextToSpeechInputSerializer,
        parameters=[OUTPUT_FORMAT_PARAM, ENABLE_LOGGING_PARAM, OPTIMIZE_STREAMING_LATENCY_PARAM],
        responses={
            200: AudioWithTimestampsSerializer,
            **error_responses("elevenlabs", 400, 403, 404, 413, 422, 429, 503),
        },
    )
)
class TextToSpeechWithTimestampsApi(APIView):
    """The whole audio, base64, with the start and end time of every character."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request, voice_id: str) -> HttpResponse:
        req, ignored = synthesis_request_from(request, voice_id, source="elevenlabs")
        req.timestamps = True
        result = synthesis_create(req)
        timed = result.alignment or {"alignment": None, "normalized_alignment": None}
        body = {"audio_base64": base64.b64encode(result.audio).decode("ascii"), **timed}
        response = HttpResponse(json.dumps(body, separators=(",", ":")), content_type="application/json")
        audio_headers(response, result.record, request_id=req.request_id, ignored=ignored)
        return response


@extend_schema_view(
    post=extend_schema(
        operation_id="text_to_speech_stream_with_timestamps",
        tags=["text-to-speech"],
        summary="Stream speech with character timestamps (newline-delimited JSON)",
        request=TextToSpeechInputSerializer,
        parameters=[OUTPUT_FORMAT_PARAM, ENABLE_LOGGING_PARAM, OPTIMIZE_STREAMING_LATENCY_PARAM],
        responses={
            (200, NDJSON): OpenApiResponse(
                AudioWithTimestampsSerializer, description="One JSON object per line, one line per audio chunk."
            ),
            **error_responses("elevenlabs", 400, 403, 404, 413, 422, 429, 503),
        },
    )
)
class TextToSpeechStreamWithTimestampsApi(APIView):
    """Audio chunks as they are synthesized, each with the timings of its characters."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request, voice_id: str) -> StreamingHttpResponse:
        req, ignored = synthesis_request_from(request, voice_id, source="elevenlabs_stream")
        req.timestamps = True
        prep = synthesis_prepare(req)
        ensure_engine(prep)
        if is_asgi(request):
            stream: ThreadedStream[tuple[bytes, AlignmentChunk | None]] = run_stream(
                prep, lambda: timed_chunks(prep), name="tts-timed"
            )
            response: StreamingHttpResponse = AudioStreamResponse(stream, _ndjson_async(stream), content_type=NDJSON)
        else:
            response = StreamingHttpResponse(_ndjson_sync(prep), content_type=NDJSON)
        response["history-item-id"] = str(prep.record.pk)
        response["x-character-count"] = str(prep.characters)
        if req.request_id:
            response["request-id"] = req.request_id
        response["X-Accel-Buffering"] = "no"
        response["Cache-Control"] = "no-cache"
        set_ignored_header(response, ignored, engine=prep.model_version.engine)
        return response


CAPTION_FORMATS = {"srt": ("application/x-subrip", captions_srt), "vtt": ("text/vtt", captions_vtt)}


class CaptionsQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=sorted(CAPTION_FORMATS), required=False, default="vtt")


@extend_schema_view(
    get=extend_schema(
        operation_id="history_captions",
        tags=["history"],
        summary="Captions (SRT or WebVTT) of a history item, from its timestamps",
        parameters=[OpenApiParameter("format", OpenApiTypes.STR, enum=sorted(CAPTION_FORMATS), default="vtt")],
        responses={
            (200, "text/vtt"): OpenApiResponse(OpenApiTypes.STR, description="WebVTT (or SRT with format=srt)."),
            **error_responses("elevenlabs", 400, 403, 404),
        },
    )
)
class HistoryCaptionsApi(APIView):
    """Captions of one history item; 404 when it has no timestamps (text not logged, or failed)."""

    required_scope = Scope.HISTORY_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request, history_item_id: str) -> HttpResponse:
        query = CaptionsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        fmt = query.validated_data["format"]
        record = history_item_get(request_tenant(request), history_item_id)
        if record is None:
            raise SynthesisError(
                f"History item '{history_item_id}' was not found.",
                code="history_item_not_found",
                status=404,
                field="history_item_id",
            )
        content_type, render = CAPTION_FORMATS[fmt]
        text = render(record.alignment)
        if text is None:
            raise SynthesisError(
                f"History item '{history_item_id}' has no timestamps to make captions from.",
                code="captions_not_available",
                status=404,
                field="history_item_id",
            )
        response = HttpResponse(text, content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{record.pk}.{fmt}"'
        return response
