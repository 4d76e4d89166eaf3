"""Jobs cannot crowd out other tenants: submissions count against the rate limits like
synthesis, the quota is reserved before the text is prepared (a refused job prepares nothing
and bills nothing), and one tenant runs at most Plan.max_running_jobs jobs at a time while
the rest wait in order."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import TestCase

from accounts.models import Usage
from accounts.ratelimit import reset_local_limits
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.jobs.runner import job_claim, job_finish, job_run
from tts.models import Job, SynthesisRecord, Voice
from tts.synthesis.stages import prepare as prepare_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_limits() -> Any:
    reset_local_limits()
    yield
    reset_local_limits()


def usage(ctx: TenantCtx) -> tuple[int, int]:
    row = Usage.objects.filter(tenant=ctx.tenant).first()
    return (row.characters, row.requests) if row else (0, 0)


def post_job(ctx: TenantCtx, text: str) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return ctx.client().post("/v1/jobs", {"voice_id": "joe", "text": text, "output_format": "wav_22050"},
                                 format="json")  # fmt: skip


def test_submissions_are_rate_limited_like_synthesis(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    tenant_a.tenant.plan.requests_per_minute = 2
    tenant_a.tenant.plan.save()
    assert post_job(tenant_a, "First job.").status_code == 202
    # A synthesis request spends from the same window.
    speech = tenant_a.client().post("/v1/text-to-speech/joe?output_format=pcm_16000", {"text": "Hi."}, format="json")
    assert speech.status_code == 200
    before = usage(tenant_a)
    response = post_job(tenant_a, "Third request.")
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    detail = response.json()["detail"]
    assert detail["status"] == "rate_limit_exceeded"
    assert "2 requests per minute" in detail["message"]
    assert usage(tenant_a) == before
    assert Job.objects.filter(tenant=tenant_a.tenant).count() == 1
    assert len(dispatched) == 1


def test_over_quota_prepares_no_text(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared: list[int] = []
    real = prepare_stage.segments_for

    def counting(text: str, **kwargs: Any) -> Any:
        prepared.append(len(text))
        return real(text, **kwargs)

    monkeypatch.setattr(prepare_stage, "segments_for", counting)
    tenant_a.tenant.plan.monthly_character_limit = 1000
    tenant_a.tenant.plan.save()
    response = post_job(tenant_a, "A sentence that is long enough. " * 40)
    assert response.status_code == 429
    assert response.json()["detail"]["status"] == "quota_exceeded"
    assert prepared == []  # refused before any normalization or planning
    assert usage(tenant_a) == (0, 0)
    assert not Job.objects.exists() and not SynthesisRecord.objects.exists()


def test_text_refused_by_the_text_work_spends_nothing(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    response = post_job(tenant_a, "... !!! ???")
    assert response.status_code == 400
    assert response.json()["detail"]["param"] == "text"
    assert usage(tenant_a) == (0, 0)
    assert not Job.objects.exists() and dispatched == []


def test_a_tenant_runs_at_most_its_cap_and_the_rest_wait_in_order(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, dispatched: list
) -> None:
    tenant_a.tenant.plan.max_running_jobs = 1
    tenant_a.tenant.plan.save()
    texts = ["The first job speaks.", "The second job speaks.", "The third job speaks."]
    ids = [post_job(tenant_a, text).json()["job_id"] for text in texts]
    other = post_job(tenant_b, "Another tenant's job.").json()["job_id"]
    dispatched.clear()

    first = job_claim(ids[0], "held-by-a-worker")
    assert first is not None and first.status == "running"
    # The cap is reached: the others stay queued, untouched (no attempt spent).
    assert job_run(ids[2]) == "skipped"
    assert job_run(ids[1]) == "skipped"
    waiting = Job.objects.filter(pk__in=ids[1:])
    assert {j.status for j in waiting} == {"queued"} and {j.attempts for j in waiting} == {0}
    # Another tenant is not held up by tenant a's cap.
    assert job_run(other) == "succeeded"

    # The running job ends: its place goes to the oldest waiting job, not the newest.
    assert job_finish(first, token="held-by-a-worker", status="cancelled", error_code="cancelled")
    assert dispatched == [ids[1]]
    assert job_run(ids[2]) == "skipped"  # the third still waits for the second
    assert job_run(ids[1]) == "succeeded"
    assert dispatched[-1] == ids[2]
    assert job_run(ids[2]) == "succeeded"

    for job_id, text in zip(ids[1:], texts[1:], strict=True):
        audio = tenant_a.client().get(f"/v1/jobs/{job_id}/audio")
        samples, rate = decode_audio(b"".join(audio.streaming_content), "wav_22050")
        assert_speech(samples, rate, expected_rate=22050, text=text, tolerance=0.8)
    # The cancelled first job was refunded; the others paid for what they spoke.
    assert usage(tenant_a)[0] == sum(len(t) for t in texts[1:])
