"""The Wyoming server (``manage.py wyoming_server``) against the ``wyoming`` library's own client:
describe, synthesize, streaming, a Japanese voice, refusals, and what is billed and recorded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from accounts.models import Usage
from tests.audio_checks import assert_speech
from tests.fixtures import TenantCtx
from tests.wyoming.conftest import WyomingServer, make_wyoming_tenant
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db(transaction=True)

SENTENCES = [
    "The harbour was quiet that morning.",
    "Fishing boats rocked against the old stone wall.",
    "A gull cried once, and then the bay was still again.",
]
TEXT = " ".join(SENTENCES)


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


async def _talk(port: int, events: list[Event], until: Callable[[Event], bool]) -> list[Event]:
    """Send ``events``, then read until ``until`` says so (or the server closes)."""
    received: list[Event] = []
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as client:
        for event in events:
            await client.write_event(event)
        while True:
            event = await client.read_event()
            if event is None:
                break
            received.append(event)
            if until(event):
                break
    return received


def talk(port: int, events: list[Event], until: Callable[[Event], bool]) -> list[Event]:
    return asyncio.run(_talk(port, events, until))


def pcm_of(events: list[Event]) -> tuple[np.ndarray, int]:
    start = next(AudioStart.from_event(e) for e in events if AudioStart.is_type(e.type))
    assert (start.width, start.channels) == (2, 1)
    chunks = [AudioChunk.from_event(e) for e in events if AudioChunk.is_type(e.type)]
    assert chunks and all(c.rate == start.rate and c.width == 2 and c.channels == 1 for c in chunks)
    pcm = np.frombuffer(b"".join(c.audio for c in chunks), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0, start.rate


def errors(events: list[Event]) -> list[Error]:
    return [Error.from_event(e) for e in events if Error.is_type(e.type)]


def test_it_describes_the_tenants_voices(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice, kokoro: Voice
) -> None:
    events = talk(wyoming_server.port, [Describe().event()], lambda e: Info.is_type(e.type))
    info = Info.from_event(events[-1])
    (program,) = info.tts
    assert program.supports_synthesize_streaming is True and program.installed
    voices = {v.name: v for v in program.voices}
    assert voices["joe"].languages[0] == "en" and voices["joe"].description == "Joe"
    assert voices["joe"].attribution.name and voices["joe"].speakers is None
    # Kokoro's Japanese voices: each speaks Japanese; the others of its model are its speakers.
    assert voices["jf_alpha"].languages[0] == "ja"
    assert voices["jf_alpha"].speakers is not None
    assert {s.name for s in voices["jf_alpha"].speakers} >= {"jf_alpha", "jm_kumo"}


def test_it_synthesizes_and_bills_one_history_row(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice
) -> None:
    sent = time.monotonic()
    events = talk(wyoming_server.port, [Synthesize(text=TEXT).event()], lambda e: AudioStop.is_type(e.type))
    assert not errors(events), errors(events)
    assert events[0].type == "audio-start" and events[-1].type == "audio-stop"
    samples, rate = pcm_of(events)
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert time.monotonic() - sent < 60
    record = SynthesisRecord.objects.get(tenant=wyoming_tenant.tenant)
    assert record.source == "wyoming" and record.status == "success" and record.voice_id == "joe"
    assert record.text == TEXT and record.characters == len(TEXT) and not record.cache_hit
    assert record.output_format == "pcm" and record.sample_rate == 22050
    assert record.api_key_id == wyoming_tenant.api_key.pk
    assert record.duration_s == pytest.approx(len(samples) / rate, abs=0.05)
    usage = Usage.objects.get(tenant=wyoming_tenant.tenant)
    assert usage.characters == len(TEXT) and usage.requests == 1

    # The same text again: answered from the cache, without the engine, billed and recorded all the same.
    again = talk(wyoming_server.port, [Synthesize(text=TEXT).event()], lambda e: AudioStop.is_type(e.type))
    repeat, _ = pcm_of(again)
    assert np.array_equal(repeat, samples)
    hit = SynthesisRecord.objects.filter(tenant=wyoming_tenant.tenant, cache_hit=True).get()
    assert hit.status == "success" and hit.source == "wyoming"
    assert spent(wyoming_tenant) == 2 * len(TEXT)


def longest_digital_silence(samples: np.ndarray, rate: int) -> float:
    """The longest run of exact zeros, in seconds: silence the platform added (a voice's own pauses are
    never exactly zero for long)."""
    zero = np.concatenate([[False], samples == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    runs = edges[1::2] - edges[::2]
    return float(runs.max()) / rate if len(runs) else 0.0


def test_it_adds_no_silence_between_sentences_as_wyoming_piper(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice
) -> None:
    """TTS_WYOMING_SENTENCE_SILENCE_MS is 0: a sentence ends with the voice's own pause, as in
    wyoming-piper (#35: our audio was 11-14 % longer for the same text); the HTTP routes add
    TTS_SENTENCE_SILENCE_MS after every sentence."""
    events = talk(wyoming_server.port, [Synthesize(text=TEXT).event()], lambda e: AudioStop.is_type(e.type))
    samples, rate = pcm_of(events)
    assert longest_digital_silence(samples, rate) < 0.1
    response = wyoming_tenant.client().post(
        "/v1/text-to-speech/joe?output_format=pcm_22050", {"text": TEXT}, format="json"
    )
    assert response.status_code == 200, response.content
    http = np.frombuffer(response.content, dtype="<i2")
    assert longest_digital_silence(http, rate) >= 0.2  # the other routes' 200 ms


def test_it_streams_each_sentence_as_soon_as_it_is_ready(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice
) -> None:
    async def stream() -> tuple[list[Event], float, float]:
        received: list[Event] = []
        async with AsyncTcpClient("127.0.0.1", wyoming_server.port, read_timeout=60) as client:
            await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="joe")).event())
            for word in SENTENCES[0].split():
                await client.write_event(SynthesizeChunk(text=word + " ").event())
            # The first sentence is spoken before the rest of the text was even written.
            while not AudioChunk.is_type((event := await client.read_event() or Event("eof")).type):
                received.append(event)
            received.append(event)
            first_audio = time.monotonic()
            for sentence in SENTENCES[1:]:
                await client.write_event(SynthesizeChunk(text=sentence + " ").event())
            # Home Assistant also sends the whole text (for servers that cannot stream): ignored.
            await client.write_event(Synthesize(text=TEXT).event())
            stop_sent = time.monotonic()
            await client.write_event(SynthesizeStop().event())
            while (event := await client.read_event()) is not None:
                received.append(event)
                if SynthesizeStopped.is_type(event.type):
                    break
        return received, first_audio, stop_sent

    events, first_audio, stop_sent = asyncio.run(stream())
    assert not errors(events), errors(events)
    assert first_audio < stop_sent
    types = [e.type for e in events]
    assert types[0] == "audio-start" and types[-2:] == ["audio-stop", "synthesize-stopped"]
    samples, rate = pcm_of(events)
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    record = SynthesisRecord.objects.get(tenant=wyoming_tenant.tenant)  # one utterance, one record
    assert record.status == "success" and record.source == "wyoming"
    assert record.text.split() == TEXT.split()
    assert spent(wyoming_tenant) == record.characters


def test_it_speaks_japanese_by_voice_name_and_by_language(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice, kokoro: Voice
) -> None:
    text = "今日はいい天気ですね。"
    for voice in (SynthesizeVoice(name="jf_alpha"), SynthesizeVoice(language="ja")):
        events = talk(
            wyoming_server.port, [Synthesize(text=text, voice=voice).event()], lambda e: AudioStop.is_type(e.type)
        )
        assert not errors(events), errors(events)
        samples, rate = pcm_of(events)
        assert_speech(samples, rate, expected_rate=24000, text=text, ms_per_char=180)
    voices = set(SynthesisRecord.objects.filter(tenant=wyoming_tenant.tenant).values_list("voice_id", flat=True))
    assert voices <= {"jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"}


def test_an_unknown_voice_is_an_error_with_the_pipelines_code(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice
) -> None:
    events = talk(
        wyoming_server.port,
        [Synthesize(text="Hello.", voice=SynthesizeVoice(name="nobody")).event()],
        lambda e: Error.is_type(e.type),
    )
    (error,) = errors(events)
    assert error.code == "voice_not_found" and "nobody" in error.text
    assert not SynthesisRecord.objects.exists() and spent(wyoming_tenant) == 0


def test_a_refusal_carries_the_quota_code_and_bills_nothing(
    wyoming_server: WyomingServer, transactional_db: None, joe: Voice
) -> None:
    ctx = make_wyoming_tenant(limit=10)
    events = talk(wyoming_server.port, [Synthesize(text=TEXT).event()], lambda e: Error.is_type(e.type))
    (error,) = errors(events)
    assert error.code == "quota_exceeded"
    assert not SynthesisRecord.objects.exists() and spent(ctx) == 0


def test_misplaced_and_unknown_events_get_an_error_and_the_connection_goes_on(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice
) -> None:
    events = talk(
        wyoming_server.port,
        [
            Event(type="transcribe", data={}),
            SynthesizeChunk(text="no stream was started ").event(),
            Event(type="synthesize", data={"text": 42}),
            Describe().event(),
        ],
        lambda e: Info.is_type(e.type),
    )
    codes = [error.code for error in errors(events)]
    assert codes == ["unknown_event", "invalid_event", "invalid_event"]
    assert Info.is_type(events[-1].type)  # still served


def test_a_client_that_leaves_mid_utterance_is_cancelled_and_refunded(
    wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice
) -> None:
    long_text = " ".join([TEXT] * 6)

    async def leave_after_first_audio() -> None:
        async with AsyncTcpClient("127.0.0.1", wyoming_server.port, read_timeout=60) as client:
            await client.write_event(Synthesize(text=long_text).event())
            while not AudioChunk.is_type((await client.read_event() or Event("eof")).type):
                pass
        # the context manager closed the socket abruptly, in the middle of the audio

    asyncio.run(leave_after_first_audio())
    deadline = time.monotonic() + 30
    record = SynthesisRecord.objects.get(tenant=wyoming_tenant.tenant)
    while record.status == "pending" and time.monotonic() < deadline:
        time.sleep(0.2)
        record.refresh_from_db()
    assert record.status == "cancelled"
    assert 0 <= spent(wyoming_tenant) < len(long_text)  # what was never spoken was refunded
