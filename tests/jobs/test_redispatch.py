"""Queued jobs whose message was lost (a broker restarted empty) are sent again: by the
reaper once they stayed queued ``TTS_JOB_REDISPATCH_AFTER_S`` after their last send, and
when a worker starts. Only jobs that may start now are sent (a job waiting for its
tenant's running cap is not), each at most once per interval; a queued job that spent
every attempt is failed with its reservation refunded."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import TestCase
from django.utils import timezone

from accounts.models import Usage
from accounts.ratelimit import reset_local_limits
from tests.fixtures import TenantCtx
from tts.jobs.runner import job_claim, job_run, jobs_reap_stale, jobs_redispatch
from tts.models import Job, SynthesisRecord, Voice

pytestmark = pytest.mark.django_db

LONG_AGO = dt.timedelta(minutes=10)


@pytest.fixture(autouse=True)
def _fresh_limits() -> Any:
    reset_local_limits()
    yield
    reset_local_limits()


def spent(ctx: TenantCtx) -> int:
    row = Usage.objects.filter(tenant=ctx.tenant).first()
    return row.characters if row else 0


def submit(ctx: TenantCtx, text: str) -> str:
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = ctx.client().post(
            "/v1/jobs", {"voice_id": "joe", "text": text, "output_format": "pcm_16000"}, format="json"
        )
    assert response.status_code == 202, response.content
    return str(response.json()["job_id"])


def age(*job_ids: str, by: dt.timedelta = LONG_AGO) -> None:
    """The jobs were submitted and sent ``by`` ago (their messages since lost)."""
    for n, job_id in enumerate(job_ids):  # in order: the first is the oldest
        then = timezone.now() - by - dt.timedelta(seconds=len(job_ids) - n)
        Job.objects.filter(pk=job_id).update(created_at=then, dispatched_at=then)


def test_the_reaper_sends_a_lost_job_again_once_per_interval(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, settings: Any
) -> None:
    settings.TTS_JOB_REDISPATCH_AFTER_S = 300
    job_id = submit(tenant_a, "A job whose message the broker lost.")
    dispatched.clear()
    assert jobs_reap_stale()["redispatched"] == 0  # sent just now: a worker may be busy
    assert dispatched == []

    age(job_id)
    before = timezone.now()
    assert jobs_reap_stale() == {"requeued": 0, "failed": 0, "cancelled": 0, "redispatched": 1}
    assert dispatched == [job_id]
    job = Job.objects.get(pk=job_id)
    assert job.status == "queued" and job.dispatched_at is not None and job.dispatched_at >= before
    # The next passes (beat runs every minute) leave it alone until the interval has passed again.
    assert jobs_reap_stale()["redispatched"] == 0
    assert jobs_reap_stale(now=timezone.now() + dt.timedelta(seconds=299))["redispatched"] == 0
    assert jobs_reap_stale(now=timezone.now() + dt.timedelta(seconds=301))["redispatched"] == 1
    assert dispatched == [job_id, job_id]

    # Two messages for one job: the first runs it, the second finds it taken.
    assert job_run(job_id) == "succeeded"
    assert job_run(job_id) == "skipped"
    job = Job.objects.get(pk=job_id)
    assert job.status == "succeeded" and job.attempts == 1
    assert SynthesisRecord.objects.get(pk=job.history_item_id).status == "success"
    assert spent(tenant_a) == len("A job whose message the broker lost.")


def test_only_jobs_that_may_start_are_sent_again(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, dispatched: list
) -> None:
    tenant_a.tenant.plan.max_running_jobs = 1
    tenant_a.tenant.plan.save()
    first, second, third = (submit(tenant_a, f"Job number {n} of tenant a.") for n in ("one", "two", "three"))
    other = submit(tenant_b, "Tenant b's job.")
    cancelled = submit(tenant_b, "A job cancelled while queued.")
    age(first, second, third, other, cancelled)
    Job.objects.filter(pk=cancelled).update(cancel_requested=True)
    assert job_claim(first, "held-by-a-worker") is not None  # tenant a's only place is taken
    dispatched.clear()

    # a's waiting jobs wait for its cap (job_start_next sends the next); b's job may start now.
    assert jobs_reap_stale()["redispatched"] == 1
    assert dispatched == [other]

    # a's running job is finished elsewhere and its place is free: only the oldest waiting one goes.
    Job.objects.filter(pk=first).update(status="succeeded", claim_token="")
    assert jobs_redispatch(dispatched_before=timezone.now() - dt.timedelta(minutes=5), reason="test") == 1
    assert dispatched == [other, second]
    # The bound on one pass.
    Job.objects.filter(pk__in=[second, other]).update(dispatched_at=timezone.now() - LONG_AGO)
    tenant_a.tenant.plan.max_running_jobs = 5
    tenant_a.tenant.plan.save()
    assert jobs_redispatch(dispatched_before=timezone.now(), reason="test", limit=2) == 2
    assert len(dispatched) == 4
    assert Job.objects.get(pk=cancelled).status == "queued"  # job_run or the cancel finishes it, not a send


def test_a_queued_job_that_spent_every_attempt_is_failed_and_refunded(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, settings: Any
) -> None:
    job_id = submit(tenant_a, "A job the busy engine refused every time.")
    assert spent(tenant_a) > 0  # reserved at submission
    Job.objects.filter(pk=job_id).update(attempts=settings.TTS_JOB_MAX_ATTEMPTS)
    assert job_run(job_id) == "skipped"  # no attempt left: nobody may claim it again

    counts = jobs_reap_stale()
    assert counts["failed"] == 1 and counts["redispatched"] == 0
    job = Job.objects.get(pk=job_id)
    assert job.status == "failed" and job.error_code == "worker_lost" and job.characters_charged == 0
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert record.status == "failed"
    assert spent(tenant_a) == 0
    assert jobs_reap_stale()["failed"] == 0  # once
