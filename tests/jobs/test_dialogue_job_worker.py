"""A dialogue job on a real Celery worker process (Redis broker, PostgreSQL): its plan and turns'
voices go through the database and the broker, not an in-process call, and come back as one
file, one history item and one bill."""

from __future__ import annotations

import pytest
from django.test import TestCase

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.jobs.conftest import wait_job
from tts.models import Job, SynthesisRecord, Voice

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

INPUTS = [
    {"text": "Is the harbour open today? The wind is up.", "voice_id": "joe"},
    {"text": "Yes, the boats left at dawn.", "voice_id": "joe2"},
    {"text": "Then we sail at noon.", "voice_id": "joe"},
]


def test_a_worker_runs_a_dialogue_job_in_its_turns_voices(
    tenant_a: TenantCtx, joe: Voice, celery_worker_factory, settings
) -> None:
    Voice.objects.create(voice_id="joe2", name="Joe Two", language="en", model_id=joe.model_id)
    settings.TTS_JOB_CHUNK_CHARS = 40
    worker = celery_worker_factory()
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = tenant_a.client().post("/v1/jobs", {"inputs": INPUTS, "output_format": "pcm_16000"}, format="json")
    assert response.status_code == 202, response.content
    job = wait_job(response.json()["job_id"], lambda j: j.status in ("succeeded", "failed", "cancelled"))
    assert job.status == "succeeded", (job.error_code, job.error_message, worker.log()[-3000:])
    assert job.done_chunks == job.total_chunks >= 2
    assert f"job {job.pk} claimed by" in worker.log()  # the worker process ran it, not this one
    audio = tenant_a.client().get(f"/v1/jobs/{job.pk}/audio")
    samples, rate = decode_audio(b"".join(audio.streaming_content), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text="\n".join(t["text"] for t in INPUTS), tolerance=0.6)
    assert len(samples) / rate == pytest.approx(job.audio_seconds, abs=0.05)
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert record.status == "success" and record.characters == sum(len(t["text"]) for t in INPUTS)
    assert record.settings["dialogue_inputs"] == [{"voice_id": v["voice_id"]} for v in INPUTS]
    assert Job.objects.count() == 1
