"""Progress of long-form jobs on the channel layer: ids and numbers (never audio), to a
group per job and one per tenant, for WebSocket subscribers and the dashboard."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from tts.models import Job

logger = logging.getLogger(__name__)


def job_group(job_id: uuid.UUID | str) -> str:
    return f"job-{uuid.UUID(str(job_id)).hex}"


def tenant_jobs_group(tenant_id: int) -> str:
    return f"jobs-tenant-{tenant_id}"


def job_event(job: Job, *, progress: float | None = None, eta_seconds: float | None = None) -> dict[str, Any]:
    """The job's state; a running job's ``progress`` inside its chunk and ``eta_seconds`` (the time
    left at the pace measured so far) when the runner knows them."""
    event: dict[str, Any] = {
        "type": "job.progress",
        "job_id": str(job.pk),
        "status": job.status,
        "done_chunks": job.done_chunks,
        "total_chunks": job.total_chunks,
        "progress": job.progress if progress is None else round(progress, 4),
        "audio_seconds": round(job.audio_seconds, 3),
        "error_code": job.error_code or None,
    }
    if eta_seconds is not None:
        event["eta_seconds"] = round(eta_seconds, 1)
    return event


def job_publish(job: Job, *, progress: float | None = None, eta_seconds: float | None = None) -> None:
    """Tell subscribers where the job is; a channel layer that is down never stops a job."""
    layer = get_channel_layer()
    if layer is None:
        return
    event = job_event(job, progress=progress, eta_seconds=eta_seconds)
    try:
        async_to_sync(layer.group_send)(job_group(job.pk), event)
        async_to_sync(layer.group_send)(tenant_jobs_group(job.tenant_id), event)
    except Exception:
        logger.warning("could not publish progress of job %s", job.pk, exc_info=True)
