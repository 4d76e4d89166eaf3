"""Chunked HTTP streaming against a real daphne: the elevenlabs and openai SDKs,
raw httpx for the formats, a client that hangs up mid-stream, and errors."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from elevenlabs.client import ElevenLabs
from openai import OpenAI

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.servers import ServerProc
from tts.models import SynthesisRecord, Voice

TEXT = (
    "The harbour was quiet that morning. Fishing boats rocked against the old stone wall. "
    "A gull cried once and then the bay was still again."
)
SENTENCE = "A gull cried once and then the bay was still again."
# Many sentences: long enough that a hang-up lands mid-synthesis.
LONG_TEXT = " ".join(
    f"Sentence number {n} walks slowly along the quay, counting the boats as it goes." for n in range(1, 31)
)

pytestmark = pytest.mark.django_db(transaction=True)


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def whole_file(url: str, ctx: TenantCtx, text: str, output_format: str) -> bytes:
    """The non-streamed response for the same request."""
    response = httpx.post(
        f"{url}/v1/text-to-speech/joe?output_format={output_format}",
        json={"text": text},
        headers={"xi-api-key": ctx.key},
        timeout=180,  # a slow CI machine: the long text alone is ~100 s of audio
    )
    assert response.status_code == 200, response.text
    return response.content


def test_it_streams_with_the_elevenlabs_sdk(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    client = ElevenLabs(api_key=tenant_a.key, base_url=live_server_url)
    chunks: list[bytes] = []
    status_at_first_chunk = None
    for chunk in client.text_to_speech.stream("joe", text=TEXT, output_format="mp3_44100_128"):
        if not chunks:
            # The first audio is here while the record is still being synthesized.
            status_at_first_chunk = SynthesisRecord.objects.get(tenant=tenant_a.tenant).status
        chunks.append(chunk)
    streamed = b"".join(chunks)
    assert status_at_first_chunk == "pending"
    samples, rate = decode_audio(streamed, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=TEXT)
    assert streamed == whole_file(live_server_url, tenant_a, TEXT, "mp3_44100_128")
    record = SynthesisRecord.objects.get(source="elevenlabs_stream")
    assert record.status == "success" and record.characters == len(TEXT)
    assert record.ttfb_ms is not None and record.latency_ms is not None and record.ttfb_ms < record.latency_ms
    assert spent(tenant_a) == 2 * len(TEXT)


def test_it_streams_with_the_openai_sdk(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    client = OpenAI(api_key=tenant_a.key, base_url=f"{live_server_url}/v1")
    chunks: list[bytes] = []
    status_at_first_chunk = None
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=LONG_TEXT[:600], response_format="pcm"
    ) as response:
        assert response.headers["content-type"] == "audio/pcm"
        record_id = response.headers["history-item-id"]
        for chunk in response.iter_bytes():
            if not chunks:
                status_at_first_chunk = SynthesisRecord.objects.get(pk=record_id).status
            chunks.append(chunk)
    streamed = b"".join(chunks)
    assert status_at_first_chunk == "pending"
    samples, rate = decode_audio(streamed, "pcm")
    assert_speech(samples, rate, expected_rate=24000, text=LONG_TEXT[:600])
    # The same request again (read whole by the SDK) gets the same bytes.
    again = client.audio.speech.create(model="tts-1", voice="alloy", input=LONG_TEXT[:600], response_format="pcm")
    assert again.content == streamed
    record = SynthesisRecord.objects.get(pk=record_id)
    assert record.status == "success" and record.source == "openai"


def test_it_streams_sse_events(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    client = OpenAI(api_key=tenant_a.key, base_url=f"{live_server_url}/v1")
    events: list[dict[str, Any]] = []
    status_at_first_event = None
    with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="joe", input=TEXT, response_format="mp3", stream_format="sse"
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                if not events:
                    status_at_first_event = SynthesisRecord.objects.get(pk=response.headers["history-item-id"]).status
                events.append(json.loads(line[len("data: ") :]))
    assert status_at_first_event == "pending"
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    assert events[-1]["type"] == "speech.audio.done"
    assert events[-1]["usage"]["input_tokens"] == len(TEXT)
    streamed = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    samples, rate = decode_audio(streamed, "mp3")
    assert_speech(samples, rate, expected_rate=24000, text=TEXT)
    assert SynthesisRecord.objects.get(source="openai").status == "success"


@pytest.mark.parametrize("output_format", ["pcm_16000", "ulaw_8000", "wav_22050", "opus_48000_64", "mp3_22050_32"])
def test_it_streams_each_format_as_the_whole_file_sounds(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice, output_format: str
) -> None:
    chunks = []
    with httpx.stream(
        "POST",
        f"{live_server_url}/v1/text-to-speech/joe/stream?output_format={output_format}",
        json={"text": TEXT},
        headers={"xi-api-key": tenant_a.key},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        assert response.headers.get("transfer-encoding") == "chunked"
        chunks = list(response.iter_raw())
    streamed = b"".join(chunks)
    whole = whole_file(live_server_url, tenant_a, TEXT, output_format)
    a, rate_a = decode_audio(streamed, output_format)
    b, rate_b = decode_audio(whole, output_format)
    assert rate_a == rate_b
    assert_speech(a, rate_a, text=TEXT)
    # Same samples: segment joins in the stream are exactly the whole file's joins.
    assert len(a) == len(b) and (a == b).all()
    if not output_format.startswith("wav"):
        assert streamed == whole  # wav differs only in its "unknown length" header


def test_it_stops_synthesizing_when_the_client_hangs_up(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    with httpx.stream(
        "POST",
        f"{live_server_url}/v1/text-to-speech/joe/stream?output_format=pcm_16000",
        json={"text": LONG_TEXT},
        headers={"xi-api-key": tenant_a.key},
        timeout=60,
    ) as response:
        record_id = response.headers["history-item-id"]
        first = next(response.iter_raw())
        assert first
    # Leaving the block closed the connection mid-stream.
    deadline = time.monotonic() + 30
    record = SynthesisRecord.objects.get(pk=record_id)
    while record.status == "pending" and time.monotonic() < deadline:
        time.sleep(0.1)
        record.refresh_from_db()
    assert record.status == "cancelled"
    # Later segments were never synthesized, and their characters came back.
    full_duration = len(LONG_TEXT) * 0.06
    assert 0 < record.duration_s < full_duration / 2
    assert 0 < record.characters < len(LONG_TEXT)
    assert spent(tenant_a) == record.characters
    assert not record.audio
    # The server is fine afterwards.
    assert whole_file(live_server_url, tenant_a, "Still here.", "pcm_16000")


def test_it_answers_errors_before_streaming_in_each_dialect(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    response = client.post("/v1/text-to-speech/nobody/stream", {"text": "Hi"}, format="json")
    assert response.status_code == 404
    assert response.json()["detail"]["status"] == "voice_not_found"
    response = client.post("/v1/text-to-speech/joe/stream?output_format=mp3_1", {"text": "Hi"}, format="json")
    assert response.status_code == 400 and response.json()["detail"]["param"] == "output_format"
    response = client.post(
        "/v1/audio/speech",
        {"model": "tts-1", "voice": "joe", "input": "", "stream_format": "sse"},
        format="json",
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "input"
    response = client.post(
        "/v1/audio/speech",
        {"model": "tts-1", "voice": "joe", "input": "Hi", "stream_format": "chunks"},
        format="json",
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "stream_format"
    assert spent(tenant_a) == 0
    assert not SynthesisRecord.objects.exists()


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc to count threads")
def test_it_leaves_no_threads_behind(
    daphne_factory: Callable[..., ServerProc], tenant_a: TenantCtx, joe: Voice
) -> None:
    server = daphne_factory()
    pid = server.proc.pid
    for text in (SENTENCE, LONG_TEXT, LONG_TEXT):  # warm up: engine loaded, Django's and the segment thread pools
        whole_file(server.url, tenant_a, text, "pcm_16000")
    baseline = thread_count(pid)
    record_ids = []
    for _ in range(5):
        with httpx.stream(
            "POST",
            f"{server.url}/v1/text-to-speech/joe/stream?output_format=pcm_16000",
            json={"text": LONG_TEXT},
            headers={"xi-api-key": tenant_a.key},
            timeout=60,
        ) as response:
            record_ids.append(response.headers["history-item-id"])
            next(response.iter_raw())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        SynthesisRecord.objects.filter(pk__in=record_ids, status="pending").exists() or thread_count(pid) > baseline
    ):
        time.sleep(0.2)
    assert set(SynthesisRecord.objects.filter(pk__in=record_ids).values_list("status", flat=True)) == {"cancelled"}
    assert thread_count(pid) <= baseline  # one thread per stream, and each one ended
