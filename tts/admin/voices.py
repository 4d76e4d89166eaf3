"""Admin for voices: each checked against the registered versions of its model; a voice still in use
(history, jobs, blends, reference speakers, settings) cannot be deleted, only turned off."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest

from tts.catalogue import voice_uses
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
    readonly_fields = ("created_at",)
    delete_confirmation_template = "admin/tts/voice/delete_confirmation.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Voice]:
        active = ModelVersion.objects.filter(model_id=OuterRef("model_id"), status=ModelVersion.Status.ACTIVE)
        return super().get_queryset(request).annotate(has_active_version=Exists(active))

    @admin.display(description="Served", boolean=True, ordering="has_active_version")
    def served(self, obj: Voice) -> bool:
        """Whether an active version of its model serves it now (else requests get 503)."""
        return bool(getattr(obj, "has_active_version", False))

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        # One at a time, through the page that checks what uses the voice.
        actions.pop("delete_selected", None)
        return actions

    def get_deleted_objects(self, objs: Sequence[Voice] | QuerySet[Voice], request: HttpRequest) -> Any:
        """Django's list of what a delete takes, with a voice's uses among the protected: its delete
        page then says why and offers no button, and a POST deletes nothing."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        uses = [f"{voice}: {use}" for voice in objs for use in voice_uses(voice)]
        return deleted, counts, perms_needed, [*protected, *uses]

    def render_delete_form(self, request: HttpRequest, context: dict[str, Any]) -> Any:
        obj = context.get("object")
        context["voice_uses"] = voice_uses(obj) if isinstance(obj, Voice) else []
        return super().render_delete_form(request, context)
