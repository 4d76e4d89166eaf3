"""Selectors for voices and model versions, always scoped to a tenant."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from accounts.models import Tenant
from infra.lookup_cache import LookupCache, lookup_cache
from tts.models import ModelVersion, Voice

# Keyed by tenant: a voice and the version serving it are resolved together, per tenant.
_voices: LookupCache[tuple[int, str], tuple[Voice, ModelVersion]] = lookup_cache("voices")
_voices_by_name: LookupCache[tuple[int, str, str | None], Voice] = lookup_cache("voices by name")
_voices_first: LookupCache[tuple[int, tuple[str, ...]], Voice] = lookup_cache("first voice of names")


def voices_for_tenant(tenant: Tenant, *, language: str | None = None) -> QuerySet[Voice]:
    """Voices this tenant may use: the shared ones and its own; ``language`` ("ja", "en-US")
    keeps those of that primary language ("en" matches "en" and "en-US")."""
    voices = Voice.objects.filter(Q(tenant__isnull=True) | Q(tenant=tenant), is_active=True)
    code = (language or "").strip().lower().replace("_", "-").split("-")[0]
    if code:
        voices = voices.filter(
            Q(language__iexact=code) | Q(language__istartswith=f"{code}-") | Q(language__istartswith=f"{code}_")
        )
    return voices.order_by("name", "voice_id")


def voice_languages(tenant: Tenant) -> list[str]:
    """The primary languages of the voices this tenant may speak with now, for a filter."""
    codes = voices_served_for_tenant(tenant).values_list("language", flat=True).distinct()
    return sorted({code.lower().replace("_", "-").split("-")[0] for code in codes if code})


def voices_served_for_tenant(tenant: Tenant, *, language: str | None = None) -> QuerySet[Voice]:
    """The tenant's voices that an active model version serves now: what the dashboard offers to speak
    with. A voice whose model has no active version (retired, never activated) would only answer 503."""
    active = ModelVersion.objects.filter(model_id=OuterRef("model_id"), status=ModelVersion.Status.ACTIVE)
    return voices_for_tenant(tenant, language=language).filter(Exists(active))


def voice_get(tenant: Tenant, voice_id: str) -> Voice | None:
    return voices_for_tenant(tenant).filter(voice_id=voice_id).first()


def voice_and_active_version(tenant: Tenant, voice_id: str) -> tuple[Voice | None, ModelVersion | None]:
    """The voice and the active version of its model, through this process's lookup cache
    (the synthesis path reads them on every request). Nothing is cached while either is missing."""

    incomplete: list[tuple[Voice | None, ModelVersion | None]] = []

    def load() -> tuple[Voice, ModelVersion] | None:
        voice = voice_get(tenant, voice_id)
        version = active_model_version(voice.model_id) if voice is not None else None
        if voice is None or version is None:
            incomplete.append((voice, version))
            return None
        return voice, version

    found = _voices.get((tenant.pk, voice_id), load)
    return found if found is not None else incomplete[0]


def voice_find(tenant: Tenant, name_or_id: str) -> Voice | None:
    """By voice_id, else by name (case-insensitive); used by the OpenAI API's ``voice``."""
    voice = voice_get(tenant, name_or_id)
    if voice is None:
        voice = voices_for_tenant(tenant).filter(name__iexact=name_or_id).first()
    return voice


def voice_find_cached(tenant: Tenant, name_or_id: str, *, fallback_id: str | None = None) -> Voice | None:
    """``voice_find``, else the voice ``fallback_id`` when given, through this process's lookup
    cache (the OpenAI route's ``voice``, where ``alloy`` and the like mean the default voice)."""

    def load() -> Voice | None:
        voice = voice_find(tenant, name_or_id)
        if voice is None and fallback_id:
            voice = voice_find(tenant, fallback_id)
        return voice

    return _voices_by_name.get((tenant.pk, name_or_id, fallback_id), load)


def voice_first_cached(tenant: Tenant, exact_id: str, *names_or_ids: str) -> Voice | None:
    """The voice whose id is ``exact_id``, else the first of ``names_or_ids`` that ``voice_find``
    finds, as one entry of this process's lookup cache (OpenAI's ``alloy``: a voice of that id, else
    the voice it maps to, else the default voice, resolved once rather than three lookups a request)."""

    def load() -> Voice | None:
        voice = voice_get(tenant, exact_id)
        for name in names_or_ids:
            if voice is not None:
                break
            voice = voice_find(tenant, name)
        return voice

    return _voices_first.get((tenant.pk, (exact_id, *names_or_ids)), load)


def active_model_version(model_id: str) -> ModelVersion | None:
    return ModelVersion.objects.filter(model_id=model_id, status=ModelVersion.Status.ACTIVE).first()


def active_model_versions() -> QuerySet[ModelVersion]:
    return ModelVersion.objects.filter(status=ModelVersion.Status.ACTIVE).order_by("model_id")


def active_model_versions_for_tenant(tenant: Tenant) -> QuerySet[ModelVersion]:
    """Active versions of the models that serve a voice this tenant may use: a model only
    another tenant's private voices use is not listed (its name would tell what they have)."""
    model_ids = voices_for_tenant(tenant).order_by().values("model_id")
    return active_model_versions().filter(model_id__in=model_ids)
