"""Running a long-form job: claim it, synthesize chunk by chunk through the
pipeline's pieces, checkpoint each chunk, assemble the output, finish once.

Every state change is one conditional UPDATE that names the claim it expects
(``claim_token``), so a redelivered task, a second worker or a reaped worker
that wakes up again can never run a chunk twice or finish a job twice:

* claim: ``queued`` (or ``running`` with a stale heartbeat) -> ``running`` with a new token;
* progress: ``done_chunks = i + 1`` only if still ours, still running, ``done_chunks == i``
  and no cancel was asked for; the same update renews the heartbeat. Before each sentence the
  heartbeat is renewed under the same conditions, so a cancel stops the job between sentences;
  the sentences of the unfinished chunk are dropped (and not billed);
* finish: to ``succeeded``/``failed``/``cancelled`` only from the state we hold.

The finish update is the ``claim`` of the job's synthesis run
(``tts.synthesis.runs.run.SynthesisRun``): whoever wins it refunds what was not
synthesized and writes the history item (made pending with the reservation
when the job was submitted); nobody else does. Each chunk is synthesized
under an engine ticket like any request (admission), and the job's
history, billing and release all go through that one owner.

Handing jobs to whatever runs them lives here too: a Celery worker through
the broker, or (with no broker) a server thread plus a housekeeping thread
that stands in for beat's reaper and picks up orphans a restart left. Each
send records ``dispatched_at``; a job still queued long after it (its message
lost with the broker) is sent again by the reaper and when a worker starts.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import OperationalError, close_old_connections, connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import Tenant
from accounts.ratelimit import LimitExceeded
from tts.audio.formats import UnknownFormatError, parse_elevenlabs_format
from tts.catalogue import get_registry
from tts.errors import SynthesisError
from tts.inference.engine import EngineError, InputTooLong
from tts.jobs.audio import assemble, chunk_save, chunks_delete
from tts.jobs.events import job_publish
from tts.jobs.records import characters_done, chunk_segments, job_synthesis_run, segments_done
from tts.jobs.slots import job_may_start, job_start_next
from tts.models import Job, SynthesisRecord
from tts.synthesis import SynthesisRun, job_engine_budget, speak_segment

logger = logging.getLogger(__name__)

#: The least time between two progress events inside a chunk (one per sentence at most).
PROGRESS_EVERY_S = 1.0

_HISTORY_STATUS: dict[str, str] = {
    Job.Status.SUCCEEDED: SynthesisRecord.Status.SUCCESS,
    Job.Status.FAILED: SynthesisRecord.Status.FAILED,
    Job.Status.CANCELLED: SynthesisRecord.Status.CANCELLED,
}


class RetryLater(Exception):
    """The job was put back in the queue because trying again can help (e.g. an engine restarting)."""


def _stale_before(now: dt.datetime | None = None) -> dt.datetime:
    return (now or timezone.now()) - dt.timedelta(seconds=settings.TTS_JOB_STALE_AFTER_S)


def job_claim(job_id: uuid.UUID | str, token: str) -> Job | None:
    """Take the job if it is queued (or its claim went stale) and its tenant has a free place
    (``tts.jobs.slots``); ``None`` if someone else has it, it is done, or it must wait its turn."""
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
    run = job_synthesis_run(job, token=token)
    try:
        run.admission.admit_engine()
    except LimitExceeded as exc:
        # The engine of this process is at capacity: back to the queue, like a 503 a client retries.
        run.suspend()
        _release(job, token)
        raise RetryLater(exc.message) from exc
    # The job's engine time (tts/synthesis/stages/job.py), what earlier claims made already charged.
    budget = job_engine_budget(run.request, job.model_version.engine, audio_seconds=job.audio_seconds)
    segment_index = segments_done(job)  # each segment's own seed, however the job was resumed
    progress = JobProgress(job)
    try:
        engine = get_registry().get(run.spec)
        for index in range(job.done_chunks, job.total_chunks):
            pieces = []
            for seg in chunk_segments(job.plan[index]):
                # A cancel takes effect between sentences, not only between chunks.
                if not _still_ours(job, token):
                    run.suspend()
                    return _after_lost_progress(job, token)
                # The engine stage, as for a request's segment: its knobs, the fair scheduler, the budget.
                pieces.append(speak_segment(run, engine, seg, segment_index, budget))
                segment_index += 1
                progress.segment_done(len(seg.text), chunk_chars=int(job.plan[index]["chars"]))
            pcm = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
            chunk_save(job, index, pcm)
            seconds = len(pcm) / engine.sample_rate
            chars = int(job.plan[index]["chars"])
            if not _record_progress(job, token, index, seconds, chars):
                run.suspend()
                return _after_lost_progress(job, token)
            job.done_chunks = index + 1
            job.done_chars += chars
            job.audio_seconds += seconds
            progress.chunk_done()
        name, resolved = assemble(job, fmt, engine.sample_rate, tick=lambda: _heartbeat(job, token))
    except SynthesisError as exc:  # the job's engine-time budget: stopped, billed for its finished chunks
        job_finish(job, token=token, status=Job.Status.FAILED, error_code=exc.code, message=exc.message, run=run)
        return "failed"
    except EngineError as exc:
        if exc.retryable and job.attempts < settings.TTS_JOB_MAX_ATTEMPTS:
            run.suspend()
            _release(job, token)
            raise RetryLater(str(exc)) from exc
        message = f"The speech engine failed: {exc}"
        code = "input_too_long" if isinstance(exc, InputTooLong) else "engine_error"
        job_finish(job, token=token, status=Job.Status.FAILED, error_code=code, message=message, run=run)
        return "failed"
    except BaseException:
        run.suspend()
        raise
    job.sample_rate = resolved.sample_rate
    if not job_finish(job, token=token, status=Job.Status.SUCCEEDED, audio_name=name, run=run):
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


class JobProgress:
    """Where a running job is inside its chunk, told to subscribers as each sentence is spoken (at
    most every ``PROGRESS_EVERY_S``): a job of one chunk has a bar that moves too. The time left is
    the characters left at the pace this claim measured."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.started = time.monotonic()
        self.chars_at_start = job.done_chars
        self.within = 0  # characters of the current chunk spoken
        self.published = self.started

    def segment_done(self, chars: int, *, chunk_chars: int) -> None:
        self.within += chars
        now = time.monotonic()
        if now - self.published < PROGRESS_EVERY_S or self.within >= chunk_chars:
            return  # too soon, or the chunk's end (``chunk_done`` tells it)
        self.published = now
        job = self.job
        share = min(1.0, self.within / chunk_chars) if chunk_chars else 0.0
        fraction = (job.done_chunks + share) / job.total_chunks if job.total_chunks else 0.0
        job_publish(job, progress=fraction, eta_seconds=self.seconds_left(now))

    def chunk_done(self) -> None:
        self.within = 0
        self.published = time.monotonic()
        job_publish(self.job, eta_seconds=self.seconds_left(self.published))

    def seconds_left(self, now: float) -> float | None:
        made = self.job.done_chars + self.within - self.chars_at_start
        if made <= 0 or now <= self.started:
            return None
        left = max(0, self.job.planned_chars - self.job.done_chars - self.within)
        return left * (now - self.started) / made


def _still_ours(job: Job, token: str) -> bool:
    """Before each sentence: renew the claim, unless a cancel was asked for or the claim was taken over."""
    return bool(
        Job.objects.filter(pk=job.pk, claim_token=token, status=Job.Status.RUNNING, cancel_requested=False).update(
            heartbeat_at=timezone.now()
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
    job: Job,
    *,
    token: str,
    status: str,
    error_code: str = "",
    message: str = "",
    audio_name: str = "",
    run: SynthesisRun | None = None,
) -> bool:
    """Move the job to its final state if we still hold it; its run refunds and records. True if we did.

    ``run``: the synthesis run of the claim that ran the job (it holds an engine
    ticket); without one (a cancel, the reaper) one is made from the job's row.
    """
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

    def claim(_: str) -> bool:
        return bool(Job.objects.filter(held, pk=job.pk).update(**fields))

    run = run or job_synthesis_run(job, token=token)
    run.take_over_job(
        claim=claim, done_segments=segments_done(job), audio_seconds=job.audio_seconds, sample_rate=job.sample_rate
    )
    if not run.finish(_HISTORY_STATUS[status], error_code=error_code):
        return False
    for key, value in fields.items():
        setattr(job, key, value)
    if status != Job.Status.SUCCEEDED or audio_name:
        chunks_delete(job)
    job_publish(job)
    try:
        # Its place is free: the tenant's oldest waiting job goes next.
        job_start_next(job.tenant_id, dispatch=job_dispatch)
    except Exception:
        logger.warning("could not dispatch the next job of tenant %s", job.tenant_id, exc_info=True)
    logger.info(
        "job %s %s: %d/%d chunks, %.1f s of audio", job.pk, status, job.done_chunks, job.total_chunks, job.audio_seconds
    )
    return True


def jobs_reap_stale(now: dt.datetime | None = None) -> dict[str, int]:
    """Jobs whose worker stopped reporting: requeue them (they resume), or fail them with the reason.
    Then jobs left queued: send again those whose message was lost (``jobs_redispatch``), fail
    those that spent every attempt (``jobs_fail_unstartable``)."""
    counts = {"requeued": 0, "failed": 0, "cancelled": 0, "redispatched": 0}
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
    counts["failed"] += jobs_fail_unstartable()
    redispatch_before = (now or timezone.now()) - dt.timedelta(seconds=settings.TTS_JOB_REDISPATCH_AFTER_S)
    counts["redispatched"] = jobs_redispatch(dispatched_before=redispatch_before, reason="the reaper")
    return counts


def jobs_redispatch(*, dispatched_before: dt.datetime, reason: str, limit: int | None = None) -> int:
    """Send again the queued jobs that could start now but whose last message is older than
    ``dispatched_before``: a broker that lost its messages (a restart without persistence,
    a flushed queue) must not leave a job queued forever.

    Only jobs a worker may claim now are sent: per tenant, its oldest waiting jobs, as many
    as it has free places (``tts.jobs.slots``); the others wait for ``job_start_next``. Each
    send is taken by one conditional update of ``dispatched_at``, so two reapers or
    workers starting together send a job once, and a job is sent again only after another
    ``dispatched_before`` interval. A duplicate message is harmless: claims are token-based
    and a second one finds the job taken (``skipped``). Returns the number sent.
    """
    limit = settings.TTS_JOB_REDISPATCH_MAX if limit is None else limit
    stale_before = _stale_before()
    waiting = Job.objects.filter(
        status=Job.Status.QUEUED, cancel_requested=False, attempts__lt=settings.TTS_JOB_MAX_ATTEMPTS
    )
    long_ago = Q(dispatched_at__lt=dispatched_before) | Q(dispatched_at__isnull=True, created_at__lt=dispatched_before)
    tenants = waiting.filter(long_ago).order_by().values_list("tenant_id", flat=True).distinct()
    sent = 0
    for tenant_id in list(tenants):
        cap = Tenant.objects.filter(pk=tenant_id).values_list("plan__max_running_jobs", flat=True).first() or 0
        running = Job.objects.filter(
            tenant_id=tenant_id, status=Job.Status.RUNNING, heartbeat_at__gte=stale_before
        ).count()
        heads = waiting.filter(tenant_id=tenant_id).order_by("created_at", "pk")[: max(0, cap - running)]
        for job in heads.only("pk", "dispatched_at", "created_at"):
            if sent >= limit:
                return sent
            last = job.dispatched_at or job.created_at
            if last >= dispatched_before:
                continue  # its message is recent: a worker may just be busy
            unchanged = Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED, dispatched_at=job.dispatched_at)
            if not unchanged.update(dispatched_at=timezone.now()):
                continue  # another reaper or worker sent it just now
            logger.warning("job %s: still queued, last sent %s; sending it again (%s)", job.pk, last, reason)
            job_dispatch(job.pk)
            sent += 1
    return sent


def jobs_fail_unstartable() -> int:
    """Queued jobs that spent every attempt (the engine was busy each time they were claimed)
    can never be claimed again: finish them as failed, the reservation refunded."""
    failed = 0
    spent_all = Job.objects.filter(status=Job.Status.QUEUED, attempts__gte=settings.TTS_JOB_MAX_ATTEMPTS)
    for job in spent_all.defer("plan"):
        message = f"The job could not be run in {job.attempts} attempts; giving up."
        if job_finish(job, token="", status=Job.Status.FAILED, error_code="worker_lost", message=message):
            failed += 1
    return failed


def jobs_redispatch_at_worker_start() -> int:
    """Once, when a Celery worker is ready: send again the jobs queued before it started
    whose messages a broker loss may have taken (bounded by ``TTS_JOB_REDISPATCH_MAX``)."""
    try:
        close_old_connections()
        return jobs_redispatch(dispatched_before=_process_started, reason="a worker started")
    finally:
        connections.close_all()


def connect_worker_signals() -> None:
    """Celery workers pick up the orphans of a lost broker when they start."""
    from celery.signals import worker_ready

    def _on_ready(**_: object) -> None:
        global _process_started
        _process_started = timezone.now()
        try:
            jobs_redispatch_at_worker_start()
        except Exception:
            logger.warning("could not re-send the queued jobs at worker start", exc_info=True)

    worker_ready.connect(_on_ready, weak=False)


# --- running it somewhere ----------------------------------------------------

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_process_started = timezone.now()


def _run_in_thread(job_id: uuid.UUID) -> None:
    close_old_connections()
    try:
        job_run(job_id, worker=f"thread-{threading.get_ident()}")
    except RetryLater:
        # Back in the queue with its finished chunks; try again once the engine had a moment.
        timer = threading.Timer(10.0, job_dispatch, args=[job_id])
        timer.daemon = True
        timer.start()
    except Exception:
        logger.exception("job %s failed in its server thread", job_id)
    finally:
        connections.close_all()


def _housekeeping() -> None:
    """Thread mode has no beat: reap stale claims now and then, and once pick up the
    jobs a restart of this server left queued (their thread died with it)."""
    interval = max(5, min(60, settings.TTS_JOB_STALE_AFTER_S // 2))
    orphans_checked = False
    while True:
        try:
            close_old_connections()
            jobs_reap_stale()
            if not orphans_checked:
                jobs_redispatch(dispatched_before=_process_started, reason="the server started")
                orphans_checked = True
        except Exception:
            logger.warning("job housekeeping failed; trying again in %d s", interval, exc_info=True)
        finally:
            connections.close_all()
        time.sleep(interval)


def job_dispatch(job_id: uuid.UUID) -> None:
    """Hand the job to a runner: a Celery worker through the broker, or a server thread."""
    global _executor
    Job.objects.filter(pk=job_id).update(dispatched_at=timezone.now())
    if settings.TTS_JOB_RUNNER == "celery":
        # The project's app (ttsplatform/celery.py, loaded with the settings) is the current one.
        current_app.send_task("tts.tasks.run_job", args=[str(job_id)])
        return
    with _executor_lock:
        if _executor is None:
            # One at a time: inference already uses the engine's thread budget.
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts-job")
            threading.Thread(target=_housekeeping, name="tts-job-housekeeping", daemon=True).start()
    _executor.submit(_run_in_thread, job_id)
