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


# --- how the docs page presents the schema ---------------------------------

#: Tag order on the docs page: what most readers came for first, staff-only operations last.
TAG_ORDER = (
    "text-to-speech",
    "text-to-dialogue",
    "openai",
    "voices",
    "models",
    "history",
    "jobs",
    "pronunciation-dictionaries",
    "user",
    "cosyvoice-compatible",
    "staff-only",
)
_TAG_TEXT = {
    "text-to-speech": "ElevenLabs-compatible synthesis. The whole-file route answers with audio; "
    "on this page the response is offered as a download.",
    "staff-only": "Operations that need a key made by a staff user (scope models:admin).",
}
_STAFF_ONLY = {"compat_admin_reload"}
#: Operations whose JSON body "Try it out" fills with a request that works as it stands.
_TTS_EXAMPLE = "Hello! This sentence was made from the API docs page."
_TTS_OPERATIONS = {
    "text_to_speech",
    "text_to_speech_stream",
    "text_to_speech_with_timestamps",
    "text_to_speech_stream_with_timestamps",
}

_DIALOGUE_OPERATIONS = {
    "text_to_dialogue",
    "text_to_dialogue_stream",
    "text_to_dialogue_with_timestamps",
    "text_to_dialogue_stream_with_timestamps",
}


def tts_request_example() -> dict[str, Any]:
    """The body "Try it out" sends to the text-to-speech routes: only fields whose example is valid.

    Left to itself, Swagger UI fills every string with ``"string"`` (``model_id: "string"``: a 400)."""
    return {"text": _TTS_EXAMPLE, "voice_settings": {"speed": 1.0}}


def present_schema(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: staff-only operations under their own tag, tags and paths in
    ``TAG_ORDER``, and request examples that the server accepts."""
    from django.conf import settings

    voice_id = settings.TTS_DEFAULT_VOICE_ID
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            op_id = operation.get("operationId")
            if op_id in _STAFF_ONLY:
                operation["tags"] = ["staff-only"]
            if op_id in _TTS_OPERATIONS:
                for param in operation.get("parameters", []):
                    if param.get("in") == "path" and param.get("name") == "voice_id":
                        param["example"] = voice_id
                content = operation.get("requestBody", {}).get("content", {})
                if "application/json" in content:
                    content["application/json"]["example"] = tts_request_example()
            if op_id in _DIALOGUE_OPERATIONS:
                content = operation.get("requestBody", {}).get("content", {})
                if "application/json" in content:
                    content["application/json"]["example"] = {
                        "inputs": [{"text": _TTS_EXAMPLE, "voice_id": voice_id}, {"text": "Yes.", "voice_id": voice_id}]
                    }
            if op_id == "openai_create_speech":
                content = operation.get("requestBody", {}).get("content", {})
                if "application/json" in content:
                    content["application/json"]["example"] = {
                        "model": "tts-1",
                        "input": _TTS_EXAMPLE,
                        "voice": voice_id,
                        "response_format": "mp3",
                    }

    def rank(tags: list[str]) -> int:
        tag = tags[0] if tags else ""
        return TAG_ORDER.index(tag) if tag in TAG_ORDER else len(TAG_ORDER) - 1

    paths = result.get("paths", {})
    result["paths"] = dict(
        sorted(
            paths.items(),
            key=lambda item: min(
                (rank(op.get("tags", [])) for op in item[1].values() if isinstance(op, dict)), default=len(TAG_ORDER)
            ),
        )
    )
    used = {tag for ops in paths.values() for op in ops.values() if isinstance(op, dict) for tag in op.get("tags", [])}
    ordered = [tag for tag in TAG_ORDER if tag in used] + sorted(used - set(TAG_ORDER))
    result["tags"] = [{"name": tag, **({"description": _TAG_TEXT[tag]} if tag in _TAG_TEXT else {})} for tag in ordered]
    return result
