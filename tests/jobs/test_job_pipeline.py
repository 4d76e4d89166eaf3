"""Jobs go through the request's stages (#40 item 2): dictionaries, seed and voice settings
validated and applied as on a request, the prepared text billed, and an engine-time budget per job,
checked before anything is queued and charged as the job runs."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import TestCase

from accounts.models import Usage
from tests.audio_checks import decode_audio
from tests.fixtures import TenantCtx
from tests.jobs.conftest import long_text
from tts.jobs import runner
from tts.jobs.runner import job_run
from tts.models import Job, PronunciationDictionaryUse, SynthesisRecord, Voice

pytestmark = pytest.mark.django_db

ALIAS = {"type": "alias", "string_to_replace": "UN", "alias": "United Nations General Assembly"}


def post_job(ctx: TenantCtx, **body: Any) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return ctx.client().post("/v1/jobs", {"voice_id": "joe", "output_format": "pcm_16000", **body}, format="json")


def dictionary(ctx: TenantCtx) -> dict[str, Any]:
    response = ctx.client().post(
        "/v1/pronunciation-dictionaries/add-from-rules", {"name": "d", "rules": [ALIAS]}, format="json"
    )
    assert response.status_code == 200, response.content
    return dict(response.json())


def usage(ctx: TenantCtx) -> int:
    row = Usage.objects.filter(tenant=ctx.tenant).first()
    return row.characters if row else 0


def test_a_job_applies_its_dictionary_and_bills_the_spoken_text(
    tenant_a: TenantCtx, joe: Voice, dispatched: list
) -> None:
    d = dictionary(tenant_a)
    text = "The UN met. The UN voted. The UN adjourned."
    locators = [{"pronunciation_dictionary_id": d["id"]}]
    response = post_job(tenant_a, text=text, pronunciation_dictionary_locators=locators)
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job_id"])
    spoken = " ".join(seg["text"] for chunk in job.plan for seg in chunk["segments"])
    assert "United Nations General Assembly" in spoken and " UN " not in f" {spoken} "
    assert job.characters == response.json()["characters"] > len(text)  # the longer, spoken form
    assert job.settings["pronunciation_dictionary_locators"] == [
        {"pronunciation_dictionary_id": d["id"], "version_id": d["version_id"]}
    ]
    assert usage(tenant_a) == job.characters  # reserved as billed
    assert job_run(job.pk) == "succeeded"
    job.refresh_from_db()
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert record.status == "success" and record.characters == job.characters == usage(tenant_a)
    assert PronunciationDictionaryUse.objects.filter(record=record).count() == 1  # kept from pruning


def test_an_unknown_dictionary_is_refused_as_on_a_request(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    locators = [{"pronunciation_dictionary_id": "no-such-dictionary"}]
    response = post_job(tenant_a, text="Hello there.", pronunciation_dictionary_locators=locators)
    request = tenant_a.client().post(
        "/v1/text-to-speech/joe", {"text": "Hello there.", "pronunciation_dictionary_locators": locators}, format="json"
    )
    assert response.status_code == request.status_code == 400
    assert (
        response.json()["detail"]["param"] == request.json()["detail"]["param"] == "pronunciation_dictionary_locators"
    )
    assert not Job.objects.exists() and not SynthesisRecord.objects.exists() and dispatched == []
    bad_seed = post_job(tenant_a, text="Hello there.", seed=-1)
    assert bad_seed.status_code == 400 and "seed" in bad_seed.content.decode()


def test_the_same_seed_gives_the_same_job_audio(tenant_a: TenantCtx, joe: Voice, dispatched: list) -> None:
    audio = []
    for _ in range(2):
        response = post_job(tenant_a, text="Two sentences here. And a second one.", seed=7)
        assert response.status_code == 202
        job = Job.objects.get(pk=response.json()["job_id"])
        assert job.settings["seed"] == 7
        assert job_run(job.pk) == "succeeded"
        job.refresh_from_db()
        with job.audio.open("rb") as f:
            audio.append(f.read())
    samples, rate = decode_audio(audio[0], "pcm_16000")
    assert rate == 16000 and len(samples) / rate > 1.0
    assert audio[0] == audio[1]


def test_a_job_over_its_engine_budget_is_refused_before_anything_is_queued(
    tenant_a: TenantCtx, joe: Voice, dispatched: list
) -> None:
    tenant_a.tenant.plan.max_engine_seconds_per_job = 0.5  # about 6 s of joe's speech
    tenant_a.tenant.plan.save()
    response = post_job(tenant_a, text="A sentence that takes a while to say out loud. " * 20)
    assert response.status_code == 413, response.content
    detail = response.json()["detail"]
    assert detail["status"] == "engine_time_exceeded" and detail["param"] == "text"
    assert "a job may take 0.5 engine-seconds" in detail["message"]
    items = post_job(tenant_a, items=["Short one.", "A sentence that takes a while to say out loud. " * 20])
    assert items.status_code == 413 and items.json()["detail"]["param"] == "items"
    assert not Job.objects.exists() and not SynthesisRecord.objects.exists() and dispatched == []
    assert usage(tenant_a) == 0


def test_a_running_job_stops_at_its_budget_billed_for_its_finished_chunks(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, settings: Any
) -> None:
    settings.TTS_JOB_CHUNK_CHARS = 100
    # The up-front estimate is a brisk pace's; joe's real speech takes about twice as long, so this
    # budget admits the job and runs out part of the way through.
    tenant_a.tenant.plan.max_engine_seconds_per_job = 1.6
    tenant_a.tenant.plan.save()
    text = " ".join(f"This is sentence number {n} of a long job." for n in range(1, 13))
    response = post_job(tenant_a, text=text)
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.total_chunks > 3
    assert job_run(job.pk) == "failed"
    job.refresh_from_db()
    assert job.error_code == "engine_time_exceeded" and "1.6 engine-seconds" in job.error_message
    assert 0 < job.done_chunks < job.total_chunks
    assert 0 < job.characters_charged < job.characters
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert record.status == "failed" and record.characters == job.characters_charged == usage(tenant_a)


class RecordingLayer:
    """The channel layer the dashboard's progress socket reads: what the runner tells subscribers."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def group_send(self, group: str, event: dict[str, Any]) -> None:
        if group.startswith("job-"):  # each event goes to the job's group and the tenant's
            self.events.append(event)


@pytest.fixture
def layer(monkeypatch: pytest.MonkeyPatch) -> RecordingLayer:
    recording = RecordingLayer()
    monkeypatch.setattr("tts.jobs.events.get_channel_layer", lambda: recording)
    monkeypatch.setattr(runner, "PROGRESS_EVERY_S", 0.0)  # every sentence (normally at most once a second)
    return recording


def one_chunk_job(ctx: TenantCtx, settings: Any) -> Job:
    settings.TTS_JOB_CHUNK_CHARS = 2000
    response = post_job(ctx, text=long_text(700))
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.total_chunks == 1 and len(job.plan[0]["segments"]) >= 6
    return job


def test_a_one_chunk_job_reports_progress_as_its_sentences_are_spoken(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, settings: Any, layer: RecordingLayer
) -> None:
    job = one_chunk_job(tenant_a, settings)
    assert job_run(job.pk) == "succeeded"
    running = [e for e in layer.events if e["status"] == "running"]
    inside = [e["progress"] for e in running if 0 < e["progress"] < 1]
    assert len(inside) == len(job.plan[0]["segments"]) - 1  # one per sentence, the last one ends the chunk
    assert inside == sorted(inside) and len(set(inside)) == len(inside)
    # The time left at the pace measured so far, with each of them; none once everything is spoken.
    etas = [e["eta_seconds"] for e in running if "eta_seconds" in e]
    assert len(etas) == len(inside) + 1 and etas[0] > 0 and etas[-1] == 0
    assert layer.events[-1]["status"] == "succeeded" and layer.events[-1]["progress"] == 1.0


def test_a_cancel_stops_a_job_between_the_sentences_of_its_chunk(
    tenant_a: TenantCtx, joe: Voice, dispatched: list, settings: Any, layer: RecordingLayer, monkeypatch: Any
) -> None:
    job = one_chunk_job(tenant_a, settings)
    spoken: list[int] = []
    speak = runner.speak_segment

    def speak_and_cancel(*args: Any) -> Any:
        spoken.append(args[3])
        if len(spoken) == 2:  # the user presses Cancel while the second sentence is spoken
            Job.objects.filter(pk=job.pk).update(cancel_requested=True)
        return speak(*args)

    monkeypatch.setattr(runner, "speak_segment", speak_and_cancel)
    assert job_run(job.pk) == "cancelled"
    assert spoken == [0, 1]  # not the rest of the chunk
    job.refresh_from_db()
    assert job.status == "cancelled" and job.done_chunks == 0 and job.characters_charged == 0
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert record.status == "cancelled" and usage(tenant_a) == 0  # nothing saved, all refunded
    assert layer.events[-1]["status"] == "cancelled"
