"""History items: writing the record and its audio at the end of a synthesis,
and the tenant-scoped reads and deletes the APIs and dashboard use."""

from __future__ import annotations

import datetime as dt
import logging
import os
import tempfile
import time
import uuid
from typing import TYPE_CHECKING

from django.core.files.base import ContentFile
from django.core.files.storage import Storage
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


def storage_links_files(storage: Storage) -> bool:
    """True for storages on a local filesystem, where history files can be hard links."""
    try:
        storage.path("")
    except NotImplementedError:
        return False
    return True


def _link(storage: Storage, source: str, target: str) -> bool:
    """Hard-link ``source`` to ``target`` in a local-filesystem storage; False if that cannot be done."""
    try:
        src, dst = storage.path(source), storage.path(target)
    except (NotImplementedError, ValueError):  # not on a local filesystem (S3), or an odd name
        return False
    try:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.link(src, dst)
    except OSError:  # the source was deleted, another device, or a filesystem without links
        return False
    return True


def store_record_audio(record: SynthesisRecord, data: bytes, extension: str, *, share_from: str = "") -> bool:
    """Give ``record`` its own audio file holding ``data``; the row is not saved here.

    With ``share_from`` (the file of an earlier item with the same bytes, e.g. the
    miss a cache hit answers from) the file is a hard link to it when the storage
    is a local filesystem: no copy is written and no space is used twice, yet each
    item owns its name, so deleting one never takes the other's audio. Elsewhere
    (S3, or when that file is gone) the bytes are written. True when linked.
    """
    filename = f"{record.pk}.{extension}"
    if share_from:
        name = record.audio.field.generate_filename(record, filename)
        if _link(record.audio.storage, share_from, name):
            record.audio.name = name
            return True
    record.audio.save(filename, ContentFile(data), save=False)
    return False


def discard_record_audio(record: SynthesisRecord) -> None:
    """Delete the file of a record that was never written (its transaction failed)."""
    if record.audio:
        try:
            record.audio.delete(save=False)
        except Exception:
            logger.exception("could not delete the audio of unwritten history record %s", record.pk)


def finish_fields(prep: PreparedSynthesis, record: SynthesisRecord, *, status: str, error_code: str = "") -> list[str]:
    """Set the final-state fields of ``record`` from ``prep``; returns their names."""
    now = time.monotonic()
    record.status = status
    record.error_code = error_code
    record.duration_s = round(prep.audio_seconds, 3)
    record.latency_ms = int((now - prep.started) * 1000)
    if prep.first_byte_at is not None:
        record.ttfb_ms = int((prep.first_byte_at - prep.started) * 1000)
    success = status == SynthesisRecord.Status.SUCCESS
    record.characters = prep.characters if success else prep.reservation.characters
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
    if success and timeline is not None and keep:
        # Kept for requests that asked for timestamps (about 30 bytes a character), and only
        # when the text may be logged: the alignment holds the text.
        record.alignment = timeline.as_json()
        fields.append("alignment")
    return fields


def record_finish(
    prep: PreparedSynthesis,
    *,
    status: str,
    sink: AudioSink | None,
    error_code: str = "",
    audio_saved: bool = False,
) -> None:
    """Write the final state of the history record; never raises into the caller's cleanup.

    The audio file is made from ``sink`` (what a synthesis sent), or was
    already given to the record (``audio_saved``: a cache hit's link).
    """
    record = prep.record
    fields = finish_fields(prep, record, status=status, error_code=error_code)
    try:
        if sink is not None and sink.store and sink.size and prep.encoder is not None:
            # Streams start with "unknown length" headers; the stored file gets exact ones.
            data = prep.encoder.seal(sink.read_all())
            store_record_audio(record, data, prep.encoder.format.extension)
            fields.append("audio")
        elif audio_saved:
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
