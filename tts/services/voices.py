"""Selectors for voices and model versions, always scoped to a tenant."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from accounts.models import Tenant
from tts.models import ModelVersion, Voice


def voices_for_tenant(tenant: Tenant) -> QuerySet[Voice]:
    """Voices this tenant may use: the shared ones and its own."""
    return Voice.objects.filter(Q(tenant__isnull=True) | Q(tenant=tenant), is_active=True).order_by("name", "voice_id")


def voice_get(tenant: Tenant, voice_id: str) -> Voice | None:
    return voices_for_tenant(tenant).filter(voice_id=voice_id).first()


def voice_find(tenant: Tenant, name_or_id: str) -> Voice | None:
    """By voice_id, else by name (case-insensitive); used by the OpenAI API's ``voice``."""
    voice = voice_get(tenant, name_or_id)
    if voice is None:
        voice = voices_for_tenant(tenant).filter(name__iexact=name_or_id).first()
    return voice


def active_model_version(model_id: str) -> ModelVersion | None:
    return ModelVersion.objects.filter(model_id=model_id, status=ModelVersion.Status.ACTIVE).first()


def active_model_versions() -> QuerySet[ModelVersion]:
    return ModelVersion.objects.filter(status=ModelVersion.Status.ACTIVE).order_by("model_id")
