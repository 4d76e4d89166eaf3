"""/v1/jobs in process: submit, run (job_run called here), progress, audio, cancel,
refunds, resume after a crash, tenant scoping and bad input."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.jobs.conftest import long_text
from tts.jobs import runner as job_runner
from tts.jobs.audio import chunk_name
from tts.jobs.runner import job_run, jobs_reap_stale
from tts.models import Job, SynthesisRecord, Voice

TEXT = long_text(1200)


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def submit(ctx: TenantCtx, body: dict) -> Job:
    with TestCase.captureOnCommitCallbacks(execute=True):  # the dispatch waits for the commit
        response = ctx.client().post("/v1/jobs", {"voice_id": "joe", **body}, format="json")
    assert response.status_code == 202, response.content
    assert response["Location"] == f"/v1/jobs/{response.json()['job_id']}"
    return Job.objects.get(pk=response.json()["job_id"])


@pytest.fixture
def small_chunks(settings: object) -> None:
    settings.TTS_JOB_CHUNK_CHARS = 300  # type: ignore[attr-defined]


def test_it_runs_a_text_job_to_one_file(tenant_a: TenantCtx, joe: Voice, dispatched: list, small_chunks: None) -> None:
    job = submit(tenant_a, {"text": TEXT, "output_format": "wav_22050"})
    assert dispatched == [str(job.pk)]
    assert job.status == "queued" and job.total_chunks >= 4
    assert spent(tenant_a) == len(TEXT)  # reserved at submission

    assert job_run(job.pk) == "succeeded"

    body = tenant_a.client().get(f"/v1/jobs/{job.pk}").json()
    assert body["status"] == "succeeded" and body["progress"] == 1.0
    assert body["characters_charged"] == len(TEXT) and body["done_chunks"] == body["total_chunks"]
    audio = tenant_a.client().get(f"/v1/jobs/{job.pk}/audio")
    assert audio.status_code == 200 and audio["Content-Type"] == "audio/wav"
    samples, rate = decode_audio(b"".join(audio.streaming_content), "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert len(samples) / rate == pytest.approx(body["audio_seconds"], abs=0.05)
    assert spent(tenant_a) == len(TEXT)
    job.refresh_from_db()
    assert not any(default_storage.exists(chunk_name(job, i)) for i in range(job.total_chunks))
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert (record.source, record.status, record.characters) == ("job", "success", len(TEXT))
    assert record.text == TEXT and record.duration_s == pytest.approx(body["audio_seconds"], abs=0.01)


def test_it_zips_a_batch_one_file_per_item(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    items = [
        "Hello from the first item.",
        "The second item is a little longer than the first.",
        "And this is the third one.",
    ]
    job = submit(tenant_a, {"items": items, "output_format": "mp3_22050_32"})
    assert job_run(job.pk) == "succeeded"
    response = tenant_a.client().get(f"/v1/jobs/{job.pk}/audio")
    assert response["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        names = zf.namelist()
        assert names == ["00001.mp3", "00002.mp3", "00003.mp3"]
        for name, text in zip(names, items, strict=True):
            samples, rate = decode_audio(zf.read(name), "mp3_22050_32")
            assert_speech(samples, rate, expected_rate=22050, text=text, tolerance=0.8)
    assert spent(tenant_a) == sum(len(i) for i in items)


def test_it_cancels_a_queued_job_and_refunds_everything(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    job = submit(tenant_a, {"text": TEXT})
    response = tenant_a.client().post(f"/v1/jobs/{job.pk}/cancel")
    assert response.status_code == 202 and response.json()["status"] == "cancelled"
    assert spent(tenant_a) == 0
    assert job_run(job.pk) == "skipped"  # the queued task arrives later and does nothing
    assert tenant_a.client().post(f"/v1/jobs/{job.pk}/cancel").status_code == 409
    record = SynthesisRecord.objects.get(source="job")
    assert record.status == "cancelled" and record.characters == 0


def test_it_stops_a_running_job_on_cancel_and_charges_what_was_spoken(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = submit(tenant_a, {"text": TEXT, "output_format": "pcm_16000"})
    save = job_runner.chunk_save

    def save_then_cancel(job_: Job, index: int, pcm: object) -> None:
        save(job_, index, pcm)  # type: ignore[arg-type]
        if index == 1:
            assert tenant_a.client().post(f"/v1/jobs/{job.pk}/cancel").status_code == 202

    monkeypatch.setattr(job_runner, "chunk_save", save_then_cancel)
    assert job_run(job.pk) == "cancelled"
    job.refresh_from_db()
    assert job.status == "cancelled" and job.done_chunks == 1  # chunk 1 was not counted
    assert 0 < job.characters_charged < len(TEXT)
    assert spent(tenant_a) == job.characters_charged
    assert not job.audio
    assert not any(default_storage.exists(chunk_name(job, i)) for i in range(job.total_chunks))
    assert tenant_a.client().get(f"/v1/jobs/{job.pk}/audio").status_code == 404


class Crash(BaseException):
    """Stands in for a worker killed mid-chunk: nothing after it runs."""


def test_it_resumes_from_the_last_finished_chunk(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = submit(tenant_a, {"text": TEXT, "output_format": "pcm_16000"})
    saved: list[int] = []
    save = job_runner.chunk_save

    def crash_at_2(job_: Job, index: int, pcm: object) -> None:
        saved.append(index)
        save(job_, index, pcm)  # type: ignore[arg-type]
        if index == 2 and saved.count(2) == 1:
            raise Crash  # chunk 2 is on disk but not counted: it must be redone, once

    monkeypatch.setattr(job_runner, "chunk_save", crash_at_2)
    with pytest.raises(Crash):
        job_run(job.pk)
    job.refresh_from_db()
    assert (job.status, job.done_chunks) == ("running", 2)
    assert job_run(job.pk) == "skipped"  # a redelivered task while the claim is fresh
    assert jobs_reap_stale() == {"requeued": 0, "failed": 0, "cancelled": 0, "redispatched": 0}

    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - dt.timedelta(hours=1))
    assert jobs_reap_stale()["requeued"] == 1
    assert dispatched == [str(job.pk), str(job.pk)]
    assert job_run(job.pk) == "succeeded"
    assert saved == [0, 1, 2, *range(2, job.total_chunks)]
    job.refresh_from_db()
    assert job.attempts == 2 and job.done_chunks == job.total_chunks
    data = b"".join(tenant_a.client().get(f"/v1/jobs/{job.pk}/audio").streaming_content)
    samples, rate = decode_audio(data, "pcm_16000")
    assert len(samples) / rate == pytest.approx(job.audio_seconds, abs=0.05)
    assert spent(tenant_a) == len(TEXT)


def test_it_fails_a_job_whose_worker_keeps_dying(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, settings: object
) -> None:
    settings.TTS_JOB_MAX_ATTEMPTS = 1  # type: ignore[attr-defined]
    job = submit(tenant_a, {"text": TEXT})
    Job.objects.filter(pk=job.pk).update(
        status="running", attempts=1, claim_token="gone", heartbeat_at=timezone.now() - dt.timedelta(hours=1)
    )
    assert jobs_reap_stale()["failed"] == 1
    body = tenant_a.client().get(f"/v1/jobs/{job.pk}").json()
    assert body["status"] == "failed" and body["error"]["code"] == "worker_lost"
    assert "stopped reporting" in body["error"]["message"]
    assert spent(tenant_a) == 0


def test_it_fails_cleanly_when_the_engine_fails(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tts.inference.engine import EngineError
    from tts.inference.piper_onnx import PiperOnnxEngine

    def broken(self: object, *args: object, **kwargs: object) -> None:
        raise EngineError("boom", retryable=False)

    monkeypatch.setattr(PiperOnnxEngine, "synthesize_ids", broken)
    job = submit(tenant_a, {"text": TEXT})
    assert job_run(job.pk) == "failed"
    body = tenant_a.client().get(f"/v1/jobs/{job.pk}").json()
    assert body["status"] == "failed" and body["error"]["code"] == "engine_error"
    assert spent(tenant_a) == 0


def test_it_keeps_jobs_to_their_tenant(tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, dispatched: list) -> None:
    job = submit(tenant_a, {"text": "Only for alpha."})
    other = tenant_b.client()
    for response in (
        other.get(f"/v1/jobs/{job.pk}"),
        other.get(f"/v1/jobs/{job.pk}/audio"),
        other.post(f"/v1/jobs/{job.pk}/cancel"),
    ):
        assert response.status_code == 404 and response.json()["detail"]["status"] == "job_not_found"
    assert other.get("/v1/jobs").json()["jobs"] == []
    assert Job.objects.get(pk=job.pk).status == "queued"


def test_it_lists_jobs_newest_first_in_few_queries(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    ids = [str(submit(tenant_a, {"text": f"Job number {i}."}).pk) for i in range(3)]
    client = tenant_a.client()
    with CaptureQueriesContext(connection) as queries:
        body = client.get("/v1/jobs?page_size=2").json()
    assert [j["job_id"] for j in body["jobs"]] == ids[::-1][:2] and body["has_more"]
    assert len(queries) <= 4  # key lookup (+ last-used write), the page; not one per job


def test_it_answers_409_for_audio_of_an_unfinished_job(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    job = submit(tenant_a, {"text": "Not yet."})
    response = tenant_a.client().get(f"/v1/jobs/{job.pk}/audio")
    assert response.status_code == 409 and response.json()["detail"]["status"] == "job_not_finished"


BAD_INPUT = [
    pytest.param({"voice_id": "joe"}, 400, "text", id="neither-text-nor-items"),
    pytest.param({"voice_id": "joe", "text": "a", "items": ["b"]}, 400, "text", id="both"),
    pytest.param({"voice_id": "joe", "text": "  "}, 400, "text", id="blank-text"),
    pytest.param({"voice_id": "joe", "items": []}, 400, "items", id="no-items"),
    pytest.param({"voice_id": "joe", "items": ["ok", " "]}, 400, "items[1]", id="blank-item"),
    pytest.param({"voice_id": "joe", "items": "not a list"}, 400, "items", id="items-not-a-list"),
    pytest.param({"voice_id": "joe", "text": "x" * 2001}, 413, "text", id="over-plan-limit"),
    pytest.param({"voice_id": "joe", "items": ["a"] * 11}, 413, "items", id="too-many-items"),
    pytest.param({"voice_id": "nobody", "text": "Hi"}, 404, "voice_id", id="unknown-voice"),
    pytest.param({"text": "Hi"}, 400, "voice_id", id="missing-voice"),
    pytest.param({"voice_id": "joe", "text": "Hi", "output_format": "mp3_1_2"}, 400, "output_format", id="bad-format"),
    pytest.param({"voice_id": "joe", "text": "Hi", "model_id": "nope"}, 400, "model_id", id="unknown-model"),
    pytest.param(
        {"voice_id": "joe", "text": "Hi", "voice_settings": {"speed": 9}}, 400, "voice_settings.speed", id="bad-speed"
    ),
]


@pytest.mark.parametrize(("body", "status", "field"), BAD_INPUT)
def test_it_refuses_bad_input_clearly(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, settings: object, body: dict, status: int, field: str
) -> None:
    settings.TTS_JOB_MAX_ITEMS = 10  # type: ignore[attr-defined]
    tenant_a.tenant.plan.job_max_characters = 2000
    tenant_a.tenant.plan.save()
    response = tenant_a.client().post("/v1/jobs", body, format="json")
    assert response.status_code == status, response.content
    detail = response.json()["detail"]
    assert detail["param"] == field and detail["message"]
    assert field.split(".")[-1].split("[")[0] in detail["message"]
    assert not Job.objects.exists() and dispatched == []
    assert spent(tenant_a) == 0


def test_it_refuses_over_quota_with_429(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    tenant_a.tenant.plan.monthly_character_limit = 100
    tenant_a.tenant.plan.save()
    response = tenant_a.client().post("/v1/jobs", {"voice_id": "joe", "text": "y" * 101}, format="json")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert response.json()["detail"]["status"] == "quota_exceeded"
    assert not Job.objects.exists() and spent(tenant_a) == 0


def test_it_needs_the_jobs_scope(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    from accounts.keys import api_key_create

    issued = api_key_create(tenant=tenant_a.tenant, name="tts only", scopes=["tts"])
    response = tenant_a.client(issued.raw_key).post("/v1/jobs", {"voice_id": "joe", "text": "Hi"}, format="json")
    assert response.status_code == 403
    assert not Job.objects.exists()


def test_it_requeues_on_an_engine_error_a_retry_can_fix(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tts.inference.engine import EngineError
    from tts.inference.piper_onnx import PiperOnnxEngine

    def restarting(self: object, *args: object, **kwargs: object) -> None:
        raise EngineError("engine restarting", retryable=True)

    job = submit(tenant_a, {"text": "Second time lucky.", "output_format": "pcm_16000"})
    with monkeypatch.context() as patch:
        patch.setattr(PiperOnnxEngine, "synthesize_ids", restarting)
        with pytest.raises(job_runner.RetryLater):
            job_run(job.pk)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.claim_token) == ("queued", 1, "")
    assert spent(tenant_a) == len("Second time lucky.")  # still reserved for the retry
    assert job_run(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.attempts == 2 and job.audio
