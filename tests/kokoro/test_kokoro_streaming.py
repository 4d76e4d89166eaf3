"""Streaming with a Japanese voice against a real daphne: chunked HTTP in several formats, and
the stream-input WebSocket with Japanese text (no spaces) arriving in pieces."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from websockets.sync.client import connect

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.streaming.test_websocket import read_to_close
from tts.models import SynthesisRecord, Voice

TEXT = "今日は晴れです。公園を歩きます。夕方に帰ります。"

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.mark.parametrize("output_format", ["pcm_16000", "mp3_22050_32", "opus_48000_64"])
def test_it_streams_japanese_as_the_whole_file_sounds(
    live_server_url: str, tenant_a: TenantCtx, kokoro: Voice, output_format: str
) -> None:
    with httpx.stream(
        "POST",
        f"{live_server_url}/v1/text-to-speech/jf_alpha/stream?output_format={output_format}",
        json={"text": TEXT},
        headers={"xi-api-key": tenant_a.key},
        timeout=120,
    ) as response:
        assert response.status_code == 200
        assert response.headers.get("transfer-encoding") == "chunked"
        chunks = list(response.iter_raw())
    assert len(chunks) >= 2  # sentence by sentence, not one piece at the end
    streamed = b"".join(chunks)
    whole = httpx.post(
        f"{live_server_url}/v1/text-to-speech/jf_alpha?output_format={output_format}",
        json={"text": TEXT},
        headers={"xi-api-key": tenant_a.key},
        timeout=120,
    ).content
    a, rate = decode_audio(streamed, output_format)
    b, _ = decode_audio(whole, output_format)
    assert_speech(a, rate, text=TEXT, ms_per_char=140, tolerance=0.6)
    assert len(a) == len(b)
    records = SynthesisRecord.objects.filter(voice_id="jf_alpha").order_by("created_at")
    assert [r.status for r in records] == ["success", "success"]


def test_the_websocket_speaks_japanese_pieces_at_sentence_ends(
    live_server_url: str, tenant_a: TenantCtx, kokoro: Voice
) -> None:
    pieces = ["今日は", "晴れ", "です。", "公園を", "歩き", "ます。", "夕方に", "帰り", "ます。"]
    url = live_server_url.replace("http://", "ws://") + "/v1/text-to-speech/jf_alpha/stream-input"
    # pcm_24000, the model's rate: a resampled format sends its resampler's tail as one more chunk.
    with connect(f"{url}?output_format=pcm_24000&auto_mode=true&xi-api-key={tenant_a.key}") as ws:
        ws.send(json.dumps({"text": " "}))
        for piece in pieces:
            ws.send(json.dumps({"text": piece}))
        ws.send(json.dumps({"text": ""}))
        audio, messages = read_to_close(ws)
    spoken = [m for m in messages if m.get("audio")]
    # auto_mode cuts at every 。 although the text never has a space.
    chars = ["".join(m["alignment"]["chars"]).strip() for m in spoken]
    assert chars == ["今日は晴れです。", "公園を歩きます。", "夕方に帰ります。"], chars
    samples, rate = decode_audio(audio, "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000)
    record = SynthesisRecord.objects.get(source="websocket")
    assert record.status == "success" and record.text == "".join(pieces)
    assert base64.b64decode(spoken[0]["audio"])
