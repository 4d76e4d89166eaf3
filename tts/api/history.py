"""ElevenLabs-compatible history: ``/v1/history`` (list with filters and paging), one item, its
audio, and a zip of several items' audio. Field names follow ElevenLabs' API so its SDK
parses them; extra fields that only this platform has are added alongside."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_tenant
from accounts.models import Scope
from infra.pagination import keyset_page
from tts.api.resources import unix_time
from tts.errors import SynthesisError
from tts.models import SynthesisRecord
from tts.usage import (
    HistoryItemPending,
    history_archive_chunks,
    history_archive_size,
    history_for_tenant,
    history_item_delete,
    history_item_get,
)

from .fields import StrictCharField
from .openapi import audio_responses, error_responses, json_object

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
        "date_unix": unix_time(record.created_at),
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
        operation_id="history_list",
        tags=["history"],
        summary="Synthesis history, newest first",
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
            raise SynthesisError(
                f"History item '{cursor_id}' was not found.",
                code="invalid_cursor",
                status=400,
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
        raise SynthesisError(
            f"History item '{history_item_id}' was not found.",
            code="history_item_not_found",
            status=404,
            field="history_item_id",
        )
    return record


@extend_schema_view(
    get=extend_schema(
        operation_id="history_get",
        tags=["history"],
        summary="One history item",
        responses={200: json_object("The history item."), **error_responses("elevenlabs", 403, 404)},
    ),
    delete=extend_schema(
        operation_id="history_delete",
        tags=["history"],
        summary="Delete a history item and its audio",
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
        try:
            history_item_delete(_item_or_404(request, history_item_id))
        except HistoryItemPending as exc:
            raise SynthesisError(str(exc), code="history_item_pending", status=409, field="history_item_id") from exc
        return Response({"status": "ok"})


def _audio_response(record: SynthesisRecord) -> HttpResponseBase:
    if not record.audio:
        raise SynthesisError(
            "This history item has no stored audio (logging was off or it did not complete).",
            code="audio_not_found",
            status=404,
            field="history_item_id",
        )
    response = FileResponse(record.audio.open("rb"), content_type=record.content_type)
    response["history-item-id"] = str(record.pk)
    return response


@extend_schema_view(
    get=extend_schema(
        operation_id="history_audio",
        tags=["history"],
        summary="The stored audio of a history item",
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
        operation_id="history_download",
        tags=["history"],
        summary="Download history audio (one file or a zip)",
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
        history_archive_size(records)  # ExportError, a SynthesisError: 413 past the bound
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
