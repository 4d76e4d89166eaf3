"""Admin for voices: each checked against the registered versions of its model."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest

from tts.models import ModelVersion, Voice

from .forms import VoiceAdminForm


@admin.register(Voice)
class VoiceAdmin(admin.ModelAdmin):
    form = VoiceAdminForm
    list_display = ("voice_id", "name", "language", "model_id", "served", "speaker_index", "tenant", "is_active")
    list_filter = ("is_active", "language")
    list_select_related = ("tenant",)
    search_fields = ("voice_id", "name", "model_id")
    raw_id_fields = ("tenant",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Voice]:
        active = ModelVersion.objects.filter(model_id=OuterRef("model_id"), status=ModelVersion.Status.ACTIVE)
        return super().get_queryset(request).annotate(has_active_version=Exists(active))

    @admin.display(description="Served", boolean=True, ordering="has_active_version")
    def served(self, obj: Voice) -> bool:
        """Whether an active version of its model serves it now (else requests get 503)."""
        return bool(getattr(obj, "has_active_version", False))
