"""A history record's audio file: the sink of what a synthesis sent (spooled past a few MB),
the record's stored copy or a link to the cache entry's file, and its removal when the
record's transaction fails. The reads and deletes of history are ``tts.usage.history``."""

from __future__ import annotations

import logging
import os
import tempfile

from django.core.files.base import ContentFile
from django.core.files.storage import Storage

from tts.models import SynthesisRecord

logger = logging.getLogger(__name__)

_SPOOL_BYTES = 4 * 1024 * 1024


class AudioSink:
    """The one copy of what a synthesis sent, kept for whoever needs it at the end:
    the history file, the cache entry, a whole-file answer.

    Spools to disk past a few MB so a long stream does not sit in memory. With a
    ``limit`` (only the cache wants the bytes) it stops keeping them once they
    grow past it: an entry too large to cache is not collected at all.
    """

    def __init__(self, *, keep: bool, limit: int | None = None) -> None:
        self.size = 0
        self.limit = limit
        self._file = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) if keep else None  # noqa: SIM115

    @property
    def kept(self) -> bool:
        return self._file is not None

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self._file is None:
            return
        if self.limit is not None and self.size > self.limit:
            self.discard()
            return
        self._file.write(data)

    def read_all(self) -> bytes | None:
        """Everything written, or None if it was not kept."""
        if self._file is None:
            return None
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
