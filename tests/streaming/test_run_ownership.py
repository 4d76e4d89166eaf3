"""One owner ends every synthesis once (tts/synthesis/runs/run.py).

For each entry point (whole file, the HTTP stream that chunked and SSE responses
read, a WebSocket utterance, a job) three ways to end badly: the client goes
away mid-stream, the engine fails mid-stream, something fails right after the
reservation. Each time: the quota is refunded exactly once (and by the right
amount), the record is finished exactly once, and no concurrency slot or
engine ticket is left held.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from accounts import ratelimit
from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, joe_engine
from tts.audio.formats import parse_elevenlabs_format
from tts.catalogue.engines import get_registry
from tts.errors import SynthesisError
from tts.inference.engine import EngineError
from tts.inference.piper_onnx import PiperOnnxEngine
from tts.jobs.actions import JobRequest, job_submit
from tts.jobs.runner import job_run
from tts.models import Job, SynthesisRecord, Voice
from tts.synthesis.engine_time.admission import engine_admission
from tts.synthesis.live.driver import UtteranceDriver
from tts.synthesis.live.streaming import LiveUtterance, stream_synthesis
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.runs import run as synthesis_run
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.pipeline import synthesis_create, synthesis_prepare

pytestmark = pytest.mark.django_db(transaction=True)

SENTENCES = [
    "The harbour was quiet that morning.",
    "Gulls argued over scraps near the market.",
    "Nobody remembered a winter as long as this one.",
    "She folded the letter twice and walked to the pier.",
]
TEXT = " ".join(SENTENCES)


class Ledger:
    """Counts refunds per reservation and record writes per record."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.refunds: Counter[int] = Counter()
        self.writes: Counter[str] = Counter()
        refund = synthesis_run.refund_characters
        write = SynthesisRun._write_record

        def counting_refund(reservation: Any, characters: int | None = None) -> None:
            if (characters is None or characters > 0) and not reservation.settled:
                self.refunds[id(reservation)] += 1
            refund(reservation, characters)

        def counting_write(run: SynthesisRun, *args: Any, **kwargs: Any) -> None:
            self.writes[str(run.record.pk)] += 1
            write(run, *args, **kwargs)

        monkeypatch.setattr(synthesis_run, "refund_characters", counting_refund)
        monkeypatch.setattr(SynthesisRun, "_write_record", counting_write)

    def check(self, tenant: TenantCtx, record_pk: object, *, status: str, max_refunds: int = 1) -> SynthesisRecord:
        record = SynthesisRecord.objects.get(pk=record_pk)
        assert record.status == status
        assert self.writes[str(record_pk)] == 1, self.writes
        assert all(n <= max_refunds for n in self.refunds.values()), self.refunds
        usage = Usage.objects.get(tenant=tenant.tenant)
        # What is billed is exactly what the record says it cost: one refund, never two.
        assert usage.characters == record.characters
        assert engine_admission.in_flight == 0
        assert sum(len(held) for held in ratelimit._local_slots._held.values()) == 0
        return record


@pytest.fixture
def ledger(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Ledger:
    settings.REDIS_URL = ""  # slots counted in this process, where the test can see them
    settings.TTS_AUDIO_CACHE_ENABLED = False
    return Ledger(monkeypatch)


def failing_engine_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """The engine that serves joe works ``calls`` times, then fails (retryable: the job tests need that too).

    ``make test`` runs the API suite a second time with joe on the PyTorch engine
    (``TTS_TEST_ENGINE=vits-torch``), whose whole and windowed paths both go through ``_synthesize``.
    """
    seen = {"n": 0}

    def count() -> None:
        seen["n"] += 1
        if seen["n"] > calls:
            raise EngineError("boom", retryable=False)

    original = PiperOnnxEngine.synthesize_ids

    def flaky(self: PiperOnnxEngine, *args: Any, **kwargs: Any) -> Any:
        count()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PiperOnnxEngine, "synthesize_ids", flaky)
    monkeypatch.setattr(PiperOnnxEngine, "concurrency", 1, raising=False)
    if joe_engine() == "vits-torch":
        from tts.inference.vits_torch import VitsTorchEngine

        torch_original = VitsTorchEngine._synthesize

        def flaky_torch(self: VitsTorchEngine, *args: Any, **kwargs: Any) -> Iterator[Any]:
            count()
            yield from torch_original(self, *args, **kwargs)

        monkeypatch.setattr(VitsTorchEngine, "_synthesize", flaky_torch)


def engine_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise EngineError("cannot load", retryable=False)

    monkeypatch.setattr(type(get_registry()), "get", broken)


def req(ctx: TenantCtx, text: str = TEXT, source: str = "elevenlabs_stream") -> SynthesisRequest:
    return SynthesisRequest(
        tenant=ctx.tenant,
        voice_id="joe",
        text=text,
        output_format=parse_elevenlabs_format("pcm_16000"),
        source=source,
    )


# --- whole file -----------------------------------------------------------------


@pytest.mark.parametrize("how", ["engine_mid_stream", "after_reservation"])
def test_whole_file(tenant_a: TenantCtx, joe: Voice, ledger: Ledger, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "engine_mid_stream":
        failing_engine_after(monkeypatch, 2)
    else:
        engine_cannot_load(monkeypatch)
    with pytest.raises(SynthesisError):
        synthesis_create(req(tenant_a, source="elevenlabs"))
    record = ledger.check(tenant_a, SynthesisRecord.objects.get().pk, status="failed")
    assert record.characters == 0  # nothing was delivered, nothing is billed


def test_whole_file_client_gone(tenant_a: TenantCtx, joe: Voice, ledger: Ledger) -> None:
    """A whole-file request's client cannot leave mid-stream; a cancelled run before its start refunds all."""
    run = synthesis_prepare(req(tenant_a, source="elevenlabs"), whole=True)
    run.cancel()
    run.cancel()
    assert ledger.check(tenant_a, run.record.pk, status="cancelled").characters == 0


# --- HTTP streams (chunked and SSE read the same stream) ------------------------


async def _read(stream: Any, limit: int | None) -> list[bytes]:
    out = []
    try:
        async for chunk in stream:
            out.append(chunk)
            if limit is not None and len(out) >= limit:
                stream.close()
                break
    except SynthesisError:
        pass
    return out


@pytest.mark.parametrize("how", ["client_gone", "engine_mid_stream", "after_reservation"])
def test_http_stream(
    tenant_a: TenantCtx, joe: Voice, ledger: Ledger, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "engine_mid_stream":
        failing_engine_after(monkeypatch, 1)
    if how == "after_reservation":
        engine_cannot_load(monkeypatch)
    run = synthesis_prepare(req(tenant_a))
    stream = stream_synthesis(run)
    chunks = asyncio.run(_read(stream, 1 if how == "client_gone" else None))
    assert stream.finished.wait(60)
    status = "cancelled" if how == "client_gone" else "failed"
    record = ledger.check(tenant_a, run.record.pk, status=status)
    if how == "after_reservation":
        assert chunks == [] and record.characters == 0
    else:
        assert len(chunks) >= 1 and 0 < record.characters < len(TEXT)


def test_http_stream_closed_before_it_began(tenant_a: TenantCtx, joe: Voice, ledger: Ledger) -> None:
    run = synthesis_prepare(req(tenant_a))
    stream = stream_synthesis(run)
    stream.close()
    assert stream.finished.wait(30)
    assert ledger.check(tenant_a, run.record.pk, status="cancelled").characters == 0


def test_an_utterance_cancelled_while_its_run_is_prepared_is_refunded_and_leaves_nothing_running(
    tenant_a: TenantCtx, joe: Voice, ledger: Ledger
) -> None:
    """The client leaves while the driver opens the run for the first piece: once the run exists it is
    cancelled (its stream closed, the record cancelled, every character refunded), never spoken."""
    heard: list[object] = []

    class Sink:
        async def audio(self, data: bytes, alignment: object) -> None:
            heard.append(data)

        async def done(self) -> None:
            heard.append("done")

        async def failed(self, error: SynthesisError) -> None:
            heard.append(error)

    def request_for(text: str) -> SynthesisRequest:
        driver.cancel()  # the client goes away while synthesis_prepare runs
        return req(tenant_a, text, source="websocket")

    driver = UtteranceDriver(request_for, Sink())

    async def speak() -> None:
        await driver.add_text(TEXT + " ", flush=True)
        await driver.wait()

    asyncio.run(speak())
    assert driver.utterance is not None and driver.run is not None
    assert driver.utterance.stream.finished.wait(30)
    record = ledger.check(tenant_a, driver.run.record.pk, status="cancelled")
    assert record.characters == 0 and heard == []


# --- a WebSocket utterance -------------------------------------------------------


def _utterance(tenant: TenantCtx) -> LiveUtterance:
    run = synthesis_prepare(req(tenant, SENTENCES[0], source="websocket"))
    return LiveUtterance(run)


@pytest.mark.parametrize("how", ["client_gone", "engine_mid_stream", "after_reservation"])
def test_websocket_utterance(
    tenant_a: TenantCtx, joe: Voice, ledger: Ledger, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "engine_mid_stream":
        failing_engine_after(monkeypatch, 1)
    if how == "after_reservation":
        engine_cannot_load(monkeypatch)
    utterance = _utterance(tenant_a)
    for sentence in SENTENCES[1:]:
        assert utterance.add_text(" " + sentence)
    if how != "client_gone":
        utterance.end()

    async def pump() -> list[Any]:
        out = []
        try:
            async for item in utterance.stream:
                out.append(item)
                if how == "client_gone":
                    utterance.cancel()
                    break
        except SynthesisError:
            pass
        return out

    chunks = asyncio.run(pump())
    assert utterance.stream.finished.wait(60)
    # A piece that arrives after the end is refunded by the run, never billed.
    assert not utterance.add_text(" Too late.")
    status = "cancelled" if how == "client_gone" else "failed"
    record = ledger.check(tenant_a, utterance.run.record.pk, status=status)
    if how == "after_reservation":
        assert chunks == [] and record.characters == 0
    else:
        assert len(chunks) >= 1 and 0 < record.characters < len(TEXT)
    assert not record.audio  # an API stream that did not finish keeps no file


def test_pieces_added_before_the_stream_starts_are_spoken_once(tenant_a: TenantCtx, joe: Voice) -> None:
    """Under load the stream's thread starts after later pieces arrived: each is still spoken once
    (they were spoken twice: a sentence repeated in a WebSocket's audio, billed once)."""
    utterance = _utterance(tenant_a)
    for sentence in SENTENCES[1:]:
        assert utterance.add_text(" " + sentence)  # before anything iterates the stream
    utterance.end()

    async def spoken() -> list[str]:
        return ["".join(chunk.alignment.characters) async for _, chunk in utterance.stream if chunk is not None]

    texts = asyncio.run(spoken())
    assert utterance.stream.finished.wait(60)
    assert [t.strip() for t in texts] == SENTENCES
    record = SynthesisRecord.objects.get(pk=utterance.run.record.pk)
    assert record.status == "success" and record.characters == len(" ".join(SENTENCES))


def test_a_stopped_playground_utterance_keeps_what_it_spoke(tenant_a: TenantCtx, joe: Voice, ledger: Ledger) -> None:
    """``keep_cancelled_audio`` (the playground's Stop): the cancelled record keeps the audio of what it billed."""
    run = synthesis_prepare(
        dataclasses.replace(req(tenant_a, SENTENCES[0], source="playground"), keep_cancelled_audio=True)
    )
    utterance = LiveUtterance(run)
    for sentence in SENTENCES[1:]:
        assert utterance.add_text(" " + sentence)

    async def first_chunk() -> None:
        async for _ in utterance.stream:
            utterance.cancel()
            break

    asyncio.run(first_chunk())
    assert utterance.stream.finished.wait(60)
    record = ledger.check(tenant_a, run.record.pk, status="cancelled")
    assert 0 < record.characters < len(TEXT) and record.audio
    samples, rate = decode_audio(record.audio.read(), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000)
    assert len(samples) / rate == pytest.approx(record.duration_s, abs=0.3)


# --- a job -----------------------------------------------------------------------


def _job(tenant: TenantCtx, monkeypatch: pytest.MonkeyPatch) -> Job:
    monkeypatch.setattr("tts.jobs.actions.job_dispatch", lambda job_id: None)
    monkeypatch.setattr("tts.jobs.runner.job_dispatch", lambda job_id: None)
    monkeypatch.setattr("django.conf.settings.TTS_JOB_CHUNK_CHARS", 40)
    request = JobRequest(tenant=tenant.tenant, voice_id="joe", output_format=parse_elevenlabs_format("mp3_44100_128"))
    request.text = TEXT
    job = job_submit(request)
    assert job.total_chunks >= 3
    return job


@pytest.mark.parametrize("how", ["client_gone", "engine_mid_stream", "after_reservation"])
def test_job(tenant_a: TenantCtx, joe: Voice, ledger: Ledger, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    job = _job(tenant_a, monkeypatch)
    record_pk = job.history_item_id
    assert SynthesisRecord.objects.get(pk=record_pk).status == "pending"  # written with its reservation
    if how == "engine_mid_stream":
        failing_engine_after(monkeypatch, 1)
    if how == "after_reservation":
        engine_cannot_load(monkeypatch)
    if how == "client_gone":
        # The tenant cancels while the second chunk is being synthesized.
        original = PiperOnnxEngine.synthesize_ids
        calls = {"n": 0}

        def cancel_then_synthesize(self: PiperOnnxEngine, *args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == 2:
                Job.objects.filter(pk=job.pk).update(cancel_requested=True)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(PiperOnnxEngine, "synthesize_ids", cancel_then_synthesize)
    outcome = job_run(job.pk)
    assert outcome == ("cancelled" if how == "client_gone" else "failed")
    status = "cancelled" if how == "client_gone" else "failed"
    record = ledger.check(tenant_a, record_pk, status=status)
    job.refresh_from_db()
    assert job.characters_charged == record.characters
    if how == "after_reservation":
        assert record.characters == 0
    else:
        assert 0 < record.characters < len(TEXT)
    # A second finish (a redelivered task, the reaper) changes nothing.
    assert job_run(job.pk) == "skipped"
    ledger.check(tenant_a, record_pk, status=status)


def test_runs_without_a_failure_bill_everything_once(
    tenant_a: TenantCtx, joe: Voice, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _job(tenant_a, monkeypatch)
    assert job_run(job.pk) == "succeeded"
    record = ledger.check(tenant_a, job.history_item_id, status="success", max_refunds=0)
    assert record.characters == len(TEXT) and record.duration_s > 1.0
    assert not ledger.refunds
