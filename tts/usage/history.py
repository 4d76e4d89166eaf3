"""History items: the tenant-scoped reads and deletes the APIs and dashboard use. A record's
final state is written by the owner of its synthesis (``tts.synthesis.runs.run.SynthesisRun``),
its audio file by ``tts.synthesis.runs.record_audio``.

Deleting an item forgets what was said and made (its text, audio file, timings and settings, and
the dictionary versions it kept from pruning) and hides it from every history read, but keeps the
row: the characters, requests and audio seconds it was billed for still count in usage, its charts
and its export, which read the history (``tts.usage.breakdown``, ``rollup``), as in the quota. An
item still being synthesized cannot be deleted until it ends (``HistoryItemPending``).
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Tenant
from tts.models import PronunciationDictionaryUse, SynthesisRecord

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
    qs = SynthesisRecord.objects.filter(tenant=tenant, deleted_at__isnull=True).order_by("-created_at", "-id")
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
    return SynthesisRecord.objects.filter(tenant=tenant, pk=pk, deleted_at__isnull=True).first()


class HistoryItemPending(Exception):
    """The item is still being synthesized: its run writes it when it ends, so it cannot go yet."""


def history_item_delete(record: SynthesisRecord) -> None:
    """Forget the item's text, audio, timings and settings and hide it from history; its row stays
    for usage (what it was billed). ``HistoryItemPending`` while its synthesis runs."""
    if record.status == SynthesisRecord.Status.PENDING:
        raise HistoryItemPending(f"History item '{record.pk}' is still being synthesized; delete it once it has ended.")
    if record.audio:
        record.audio.delete(save=False)
    with transaction.atomic():
        PronunciationDictionaryUse.objects.filter(record=record).delete()  # its versions may be pruned now
        SynthesisRecord.objects.filter(pk=record.pk).update(
            text="", audio="", alignment=None, settings={}, deleted_at=timezone.now()
        )
