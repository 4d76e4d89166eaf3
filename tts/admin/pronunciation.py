"""Admin for pronunciation dictionaries: each with its immutable versions, read-only."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from tts.models import PronunciationDictionary, PronunciationDictionaryVersion


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
