"""Running a long-form job: claim it, synthesize chunk by chunk through the
pipeline's pieces, checkpoint each chunk, assemble the output, finish once.

Every state change is one conditional UPDATE that names the claim it expects
(``claim_token``), so a redelivered task, a second worker or a reaped worker
that wakes up again can never run a chunk twice or finish a job twice:

* claim: ``queued`` (or ``running`` with a stale heartbeat) -> ``running`` with a new token;
* progress: ``done_chunks = i + 1`` only if still ours, still running, ``done_chunks == i``
  and no cancel was asked for; the same update renews the heartbeat;
* finish: to ``succeeded``/``failed``/``cancelled`` only from the state we hold.

Whoever wins the finish update refunds what was not synthesized and writes
the history item; nobody else does.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.quota import refund_characters
from tts.audio.formats import UnknownFormatError, parse_elevenlabs_format
from tts.inference.engine import EngineError
from tts.models import Job, SynthesisRecord, Voice
from tts.text.segment import Segment

from .engines import get_registry, spec_for
from .job_audio import assemble, chunk_save, chunks_delete
from .job_slots import job_may_start, job_start_next
from .jobs import characters_done, job_dispatch, job_publish, reservation_of
from .synthesis import segment_params, synthesize_segment

logger = logging.getLogger(__name__)

_HISTORY_STATUS: dict[str, str] = {
    Job.Status.SUCCEEDED: SynthesisRecord.Status.SUCCESS,
    Job.Status.FAILED: SynthesisRecord.Status.FAILED,
    Job.Status.CANCELLED: SynthesisRecord.Status.CANCELLED,
}
_SEGMENT_FIELDS = {f for f in Segment.__dataclass_fields__}


class RetryLater(Exception):
    """The job was put back in the queue because trying again can help (e.g. an engine restarting)."""


def _stale_before(now: dt.datetime | None = None) -> dt.datetime:
    return (now or timezone.now()) - dt.timedelta(seconds=settings.TTS_JOB_STALE_AFTER_S)


def job_claim(job_id: uuid.UUID | str, token: str) -> Job | None:
    """Take the job if it is queued (or its claim went stale) and its tenant has a free place
    (``job_slots``); ``None`` if someone else has it, it is done, or it must wait its turn."""
    now = timezone.now()
    stale_before = _stale_before(now)
    claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, heartbeat_at__lt=stale_before)
    candidates = Job.objects.filter(claimable, pk=job_id, cancel_requested=False).filter(
        attempts__lt=settings.TTS_JOB_MAX_ATTEMPTS
    )
    with transaction.atomic():
        candidate = candidates.only("pk", "tenant_id", "status", "created_at").first()
        if candidate is None or not job_may_start(candidate, stale_before=stale_before):
            return None
        updated = candidates.update(
            status=Job.Status.RUNNING, claim_token=token, heartbeat_at=now, attempts=F("attempts") + 1
        )
    if not updated:
        return None
    Job.objects.filter(pk=job_id, started_at__isnull=True).update(started_at=now)
    return Job.objects.select_related("model_version").get(pk=job_id)


def _segments(chunk: dict) -> list[Segment]:
    return [Segment(**{k: v for k, v in seg.items() if k in _SEGMENT_FIELDS}) for seg in chunk["segments"]]


def job_run(job_id: uuid.UUID | str, *, worker: str = "") -> str:
    """Run (or resume) a job to its end; returns what happened: succeeded, failed, cancelled or skipped.

    Raises ``RetryLater`` when the job went back to the queue after an error a retry can help with.
    """
    token = uuid.uuid4().hex
    job = job_claim(job_id, token)
    if job is None:
        _cancel_if_requested(job_id)
        return "skipped"
    logger.info(
        "job %s claimed by %s (attempt %d), from chunk %d/%d",
        job.pk,
        worker,
        job.attempts,
        job.done_chunks,
        job.total_chunks,
    )
    job_publish(job)
    try:
        return _run_claimed(job, token)
    except (RetryLater, OperationalError):
        # The task retries RetryLater; after a lost database the claim goes stale and the job resumes.
        raise
    except SoftTimeLimitExceeded:
        message = "The job ran past the worker's time limit (CELERY_TASK_TIME_LIMIT)."
        job_finish(job, token=token, status=Job.Status.FAILED, error_code="time_limit", message=message)
        return "failed"
    except Exception:
        # The details go to the log, not to the tenant.
        logger.exception("job %s failed", job.pk)
        message = "An internal error stopped this job; the characters not synthesized were refunded."
        job_finish(job, token=token, status=Job.Status.FAILED, error_code="internal_error", message=message)
        return "failed"


def _run_claimed(job: Job, token: str) -> str:
    try:
        fmt = parse_elevenlabs_format(job.output_format)
    except UnknownFormatError as exc:
        job_finish(job, token=token, status=Job.Status.FAILED, error_code="invalid_output_format", message=str(exc))
        return "failed"
    if job.model_version is None:
        message = "The model version this job was planned for no longer exists."
        job_finish(job, token=token, status=Job.Status.FAILED, error_code="model_unavailable", message=message)
        return "failed"
    voice = Voice.objects.filter(voice_id=job.voice_id).first()
    speaker = voice.speaker_index if voice else 0
    speed = float((job.settings or {}).get("speed") or 1.0)
    try:
        engine = get_registry().get(spec_for(job.model_version))
        for index in range(job.done_chunks, job.total_chunks):
            pieces = [
                synthesize_segment(engine, seg, segment_params(engine, seg, speaker_index=speaker, speed=speed))
                for seg in _segments(job.plan[index])
            ]
            pcm = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
            chunk_save(job, index, pcm)
            seconds = len(pcm) / engine.sample_rate
            chars = int(job.plan[index]["chars"])
            if not _record_progress(job, token, index, seconds, chars):
                return _after_lost_progress(job, token)
            job.done_chunks = index + 1
            job.done_chars += chars
            job.audio_seconds += seconds
            job_publish(job)
        name, resolved = assemble(job, fmt, engine.sample_rate, tick=lambda: _heartbeat(job, token))
    except EngineError as exc:
        if exc.retryable and job.attempts < settings.TTS_JOB_MAX_ATTEMPTS:
            _release(job, token)
            raise RetryLater(str(exc)) from exc
        message = f"The speech engine failed: {exc}"
        job_finish(job, token=token, status=Job.Status.FAILED, error_code="engine_error", message=message)
        return "failed"
    job.sample_rate = resolved.sample_rate
    if not job_finish(job, token=token, status=Job.Status.SUCCEEDED, audio_name=name):
        return _after_lost_progress(job, token)
    return "succeeded"


def _record_progress(job: Job, token: str, index: int, seconds: float, chars: int) -> bool:
    return bool(
        Job.objects.filter(
            pk=job.pk, claim_token=token, status=Job.Status.RUNNING, done_chunks=index, cancel_requested=False
        ).update(
            done_chunks=index + 1,
            done_chars=F("done_chars") + chars,
            audio_seconds=F("audio_seconds") + seconds,
            heartbeat_at=timezone.now(),
        )
    )


def _heartbeat(job: Job, token: str) -> None:
    Job.objects.filter(pk=job.pk, claim_token=token, status=Job.Status.RUNNING).update(heartbeat_at=timezone.now())


def _after_lost_progress(job: Job, token: str) -> str:
    """A progress update matched nothing: a cancel was asked for, or the claim was taken over."""
    job.refresh_from_db()
    if job.claim_token == token and job.status == Job.Status.RUNNING and job.cancel_requested:
        job_finish(job, token=token, status=Job.Status.CANCELLED, error_code="cancelled")
        return "cancelled"
    logger.warning("job %s: lost its claim (now %s); stopping without touching it", job.pk, job.status)
    return "skipped"


def _release(job: Job, token: str) -> None:
    """Back to the queue, keeping the finished chunks (the retry resumes from them)."""
    Job.objects.filter(pk=job.pk, claim_token=token, status=Job.Status.RUNNING).update(
        status=Job.Status.QUEUED, claim_token="", heartbeat_at=None
    )


def _cancel_if_requested(job_id: uuid.UUID | str) -> None:
    job = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED, cancel_requested=True).first()
    if job is not None:
        job_finish(job, token="", status=Job.Status.CANCELLED, error_code="cancelled")


def job_finish(
    job: Job, *, token: str, status: str, error_code: str = "", message: str = "", audio_name: str = ""
) -> bool:
    """Move the job to its final state if we still hold it; refund, record history, publish. True if we did."""
    now = timezone.now()
    held = Q(status=Job.Status.QUEUED) if not token else Q(status=Job.Status.RUNNING, claim_token=token)
    job.refresh_from_db(
        fields=["done_chunks", "done_chars", "planned_chars", "audio_seconds", "characters", "started_at", "text"]
    )
    charged = job.characters if status == Job.Status.SUCCEEDED else characters_done(job)
    fields = {
        "status": status,
        "finished_at": now,
        "characters_charged": charged,
        "error_code": error_code,
        "error_message": message,
        "claim_token": "",
        "sample_rate": job.sample_rate,
    }
    if audio_name:
        fields["audio"] = audio_name
    if not Job.objects.filter(held, pk=job.pk).update(**fields):
        return False
    for key, value in fields.items():
        setattr(job, key, value)
    refund_characters(reservation_of(job), job.characters - charged)
    if status != Job.Status.SUCCEEDED or audio_name:
        chunks_delete(job)
    _write_history(job)
    job_publish(job)
    try:
        job_start_next(job.tenant_id)  # its place is free: the tenant's oldest waiting job goes next
    except Exception:
        logger.warning("could not dispatch the next job of tenant %s", job.tenant_id, exc_info=True)
    logger.info(
        "job %s %s: %d/%d chunks, %.1f s of audio", job.pk, status, job.done_chunks, job.total_chunks, job.audio_seconds
    )
    return True


def _write_history(job: Job) -> None:
    """One history item per job, so jobs show in /v1/history and in the usage roll-up."""
    try:
        started = job.started_at or job.created_at
        record = SynthesisRecord.objects.create(
            tenant_id=job.tenant_id,
            api_key_id=job.api_key_id,
            voice_id=job.voice_id,
            voice_name=job.voice_name,
            model_version_id=job.model_version_id,
            model_id=job.model_id,
            text=job.text,
            text_logged=job.text_logged,
            characters=job.characters_charged,
            output_format=job.output_format,
            content_type=job.content_type,
            sample_rate=job.sample_rate,
            duration_s=round(job.audio_seconds, 3),
            latency_ms=int((timezone.now() - started).total_seconds() * 1000),
            source=SynthesisRecord.Source.JOB,
            status=_HISTORY_STATUS[job.status],
            error_code=job.error_code,
            request_id=job.request_id,
            settings={**(job.settings or {}), "job_id": str(job.pk)},
            completed_at=timezone.now(),
        )
        Job.objects.filter(pk=job.pk).update(history_item=record)
        job.history_item = record
    except Exception:
        logger.exception("could not write the history item of job %s", job.pk)


def jobs_reap_stale(now: dt.datetime | None = None) -> dict[str, int]:
    """Jobs whose worker stopped reporting: requeue them (they resume), or fail them with the reason."""
    counts = {"requeued": 0, "failed": 0, "cancelled": 0}
    stale = Job.objects.filter(status=Job.Status.RUNNING, heartbeat_at__lt=_stale_before(now))
    for job in stale.defer("plan"):
        token = job.claim_token
        if job.cancel_requested:
            if job_finish(job, token=token, status=Job.Status.CANCELLED, error_code="cancelled"):
                counts["cancelled"] += 1
        elif job.attempts >= settings.TTS_JOB_MAX_ATTEMPTS:
            message = (
                f"The worker running this job stopped reporting {job.attempts} times "
                f"(no progress for {settings.TTS_JOB_STALE_AFTER_S} s); giving up."
            )
            if job_finish(job, token=token, status=Job.Status.FAILED, error_code="worker_lost", message=message):
                counts["failed"] += 1
        elif Job.objects.filter(pk=job.pk, claim_token=token, status=Job.Status.RUNNING).update(
            status=Job.Status.QUEUED, claim_token="", heartbeat_at=None
        ):
            logger.warning("job %s: worker stopped reporting; requeued to resume", job.pk)
            job_dispatch(job.pk)
            counts["requeued"] += 1
    return counts
