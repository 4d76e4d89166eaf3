"""Kokoro's first clause first (#35 item 5): on a stream, a Chinese sentence with an inner pause is
made as its first clause, then the rest; a whole file keeps the sentence whole."""

# Chinese text: its full-width comma is the point.
# ruff: noqa: RUF001

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence

import numpy as np
import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.streaming.test_websocket import read_to_close
from tts.inference.engine import EngineOutput, SynthesisParams
from tts.inference.kokoro_onnx import KokoroOnnxEngine
from tts.models import SynthesisRecord, Voice

VOICE = "zf_xiaoxiao"
HEAD, REST = "今天天气很好，", "我们一起去公园散步吧。"
TEXT = HEAD + REST

pytestmark = pytest.mark.slow


@pytest.fixture
def engine_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, float, float]]:
    """Each Kokoro run in this process: its number of phoneme ids, when it started and ended."""
    runs: list[tuple[int, float, float]] = []
    real = KokoroOnnxEngine.synthesize_ids

    def timed(self: KokoroOnnxEngine, ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        started = time.monotonic()
        out = real(self, ids, params)
        runs.append((len(ids), started, time.monotonic()))
        return out

    monkeypatch.setattr(KokoroOnnxEngine, "synthesize_ids", timed)
    return runs


def _chunks(ctx: TenantCtx, text: str) -> list[dict]:
    response = ctx.client().post(
        f"/v1/text-to-speech/{VOICE}/stream/with-timestamps?output_format=pcm_24000", {"text": text}, format="json"
    )
    assert response.status_code == 200, response
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_a_stream_makes_the_first_clause_alone_and_a_whole_file_does_not(
    tenant_a: TenantCtx, kokoro: Voice, engine_runs: list[tuple[int, float, float]]
) -> None:
    chunks = _chunks(tenant_a, TEXT)
    # Two engine runs, the first clause's the shorter, and alone: the rest starts once it is made.
    assert len(engine_runs) == 2, engine_runs
    (head_ids, _, head_end), (rest_ids, rest_start, _) = engine_runs
    assert head_ids < rest_ids and rest_start >= head_end, engine_runs
    # Its audio and characters come first.
    timed = [c for c in chunks if c["alignment"]]
    assert "".join(timed[0]["alignment"]["characters"]) == HEAD
    assert "".join(ch for c in timed for ch in c["alignment"]["characters"]) == TEXT
    audio = b"".join(base64.b64decode(c["audio_base64"]) for c in chunks)
    samples, rate = decode_audio(audio, "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000, text=TEXT, ms_per_char=230, tolerance=0.6)
    # Between the clauses, a clause's pause (150 ms, plus the engine's 30 ms edges): not a sentence's.
    head = base64.b64decode(timed[0]["audio_base64"])
    head_samples, _ = decode_audio(head, "pcm_24000")
    tail = np.abs(head_samples[-int(0.3 * rate) :])
    quiet = len(tail) - int(np.flatnonzero(tail > 0.01)[-1]) if (tail > 0.01).any() else len(tail)
    assert 0.12 <= quiet / rate <= 0.25, quiet / rate

    engine_runs.clear()
    whole = tenant_a.client().post(
        f"/v1/text-to-speech/{VOICE}/with-timestamps?output_format=pcm_24000", {"text": TEXT}, format="json"
    )
    assert whole.status_code == 200, whole.content
    assert len(engine_runs) == 1, engine_runs
    assert "".join(whole.json()["alignment"]["characters"]) == TEXT
    records = SynthesisRecord.objects.filter(tenant=tenant_a.tenant)
    # The whole file was made, not served from the stream's cache entry: a cut sentence is a different recipe.
    assert [r.cache_hit for r in records.order_by("created_at")] == [False, False]
    assert {r.status for r in records} == {"success"} and {r.characters for r in records} == {len(TEXT)}


def test_short_clauses_and_a_stub_after_the_pause_stay_whole(
    tenant_a: TenantCtx, kokoro: Voice, engine_runs: list[tuple[int, float, float]]
) -> None:
    for text in ("好，我们一起去公园散步吧。", "今天天气很好，走吧。"):
        engine_runs.clear()
        chunks = _chunks(tenant_a, text)
        assert len(engine_runs) == 1, (text, engine_runs)
        assert "".join(ch for c in chunks if c["alignment"] for ch in c["alignment"]["characters"]) == text


@pytest.mark.django_db(transaction=True)
def test_the_websocket_sends_the_first_clause_first(live_server_url: str, tenant_a: TenantCtx, kokoro: Voice) -> None:
    url = live_server_url.replace("http://", "ws://") + f"/v1/text-to-speech/{VOICE}/stream-input"
    from websockets.sync.client import connect

    with connect(f"{url}?output_format=pcm_24000&xi-api-key={tenant_a.key}") as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": TEXT, "flush": True}))
        ws.send(json.dumps({"text": ""}))
        audio, messages = read_to_close(ws)
    spoken = ["".join(m["alignment"]["chars"]) for m in messages if m.get("audio") and m.get("alignment")]
    assert spoken[0].strip() == HEAD and "".join(spoken).strip() == TEXT, spoken
    samples, rate = decode_audio(audio, "pcm_24000")
    assert_speech(samples, rate, expected_rate=24000, text=TEXT, ms_per_char=230, tolerance=0.6)
    assert SynthesisRecord.objects.get(source="websocket").status == "success"
