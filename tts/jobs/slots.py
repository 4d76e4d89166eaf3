"""How many jobs of one tenant run at once: ``Plan.max_running_jobs``; the rest wait, oldest first.

A worker may claim a job only if fewer than the cap of its tenant's jobs are
running (a claim whose heartbeat went stale does not count: the reaper takes
it back) and no older job of the tenant is still waiting. The check and the
claim run in one transaction that locks the tenant's row, so two workers
cannot both take the last place. A job that may not start yet stays queued;
when one of the tenant's jobs ends, the oldest waiting one is handed to a
runner (``job_start_next``). So one tenant with fifty queued jobs holds at
most its cap of workers, and another tenant's job starts on the next free one.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Callable

from django.conf import settings
from django.db.models import Q

from accounts.models import Tenant
from tts.models import Job

logger = logging.getLogger(__name__)


def _waiting(tenant_id: int) -> Q:
    return Q(tenant_id=tenant_id, status=Job.Status.QUEUED, cancel_requested=False) & Q(
        attempts__lt=settings.TTS_JOB_MAX_ATTEMPTS
    )


def job_may_start(job: Job, *, stale_before: dt.datetime) -> bool:
    """Whether ``job`` may be claimed now; call inside the claim's ``transaction.atomic()``."""
    tenant = Tenant.objects.select_for_update().select_related("plan").get(pk=job.tenant_id)
    cap = tenant.plan.max_running_jobs
    running = (
        Job.objects.filter(tenant_id=job.tenant_id, status=Job.Status.RUNNING, heartbeat_at__gte=stale_before)
        .exclude(pk=job.pk)
        .count()
    )
    if running >= cap:
        return False
    if job.status != Job.Status.QUEUED:
        return True  # taking over a stale claim: it was already started in its turn
    older = Job.objects.filter(_waiting(job.tenant_id)).filter(
        Q(created_at__lt=job.created_at) | Q(created_at=job.created_at, pk__lt=job.pk)
    )
    return not older.exists()


def job_start_next(tenant_id: int, *, dispatch: Callable[[uuid.UUID], None]) -> uuid.UUID | None:
    """Hand the tenant's oldest waiting job to a runner (``dispatch``) after one of its jobs ended."""
    job_id = Job.objects.filter(_waiting(tenant_id)).order_by("created_at", "pk").values_list("pk", flat=True).first()
    if job_id is not None:
        logger.info("job %s: a place of tenant %s came free; dispatching it", job_id, tenant_id)
        dispatch(job_id)
    return job_id
