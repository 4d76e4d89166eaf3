"""A voice matched from a recording (docs/matching.md): ``POST /v1/voices/add`` in ElevenLabs'
shape (what the SDK's ``voices.ivc.create`` sends) queues a match and answers ``voice_id`` at
once; ``GET /v1/voices/{voice_id}/match`` shows its progress and result. Matching, not cloning."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from tts.errors import SynthesisError
from tts.matching import DESCRIPTION_CHARS, voice_match_get, voice_match_submit
from tts.models import VoiceMatch

from .openapi import error_responses, json_object

CONSENT_HEADER = "X-Voice-Consent"


def _labels(value: object) -> dict[str, str]:
    """ElevenLabs' ``labels``: a JSON object (the SDK sends ``"null"`` when none is given)."""
    if value in (None, "", "null"):
        return {}
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except ValueError as exc:
        raise SynthesisError(
            'labels: expected a JSON object such as {"language": "en"}.',
            code="invalid_request",
            status=400,
            field="labels",
        ) from exc
    if parsed is None:
        return {}
    if not isinstance(parsed, dict) or len(parsed) > 20:
        raise SynthesisError(
            "labels: expected a JSON object of at most 20 labels.", code="invalid_request", status=400, field="labels"
        )
    labels = {str(k): str(v) for k, v in parsed.items() if v is not None}
    # Stored on the voice and shown in every voice list: each short, not the body's 64 MiB.
    if any(len(k) > LABEL_KEY_CHARS or len(v) > LABEL_VALUE_CHARS for k, v in labels.items()):
        raise SynthesisError(
            f"labels: each name at most {LABEL_KEY_CHARS} characters and each value at most {LABEL_VALUE_CHARS}.",
            code="invalid_request",
            status=400,
            field="labels",
        )
    return labels


#: The longest label name and value a matched voice keeps.
LABEL_KEY_CHARS = 64
LABEL_VALUE_CHARS = 200


class VoiceAddInputSerializer(serializers.Serializer):
    """What the route reads (for the schema; the service checks it and names the field at fault)."""

    name = serializers.CharField(max_length=100)
    files = serializers.ListField(child=serializers.FileField(), help_text="1-25 WAV, MP3, FLAC, OGG or M4A files")
    consent = serializers.BooleanField(help_text="true: the caller may use this voice and its speaker agreed")
    description = serializers.CharField(required=False, allow_blank=True, max_length=DESCRIPTION_CHARS)
    labels = serializers.CharField(required=False, help_text='a JSON object, e.g. {"language": "en"}')
    remove_background_noise = serializers.BooleanField(required=False, help_text="accepted and ignored")


def match_json(match: VoiceMatch) -> dict[str, Any]:
    return {
        "voice_id": match.voice_id,
        "name": match.name,
        "category": "matched",
        "status": match.status,
        "progress": match.progress,
        "candidates_done": match.candidates_done,
        "candidates_total": match.candidates_total,
        "similarity": match.similarity,
        "nearest_voice_id": match.nearest_voice_id or None,
        "nearest_similarity": match.nearest_similarity,
        "matched_to": match.result_blend or None,
        "encoder": match.encoder or None,
        "engine_seconds": match.engine_seconds,
        "recording_seconds": match.recording_seconds,
        "recording_deleted": match.recording_deleted_at is not None,
        "error": match.error or None,
    }


@extend_schema_view(
    post=extend_schema(
        operation_id="voices_add",
        tags=["voices"],
        summary="Match a recording to the nearest Kokoro voice or blend (not a clone); consent required",
        request={"multipart/form-data": VoiceAddInputSerializer},
        responses={
            200: json_object("voice_id, requires_verification, status"),
            **error_responses("elevenlabs", 400, 403, 413),
        },
    )
)
class VoiceAddApi(APIView):
    required_scope = Scope.TTS
    error_dialect = "elevenlabs"
    parser_classes = [MultiPartParser, FormParser]

    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        data: Any = request.data
        uploads = request.FILES.getlist("files") + request.FILES.getlist("files[]")
        consent = data.get("consent") or request.headers.get(CONSENT_HEADER)
        match = voice_match_submit(
            tenant=tenant,
            name=str(data.get("name") or ""),
            files=[(f.name or "file", f, int(f.size or 0)) for f in uploads],
            consent=consent,
            description=str(data.get("description") or ""),
            labels=_labels(data.get("labels")),
        )
        # remove_background_noise is accepted and ignored: no noise removal is done here.
        return Response({"voice_id": match.voice_id, "requires_verification": False, "status": match.status})


@extend_schema_view(
    get=extend_schema(
        operation_id="voices_match_status",
        tags=["voices"],
        summary="The progress and result of a voice match",
        responses={
            200: json_object("voice_id, status, progress, similarity, nearest_voice_id"),
            **error_responses("elevenlabs", 404),
        },
    )
)
class VoiceMatchApi(APIView):
    required_scope = Scope.VOICES_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request, voice_id: str) -> Response:
        match = voice_match_get(request_tenant(request), voice_id)
        if match is None:
            raise SynthesisError(
                f"A voice match with voice_id '{voice_id}' was not found.",
                code="voice_not_found",
                status=404,
                field="voice_id",
            )
        return Response(match_json(match))
