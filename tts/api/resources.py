"""ElevenLabs-compatible reads: voices, models, subscription (history: ``tts.api.history``).

Field names follow ElevenLabs' API so its SDK parses them; extra fields that
only this platform has are added alongside, never instead.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from accounts.quota import characters_per_request_limit, next_period_start, usage_for_period
from tts.catalogue import (
    ModelAlias,
    active_model_versions_for_tenant,
    model_aliases,
    voice_delete,
    voice_get,
    voices_served_for_tenant,
)
from tts.errors import SynthesisError
from tts.models import ModelVersion, Voice
from tts.synthesis import engine_seconds_limit, job_engine_seconds_limit

from .openapi import error_responses, json_object

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


def unix_time(value: dt.datetime | None) -> int | None:
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
        "created_at_unix": unix_time(voice.created_at),
        "model_id": voice.model_id,
        "speaker_index": voice.speaker_index,
        "blend": voice.blend or None,
    }


@extend_schema_view(
    get=extend_schema(
        operation_id="voices_list",
        tags=["voices"],
        summary="Voices this key can use",
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
        operation_id="voices_get",
        tags=["voices"],
        summary="One voice",
        responses={
            200: json_object("The voice, ElevenLabs' fields plus model_id and speaker_index."),
            **error_responses("elevenlabs", 403, 404),
        },
    ),
    delete=extend_schema(
        operation_id="voices_delete",
        tags=["voices"],
        summary="Delete one of this tenant's own voices",
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
            raise SynthesisError(
                f"This tenant has no voice of its own with voice_id '{voice_id}'.",
                code="voice_not_found",
                status=404,
                field="voice_id",
            )
        return Response({"status": "ok"})

    def get(self, request: Request, voice_id: str) -> Response:
        voice = voice_get(request_tenant(request), voice_id)
        if voice is None:
            raise SynthesisError(
                f"A voice with voice_id '{voice_id}' was not found.",
                code="voice_not_found",
                status=404,
                field="voice_id",
            )
        return Response(voice_json(voice, tenant_id=request_tenant(request).pk))


def _model_fields(
    model_id: str,
    name: str,
    description: str,
    languages: list[str] | tuple[str, ...],
    served_by: list[str],
    max_chars: int,
) -> dict[str, Any]:
    """ElevenLabs' Model shape, the same for the platform's models and the ``eleven_*`` ids they answer."""
    return {
        "model_id": model_id,
        "name": name,
        "description": description,
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
        "languages": languages_json(languages),
        "model_rates": {"character_cost_multiplier": 1.0},
        "concurrency_group": "standard",
        "served_by": served_by,
    }


def model_json(version: ModelVersion, max_chars: int) -> dict[str, Any]:
    name = version.display_name or version.model_id
    fields = _model_fields(
        version.model_id, name, version.description, version.languages, [version.model_id], max_chars
    )
    return {**fields, "version": version.version, "engine": version.engine, "sample_rate": version.sample_rate}


def languages_json(codes: list[str] | tuple[str, ...]) -> list[dict[str, str]]:
    return [{"language_id": code, "name": LANGUAGE_NAMES.get(code, code)} for code in codes]


def model_alias_json(alias: ModelAlias, max_chars: int) -> dict[str, Any]:
    """An ElevenLabs model id in ElevenLabs' Model shape; ``served_by`` names the platform's models
    that answer it (each voice speaks with its own)."""
    description = (
        f"Accepted for ElevenLabs clients: each voice speaks it with its own model ({', '.join(alias.served_by)})."
    )
    return _model_fields(alias.model_id, alias.name, description, alias.languages, list(alias.served_by), max_chars)


@extend_schema_view(
    get=extend_schema(
        operation_id="models_list",
        tags=["models"],
        summary="Active models, then the ElevenLabs model ids they answer",
        responses={
            200: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="A list of models: this platform's, then ElevenLabs' ids (eleven_*), each with "
                "served_by, the platform models that answer it.",
            ),
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
        versions = list(active_model_versions_for_tenant(tenant))
        aliases = [model_alias_json(a, max_chars) for a in model_aliases(versions)]
        return Response([model_json(v, max_chars) for v in versions] + aliases)


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
        # Engine-seconds one request may spend (tts/synthesis/engine_time/budget.py; docs/limits.md).
        "max_engine_seconds_per_request": engine_seconds_limit(plan),
        "max_engine_seconds_per_job": job_engine_seconds_limit(plan),
        "history_retention_days": plan.history_retention_days,
    }


@extend_schema_view(
    get=extend_schema(
        operation_id="user_subscription",
        tags=["user"],
        summary="Plan, characters used and limits",
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
        operation_id="user_get",
        tags=["user"],
        summary="The tenant behind this key",
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
                "created_at": unix_time(tenant.created_at),
                "now_unix": unix_time(timezone.now()),
            }
        )
