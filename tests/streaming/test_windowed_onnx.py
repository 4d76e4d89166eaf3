"""Every streaming route starts inside the first sentence on the default engine
(``piper-onnx`` with the graph split at import), while a whole-file request
decodes whole sentences."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.audio.formats import parse_elevenlabs_format
from tts.inference.piper_onnx import PiperOnnxEngine
from tts.models import SynthesisRecord, Voice
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.deliver import synthesis_iter_bytes
from tts.synthesis.stages.pipeline import synthesis_create, synthesis_prepare

SENTENCE = (
    "The harbour was quiet that morning while the fishing boats rocked gently against the old stone wall "
    "and the gulls argued over scraps near the market as a courier walked slowly along the water with a "
    "letter for the lighthouse keeper who had not heard from anybody in many long and lonely years."
)


def request(ctx: TenantCtx, output_format: str, text: str = SENTENCE, **fields: Any) -> SynthesisRequest:
    return SynthesisRequest(
        tenant=ctx.tenant,
        voice_id="joe",
        text=text,
        output_format=parse_elevenlabs_format(output_format),
        source="elevenlabs",
        **fields,
    )


def stream_chunks_paced(url: str) -> float:
    """``tts_stream_lead_seconds_count`` of the server at ``url``: chunks its streams' paces counted."""
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith("tts_stream_lead_seconds_count"):
            return float(line.split()[-1])
    return 0.0


@pytest.mark.django_db
def test_the_pipeline_streams_inside_one_sentence(tenant_a: TenantCtx, joe_windowed: Voice) -> None:
    run = synthesis_prepare(request(tenant_a, "pcm_22050"))
    assert len(run.segments) == 1
    chunks = synthesis_iter_bytes(run)
    first = next(chunks)
    # Out before the sentence is decoded: the record is pending, the chunk a small part of the audio.
    assert SynthesisRecord.objects.get(pk=run.record.pk).status == "pending"
    rest = list(chunks)
    audio = first + b"".join(rest)
    assert len(rest) >= 2 and len(first) < 0.1 * len(audio)
    samples, rate = decode_audio(audio, "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=SENTENCE)
    record = SynthesisRecord.objects.get(pk=run.record.pk)
    assert record.status == "success" and record.duration_s == pytest.approx(len(samples) / rate, abs=0.05)


@pytest.mark.django_db
def test_a_whole_file_decodes_whole_sentences(
    tenant_a: TenantCtx, joe_windowed: Voice, monkeypatch: pytest.MonkeyPatch
) -> None:
    windowed_calls = []
    original = PiperOnnxEngine.iter_synthesize_ids

    def counting(self: PiperOnnxEngine, *args: Any, **kwargs: Any) -> Any:
        windowed_calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PiperOnnxEngine, "iter_synthesize_ids", counting)
    result = synthesis_create(request(tenant_a, "wav_22050"))
    samples, rate = decode_audio(result.audio, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=SENTENCE)
    assert windowed_calls == []  # the cheapest path: no small first window, no streaming windows
    assert result.alignment is not None and result.alignment["alignment"]["characters"] == list(SENTENCE)


@pytest.mark.django_db(transaction=True)
def test_http_and_sse_stream_inside_one_sentence(
    live_server_url: str, tenant_a: TenantCtx, joe_windowed: Voice
) -> None:
    sent_before = stream_chunks_paced(live_server_url)
    with httpx.stream(
        "POST",
        f"{live_server_url}/v1/text-to-speech/joe/stream?output_format=pcm_22050",
        json={"text": SENTENCE},
        headers={"xi-api-key": tenant_a.key},
        timeout=120,
    ) as response:
        assert response.status_code == 200
        chunks = [chunk for chunk in response.iter_bytes() if chunk]
    assert len(chunks) >= 3
    samples, rate = decode_audio(b"".join(chunks), "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=SENTENCE)
    # Its pace was measured from what went out: every chunk handed to the connection counted.
    assert stream_chunks_paced(live_server_url) - sent_before >= 2

    with httpx.stream(
        "POST",
        f"{live_server_url}/v1/audio/speech",
        json={
            "model": "tts-1",
            "voice": "joe",
            "input": SENTENCE + " ",
            "response_format": "pcm",
            "stream_format": "sse",
        },
        headers={"Authorization": f"Bearer {tenant_a.key}"},
        timeout=120,
    ) as response:
        assert response.status_code == 200, response.read()
        events = [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    assert len(deltas) >= 3 and events[-1]["type"] == "speech.audio.done"
    samples, rate = decode_audio(b"".join(base64.b64decode(e["audio"]) for e in deltas), "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000, text=SENTENCE)


@pytest.mark.django_db(transaction=True)
def test_the_websocket_sends_windows_with_the_characters_they_cover(
    live_server_url: str, tenant_a: TenantCtx, joe_windowed: Voice
) -> None:
    url = live_server_url.replace("http://", "ws://") + "/v1/text-to-speech/joe/stream-input?output_format=pcm_22050"
    messages: list[dict[str, Any]] = []
    with connect(url, additional_headers={"xi-api-key": tenant_a.key}) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": SENTENCE + " ", "flush": True}))
        ws.send(json.dumps({"text": ""}))
        try:
            while True:
                messages.append(json.loads(ws.recv(timeout=120)))
        except ConnectionClosed:
            pass
    assert messages[-1] == {"isFinal": True}
    audio_messages = [m for m in messages if m.get("audio")]
    # One sentence, several messages: the first went out before the sentence was decoded.
    assert len(audio_messages) >= 3
    chars: list[str] = []
    for message in audio_messages:
        seconds = len(base64.b64decode(message["audio"])) / 2 / 22050
        alignment = message["alignment"]
        if alignment is None:
            continue
        # Each message carries the characters that start inside its own audio.
        assert all(0 <= start <= seconds * 1000 + 1 for start in alignment["charStartTimesMs"])
        chars.extend(alignment["chars"])
    first = audio_messages[0]["alignment"]
    assert first is not None and 0 < len(first["chars"]) < len(SENTENCE) / 2
    assert "".join(chars) == SENTENCE
    audio = b"".join(base64.b64decode(m["audio"]) for m in audio_messages)
    samples, rate = decode_audio(audio, "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=SENTENCE)
    record = SynthesisRecord.objects.get()
    assert record.status == "success" and record.characters == len(SENTENCE) + 1
