"""Admin for the big tables, the history and the jobs: read-only, never counted.

The lists page with previous/next only (one row more than a page is fetched
to know whether there is a next), search by exact ids (history or job id,
request id, tenant slug, voice id, key prefix) so that every term can use an
index or a cheap scan, and play or download each item's audio.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import PAGE_VAR, ChangeList
from django.db.models import Model, Q, QuerySet
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import path, reverse
from django.utils.html import format_html

from tts.models import Job, SynthesisRecord
from tts.usage import ExportError, content_disposition, filename_for, playable_audio


class PreviousNextChangeList(ChangeList):
    """A change list that fetches one page (plus one row) and never runs COUNT(*)."""

    has_next: bool

    def get_results(self, request: HttpRequest) -> None:
        self.page_num = max(1, self.page_num)
        offset = (self.page_num - 1) * self.list_per_page
        # Big columns (texts, alignments, job plans) stay in the database: the list shows none of them.
        queryset = self.queryset.defer(*getattr(self.model_admin, "list_defer", ()))
        rows = list(queryset[offset : offset + self.list_per_page + 1])
        self.has_next = len(rows) > self.list_per_page
        self.result_list = rows[: self.list_per_page]
        self.result_count = len(self.result_list)
        self.full_result_count = None
        self.show_full_result_count = False
        self.show_admin_actions = True
        self.can_show_all = False
        self.multi_page = self.has_next or self.page_num > 1
        self.paginator = self.model_admin.get_paginator(request, self.queryset, self.list_per_page)

    def page_url(self, number: int) -> str:
        return str(self.get_query_string({PAGE_VAR: number}))

    @property
    def previous_url(self) -> str | None:
        return self.page_url(self.page_num - 1) if self.page_num > 1 else None

    @property
    def next_url(self) -> str | None:
        return self.page_url(self.page_num + 1) if self.has_next else None


def _search_terms(term: str) -> Q:
    """One search word: an item id, a request id, a tenant slug, a voice id or a key prefix, exactly."""
    prefix = term.removeprefix("tts_").split("_", 1)[0]
    q = Q(request_id=term) | Q(tenant__slug=term) | Q(voice_id=term) | Q(api_key__prefix=prefix)
    try:
        q |= Q(pk=uuid.UUID(term))
    except ValueError:
        pass
    return q


class BigTableAdmin(admin.ModelAdmin):
    """Shared by the history and the jobs: read-only, previous/next pages, exact-id search, audio."""

    list_per_page = 50
    show_full_result_count = False
    search_help_text = "An id, a request id, a tenant slug, a voice id or a key prefix (tts_…); words must all match."
    change_list_template = "admin/tts/big_table_change_list.html"
    ordering = ("-created_at",)
    list_select_related = ("tenant", "api_key")

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return PreviousNextChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        for term in search_term.split():
            queryset = queryset.filter(_search_terms(term))
        return queryset, False

    def get_search_fields(self, request: HttpRequest) -> list[str]:
        return ["request_id"]  # shows the search box; the lookups are get_search_results'

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        info = self.opts.app_label, self.opts.model_name
        own = [
            path(
                "<path:object_id>/audio/",
                self.admin_site.admin_view(self.audio_view),
                name="{}_{}_audio".format(*info),
            ),
        ]
        return own + super().get_urls()

    def audio_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        raise NotImplementedError

    def _audio_url(self, obj: Model, *, download: bool = False) -> str:
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_audio", args=[obj.pk])
        return f"{url}?download=1" if download else url

    @admin.display(description="Tenant", ordering="tenant__slug")
    def tenant_slug(self, obj: Any) -> str:
        return str(obj.tenant.slug)

    @admin.display(description="Key")
    def key_prefix(self, obj: Any) -> str:
        return obj.api_key.display_prefix if obj.api_key_id else "-"

    @admin.display(description="Voice", ordering="voice_id")
    def voice(self, obj: Any) -> str:
        return str(obj.voice_id)

    @admin.display(description="Created", ordering="created_at")
    def when(self, obj: Any) -> str:
        return obj.created_at.strftime("%Y-%m-%d %H:%M:%S")

    def _player(self, obj: Any, has_audio: bool, *, playable: bool = True) -> str:
        if not has_audio:
            return "-"
        if not playable:
            return format_html('<a href="{}" download>Download</a>', self._audio_url(obj, download=True))
        return format_html(
            '<span class="tts-audio"><audio controls preload="none" src="{}" aria-label="Play {}"></audio>'
            ' <a href="{}" download>Download</a></span>',
            self._audio_url(obj),
            obj.pk,
            self._audio_url(obj, download=True),
        )


@admin.register(SynthesisRecord)
class SynthesisRecordAdmin(BigTableAdmin):
    list_display = (
        "when",
        "tenant_slug",
        "voice",
        "source",
        "status",
        "characters",
        "seconds",
        "latency",
        "cache_hit",
        "audio_cell",
    )
    list_display_links = ("when",)
    list_filter = ("status", "source", "cache_hit", ("deleted_at", admin.EmptyFieldListFilter))
    raw_id_fields = ("tenant", "api_key", "model_version")
    readonly_fields = ("player",)
    list_defer = ("text", "alignment", "settings")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["player", *(f.name for f in self.opts.fields if f.name != "alignment")]

    @admin.display(description="s", ordering="duration_s")
    def seconds(self, obj: SynthesisRecord) -> str:
        return f"{obj.duration_s:.1f}"

    @admin.display(description="ms", ordering="latency_ms")
    def latency(self, obj: SynthesisRecord) -> str:
        return "-" if obj.latency_ms is None else str(obj.latency_ms)

    @admin.display(description="Audio")
    def audio_cell(self, obj: SynthesisRecord) -> str:
        return self._player(obj, bool(obj.audio))

    @admin.display(description="Audio")
    def player(self, obj: SynthesisRecord) -> str:
        return self._player(obj, bool(obj.audio))

    def audio_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        record = self.get_object(request, object_id)
        if record is None or not record.audio:
            raise Http404("No stored audio.")
        try:
            playable = playable_audio(record)
        except ExportError as exc:
            raise Http404(str(exc)) from exc
        response: HttpResponseBase
        if playable is not None:  # raw PCM and G.711 as WAV, so that players open it
            data, fmt = playable
            response = HttpResponse(data, content_type=fmt.content_type)
            extension = fmt.extension
        else:
            content_type = record.content_type or "application/octet-stream"
            response = FileResponse(record.audio.open("rb"), content_type=content_type)
            extension = (record.audio.name or "").rsplit(".", 1)[-1] or "bin"
        if request.GET.get("download"):
            response["Content-Disposition"] = content_disposition(filename_for(record, extension))
        return response


@admin.register(Job)
class JobAdmin(BigTableAdmin):
    """Long-form jobs change only through their workers."""

    list_display = (
        "when",
        "tenant_slug",
        "voice",
        "status",
        "chunks",
        "characters",
        "attempts",
        "error_code",
        "audio_cell",
    )
    list_display_links = ("when",)
    list_filter = ("status", "kind")
    raw_id_fields = ("tenant", "api_key", "model_version", "history_item")
    exclude = ("plan",)
    readonly_fields = ("player",)
    list_defer = ("text", "plan", "settings", "error_message")

    @admin.display(description="Chunks")
    def chunks(self, obj: Job) -> str:
        return f"{obj.done_chunks}/{obj.total_chunks}"

    def _has_audio(self, obj: Job) -> bool:
        return obj.status == Job.Status.SUCCEEDED and bool(obj.audio)

    @admin.display(description="Audio")
    def audio_cell(self, obj: Job) -> str:
        return self._player(obj, self._has_audio(obj), playable=obj.kind == Job.Kind.TEXT)

    @admin.display(description="Audio")
    def player(self, obj: Job) -> str:
        return self._player(obj, self._has_audio(obj), playable=obj.kind == Job.Kind.TEXT)

    def audio_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        job = self.get_object(request, object_id)
        if job is None or not self._has_audio(job):
            raise Http404("No audio.")
        extension = (job.audio.name or "").rsplit(".", 1)[-1] or "bin"
        response = FileResponse(job.audio.open("rb"), content_type=job.content_type or "application/octet-stream")
        download = bool(request.GET.get("download"))
        response["Content-Disposition"] = content_disposition(filename_for(job, extension), inline=not download)
        return response
