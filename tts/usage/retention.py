"""Retention: forget history text and audio (and long-form job output) older
than the tenant's plan keeps them.

The rows stay, emptied, so usage statistics still add up; only what the caller
said and the audio made from it go. Audio files are deleted from storage
before the row forgets their name, so a crash between the two leaves a row
that the next run finishes, never a file nobody points at.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db.models import Q
from django.utils import timezone

from accounts.models import Plan
from tts.jobs import chunks_delete
from tts.models import Job, SynthesisRecord

logger = logging.getLogger(__name__)

_BATCH = 500


def _purge_history(plan: Plan, cutoff: dt.datetime) -> int:
    expired = SynthesisRecord.objects.filter(tenant__plan=plan, created_at__lt=cutoff).filter(
        ~Q(text="") | ~Q(audio="")
    )
    purged = 0
    while batch := list(expired.only("pk", "audio")[:_BATCH]):
        for record in batch:
            if record.audio:
                record.audio.delete(save=False)
        purged += SynthesisRecord.objects.filter(pk__in=[r.pk for r in batch]).update(text="", audio="")
    return purged


def _purge_jobs(plan: Plan, cutoff: dt.datetime) -> int:
    finished = [Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED]
    expired = Job.objects.filter(
        tenant__plan=plan, status__in=finished, created_at__lt=cutoff, purged_at__isnull=True
    ).only("pk", "tenant_id", "audio", "total_chunks")
    purged = 0
    while batch := list(expired[:_BATCH]):
        for job in batch:
            if job.audio:
                job.audio.delete(save=False)
            chunks_delete(job)
        purged += Job.objects.filter(pk__in=[j.pk for j in batch]).update(
            text="", plan=[], audio="", purged_at=timezone.now()
        )
    return purged


def purge_expired_history(now: dt.datetime | None = None) -> dict[str, int]:
    """Empty every history item and job older than its plan's ``history_retention_days``."""
    now = now or timezone.now()
    counts = {"history": 0, "jobs": 0}
    for plan in Plan.objects.all():
        cutoff = now - dt.timedelta(days=plan.history_retention_days)
        counts["history"] += _purge_history(plan, cutoff)
        counts["jobs"] += _purge_jobs(plan, cutoff)
    if counts["history"] or counts["jobs"]:
        logger.info("retention: purged %(history)d history items and %(jobs)d jobs", counts)
    return counts
