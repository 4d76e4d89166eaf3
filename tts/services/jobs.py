"""Long-form jobs: submit (validate, plan chunks, reserve quota), cancel, read,
and hand a job to whatever runs it (a Celery worker, or a server thread).

Running a job lives in tts/services/job_runner.py. Progress goes out on the
channel layer (ids and numbers, never audio) to a group per job and one per
tenant, for WebSocket subscribers and the dashboard.

Without a broker (``TTS_JOB_RUNNER=thread``, the default with no REDIS_URL)
jobs run one at a time in a thread of the server process, and a housekeeping
thread stands in for beat's reaper; it starts with the first job this process
dispatches and then also picks up jobs a restart left queued.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import ApiKey, Tenant
from accounts.quota import QuotaExceeded, Reservation, next_period_start, refund_characters, reserve_characters
from accounts.ratelimit import LimitExceeded, check_request_rate
from tts.audio.formats import OutputFormat
from tts.models import Job
from tts.text.prepare import TextError, prepare_text
from tts.text.segment import Segment

from .synthesis import SynthesisError, SynthesisRequest, resolve_model_version
from .voices import voice_get

logger = logging.getLogger(__name__)


@dataclass
class JobRequest:
    """What a caller asks for: ``text`` (one long text) or ``items`` (a batch), not both."""

    tenant: Tenant
    voice_id: str
    output_format: OutputFormat
    text: str | None = None
    items: list[str] | None = None
    api_key: ApiKey | None = None
    model_id: str | None = None
    speed: float = 1.0
    language: str | None = None
    normalization: str = "auto"
    enable_logging: bool = True
    request_id: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


def _texts(req: JobRequest) -> list[tuple[str, str]]:
    """(field name, text) per item, validated."""
    if (req.text is None) == (req.items is None):
        raise SynthesisError(
            "Send either 'text' (one long text) or 'items' (a list of texts), not both.",
            code="invalid_request",
            status=400,
            field="text",
        )
    if req.text is not None:
        pairs = [("text", req.text)]
    else:
        items = req.items or []
        if not items:
            raise SynthesisError("'items' must hold at least one text.", code="empty_text", status=400, field="items")
        if len(items) > settings.TTS_JOB_MAX_ITEMS:
            raise SynthesisError(
                f"'items' has {len(items)} entries; a job takes at most {settings.TTS_JOB_MAX_ITEMS}.",
                code="too_many_items",
                status=413,
                field="items",
            )
        pairs = [(f"items[{i}]", text) for i, text in enumerate(items)]
    for name, text in pairs:
        if not text.strip():
            raise SynthesisError(
                f"'{name}' must contain some text to speak.", code="empty_text", status=400, field=name
            )
    total = sum(len(text) for _, text in pairs)
    limit = req.tenant.plan.job_max_characters
    if total > limit:
        name = "text" if req.text is not None else "items"
        raise SynthesisError(
            f"'{name}' holds {total} characters; a job on this plan takes at most {limit}.",
            code="max_character_limit_exceeded",
            status=413,
            field=name,
        )
    return pairs


def _segments(req: JobRequest, name: str, text: str) -> list[Segment]:
    try:
        segments = prepare_text(
            text,
            language=req.language,
            normalization=req.normalization,  # type: ignore[arg-type]
            max_segment_chars=settings.TTS_SEGMENT_MAX_CHARS,
        )
    except TextError as exc:
        raise SynthesisError(
            str(exc), code=exc.code, status=exc.status, field=name if exc.field == "text" else exc.field
        )
    if not any(seg.text.strip() for seg in segments):
        raise SynthesisError(f"'{name}' has nothing that can be spoken.", code="empty_text", status=400, field=name)
    return segments


def plan_chunks(item: int, segments: list[Segment], chunk_chars: int) -> list[dict[str, Any]]:
    """Consecutive segments grouped into chunks of about ``chunk_chars`` characters."""
    chunks: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for seg in segments:
        if current and size + len(seg.text) > chunk_chars:
            chunks.append({"item": item, "chars": size, "segments": current})
            current, size = [], 0
        current.append(dataclasses.asdict(seg))
        size += len(seg.text)
    if current:
        chunks.append({"item": item, "chars": size, "segments": current})
    return chunks


def job_submit(req: JobRequest) -> Job:
    """Validate, count against the rate limits, reserve the quota for every character, plan, and queue."""
    pairs = _texts(req)
    voice = voice_get(req.tenant, req.voice_id)
    if voice is None:
        raise SynthesisError(
            f"A voice with voice_id '{req.voice_id}' was not found.",
            code="voice_not_found",
            status=404,
            field="voice_id",
        )
    probe = SynthesisRequest(
        tenant=req.tenant,
        voice_id=req.voice_id,
        text="",
        output_format=req.output_format,
        source="job",
        model_id=req.model_id,
    )
    model_version = resolve_model_version(probe, voice)
    # Cheap checks and the reservation first; the text work (normalizing and planning up to
    # the plan's job_max_characters) only for a job that may run.
    try:
        check_request_rate(tenant=req.tenant, api_key=req.api_key)
    except LimitExceeded as exc:
        raise SynthesisError(exc.message, code=exc.code, status=exc.status, retry_after=exc.retry_after) from exc
    characters = sum(len(text) for _, text in pairs)
    try:
        reservation = reserve_characters(tenant=req.tenant, characters=characters)
    except QuotaExceeded as exc:
        retry = int(time.mktime(next_period_start().timetuple()) - time.time())
        raise SynthesisError(str(exc), code="quota_exceeded", status=429, retry_after=max(1, retry)) from exc
    try:
        plan: list[dict[str, Any]] = []
        for item, (name, text) in enumerate(pairs):
            plan.extend(plan_chunks(item, _segments(req, name, text), settings.TTS_JOB_CHUNK_CHARS))
    except BaseException:
        refund_characters(reservation)
        raise
    try:
        with transaction.atomic():
            job = Job.objects.create(
                tenant=req.tenant,
                api_key=req.api_key,
                kind=Job.Kind.TEXT if req.text is not None else Job.Kind.BATCH,
                voice_id=voice.voice_id,
                voice_name=voice.name,
                model_version=model_version,
                model_id=model_version.model_id,
                output_format=req.output_format.name,
                content_type="application/zip" if req.items is not None else req.output_format.content_type,
                sample_rate=req.output_format.sample_rate,
                settings={
                    **req.settings,
                    "speed": req.speed,
                    "language": req.language,
                    "normalization": req.normalization,
                },
                text="\n\n".join(text for _, text in pairs) if req.enable_logging else "",
                text_logged=req.enable_logging,
                plan=plan,
                item_count=len(pairs),
                characters=characters,
                reserved_period=reservation.period_start,
                total_chunks=len(plan),
                planned_chars=sum(chunk["chars"] for chunk in plan),
                request_id=req.request_id,
            )
            transaction.on_commit(lambda: job_dispatch(job.pk))
    except BaseException:
        refund_characters(reservation)
        raise
    return job


# --- running it somewhere ----------------------------------------------------

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_process_started = timezone.now()


def _run_in_thread(job_id: uuid.UUID) -> None:
    from .job_runner import RetryLater, job_run

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
    from .job_runner import jobs_reap_stale

    interval = max(5, min(60, settings.TTS_JOB_STALE_AFTER_S // 2))
    orphans_checked = False
    while True:
        try:
            close_old_connections()
            jobs_reap_stale()
            if not orphans_checked:
                orphans = Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=_process_started)
                for job_id in orphans.values_list("pk", flat=True):
                    job_dispatch(job_id)
                orphans_checked = True
        except Exception:
            logger.warning("job housekeeping failed; trying again in %d s", interval, exc_info=True)
        finally:
            connections.close_all()
        time.sleep(interval)


def job_dispatch(job_id: uuid.UUID) -> None:
    """Hand the job to a runner: a Celery worker through the broker, or a server thread."""
    global _executor
    if settings.TTS_JOB_RUNNER == "celery":
        from ttsplatform.celery import app

        app.send_task("tts.tasks.run_job", args=[str(job_id)])
        return
    with _executor_lock:
        if _executor is None:
            # One at a time: inference already uses the engine's thread budget.
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts-job")
            threading.Thread(target=_housekeeping, name="tts-job-housekeeping", daemon=True).start()
    _executor.submit(_run_in_thread, job_id)


# --- cancel and read ---------------------------------------------------------


def reservation_of(job: Job) -> Reservation:
    assert job.reserved_period is not None
    return Reservation(tenant_id=job.tenant_id, period_start=job.reserved_period, characters=job.characters)


def job_cancel(job: Job) -> Job:
    """Ask a job to stop. A queued job stops now; a running one at its next chunk."""
    from .job_runner import job_finish

    Job.objects.filter(pk=job.pk, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).update(cancel_requested=True)
    job.refresh_from_db()
    if job.status == Job.Status.QUEUED:
        job_finish(job, token="", status=Job.Status.CANCELLED, error_code="cancelled")
        job.refresh_from_db()
    return job


def jobs_for_tenant(tenant: Tenant) -> QuerySet[Job]:
    return Job.objects.filter(tenant=tenant).defer("plan").order_by("-created_at", "-id")


def job_get(tenant: Tenant, job_id: str) -> Job | None:
    try:
        pk = uuid.UUID(str(job_id))
    except ValueError:
        return None  # a malformed id is simply not found
    return Job.objects.filter(tenant=tenant, pk=pk).first()


def characters_done(job: Job) -> int:
    """Characters of the finished chunks, scaled to what the caller sent (whitespace counts)."""
    if job.status == Job.Status.SUCCEEDED:
        return job.characters
    return min(job.characters, round(job.characters * job.done_chars / (job.planned_chars or 1)))


# --- progress events ---------------------------------------------------------


def job_group(job_id: uuid.UUID | str) -> str:
    return f"job-{uuid.UUID(str(job_id)).hex}"


def tenant_jobs_group(tenant_id: int) -> str:
    return f"jobs-tenant-{tenant_id}"


def job_event(job: Job) -> dict[str, Any]:
    return {
        "type": "job.progress",
        "job_id": str(job.pk),
        "status": job.status,
        "done_chunks": job.done_chunks,
        "total_chunks": job.total_chunks,
        "progress": job.progress,
        "audio_seconds": round(job.audio_seconds, 3),
        "error_code": job.error_code or None,
    }


def job_publish(job: Job) -> None:
    """Tell subscribers where the job is; a channel layer that is down never stops a job."""
    layer = get_channel_layer()
    if layer is None:
        return
    event = job_event(job)
    try:
        async_to_sync(layer.group_send)(job_group(job.pk), event)
        async_to_sync(layer.group_send)(tenant_jobs_group(job.tenant_id), event)
    except Exception:
        logger.warning("could not publish progress of job %s", job.pk, exc_info=True)
