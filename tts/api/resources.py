"""ElevenLabs-compatible reads: voices, models, history, subscription.

Field names follow ElevenLabs' API so its SDK parses them; extra fields that
only this platform has are added alongside, never instead.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from accounts.quota import characters_per_request_limit, next_period_start, usage_for_period
from tts.models import ModelVersion, SynthesisRecord, Voice
from tts.services.history import history_for_tenant, history_item_delete, history_item_get
from tts.services.history_export import ExportError, history_archive_chunks, history_archive_size
from tts.services.pagination import keyset_page
from tts.services.voice_blends import voice_delete
from tts.services.voices import active_model_versions_for_tenant, voice_get, voices_served_for_tenant

from .errors import ApiError
from .fields import StrictCharField
from .openapi import audio_responses, error_responses, json_object

LANGUAGE_NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
    "pl": "Polish",
    "ru": "Russian",
    "uk": "Ukrainian",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "ar": "Arabic",
    "tr": "Turkish",
    "sv": "Swedish",
    "hi": "Hindi",
}


def _unix(value: dt.datetime | None) -> int | None:
    return int(value.timestamp()) if value else None


def voice_json(voice: Voice, *, tenant_id: int) -> dict[str, Any]:
    settings_out = {"stability": 0.5, "similarity_boost": 0.75, "style": 0.0, "use_speaker_boost": False, "speed": 1.0}
    settings_out.update(voice.default_settings or {})
    return {
        "voice_id": voice.voice_id,
        "name": voice.name,
        "category": voice.category,
        "description": voice.description,
        "labels": {"language": voice.language, **(voice.labels or {})},
        "language": voice.language,
        "preview_url": None,
        "settings": settings_out,
        "verified_languages": [{"language": voice.language, "model_id": voice.model_id, "accent": None}],
        "high_quality_base_model_ids": [voice.model_id],
        "available_for_tiers": [],
        "is_owner": voice.tenant_id == tenant_id,
        "samples": None,
        "sharing": None,
        "fine_tuning": None,
        "model_id": voice.model_id,
        "speaker_index": voice.speaker_index,
        "blend": voice.blend or None,
    }


@extend_schema_view(
    get=extend_schema(
        operation_id="voices_list", tags=["voices"], summary="Voices this key can use",
        parameters=[OpenApiParameter("language", str, description='Only this language ("ja"; "en" matches en-US).')],
        responses={200: json_object("voices, has_more, total_count"), **error_responses("elevenlabs", 403)},
    )
)
class VoiceListApi(APIView):
    required_scope = Scope.VOICES_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request) -> Response:
        tenant = request_tenant(request)
        language = request.query_params.get("language") or None
        # Only voices an active version serves: one whose model has none would answer 503 (the admin still lists it).
        served = voices_served_for_tenant(tenant, language=language)
        voices = [voice_json(v, tenant_id=tenant.pk) for v in served]
        return Response({"voices": voices, "has_more": False, "total_count": len(voices)})


@extend_schema_view(
    get=extend_schema(
        operation_id="voices_get", tags=["voices"], summary="One voice",
        responses={200: json_object("The voice, ElevenLabs' fields plus model_id and speaker_index."),
                   **error_responses("elevenlabs", 403, 404)},
    ),
    delete=extend_schema(
        operation_id="voices_delete", tags=["voices"], summary="Delete one of this tenant's own voices",
        responses={200: json_object('{"status": "ok"}'), **error_responses("elevenlabs", 403, 404)},
    ),
)
class VoiceDetailApi(APIView):
    error_dialect = "elevenlabs"

    @property
    def required_scope(self) -> str:
        return Scope.TTS if self.request.method == "DELETE" else Scope.VOICES_READ

    def delete(self, request: Request, voice_id: str) -> Response:
        if not voice_delete(tenant=request_tenant(request), voice_id=voice_id):
            raise ApiError(
                f"This tenant has no voice of its own with voice_id '{voice_id}'.",
                code="voice_not_found",
                status_code=404,
                field="voice_id",
            )
        return Response({"status": "ok"})

    def get(self, request: Request, voice_id: str) -> Response:
        voice = voice_get(request_tenant(request), voice_id)
        if voice is None:
            raise ApiError(
                f"A voice with voice_id '{voice_id}' was not found.",
                code="voice_not_found",
                status_code=404,
                field="voice_id",
            )
        return Response(voice_json(voice, tenant_id=request_tenant(request).pk))


def model_json(version: ModelVersion, max_chars: int) -> dict[str, Any]:
    return {
        "model_id": version.model_id,
        "name": version.display_name or version.model_id,
        "description": version.description,
        "can_be_finetuned": False,
        "can_do_text_to_speech": True,
        "can_do_voice_conversion": False,
        "can_use_style": False,
        "can_use_speaker_boost": False,
        "serves_pro_voices": False,
        "token_cost_factor": 1.0,
        "requires_alpha_access": False,
        "max_characters_request_free_user": max_chars,
        "max_characters_request_subscribed_user": max_chars,
        "maximum_text_length_per_request": max_chars,
        "languages": [{"language_id": code, "name": LANGUAGE_NAMES.get(code, code)} for code in version.languages],
        "model_rates": {"character_cost_multiplier": 1.0},
        "concurrency_group": "standard",
        "version": version.version,
        "engine": version.engine,
        "sample_rate": version.sample_rate,
    }


@extend_schema_view(
    get=extend_schema(
        operation_id="models_list", tags=["models"], summary="Active models",
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="A list of models."),
            **error_responses("elevenlabs", 403),
        },
    )
)
class ModelListApi(APIView):
    required_scope = Scope.VOICES_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request) -> Response:
        tenant = request_tenant(request)
        max_chars = characters_per_request_limit(tenant.plan)
        return Response([model_json(v, max_chars) for v in active_model_versions_for_tenant(tenant)])


# --- history -----------------------------------------------------------------

_SOURCE_LABELS = {
    "elevenlabs": "TTS",
    "elevenlabs_stream": "TTS",
    "websocket": "TTS",
    "openai": "TTS",
    "job": "Projects",
    "playground": "TTS",
    "wyoming": "TTS",
}


def history_json(record: SynthesisRecord) -> dict[str, Any]:
    return {
        "history_item_id": str(record.pk),
        "request_id": record.request_id or None,
        "voice_id": record.voice_id,
        "model_id": record.model_id,
        "voice_name": record.voice_name,
        "voice_category": "premade",
        "text": record.text if record.text_logged else None,
        "date_unix": _unix(record.created_at),
        "character_count_change_from": 0,
        "character_count_change_to": record.characters,
        "content_type": record.content_type,
        "state": "created" if record.status == SynthesisRecord.Status.SUCCESS else record.status,
        "settings": record.settings or None,
        "feedback": None,
        "share_link_id": None,
        "source": _SOURCE_LABELS.get(record.source, "TTS"),
        # This platform's own fields:
        "status": record.status,
        "origin": record.source,
        "output_format": record.output_format,
        "sample_rate": record.sample_rate,
        "duration_seconds": record.duration_s,
        "latency_ms": record.latency_ms,
        "time_to_first_byte_ms": record.ttfb_ms,
        "cache_hit": record.cache_hit,
        "error_code": record.error_code or None,
        "has_audio": bool(record.audio),
    }


# The last second of year 9999: past it a datetime cannot hold the value (a 500 before).
MAX_UNIX_S = 253_402_300_799


class HistoryQuerySerializer(serializers.Serializer):
    page_size = serializers.IntegerField(required=False, default=100, min_value=1, max_value=1000)
    start_after_history_item_id = StrictCharField(required=False, allow_blank=True)
    voice_id = StrictCharField(required=False, allow_blank=True)
    date_before_unix = serializers.IntegerField(required=False, min_value=0, max_value=MAX_UNIX_S)
    date_after_unix = serializers.IntegerField(required=False, min_value=0, max_value=MAX_UNIX_S)
    source = serializers.ChoiceField(choices=SynthesisRecord.Source.choices, required=False)  # type: ignore[assignment]
    status = serializers.ChoiceField(choices=SynthesisRecord.Status.choices, required=False)


def _from_unix(value: int | None) -> dt.datetime | None:
    return dt.datetime.fromtimestamp(value, tz=dt.UTC) if value is not None else None


@extend_schema_view(
    get=extend_schema(
        operation_id="history_list", tags=["history"], summary="Synthesis history, newest first",
        parameters=[HistoryQuerySerializer],
        responses={
            200: json_object("history, last_history_item_id, has_more"),
            **error_responses("elevenlabs", 400, 403),
        },
    )
)
class HistoryListApi(APIView):
    required_scope = Scope.HISTORY_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request) -> Response:
        query = HistoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        tenant = request_tenant(request)
        qs = history_for_tenant(
            tenant,
            voice_id=q.get("voice_id") or None,
            source=q.get("source"),
            status=q.get("status"),
            date_after=_from_unix(q.get("date_after_unix")),
            date_before=_from_unix(q.get("date_before_unix")),
        )
        cursor_id = q.get("start_after_history_item_id")
        cursor = history_item_get(tenant, cursor_id) if cursor_id else None
        if cursor_id and cursor is None:
            raise ApiError(
                f"History item '{cursor_id}' was not found.",
                code="invalid_cursor",
                status_code=400,
                field="start_after_history_item_id",
            )
        page = keyset_page(qs, after=cursor, size=q["page_size"])
        items = page.items
        return Response(
            {
                "history": [history_json(r) for r in items],
                "last_history_item_id": str(items[-1].pk) if items else None,
                "has_more": page.has_more,
                "scanned_until": None,
            }
        )


def _item_or_404(request: Request, history_item_id: str) -> SynthesisRecord:
    record = history_item_get(request_tenant(request), history_item_id)
    if record is None:
        raise ApiError(
            f"History item '{history_item_id}' was not found.",
            code="history_item_not_found",
            status_code=404,
            field="history_item_id",
        )
    return record


@extend_schema_view(
    get=extend_schema(
        operation_id="history_get", tags=["history"], summary="One history item",
        responses={200: json_object("The history item."), **error_responses("elevenlabs", 403, 404)},
    ),
    delete=extend_schema(
        operation_id="history_delete", tags=["history"], summary="Delete a history item and its audio",
        responses={200: json_object('{"status": "ok"}'), **error_responses("elevenlabs", 403, 404)},
    ),
)
class HistoryDetailApi(APIView):
    error_dialect = "elevenlabs"

    @property
    def required_scope(self) -> str:
        return Scope.HISTORY_WRITE if self.request.method == "DELETE" else Scope.HISTORY_READ

    def get(self, request: Request, history_item_id: str) -> Response:
        return Response(history_json(_item_or_404(request, history_item_id)))

    def delete(self, request: Request, history_item_id: str) -> Response:
        history_item_delete(_item_or_404(request, history_item_id))
        return Response({"status": "ok"})


def _audio_response(record: SynthesisRecord) -> HttpResponseBase:
    if not record.audio:
        raise ApiError(
            "This history item has no stored audio (logging was off or it did not complete).",
            code="audio_not_found",
            status_code=404,
            field="history_item_id",
        )
    response = FileResponse(record.audio.open("rb"), content_type=record.content_type)
    response["history-item-id"] = str(record.pk)
    return response


@extend_schema_view(
    get=extend_schema(
        operation_id="history_audio", tags=["history"], summary="The stored audio of a history item",
        responses={**audio_responses("The audio as it was returned."), **error_responses("elevenlabs", 403, 404)},
    )
)
class HistoryAudioApi(APIView):
    required_scope = Scope.HISTORY_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request, history_item_id: str) -> HttpResponseBase:
        return _audio_response(_item_or_404(request, history_item_id))


class HistoryDownloadInputSerializer(serializers.Serializer):
    history_item_ids = serializers.ListField(child=StrictCharField(), min_length=1, max_length=100)


@extend_schema_view(
    post=extend_schema(
        operation_id="history_download", tags=["history"], summary="Download history audio (one file or a zip)",
        request=HistoryDownloadInputSerializer,
        responses={
            **audio_responses("One id: its audio."),
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="Several ids: a zip."),
            **error_responses("elevenlabs", 400, 403, 404),
        },
    )
)
class HistoryDownloadApi(APIView):
    """One id: that file. Several: a zip of them."""

    required_scope = Scope.HISTORY_READ
    error_dialect = "elevenlabs"

    def post(self, request: Request) -> HttpResponseBase:
        body = HistoryDownloadInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        # The same id twice is one file (and one read), not two.
        item_ids = list(dict.fromkeys(body.validated_data["history_item_ids"]))
        records = [_item_or_404(request, item_id) for item_id in item_ids]
        if len(records) == 1:
            return _audio_response(records[0])
        try:
            history_archive_size(records)
        except ExportError as exc:
            raise ApiError(str(exc), code=exc.code, status_code=exc.status, field=exc.field) from exc
        chunks = history_archive_chunks(records)
        content = _in_worker_threads(chunks) if isinstance(request._request, ASGIRequest) else chunks
        response = StreamingHttpResponse(content, content_type="application/zip")
        response["Content-Disposition"] = 'attachment; filename="history.zip"'
        return response


async def _in_worker_threads(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The zip's pieces read off the event loop, one at a time (Django would list a sync iterator
    whole before sending it under ASGI)."""
    def step() -> bytes | None:
        return next(chunks, None)

    try:
        while (chunk := await sync_to_async(step, thread_sensitive=False)()) is not None:
            yield chunk
    finally:
        await sync_to_async(chunks.close, thread_sensitive=False)()  # type: ignore[attr-defined]


# --- user ------------------------------------------------------------------------


def subscription_json(tenant: Any) -> dict[str, Any]:
    usage = usage_for_period(tenant)
    plan = tenant.plan
    reset = next_period_start()
    reset_dt = dt.datetime(reset.year, reset.month, reset.day, tzinfo=dt.UTC)
    return {
        "tier": plan.name,
        "character_count": usage.characters,
        "character_limit": plan.monthly_character_limit,
        "can_extend_character_limit": False,
        "allowed_to_extend_character_limit": False,
        "next_character_count_reset_unix": int(reset_dt.timestamp()),
        "max_credit_limit_extension": 0,
        "voice_slots_used": 0,
        "professional_voice_slots_used": 0,
        "professional_voice_slots_used_in_workspace": 0,
        "voice_limit": 0,
        "voice_add_edit_counter": 0,
        "professional_voice_limit": 0,
        "can_extend_voice_limit": False,
        "can_use_instant_voice_cloning": False,
        "can_use_professional_voice_cloning": False,
        "current_overage": {"amount": "0", "currency": "usd"},
        "status": "active",
        "open_invoices": [],
        "has_open_invoices": False,
        "billing_period": "monthly_period",
        "character_refresh_period": "monthly_period",
        "requests_this_period": usage.requests,
        "requests_per_minute": plan.requests_per_minute,
        "max_concurrent_streams": plan.max_concurrent_streams,
        "max_characters_per_request": plan.max_characters_per_request,
        "history_retention_days": plan.history_retention_days,
    }


@extend_schema_view(
    get=extend_schema(
        operation_id="user_subscription", tags=["user"], summary="Plan, characters used and limits",
        responses={
            200: json_object("ElevenLabs' subscription fields plus plan limits."),
            **error_responses("elevenlabs", 403),
        },
    )
)
class SubscriptionApi(APIView):
    required_scope = Scope.USER_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request) -> Response:
        return Response(subscription_json(request_tenant(request)))


@extend_schema_view(
    get=extend_schema(
        operation_id="user_get", tags=["user"], summary="The tenant behind this key",
        responses={200: json_object("user_id and subscription."), **error_responses("elevenlabs", 403)},
    )
)
class UserApi(APIView):
    required_scope = Scope.USER_READ
    error_dialect = "elevenlabs"

    def get(self, request: Request) -> Response:
        tenant = request_tenant(request)
        return Response(
            {
                "user_id": f"tenant-{tenant.pk}",
                "subscription": subscription_json(tenant),
                "is_new_user": False,
                "xi_api_key": None,
                "can_use_delayed_payment_methods": False,
                "is_onboarding_completed": True,
                "is_onboarding_checklist_completed": True,
                "first_name": tenant.name,
                "created_at": _unix(tenant.created_at),
                "now_unix": _unix(timezone.now()),
            }
        )
