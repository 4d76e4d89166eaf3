"""Crash recovery of syntheses: heartbeats of the runs this process is working on, and the
reaper that ends the runs of processes that died.

A synthesis's record is inserted ``pending`` with its reservation; its run
(``tts.synthesis.runs.run.SynthesisRun``) writes the final state. If the process dies
first, nothing would: the record would stay pending with its characters
spent. So every process renews ``heartbeat_at`` on the pending records of its
live runs every ``TTS_RECORD_HEARTBEAT_S``, and :func:`records_reap_stale`
(beat, every minute; and once when a server or worker starts) finishes those
whose heartbeat is older than ``TTS_RECORD_STALE_AFTER_S`` as failed
(``abandoned``) through a run made from the record, which refunds every
character (what reached the client before the crash is not known) and
writes the record once, whoever else tries (its claim is a conditional
update). Jobs have their own reaper (``tts.jobs.runner.jobs_reap_stale``).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import weakref

from django.conf import settings
from django.db import close_old_connections, connections
from django.db.models import Q
from django.utils import timezone

from accounts.quota import Reservation, period_start
from tts.audio.formats import parse_elevenlabs_format
from tts.models import SynthesisRecord, Voice
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.runs.run import SynthesisRun

logger = logging.getLogger(__name__)

Status = SynthesisRecord.Status


class _Heartbeats:
    """The pending records of this process's live runs, renewed by one thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: weakref.WeakSet[SynthesisRun] = weakref.WeakSet()
        self._thread: threading.Thread | None = None

    def add(self, run: SynthesisRun) -> None:
        with self._lock:
            self._runs.add(run)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="tts-record-heartbeats", daemon=True)
                self._thread.start()

    def live(self) -> list[SynthesisRun]:
        """Syntheses this process is working on (not yet ended)."""
        with self._lock:
            return [run for run in self._runs if not run.finished]

    def beat(self) -> int:
        with self._lock:
            ids = [run.record.pk for run in self._runs if not run.finished]
        if not ids:
            return 0
        return SynthesisRecord.objects.filter(pk__in=ids, status=Status.PENDING).update(heartbeat_at=timezone.now())

    def _loop(self) -> None:
        while True:
            time.sleep(settings.TTS_RECORD_HEARTBEAT_S)
            try:
                close_old_connections()
                self.beat()
            except Exception:
                logger.warning("could not renew the heartbeats of live syntheses", exc_info=True)
            finally:
                connections.close_all()


heartbeats = _Heartbeats()


def records_reap_stale(now: dt.datetime | None = None) -> int:
    """Finish pending records whose process stopped beating: failed, everything refunded. Returns how many."""
    now = now or timezone.now()
    stale_before = now - dt.timedelta(seconds=settings.TTS_RECORD_STALE_AFTER_S)
    stale = (
        SynthesisRecord.objects.filter(status=Status.PENDING)
        .exclude(source=SynthesisRecord.Source.JOB)
        .filter(Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True, created_at__lt=stale_before))
        .select_related("tenant")
    )
    reaped = 0
    for record in stale[:1000]:
        if _run_for(record, stale_before).fail("abandoned"):
            reaped += 1
            logger.warning("synthesis %s: its process stopped before the end; failed and refunded", record.pk)
    return reaped


def _run_for(record: SynthesisRecord, stale_before: dt.datetime) -> SynthesisRun:
    """A run standing in for the dead one: it owns the record's reservation and may end it once."""
    request = SynthesisRequest(
        tenant=record.tenant,
        voice_id=record.voice_id,
        text=record.text,
        output_format=parse_elevenlabs_format("mp3_44100_128"),  # unused: nothing is synthesized
        source=record.source,
        enable_logging=record.text_logged,
        request_id=record.request_id,
    )
    reservation = Reservation(
        tenant_id=record.tenant_id, period_start=period_start(record.created_at), characters=record.characters
    )

    def claim(status: str) -> bool:
        still_stale = Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True)
        return bool(
            SynthesisRecord.objects.filter(still_stale, pk=record.pk, status=Status.PENDING).update(status=status)
        )

    return SynthesisRun(
        request=request,
        voice=Voice(voice_id=record.voice_id, name=record.voice_name),
        model_version=record.model_version,  # type: ignore[arg-type]
        spec=None,  # type: ignore[arg-type]
        segments=[],
        characters=record.characters,
        reservation=reservation,
        record=record,
        started=time.monotonic() - (timezone.now() - record.created_at).total_seconds(),
        claim=claim,
    )


_reaper_started = False
_reaper_lock = threading.Lock()


def start_reaper() -> None:
    """In a server process: reap once at start, and every minute when no beat runs
    (``TTS_JOB_RUNNER=thread``: no broker, so no beat either)."""
    global _reaper_started
    with _reaper_lock:
        if _reaper_started:
            return
        _reaper_started = True
    threading.Thread(target=_reap_loop, name="tts-record-reaper", daemon=True).start()


def _reap_loop() -> None:
    while True:
        try:
            close_old_connections()
            records_reap_stale()
        except Exception:
            logger.warning("could not reap the records of dead processes", exc_info=True)
        finally:
            connections.close_all()
        if settings.TTS_JOB_RUNNER != "thread":
            return  # beat reaps from now on
        time.sleep(60)
