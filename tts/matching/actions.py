"""Voice matching's services: submit a recording, run the search as a job, read its state, purge
recordings past their retention.

``voice_match_submit`` checks consent and the files (400s naming the field or the file), stores
the decoded recording, writes the match row and hands it to a runner once the transaction commits:
a Celery worker (``TTS_JOB_RUNNER=celery``, task ``tts.tasks.run_voice_match``) or a server thread,
as long-form jobs are. ``voice_match_run`` claims the row with a conditional update (a redelivered
task does nothing), embeds the recording, runs the search (``tts.matching.search``) with progress
on the row, saves the tenant's voice (category ``matched``) and deletes the recording when the
retention is 0. ``voice_matches_reap_stale`` fails the matches a dead process left running (no
heartbeat) or queued for ``TTS_MATCH_STALE_AFTER_S``; ``recordings_purge`` deletes the recordings of
finished matches older than ``TTS_MATCH_RECORDING_RETENTION_S`` (both in one periodic task; also
after each match).
"""

from __future__ import annotations

import logging
import secrets
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import IO

import numpy as np
from celery import current_app
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Tenant
from infra.lookup_cache import clear_lookup_caches
from tts.errors import SynthesisError
from tts.matching.encoders import ENCODER_RATE, encoder_missing, speaker_encoder
from tts.matching.recordings import decode_uploads, recording_delete, recording_load, recording_store
from tts.matching.search import Searcher, match_language, search_settings, stock_candidates
from tts.models import Voice, VoiceMatch
from tts.synthesis import job_engine_seconds_limit

logger = logging.getLogger(__name__)

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_CONSENT = ("true", "1", "yes", "on")
#: The longest description a matched voice keeps (a 400 naming ``description`` past it).
DESCRIPTION_CHARS = 2000


def consent_given(value: object) -> bool:
    return value is True or str(value or "").strip().lower() in _CONSENT


def voice_match_submit(
    *,
    tenant: Tenant,
    name: str,
    files: list[tuple[str, IO[bytes], int]],
    consent: object,
    description: str = "",
    labels: dict[str, str] | None = None,
) -> VoiceMatch:
    """Check and store a recording and queue its match; ``SynthesisError`` (400) naming the field."""
    if not consent_given(consent):
        raise SynthesisError(
            "consent: confirm that you have the right to use this voice and that the speaker agreed "
            "(send consent=true); see docs/matching.md.",
            code="consent_required",
            status=400,
            field="consent",
        )
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise SynthesisError(
            "name: give the voice a name of 1 to 100 characters.", code="invalid_request", status=400, field="name"
        )
    description = (description or "").strip()
    if len(description) > DESCRIPTION_CHARS:
        raise SynthesisError(
            f"description: at most {DESCRIPTION_CHARS} characters; got {len(description)}.",
            code="invalid_request",
            status=400,
            field="description",
        )
    # Bounded where they enter (the API's 400 naming labels), kept whole here.
    labels = {str(k): str(v) for k, v in (labels or {}).items()}
    decoded = decode_uploads(files)
    missing = encoder_missing(settings.TTS_MATCH_ENCODER)
    if missing is not None or not stock_candidates("en", 1):
        raise SynthesisError(
            "Voice matching is not available on this server: "
            + (missing or "no Kokoro voice is served (import Kokoro first)")
            + " (docs/matching.md).",
            code="matching_unavailable",
            status=503,
        )
    match = VoiceMatch(
        tenant=tenant,
        voice_id=f"match-{secrets.token_hex(6)}",
        name=name,
        description=description,
        labels=labels,
        language=match_language(labels.get("language", "en")),
        consent_at=timezone.now(),
        recording_seconds=round(sum(d.seconds for d in decoded), 3),
    )
    match.recording_path, match.recording_files = recording_store(match.pk, decoded)
    with transaction.atomic():
        match.save()
        transaction.on_commit(lambda: match_dispatch(match.pk))
    return match


def voice_match_get(tenant: Tenant, voice_id: str) -> VoiceMatch | None:
    """The tenant's match of ``voice_id``; None for another tenant's."""
    return VoiceMatch.objects.filter(tenant=tenant, voice_id=voice_id).first()


def match_dispatch(match_id: uuid.UUID | str) -> None:
    """Hand the match to a runner: a Celery worker through the broker, or a server thread."""
    global _executor
    if settings.TTS_JOB_RUNNER == "celery":
        current_app.send_task("tts.tasks.run_voice_match", args=[str(match_id)])
        return
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts-match")
    _executor.submit(_run_in_thread, match_id)


def _run_in_thread(match_id: uuid.UUID | str) -> None:
    close_old_connections()
    try:
        voice_match_run(match_id)
    except Exception:
        logger.exception("voice match %s failed in its server thread", match_id)
    finally:
        connections.close_all()


def voice_match_run(match_id: uuid.UUID | str) -> str:
    """Run one queued match to its end; the status it ended in (or ``skipped`` if another runner has it)."""
    now = timezone.now()
    claimed = VoiceMatch.objects.filter(pk=match_id, status=VoiceMatch.Status.QUEUED).update(
        status=VoiceMatch.Status.RUNNING, started_at=now, heartbeat_at=now
    )
    if not claimed:
        return "skipped"
    match = VoiceMatch.objects.select_related("tenant__plan").get(pk=match_id)
    try:
        _search_and_save(match)
    except Exception as exc:
        logger.warning("voice match %s failed: %s", match.pk, exc)
        message = str(exc) if isinstance(exc, SynthesisError) else f"the search failed: {exc}"
        VoiceMatch.objects.filter(pk=match.pk, status=VoiceMatch.Status.RUNNING).update(
            status=VoiceMatch.Status.FAILED, error=message[:2000], finished_at=timezone.now()
        )
    finally:
        # Thread mode has no beat: each match also ends the ones a dead process left.
        voice_matches_reap_stale()
        recordings_purge()
    return str(VoiceMatch.objects.values_list("status", flat=True).get(pk=match.pk))


def _search_and_save(match: VoiceMatch) -> None:
    encoder = speaker_encoder(settings.TTS_MATCH_ENCODER)
    clips = recording_load(match.recording_path, list(match.recording_files))
    target = encoder.embed(np.concatenate(clips), ENCODER_RATE)
    running = VoiceMatch.objects.filter(pk=match.pk, status=VoiceMatch.Status.RUNNING)
    running.update(encoder=encoder.name, embedding=[round(float(x), 6) for x in target], heartbeat_at=timezone.now())
    limit, top_k = search_settings()

    def progress(done: int, total: int) -> None:
        running.update(
            candidates_done=done,
            candidates_total=total,
            progress=round(min(done / max(total, 1), 0.99), 4),
            heartbeat_at=timezone.now(),
        )

    searcher = Searcher(
        tenant_id=match.tenant_id,
        encoder=encoder,
        target=target,
        language=match.language,
        budget_s=job_engine_seconds_limit(match.tenant.plan),
        progress=progress,
    )
    result = searcher.run(stock_candidates(match.language, limit), top_k)
    best, nearest = result.best, result.nearest
    main = best.main
    labels = {
        **match.labels,
        "language": match.language,
        "engine": "kokoro",
        "category": "matched",
        "matched_to": best.spelled(),
        "nearest_voice": nearest.main.voice_id,
        "similarity": f"{best.score:.3f}",
    }
    description = match.description or (
        f"Matched from a recording (not a clone): {best.spelled()}, similarity {best.score:.3f}; "
        f"nearest stock voice {nearest.main.voice_id} ({nearest.score:.3f})."
    )
    with transaction.atomic():
        Voice.objects.create(
            voice_id=match.voice_id,
            name=match.name,
            description=description,
            language=match.language,
            labels=labels,
            model_id=main.model_id,
            speaker_index=main.speaker_index,
            blend=best.blend_json(),
            tenant_id=match.tenant_id,
        )
        succeeded = running.update(
            status=VoiceMatch.Status.SUCCEEDED,
            progress=1.0,
            similarity=best.score,
            nearest_voice_id=nearest.main.voice_id,
            nearest_similarity=nearest.score,
            result_blend=best.blend_json() or [{"voice_id": main.voice_id, "weight": 1.0}],
            engine_seconds=round(result.engine_seconds, 3),
            finished_at=timezone.now(),
        )
        if not succeeded:  # failed as stale meanwhile: no voice
            raise SynthesisError("the match was ended while it ran (see its error).", code="match_ended", status=409)
    clear_lookup_caches()


def voice_matches_reap_stale(*, now: datetime | None = None) -> int:
    """Fail the matches a dead process left: running with no heartbeat, or queued and not started,
    for longer than ``TTS_MATCH_STALE_AFTER_S``; how many. Their recordings then go as the
    retention says (``recordings_purge``); a late message for one finds it failed and does nothing."""
    now = now or timezone.now()
    after = int(settings.TTS_MATCH_STALE_AFTER_S)
    cutoff = now - timedelta(seconds=after)
    Status = VoiceMatch.Status
    running = Q(status=Status.RUNNING) & (
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    )
    reaped = VoiceMatch.objects.filter(running).update(
        status=Status.FAILED,
        error=f"The match stopped: the process running it gave no sign of life for {after} s. Submit it again.",
        finished_at=now,
    )
    reaped += VoiceMatch.objects.filter(status=Status.QUEUED, created_at__lt=cutoff).update(
        status=Status.FAILED,
        error=f"The match was not started within {after} s (its worker or server was lost). Submit it again.",
        finished_at=now,
    )
    if reaped:
        logger.warning("failed %d voice matches left running or queued by a lost process", reaped)
    return reaped


def recordings_purge(*, now: datetime | None = None) -> int:
    """Delete the recordings of finished matches older than the retention; how many were deleted."""
    cutoff = (now or timezone.now()) - timedelta(seconds=int(settings.TTS_MATCH_RECORDING_RETENTION_S))
    due = VoiceMatch.objects.filter(
        status__in=(VoiceMatch.Status.SUCCEEDED, VoiceMatch.Status.FAILED),
        created_at__lte=cutoff,
        recording_deleted_at__isnull=True,
    ).exclude(recording_path="")
    deleted = 0
    for match in due.only("pk", "recording_path"):
        recording_delete(match.recording_path)
        deleted += VoiceMatch.objects.filter(pk=match.pk, recording_deleted_at__isnull=True).update(
            recording_path="", recording_deleted_at=now or timezone.now()
        )
    return deleted
