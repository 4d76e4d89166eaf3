"""Tenant-made voices: ``POST /v1/voices/blend`` saves a weighted blend of Kokoro voices as a
private voice; ``DELETE /v1/voices/{voice_id}`` removes one of the tenant's own voices."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from tts.catalogue import voice_blend_create
from tts.errors import SynthesisError

from .openapi import error_responses, json_object
from .resources import voice_json


class BlendInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    blend = serializers.JSONField(help_text='"jf_alpha(2)+jm_kumo(1)" or {"jf_alpha": 0.6, "jm_kumo": 0.4}')
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


@extend_schema_view(
    post=extend_schema(
        operation_id="voices_blend",
        tags=["voices"],
        summary="Save a blend of Kokoro voices as a private voice",
        request=BlendInputSerializer,
        responses={
            200: json_object("voice_id, requires_verification, voice"),
            **error_responses("elevenlabs", 400, 403, 404),
        },
    )
)
class VoiceBlendApi(APIView):
    # Making a voice is part of using the speech API; no separate scope.
    required_scope = Scope.TTS
    error_dialect = "elevenlabs"

    def post(self, request: Request) -> Response:
        tenant = request_tenant(request)
        data = BlendInputSerializer(data=request.data)
        if not data.is_valid():
            field, errors = next(iter(data.errors.items()))
            raise SynthesisError(
                f"{field}: {' '.join(str(e) for e in errors)}", code="invalid_request", status=400, field=field
            )
        # VoiceBlendError, a SynthesisError: rendered like any other.
        voice = voice_blend_create(tenant=tenant, **data.validated_data)
        return Response(
            {
                "voice_id": voice.voice_id,
                "requires_verification": False,
                "voice": voice_json(voice, tenant_id=tenant.pk),
            }
        )
