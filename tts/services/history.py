"""History items: writing the record and its audio at the end of a synthesis,
and the tenant-scoped reads and deletes the APIs and dashboard use."""

from __future__ import annotations

import datetime as dt
import logging
import tempfile
import time
import uuid
from typing import TYPE_CHECKING

from django.core.files.base import ContentFile
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Tenant
from tts.models import SynthesisRecord
from ttsplatform import metrics

if TYPE_CHECKING:
    from .synthesis import PreparedSynthesis

logger = logging.getLogger(__name__)

_SPOOL_BYTES = 4 * 1024 * 1024


class AudioSink:
    """Collects the bytes sent to a client so the history keeps the same file.

    Spools to disk past a few MB so a long stream does not sit in memory.
    """

    def __init__(self, *, store: bool) -> None:
        self.store = store
        self.size = 0
        self._file = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) if store else None  # noqa: SIM115

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self._file is not None:
            self._file.write(data)

    def read_all(self) -> bytes:
        if self._file is None:
            return b""
        self._file.seek(0)
        return self._file.read()

    def discard(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def record_finish(
    prep: PreparedSynthesis,
    *,
    status: str,
    sink: AudioSink | None,
    error_code: str = "",
) -> None:
    """Write the final state of the history record; never raises into the caller's cleanup."""
    record = prep.record
    now = time.monotonic()
    record.status = status
    record.error_code = error_code
    record.duration_s = round(prep.audio_seconds, 3)
    record.latency_ms = int((now - prep.started) * 1000)
    if prep.first_byte_at is not None:
        record.ttfb_ms = int((prep.first_byte_at - prep.started) * 1000)
    record.characters = prep.reservation.characters if status != SynthesisRecord.Status.SUCCESS else prep.characters
    record.completed_at = timezone.now()
    fields = [
        "status",
        "sample_rate",
        "error_code",
        "duration_s",
        "latency_ms",
        "ttfb_ms",
        "characters",
        "completed_at",
    ]
    timeline = getattr(prep, "timeline", None)
    keep = prep.request.timestamps and prep.request.enable_logging
    if status == SynthesisRecord.Status.SUCCESS and timeline is not None and keep:
        # Kept for requests that asked for timestamps (about 30 bytes a character), and only
        # when the text may be logged: the alignment holds the text.
        record.alignment = timeline.as_json()
        fields.append("alignment")
    try:
        if sink is not None and sink.store and sink.size and prep.encoder is not None:
            # Streams start with "unknown length" headers; the stored file gets exact ones.
            data = prep.encoder.seal(sink.read_all())
            record.audio.save(f"{record.pk}.{prep.encoder.format.extension}", ContentFile(data), save=False)
            fields.append("audio")
        record.save(update_fields=fields)
    except Exception:
        logger.exception("could not write history record %s", record.pk)
    finally:
        if sink is not None:
            sink.discard()
        metrics.synthesis_finished(prep)


# --- reads -----------------------------------------------------------------


def history_for_tenant(
    tenant: Tenant,
    *,
    voice_id: str | None = None,
    source: str | None = None,
    status: str | None = None,
    date_after: dt.datetime | None = None,
    date_before: dt.datetime | None = None,
) -> QuerySet[SynthesisRecord]:
    qs = SynthesisRecord.objects.filter(tenant=tenant).order_by("-created_at", "-id")
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
