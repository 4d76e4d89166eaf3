"""A dialogue as a long-form job (#43 item 1): ``/v1/jobs`` with text-to-dialogue's ``inputs``, run
chunk by chunk in the turns' voices, one record and one bill (the dialogue route's for the same
script), chunks cut at turn boundaries, and the dialogue routes' refusals naming their field."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import TestCase

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.jobs.runner import job_run
from tts.models import Job, SynthesisRecord, Voice

pytestmark = pytest.mark.django_db

FORMAT = "pcm_22050"
FIRST = "Is the harbour open today?"
SECOND = "Yes, the boats left at dawn."
DIALOGUE = [{"text": FIRST, "voice_id": "joe"}, {"text": SECOND, "voice_id": "joe2"}]
JOINED = f"{FIRST}\n{SECOND}"


@pytest.fixture
def joe2(joe: Voice) -> Voice:
    """A second voice on joe's model (a second speaker row of the same model version)."""
    return Voice.objects.create(voice_id="joe2", name="Joe Two", language="en", model_id=joe.model_id)


def post_job(ctx: TenantCtx, **body: Any) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return ctx.client().post("/v1/jobs", {"output_format": FORMAT, **body}, format="json")


def job_audio(job: Job) -> bytes:
    job.refresh_from_db()
    with job.audio.open("rb") as f:
        return f.read()


def usage(ctx: TenantCtx) -> int:
    row = Usage.objects.filter(tenant=ctx.tenant).first()
    return row.characters if row else 0


def test_it_runs_a_dialogue_job_billed_as_the_dialogue_route(
    tenant_a: TenantCtx, joe2: Voice, dispatched: list
) -> None:
    route = tenant_a.client().post(
        f"/v1/text-to-dialogue?output_format={FORMAT}", {"inputs": DIALOGUE, "seed": 3}, format="json"
    )
    assert route.status_code == 200, route.content
    route_billed = int(route["x-character-count"])
    assert route_billed == len(FIRST) + len(SECOND)

    response = post_job(tenant_a, inputs=DIALOGUE, seed=3)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["characters"] == route_billed and body["voice_id"] == "joe"
    assert body["dialogue_inputs"] == [{"voice_id": "joe"}, {"voice_id": "joe2"}]
    job = Job.objects.get(pk=body["job_id"])
    assert [seg["turn"] for chunk in job.plan for seg in chunk["segments"]] == [0, 1]
    assert dispatched == [str(job.pk)]
    assert job_run(job.pk) == "succeeded"

    samples, rate = decode_audio(job_audio(job), FORMAT)
    assert_speech(samples, rate, expected_rate=22050, text=JOINED, tolerance=0.6)
    route_samples, _ = decode_audio(route.content, FORMAT)
    # The same segments, seeds and pause between the turns: the same length as the route's audio.
    assert abs(len(samples) - len(route_samples)) / len(route_samples) < 0.05

    detail = tenant_a.client().get(f"/v1/jobs/{job.pk}").json()
    assert detail["status"] == "succeeded" and detail["progress"] == 1.0
    assert detail["done_chunks"] == detail["total_chunks"] == 1
    assert detail["characters_charged"] == route_billed
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert record.source == SynthesisRecord.Source.JOB and record.status == SynthesisRecord.Status.SUCCESS
    assert record.characters == route_billed and record.text == JOINED and record.voice_id == "joe"
    assert record.settings["dialogue_inputs"] == [{"voice_id": "joe"}, {"voice_id": "joe2"}]
    assert SynthesisRecord.objects.filter(tenant=tenant_a.tenant, source=SynthesisRecord.Source.JOB).count() == 1
    assert usage(tenant_a) == 2 * route_billed  # the route's request and the job, each billed once


def test_it_speaks_each_turn_in_its_own_voice(
    tenant_a: TenantCtx, joe2: Voice, dispatched: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tts.synthesis.runs.run import SynthesisRun

    heard: list[tuple[int | None, str]] = []
    voice_for = SynthesisRun.voice_for

    def spy(self: SynthesisRun, segment: Any) -> Voice:
        voice = voice_for(self, segment)
        heard.append((segment.turn, voice.voice_id))
        return voice

    monkeypatch.setattr(SynthesisRun, "voice_for", spy)
    response = post_job(tenant_a, inputs=[*DIALOGUE, {"text": "Good. Then we sail at noon.", "voice_id": "joe"}])
    assert response.status_code == 202, response.content
    assert job_run(response.json()["job_id"]) == "succeeded"
    assert heard == [(0, "joe"), (1, "joe2"), (2, "joe"), (2, "joe")]


def test_it_cuts_chunks_at_turn_boundaries_and_a_long_turn_by_the_chunker(
    tenant_a: TenantCtx, joe2: Voice, dispatched: list, settings: Any
) -> None:
    settings.TTS_JOB_CHUNK_CHARS = 80
    settings.TTS_MAX_CHARS_PER_REQUEST = 150  # a route's limit; a job takes the plan's job limit
    long_turn = " ".join(f"This is sentence number {n} of the long turn." for n in range(1, 4))
    inputs = [
        {"text": "Ready?", "voice_id": "joe"},
        {"text": "Ready.", "voice_id": "joe2"},
        {"text": long_turn, "voice_id": "joe"},
        {"text": "Well said.", "voice_id": "joe2"},
    ]
    route = tenant_a.client().post(f"/v1/text-to-dialogue?output_format={FORMAT}", {"inputs": inputs}, format="json")
    assert route.status_code == 413 and route.json()["detail"]["param"] == "inputs"

    response = post_job(tenant_a, inputs=inputs)
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["job_id"])
    turns = [chunk["turns"] for chunk in job.plan]
    assert turns[0] == [0, 1]  # short turns share a chunk
    long_chunks = [chunk for chunk in job.plan if chunk["turns"] == [2]]
    assert len(long_chunks) >= 2  # the long turn alone, cut by the chunker
    assert turns[-1] == [3]
    for chunk in job.plan:
        assert [seg["turn"] for seg in chunk["segments"]] == sorted(seg["turn"] for seg in chunk["segments"])
        assert chunk["chars"] <= 80 or chunk["turns"] == [2]
    # The pause between turns ends each turn but the last.
    last_of_turn = {seg["turn"]: seg for chunk in job.plan for seg in chunk["segments"]}
    assert all(last_of_turn[t]["pause_after_ms"] >= settings.TTS_DIALOGUE_PAUSE_MS for t in (0, 1, 2))
    assert job_run(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.done_chunks == job.total_chunks == len(job.plan) and job.progress == 1.0
    samples, rate = decode_audio(job_audio(job), FORMAT)
    assert_speech(samples, rate, expected_rate=22050, text="\n".join(i["text"] for i in inputs), tolerance=0.6)
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert record.characters == job.characters_charged == sum(len(i["text"]) for i in inputs) == usage(tenant_a)


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        ({"inputs": []}, 400, "empty_inputs", "inputs"),
        ({"inputs": [DIALOGUE[0], {"text": "  ", "voice_id": "joe2"}]}, 400, "empty_text", "inputs[1].text"),
        ({"inputs": [DIALOGUE[0], {"text": "Hi.", "voice_id": "x"}]}, 404, "voice_not_found", "inputs[1].voice_id"),
        ({"inputs": DIALOGUE, "text": "Both."}, 400, "invalid_request", "inputs"),
        ({"inputs": [{"text": "No voice."}]}, 400, None, "inputs"),
        ({"text": "A text and no voice."}, 400, None, "voice_id"),
        ({"inputs": DIALOGUE, "settings": {"stability": 2}}, 400, None, "settings"),
    ],
)
def test_it_refuses_bad_inputs_naming_the_field(
    tenant_a: TenantCtx,
    joe2: Voice,
    dispatched: list,
    body: dict[str, Any],
    status: int,
    code: str | None,
    param: str,
) -> None:
    response = post_job(tenant_a, **body)
    assert response.status_code == status, response.content
    detail = response.json()["detail"]
    assert detail["param"].startswith(param), detail
    if code is not None:
        assert detail["status"] == code
    assert not Job.objects.exists() and not SynthesisRecord.objects.exists() and dispatched == []


def test_it_takes_the_jobs_character_limit_and_the_dialogue_bounds(
    tenant_a: TenantCtx, joe2: Voice, dispatched: list, settings: Any
) -> None:
    tenant_a.tenant.plan.job_max_characters = 40
    tenant_a.tenant.plan.save()
    over = post_job(tenant_a, inputs=DIALOGUE)  # 54 characters
    assert over.status_code == 413, over.content
    assert over.json()["detail"]["param"] == "inputs" and "per job is 40" in over.json()["detail"]["message"]
    settings.TTS_DIALOGUE_MAX_VOICES = 1
    voices = post_job(tenant_a, inputs=[DIALOGUE[0], {"text": "Hi.", "voice_id": "joe2"}])
    assert voices.status_code == 400 and voices.json()["detail"]["status"] == "too_many_voices"
    settings.TTS_DIALOGUE_MAX_INPUTS = 2
    turns = post_job(tenant_a, inputs=[{"text": "Hi.", "voice_id": "joe"}] * 3)
    assert turns.status_code == 400 and turns.json()["detail"]["status"] == "too_many_inputs"
    assert not Job.objects.exists() and not SynthesisRecord.objects.exists() and usage(tenant_a) == 0
