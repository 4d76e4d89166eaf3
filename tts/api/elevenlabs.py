"""ElevenLabs-compatible text-to-speech endpoints (the platform's native API).

``POST /v1/text-to-speech/{voice_id}`` answers the whole file; the streaming
variants live in tts/api/streaming.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.authentication import request_api_key, request_tenant
from accounts.models import Scope
from tts.models import SynthesisRecord
from tts.synthesis import SynthesisRequest, output_format_for, synthesis_create

from .fields import StrictCharField
from .ignored import ELEVENLABS_IGNORED, IgnoredField, flatten, ignored_asked, record_engine, set_ignored_header
from .openapi import (
    ENABLE_LOGGING_PARAM,
    OPTIMIZE_STREAMING_LATENCY_PARAM,
    OUTPUT_FORMAT_PARAM,
    audio_responses,
    error_responses,
)

DEFAULT_OUTPUT_FORMAT = "mp3_44100_128"


class VoiceSettingsSerializer(serializers.Serializer):
    # stability scales the VITS noise (tts.synthesis.request.noise_variation) and speed the
    # length scale; what is accepted without effect is listed in tts.api.ignored.
    stability = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)
    similarity_boost = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)
    style = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1)  # type: ignore[assignment]
    use_speaker_boost = serializers.BooleanField(required=False, allow_null=True)
    speed = serializers.FloatField(required=False, allow_null=True, min_value=0.5, max_value=2.0)


class DictionaryLocatorSerializer(serializers.Serializer):
    pronunciation_dictionary_id = serializers.CharField(max_length=64)
    version_id = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)


class TextToSpeechInputSerializer(serializers.Serializer):
    text = StrictCharField(allow_blank=True, trim_whitespace=False)
    model_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    language_code = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=16)
    voice_settings = VoiceSettingsSerializer(required=False, allow_null=True)
    apply_text_normalization = serializers.ChoiceField(choices=["auto", "on", "off"], required=False, default="auto")
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=4294967295)
    # A list that may be null, of locators that may not be (``[null]`` is a 400 naming the field).
    pronunciation_dictionary_locators = serializers.ListField(
        child=DictionaryLocatorSerializer(), required=False, allow_null=True
    )
    previous_text = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
    next_text = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
    previous_request_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, allow_null=True, max_length=3
    )
    next_request_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, allow_null=True, max_length=3
    )
    # ElevenLabs' fields this server does nothing with (tts.api.ignored): validated and named in
    # X-Ignored-Fields rather than dropped unseen.
    use_pvc_as_ivc = serializers.BooleanField(required=False, allow_null=True)
    apply_language_text_normalization = serializers.BooleanField(required=False, allow_null=True)
    audio_effects = serializers.DictField(required=False, allow_null=True)

    def _bounded_context(self, value: str | None) -> str | None:
        # The bound is read per request (TTS_CONTEXT_MAX_CHARS), not when the class is made.
        limit = settings.TTS_CONTEXT_MAX_CHARS
        if value is not None and len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters.", code="context_too_long"
            )
        return value

    def validate_previous_text(self, value: str | None) -> str | None:
        return self._bounded_context(value)

    def validate_next_text(self, value: str | None) -> str | None:
        return self._bounded_context(value)


class QueryInputSerializer(serializers.Serializer):
    output_format = StrictCharField(required=False, default=DEFAULT_OUTPUT_FORMAT)
    enable_logging = serializers.BooleanField(required=False, default=True)
    optimize_streaming_latency = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=4)


def query_from(request: Request) -> dict[str, Any]:
    query = QueryInputSerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)


def synthesis_request_from(
    request: Request, voice_id: str, *, source: str
) -> tuple[SynthesisRequest, dict[str, IgnoredField]]:
    """Build the pipeline's request from an ElevenLabs-style HTTP request, with the fields it set
    that this server ignores (for ``X-Ignored-Fields``)."""
    query = query_from(request)
    fmt, enable_logging = output_format_for(query["output_format"]), query["enable_logging"]
    body = TextToSpeechInputSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data: dict[str, Any] = body.validated_data
    asked = ignored_asked(ELEVENLABS_IGNORED, flatten({**query, **data}))
    settings_in = data.get("voice_settings") or {}
    speed = settings_in.get("speed") or 1.0
    req = SynthesisRequest(
        tenant=request_tenant(request),
        api_key=request_api_key(request),
        voice_id=voice_id,
        text=data["text"],
        output_format=fmt,
        source=source,
        model_id=data.get("model_id") or None,
        speed=float(speed),
        language=data.get("language_code") or None,
        enable_logging=enable_logging,
        normalization=data.get("apply_text_normalization", "auto"),
        request_id=getattr(request._request, "request_id", ""),
        settings={k: v for k, v in settings_in.items() if v is not None},
        seed=data.get("seed"),
        previous_text=data.get("previous_text") or None,
        next_text=data.get("next_text") or None,
        previous_request_ids=list(data.get("previous_request_ids") or []),
        next_request_ids=list(data.get("next_request_ids") or []),
        pronunciation_dictionary_locators=[dict(x) for x in data.get("pronunciation_dictionary_locators") or []],
    )
    return req, asked


def audio_headers(
    response: HttpResponseBase,
    record: SynthesisRecord,
    *,
    request_id: str,
    ignored: Mapping[str, IgnoredField] | None = None,
) -> None:
    """The headers every audio answer carries: its history item, cost and cache outcome, and
    the fields of the request that were ignored (``X-Ignored-Fields``)."""
    response["history-item-id"] = str(record.pk)
    response["x-character-count"] = str(record.characters)
    response["x-cache"] = "hit" if record.cache_hit else "miss"
    if request_id:
        response["request-id"] = request_id
    if ignored:
        set_ignored_header(response, ignored, engine=record_engine(record))


@extend_schema_view(
    post=extend_schema(
        operation_id="text_to_speech",
        tags=["text-to-speech"],
        summary="Convert text to speech (whole file)",
        request=TextToSpeechInputSerializer,
        parameters=[OUTPUT_FORMAT_PARAM, ENABLE_LOGGING_PARAM, OPTIMIZE_STREAMING_LATENCY_PARAM],
        responses={
            **audio_responses(
                "The audio; headers history-item-id, x-character-count, request-id, and X-Ignored-Fields "
                "when the request set fields this server ignores."
            ),
            **error_responses("elevenlabs", 400, 403, 404, 413, 429, 503),
        },
    )
)
class TextToSpeechApi(APIView):
    """Convert text to speech and return the whole audio file."""

    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request, voice_id: str) -> HttpResponse:
        req, ignored = synthesis_request_from(request, voice_id, source="elevenlabs")
        result = synthesis_create(req)
        response = HttpResponse(result.audio, content_type=result.output_format.content_type)
        audio_headers(response, result.record, request_id=req.request_id, ignored=ignored)
        return response
