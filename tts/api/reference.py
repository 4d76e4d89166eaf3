"""The reference deployments' endpoints (CosyVoice WebUI and CosyVoice-300M Lite), on this platform.

Users moving from those deployments keep their clients:

- ``POST /api/tts`` ``{"text", "speaker", "streaming"}``: 16 kHz 16-bit mono WAV, chunked
  (``Transfer-Encoding: chunked``, a streaming WAV header) when ``streaming`` is true;
- ``POST /tts`` ``{"text", "speaker", "language"}``: JSON ``{"status": "success", "audio": <base64
  WAV at the voice's rate>, "sample_rate", "duration"}``, written as the audio is synthesized
  (``Base64AudioJson``: no whole file, no whole base64 string in memory) and answered from the
  audio cache like every other route;
- ``POST /api/admin/reload`` ``{"model", "version"?}``: activates that model version everywhere
  (as ``manage.py activate_model``; every process follows within ``TTS_MODEL_POLL_SECONDS``).
  Needs a key with the staff-only ``models:admin`` scope, made by a staff user.

Same keys (``xi-api-key`` or ``Authorization: Bearer``), same pipeline, same
billing and history (source ``compat``). Errors as FastAPI writes them:
``{"detail": "..."}``, a malformed body 422, text over the plan's limit 400.

``speaker`` is one of those deployments' speaker names (CosyVoice's SFT
speakers ``中文女`` ``中文男`` ``英文女`` ``英文男`` ``日语男`` ``粤语女`` ``韩语女``, the
articles' ``xiaoyu``, ``female_01``, ``male_01``), mapped to a voice by the
table an operator edits in the admin (``tts.catalogue.reference_speakers``),
or any voice id or name of this server. A speaker with no voice here
(``粤语女``, ``韩语女``) or an unknown one is a 400 that lists the speakers
available. Without a speaker, the voice for the text's language
(``TTS_DEFAULT_VOICES``). ``language`` (``/tts``) is honoured: the text is
read by that language's front end (the voice must speak it, else 422).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key, request_tenant
from accounts.models import Scope
from tts.catalogue import activate_model_version, default_voice_for_text, model_version_named, speaker_voice
from tts.errors import SynthesisError
from tts.models import Voice
from tts.synthesis import SynthesisRequest, SynthesisRun, output_format_for, synthesis_create, synthesis_prepare

from .elevenlabs import audio_headers
from .openapi import audio_responses, json_object
from .streaming import audio_stream_response, body_stream_response

TAGS = ["cosyvoice-compatible"]


class ApiTtsInput(serializers.Serializer):
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)
    speaker = serializers.CharField(required=False, allow_blank=True, max_length=100)
    streaming = serializers.BooleanField(required=False, default=False)


class LiteTtsInput(serializers.Serializer):
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)
    speaker = serializers.CharField(required=False, allow_blank=True, max_length=100)
    language = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=16)


class ReloadInput(serializers.Serializer):
    model = serializers.CharField(max_length=100)
    version = serializers.CharField(required=False, allow_blank=True, max_length=40)


def _request(request: Request, data: dict[str, Any], fmt_name: str, language: str | None = None) -> SynthesisRequest:
    tenant = request_tenant(request)
    language = (language or "").strip() or None
    speaker = (data.get("speaker") or "").strip()
    voice: Voice | None
    if speaker:
        voice = speaker_voice(tenant, speaker)
    else:
        voice = default_voice_for_text(tenant, data["text"], language)
        if voice is None:
            raise SynthesisError("No default voice is installed.", code="voice_not_found", status=404, field="speaker")
    return SynthesisRequest(
        tenant=tenant,
        api_key=request_api_key(request),
        voice_id=voice.voice_id,
        text=data["text"],
        output_format=output_format_for(fmt_name),
        source="compat",
        language=language,
        request_id=getattr(request._request, "request_id", ""),
        voice_field="speaker",
    )


@extend_schema_view(
    post=extend_schema(
        operation_id="compat_api_tts",
        tags=TAGS,
        summary="CosyVoice WebUI: 16 kHz WAV, chunked when streaming",
        request=ApiTtsInput,
        responses=audio_responses("audio/wav, 16 kHz 16-bit mono."),
    )
)
class ApiTtsView(APIView):
    required_scope = Scope.TTS
    error_dialect = "fastapi"

    def post(self, request: Request) -> HttpResponseBase:
        body = ApiTtsInput(data=request.data)
        body.is_valid(raise_exception=True)
        req = _request(request, body.validated_data, "wav_16000")
        if body.validated_data["streaming"]:
            return audio_stream_response(request, synthesis_prepare(req))
        result = synthesis_create(req)
        response = HttpResponse(result.audio, content_type="audio/wav")
        audio_headers(response, result.record, request_id=req.request_id)
        return response


@extend_schema_view(
    post=extend_schema(
        operation_id="compat_tts",
        tags=TAGS,
        summary="CosyVoice Lite: base64 WAV in JSON",
        request=LiteTtsInput,
        responses={
            200: json_object(
                '{"audio": base64 WAV, "sample_rate", "duration", "status": "success"}, streamed as it is '
                'synthesized; "status": "error" with "detail" if the synthesis fails after it began'
            )
        },
    )
)
class LiteTtsView(APIView):
    required_scope = Scope.TTS
    error_dialect = "fastapi"

    def post(self, request: Request) -> HttpResponseBase:
        body = LiteTtsInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        req = _request(request, data, "wav", language=data.get("language"))
        prep = synthesis_prepare(req)
        return body_stream_response(request, prep, Base64AudioJson(prep), content_type="application/json")


class Base64AudioJson:
    """``/tts``'s JSON document written around the WAV as it is synthesized: its base64 in three-byte
    steps (what is left over waits for the next chunk), then the rate, the duration and the status.

    ``{"audio": "<base64 WAV>", "sample_rate": 22050, "duration": 2.4, "status": "success"}``: the
    reference article's keys, the status last because it is known last. A synthesis that fails
    after the audio began ends the document with ``"status": "error"`` and FastAPI's ``detail``.
    The WAV is a stream's (its sizes ``0xFFFFFFFF``; a cache hit sends the sealed file).
    """

    def __init__(self, prep: SynthesisRun) -> None:
        self.prep = prep
        self.carry = b""

    def head(self) -> bytes:
        return b'{"audio": "'

    def piece(self, chunk: bytes) -> bytes:
        data = self.carry + chunk
        cut = len(data) - len(data) % 3
        self.carry = data[cut:]
        return base64.b64encode(data[:cut])

    def tail(self) -> bytes:
        encoder = self.prep.encoder
        rate = encoder.format.sample_rate if encoder is not None else 0
        duration = encoder.samples_out / rate if encoder is not None and rate else 0.0
        return self._end({"sample_rate": rate, "duration": round(duration, 3), "status": "success"})

    def failure(self, exc: SynthesisError) -> bytes:
        return self._end({"status": "error", "detail": exc.message})

    def _end(self, fields: dict[str, Any]) -> bytes:
        rest = base64.b64encode(self.carry)
        self.carry = b""
        return rest + b'", ' + json.dumps(fields, ensure_ascii=False)[1:].encode()


@extend_schema_view(
    post=extend_schema(
        operation_id="compat_admin_reload",
        tags=TAGS,
        summary="Activate a model version everywhere (staff-only key scope models:admin)",
        request=ReloadInput,
        responses={200: json_object('{"status": "success", "model", "version", "state"}')},
    )
)
class ReloadView(APIView):
    required_scope = Scope.MODELS_ADMIN
    error_dialect = "fastapi"

    def post(self, request: Request) -> Response:
        key = request_api_key(request)
        creator = getattr(key, "created_by", None)
        if creator is None or not (creator.is_staff and creator.is_active):
            raise SynthesisError(
                "This key's models:admin scope needs a key made by an active staff user.",
                code="permission_denied",
                status=403,
            )
        body = ReloadInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            version = model_version_named(data["model"], data.get("version") or None)
        except LookupError as exc:
            raise SynthesisError(str(exc), code="model_not_found", status=404, field="model") from exc
        activate_model_version(version)
        return Response(
            {
                "status": "success",
                "model": version.model_id,
                "version": version.version,
                "state": version.status,
                "poll_seconds": settings.TTS_MODEL_POLL_SECONDS,
            }
        )
