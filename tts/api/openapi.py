"""OpenAPI pieces the API views share: the API-key scheme, audio bodies, error bodies.

Views annotate themselves with ``@extend_schema``; this module keeps those
annotations short and the error shapes (one per dialect) described once.
drf-spectacular serves the result at ``/api/schema/`` (docs at ``/api/docs/``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerFieldExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers

AUDIO_TYPES = ("audio/mpeg", "audio/wav", "audio/ogg", "audio/flac", "audio/aac", "audio/basic", "audio/pcm")


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Describes accounts.authentication.ApiKeyAuthentication (found by drf-spectacular by its path)."""

    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "xi-api-key",
            "description": "An API key from the dashboard. `Authorization: Bearer <key>` works too.",
        }


_ELEVENLABS_ERROR = inline_serializer(
    "ElevenLabsError",
    {
        "detail": inline_serializer(
            "ElevenLabsErrorDetail",
            {
                "status": serializers.CharField(help_text="A short error code."),
                "message": serializers.CharField(),
                "param": serializers.CharField(required=False, allow_null=True, help_text="The field at fault."),
            },
        )
    },
)
_OPENAI_ERROR = inline_serializer(
    "OpenAIError",
    {
        "error": inline_serializer(
            "OpenAIErrorDetail",
            {
                "message": serializers.CharField(),
                "type": serializers.CharField(),
                "param": serializers.CharField(allow_null=True),
                "code": serializers.CharField(allow_null=True),
            },
        )
    },
)
_ERROR_TEXT = {
    400: "Bad input; the body names the field.",
    401: "No or unknown API key.",
    403: "The key lacks the scope this route needs.",
    404: "Not found (or not visible to this tenant).",
    413: "Text longer than the plan allows per request.",
    422: "Input that cannot be processed.",
    429: "Rate, concurrency or quota limit; see Retry-After.",
    503: "No engine can serve this right now; see Retry-After.",
}


def error_responses(dialect: str, *statuses: int) -> dict[int, OpenApiResponse]:
    body = _OPENAI_ERROR if dialect == "openai" else _ELEVENLABS_ERROR
    return {code: OpenApiResponse(body, description=_ERROR_TEXT[code]) for code in (401, *statuses)}


def audio_responses(description: str) -> dict[Any, Any]:
    return {
        (200, content_type): OpenApiResponse(OpenApiTypes.BINARY, description=description)
        for content_type in AUDIO_TYPES
    }


def json_object(description: str) -> OpenApiResponse:
    return OpenApiResponse(OpenApiTypes.OBJECT, description=description)


OUTPUT_FORMAT_PARAM = OpenApiParameter(
    "output_format",
    str,
    OpenApiParameter.QUERY,
    description="codec_rate[_bitrate], e.g. mp3_44100_128, pcm_16000, wav_22050, ulaw_8000, opus_48000_64.",
)
ENABLE_LOGGING_PARAM = OpenApiParameter(
    "enable_logging", bool, OpenApiParameter.QUERY, description="false: keep no text or audio in the history."
)
OPTIMIZE_STREAMING_LATENCY_PARAM = OpenApiParameter(
    "optimize_streaming_latency",
    int,
    OpenApiParameter.QUERY,
    description="0-4, accepted and ignored (named in X-Ignored-Fields): streams always send audio as it is made.",
)


class VoiceFieldSchema(OpenApiSerializerFieldExtension):
    """OpenAI's ``voice``: a name, or ``{"id": ...}`` as newer clients send it."""

    target_class = "tts.api.openai.VoiceField"

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        return {
            "oneOf": [
                {"type": "string", "description": "A voice id or name (OpenAI's names map to the default voice)."},
                {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            ]
        }
