"""OpenAI-compatible ``POST /v1/audio/speech``.

``voice`` is one of this platform's voice ids or names; OpenAI's built-in
voice names (alloy, echo, ...) map to voices of this server through
``TTS_OPENAI_VOICES`` (``alloy`` -> ``af_alloy``, docs/api.md; the default
voice where the mapped one is not installed) unless a voice of that id
exists, so code written for OpenAI runs unchanged. ``model`` is
OpenAI's (tts-1, tts-1-hd, gpt-4o-mini-tts: the voice's own model serves it)
or one of ours.

Served by daphne the audio is streamed (chunked, as OpenAI does);
``stream_format=sse`` sends ``speech.audio.delta`` events with base64 audio
and a final ``speech.audio.done`` (tts.api.streaming).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.authentication import request_api_key, request_tenant
from accounts.models import Scope
from tts.catalogue import openai_voice
from tts.errors import SynthesisError
from tts.synthesis import SynthesisRequest, output_format_for, synthesis_create, synthesis_prepare

from .elevenlabs import audio_headers
from .fields import StrictCharField
from .ignored import OPENAI_IGNORED, IgnoredField, ignored_asked
from .openapi import audio_responses, error_responses
from .streaming import audio_stream_response, is_asgi, sse_stream_response


class VoiceField(serializers.Field):
    """A voice name, or ``{"id": ...}`` as newer OpenAI clients send it."""

    default_error_messages = {"invalid": "Must be a voice name or an object with an 'id'."}

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, dict):
            data = data.get("id")
        if not isinstance(data, str) or not data.strip():
            self.fail("invalid")
        return str(data).strip()

    def to_representation(self, value: str) -> str:
        return value


class SpeechInputSerializer(serializers.Serializer):
    model = StrictCharField(max_length=100)
    input = StrictCharField(allow_blank=True, trim_whitespace=False)
    voice = VoiceField()
    response_format = StrictCharField(required=False, default="mp3")
    speed = serializers.FloatField(required=False, default=1.0, min_value=0.25, max_value=4.0)
    # Accepted for OpenAI's clients, ignored (tts.api.ignored): named in X-Ignored-Fields.
    instructions = StrictCharField(required=False, allow_blank=True)
    stream_format = serializers.ChoiceField(choices=["audio", "sse"], required=False, default="audio")


def openai_synthesis_request(request: Request) -> tuple[SynthesisRequest, str, dict[str, IgnoredField]]:
    """The pipeline's request, the stream format, and the fields set that this server ignores."""
    body = SpeechInputSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    ignored = ignored_asked(OPENAI_IGNORED, data)
    fmt = output_format_for(data["response_format"], dialect="openai", field="response_format")
    tenant = request_tenant(request)
    # OpenAI's own voice names stand for the voices TTS_OPENAI_VOICES maps them to.
    voice = openai_voice(tenant, data["voice"])
    if voice is None:
        raise SynthesisError(
            f"Voice '{data['voice']}' was not found.", code="voice_not_found", status=404, field="voice"
        )
    req = SynthesisRequest(
        tenant=tenant,
        api_key=request_api_key(request),
        voice_id=voice.voice_id,
        text=data["input"],
        output_format=fmt,
        source="openai",
        model_id=data["model"],
        speed=data["speed"],
        request_id=getattr(request._request, "request_id", ""),
        settings={"speed": data["speed"]},
        text_field="input",
        voice_field="voice",
        model_field="model",
    )
    return req, data["stream_format"], ignored


@extend_schema_view(
    post=extend_schema(
        operation_id="openai_create_speech",
        tags=["openai"],
        summary="OpenAI-compatible speech",
        request=SpeechInputSerializer,
        responses={
            **audio_responses("The audio in response_format."),
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR, description="stream_format=sse: speech.audio.delta events, then speech.audio.done."
            ),
            **error_responses("openai", 400, 403, 404, 413, 429, 503),
        },
    )
)
class SpeechApi(APIView):
    required_scope = Scope.TTS
    error_dialect = "openai"

    def post(self, request: Request) -> HttpResponseBase:
        req, stream_format, ignored = openai_synthesis_request(request)
        if stream_format == "sse":
            return sse_stream_response(request, synthesis_prepare(req), ignored=ignored)
        if is_asgi(request):
            # Like OpenAI's own endpoint: chunked audio as it is synthesized.
            return audio_stream_response(request, synthesis_prepare(req), ignored=ignored)
        # Under WSGI (and Django's test client) the whole file, with exact wav/flac headers.
        result = synthesis_create(req)
        response = HttpResponse(result.audio, content_type=result.output_format.content_type)
        audio_headers(response, result.record, request_id=req.request_id, ignored=ignored)
        return response
