"""History items: the tenant-scoped reads and deletes the APIs and dashboard use. A record's
final state is written by the owner of its synthesis (``tts.synthesis.run.SynthesisRun``),
its audio file by ``tts.synthesis.record_audio``."""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from django.db.models import QuerySet

from accounts.models import Tenant
from tts.models import SynthesisRecord

logger = logging.getLogger(__name__)


def history_for_tenant(
    tenant: Tenant,
    *,
    voice_id: str | None = None,
    source: str | None = None,
    status: str | None = None,
    date_after: dt.datetime | None = None,
    date_before: dt.datetime | None = None,
    text_contains: str | None = None,
) -> QuerySet[SynthesisRecord]:
    qs = SynthesisRecord.objects.filter(tenant=tenant).order_by("-created_at", "-id")
    if text_contains:
        qs = qs.filter(text__icontains=text_contains)
    if voice_id:
        qs = qs.filter(voice_id=voice_id)
    if source:
        qs = qs.filter(source=source)
    if status:
        qs = qs.filter(status=status)
    if date_after:
        qs = qs.filter(created_at__gte=date_after)
    if date_before:
        qs = qs.filter(created_at__lt=date_before)
    return qs


def history_item_get(tenant: Tenant, item_id: str) -> SynthesisRecord | None:
    try:
        pk = uuid.UUID(str(item_id))
    except ValueError:
        return None  # a malformed id is simply not found
    return SynthesisRecord.objects.filter(tenant=tenant, pk=pk).first()


def history_item_delete(record: SynthesisRecord) -> None:
    if record.audio:
        record.audio.delete(save=False)
    record.delete()
