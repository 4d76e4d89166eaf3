"""Operator admin: model versions (activate, retire), voices, and the history (read-only)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from .models import Job, ModelVersion, PronunciationDictionary, PronunciationDictionaryVersion, SynthesisRecord, Voice
from .services.model_import import activate_model_version, retire_model_version


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    list_display = (
        "model_id",
        "version",
        "engine",
        "status",
        "device",
        "preload",
        "sample_rate",
        "num_speakers",
        "activated_at",
    )
    list_filter = ("status", "engine")
    search_fields = ("model_id",)
    readonly_fields = ("sha256", "sample_rate", "num_speakers", "created_at", "activated_at", "status")
    actions = ["activate", "retire"]

    @admin.action(description="Activate (serves its model from now on, in every process)")
    def activate(self, request: HttpRequest, queryset: QuerySet[ModelVersion]) -> None:
        by_model: dict[str, ModelVersion] = {}
        for version in queryset:
            if version.model_id in by_model:
                self.message_user(request, f"Pick one version of {version.model_id} to activate.", messages.ERROR)
                return
            by_model[version.model_id] = version
        for version in by_model.values():
            activate_model_version(version)
        self.message_user(request, f"Activated {len(by_model)} version(s).")

    @admin.action(description="Retire (stop serving)")
    def retire(self, request: HttpRequest, queryset: QuerySet[ModelVersion]) -> None:
        for version in queryset:
            retire_model_version(version)
        self.message_user(request, f"Retired {queryset.count()} version(s).")


@admin.register(Voice)
class VoiceAdmin(admin.ModelAdmin):
    list_display = ("voice_id", "name", "language", "model_id", "speaker_index", "tenant", "is_active")
    list_filter = ("is_active", "language")
    list_select_related = ("tenant",)
    search_fields = ("voice_id", "name")
    raw_id_fields = ("tenant",)


class NoCountPaginator(Paginator):
    """Counting a 10-million-row history table on every admin page is too slow."""

    @cached_property
    def count(self) -> int:
        return 10**9


@admin.register(SynthesisRecord)
class SynthesisRecordAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "created_at",
        "tenant",
        "voice_id",
        "source",
        "status",
        "characters",
        "duration_s",
        "latency_ms",
        "cache_hit",
    )
    list_filter = ("status", "source", "cache_hit")
    list_select_related = ("tenant",)
    raw_id_fields = ("tenant", "api_key", "model_version")
    date_hierarchy = None
    paginator = NoCountPaginator
    show_full_result_count = False
    ordering = ("-created_at",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SynthesisRecord | None = None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """Read-only view of long-form jobs; they change only through their workers."""

    list_display = (
        "id",
        "created_at",
        "tenant",
        "voice_id",
        "status",
        "done_chunks",
        "total_chunks",
        "characters",
        "attempts",
        "error_code",
    )
    list_filter = ("status", "kind")
    list_select_related = ("tenant",)
    raw_id_fields = ("tenant", "api_key", "model_version")
    exclude = ("plan",)
    paginator = NoCountPaginator
    show_full_result_count = False
    ordering = ("-created_at",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Job | None = None) -> bool:
        return False


class PronunciationDictionaryVersionInline(admin.TabularInline):
    """Versions are immutable: each change through the API writes a new one."""

    model = PronunciationDictionaryVersion
    extra = 0
    fields = ("number", "version_id", "rules", "created_at")
    readonly_fields = fields
    can_delete = False
    ordering = ("-number",)

    def has_add_permission(self, request: HttpRequest, obj: object | None = None) -> bool:
        return False


@admin.register(PronunciationDictionary)
class PronunciationDictionaryAdmin(admin.ModelAdmin):
    list_display = ("name", "dictionary_id", "tenant", "is_default", "created_at", "archived_at")
    list_filter = ("is_default",)
    search_fields = ("name", "dictionary_id", "tenant__slug")
    list_select_related = ("tenant",)
    readonly_fields = ("dictionary_id", "created_at")
    fields = ("tenant", "name", "description", "is_default", "archived_at", "dictionary_id", "created_by", "created_at")
    raw_id_fields = ("tenant",)
    inlines = [PronunciationDictionaryVersionInline]
