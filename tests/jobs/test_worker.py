"""Jobs on real Celery worker processes with the real Redis broker and PostgreSQL:
a long job (more than a request may carry, in many chunks), cancel with progress over WebSocket, a worker
SIGKILLed mid-job whose job another worker resumes without losing or
repeating audio, and jobs whose broker messages were lost sent again by a
starting worker and by the reaper."""

from __future__ import annotations

import time

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import TestCase

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.jobs.conftest import _clear_broker, long_text, wait_job
from tts.models import Job, Voice
from tts.routing import websocket_urlpatterns
from ttsplatform.celery import app

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

FINISHED = ("succeeded", "failed", "cancelled")


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def submit(ctx: TenantCtx, text: str, output_format: str = "pcm_16000") -> Job:
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = ctx.client().post(
            "/v1/jobs", {"voice_id": "joe", "text": text, "output_format": output_format}, format="json"
        )
    assert response.status_code == 202, response.content
    return Job.objects.get(pk=response.json()["job_id"])


def job_audio(ctx: TenantCtx, job: Job) -> tuple:
    response = ctx.client().get(f"/v1/jobs/{job.pk}/audio")
    assert response.status_code == 200
    return decode_audio(b"".join(response.streaming_content), job.output_format)


@pytest.fixture
def big_tenant(tenant_a: TenantCtx) -> TenantCtx:
    tenant_a.tenant.plan.monthly_character_limit = 1_000_000
    tenant_a.tenant.plan.save()
    return tenant_a


def test_it_runs_a_long_job_on_a_worker(big_tenant: TenantCtx, joe: Voice, celery_worker_factory, settings) -> None:
    # Over what this plan lets a request carry, in six chunks: what a 20,000-character job in
    # chunks of 4,000 proved (70-150 s of the suite), and then 6,000 in chunks of 1,000 (60 s).
    big_tenant.tenant.plan.max_characters_per_request = 2000
    big_tenant.tenant.plan.save()
    settings.TTS_JOB_CHUNK_CHARS = 400
    worker = celery_worker_factory()
    text = long_text(2400)
    assert len(text) > big_tenant.tenant.plan.max_characters_per_request
    started = time.monotonic()
    job = submit(big_tenant, text)
    job = wait_job(job.pk, lambda j: j.status in FINISHED, timeout=400)
    elapsed = time.monotonic() - started
    assert job.status == "succeeded", (job.error_code, job.error_message, worker.log()[-3000:])
    samples, rate = job_audio(big_tenant, job)
    assert_speech(samples, rate, expected_rate=16000, text=text)
    # The file is the chunks' audio, all of it, once: its length is their recorded sum.
    assert len(samples) / rate == pytest.approx(job.audio_seconds, abs=0.05)
    assert job.done_chunks == job.total_chunks >= 6 and job.attempts == 1
    assert spent(big_tenant) == len(text) == job.characters_charged
    print(f"\n{len(text):,}-character job: {job.audio_seconds:.0f} s of audio in {elapsed:.1f} s wall")


def test_it_cancels_a_running_job_and_pushes_progress(
    big_tenant: TenantCtx, joe: Voice, celery_worker_factory, settings
) -> None:
    settings.TTS_JOB_CHUNK_CHARS = 300
    celery_worker_factory()
    text = long_text(6000)
    job = submit(big_tenant, text)

    async def watch() -> list[dict]:
        app_ = URLRouter(websocket_urlpatterns)
        ws = WebsocketCommunicator(
            app_, f"/v1/jobs/{job.pk}/progress", headers=[(b"xi-api-key", big_tenant.key.encode())]
        )
        connected, _ = await ws.connect()
        assert connected
        events = []
        while True:
            event = await ws.receive_json_from(timeout=60)
            events.append(event)
            if event["done_chunks"] >= 2 and not any(e.get("cancel_sent") for e in events):
                await cancel()
                events.append({"cancel_sent": True})
            if event["status"] in FINISHED:
                break
        await ws.disconnect()
        return events

    from channels.db import database_sync_to_async

    @database_sync_to_async
    def cancel() -> None:
        assert big_tenant.client().post(f"/v1/jobs/{job.pk}/cancel").status_code == 202

    events = [e for e in async_to_sync(watch)() if "status" in e]
    assert events[0]["type"] == "progress" and events[0]["job_id"] == str(job.pk)
    assert [e["done_chunks"] for e in events] == sorted(e["done_chunks"] for e in events)
    assert set(events[-1]) >= {"job_id", "status", "progress", "audio_seconds", "total_chunks"}
    assert events[-1]["status"] == "cancelled"
    job.refresh_from_db()
    assert job.status == "cancelled" and 2 <= job.done_chunks < job.total_chunks
    assert 0 < job.characters_charged < len(text)
    assert spent(big_tenant) == job.characters_charged  # the rest was refunded
    assert not job.audio


def test_it_resumes_a_job_after_its_worker_is_killed(
    big_tenant: TenantCtx, joe: Voice, celery_worker_factory, settings
) -> None:
    settings.TTS_JOB_CHUNK_CHARS = 200
    text = long_text(1000)  # five chunks: killed after two, three left to resume
    first = celery_worker_factory()
    reference = submit(big_tenant, text)
    job = submit(big_tenant, text)
    reference = wait_job(reference.pk, lambda j: j.status in FINISHED, timeout=240)
    assert reference.status == "succeeded"
    wait_job(job.pk, lambda j: j.done_chunks >= 2, timeout=240)
    first.kill()
    job.refresh_from_db()
    assert job.status == "running" and job.done_chunks < job.total_chunks, "killed too late"

    celery_worker_factory({"TTS_JOB_STALE_AFTER_S": "2"})
    time.sleep(2.5)  # let the dead worker's claim go stale
    app.send_task("tts.tasks.reap_stale_jobs")  # what beat sends every minute
    job = wait_job(job.pk, lambda j: j.status in FINISHED, timeout=240)
    assert job.status == "succeeded", (job.error_code, job.error_message)
    assert job.attempts == 2 and job.done_chunks == job.total_chunks

    samples, rate = job_audio(big_tenant, job)
    ref_samples, _ = job_audio(big_tenant, reference)
    assert_speech(samples, rate, expected_rate=16000, text=text)
    assert len(samples) / rate == pytest.approx(job.audio_seconds, abs=0.05)
    # Piper's durations vary a little from run to run; a chunk lost or spoken twice
    # would move the length by a whole chunk (about 12 s here), far past this.
    chunk_s = reference.audio_seconds / reference.total_chunks
    assert abs(len(samples) - len(ref_samples)) / rate < chunk_s / 2
    assert spent(big_tenant) == 2 * len(text)


def test_lost_messages_are_sent_again_at_worker_start_and_by_the_reaper(
    big_tenant: TenantCtx, joe: Voice, celery_worker_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "The broker lost this job's message, and a worker sent it again."
    orphan = submit(big_tenant, text)  # sent to the broker; no worker runs yet
    _clear_broker()  # the broker restarts empty: the message is gone
    worker = celery_worker_factory({"TTS_JOB_REDISPATCH_AFTER_S": "1"})
    orphan = wait_job(orphan.pk, lambda j: j.status in FINISHED, timeout=120)
    assert orphan.status == "succeeded" and orphan.attempts == 1, (orphan.error_code, worker.log()[-3000:])
    assert "sending it again (a worker started)" in worker.log()
    samples, rate = job_audio(big_tenant, orphan)
    assert_speech(samples, rate, expected_rate=16000, text=text)

    # A message lost on its way while the worker runs: only the reaper can find it.
    monkeypatch.setattr("tts.jobs.actions.job_dispatch", lambda job_id: None)
    lost = submit(big_tenant, text)
    time.sleep(1.5)
    assert Job.objects.get(pk=lost.pk).status == "queued"
    app.send_task("tts.tasks.reap_stale_jobs")  # what beat sends every minute
    lost = wait_job(lost.pk, lambda j: j.status in FINISHED, timeout=120)
    assert lost.status == "succeeded" and lost.attempts == 1 and lost.dispatched_at is not None
    assert f"job {lost.pk}: still queued" in worker.log() and "(the reaper)" in worker.log()
    assert spent(big_tenant) == 2 * len(text)
