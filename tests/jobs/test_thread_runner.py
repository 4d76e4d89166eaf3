"""Without a broker (no REDIS_URL, as ``make run``), jobs run in a thread of the
server process: a real daphne, a job submitted over HTTP, its audio back."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import Job, Voice

TEXT = "A job that runs inside the web server. No broker and no worker are needed for this one."


@pytest.mark.server
@pytest.mark.django_db(transaction=True)
def test_it_runs_jobs_in_a_server_thread_without_a_broker(
    tenant_a: TenantCtx, joe: Voice, daphne_factory, dispatched: list
) -> None:
    # A job queued before the server (re)started: its thread died with the old process.
    orphan = tenant_a.client().post("/v1/jobs", {"voice_id": "joe", "text": "Left behind."}, format="json")
    assert orphan.status_code == 202 and dispatched == [orphan.json()["job_id"]]
    server = daphne_factory({"TTS_JOB_RUNNER": "thread"})
    headers = {"xi-api-key": tenant_a.key}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        response = client.post("/v1/jobs", json={"voice_id": "joe", "text": TEXT, "output_format": "mp3_22050_32"})
        assert response.status_code == 202, response.text
        job_id = response.json()["job_id"]
        deadline = time.monotonic() + 60
        while (body := client.get(f"/v1/jobs/{job_id}").json())["status"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        assert body["status"] == "succeeded", body
        audio = client.get(f"/v1/jobs/{job_id}/audio")
    samples, rate = decode_audio(audio.content, "mp3_22050_32")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    job = Job.objects.get(pk=job_id)
    assert job.attempts == 1 and job.history_item is not None and job.history_item.source == "job"
    # The server's housekeeping thread picked up the orphan too.
    deadline = time.monotonic() + 60
    while (left := Job.objects.get(pk=orphan.json()["job_id"])).status != "succeeded":
        assert time.monotonic() < deadline and left.status in ("queued", "running"), left.status
        time.sleep(0.2)
    assert left.audio
