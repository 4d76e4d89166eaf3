"""Chinese through every path, one short sentence each, with a Chinese Kokoro voice: REST whole,
timestamps per character, the cache, captions, a job, history search, dictionaries (alias rules
inside Chinese text), the playground's default; and against daphne: the chunked stream, SSE, the
WebSocket (pieces cut at Chinese sentence ends) and the multi-context WebSocket."""

# Chinese text: its full-width punctuation is the point.

from __future__ import annotations

import base64
import itertools
import json

import httpx
import pytest
from django.test import Client, TestCase
from websockets.sync.client import connect

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.jobs.conftest import dispatched  # noqa: F401  (fixture)
from tests.streaming.test_websocket import read_to_close
from tts.jobs.runner import job_run
from tts.models import Job, SynthesisRecord, Voice

TEXT = "今天天气很好。"
VOICE = "zf_xiaoxiao"
URL = f"/v1/text-to-speech/{VOICE}"
MS_PER_CHAR = 230  # Mandarin: about four characters a second


def _speech(content: bytes, fmt: str, rate: int, text: str = TEXT) -> float:
    samples, got = decode_audio(content, fmt)
    assert_speech(samples, got, expected_rate=rate, text=text, ms_per_char=MS_PER_CHAR, tolerance=0.6)
    return len(samples) / got


def test_rest_whole_then_the_cache(tenant_a: TenantCtx, kokoro: Voice) -> None:
    client = tenant_a.client()
    first = client.post(f"{URL}?output_format=mp3_44100_128", {"text": TEXT}, format="json")
    assert first.status_code == 200, first.content
    _speech(first.content, "mp3_44100_128", 44100)
    again = client.post(f"{URL}?output_format=mp3_44100_128", {"text": TEXT}, format="json")
    assert again.status_code == 200 and again.content == first.content
    records = SynthesisRecord.objects.filter(tenant=tenant_a.tenant).order_by("created_at")
    assert [r.cache_hit for r in records] == [False, True] and {r.status for r in records} == {"success"}


def test_timestamps_per_character_from_the_models_durations(tenant_a: TenantCtx, kokoro: Voice) -> None:
    text = "我们明天见。"
    response = tenant_a.client().post(f"{URL}/with-timestamps?output_format=pcm_24000", {"text": text}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    duration = _speech(base64.b64decode(body["audio_base64"]), "pcm_24000", 24000, text)
    alignment = body["alignment"]
    assert alignment["characters"] == list(text)
    starts, ends = alignment["character_start_times_seconds"], alignment["character_end_times_seconds"]
    han = [i for i, ch in enumerate(text) if ch != "。"]
    # Every character its own span, from the model's durations: strictly one after another.
    assert all(starts[i] < ends[i] for i in han)
    assert all(starts[a] < starts[b] and ends[a] <= starts[b] + 1e-6 for a, b in itertools.pairwise(han))
    assert abs(ends[-1] - duration) < 0.1


def test_captions_a_job_and_history_search(tenant_a: TenantCtx, kokoro: Voice, dispatched: list) -> None:  # noqa: F811
    client = tenant_a.client()
    spoken = client.post(f"{URL}/with-timestamps?output_format=pcm_24000", {"text": TEXT}, format="json")
    vtt = client.get(f"/v1/history/{spoken['history-item-id']}/captions?format=vtt").content.decode()
    assert vtt.startswith("WEBVTT") and TEXT in vtt

    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(
            "/v1/jobs", {"voice_id": VOICE, "text": "明天见。", "output_format": "wav_24000"}, format="json"
        )
    assert response.status_code == 202, response.content
    job_id = response.json()["job_id"]
    assert job_run(job_id) == "succeeded"
    audio = client.get(f"/v1/jobs/{job_id}/audio")
    _speech(b"".join(audio.streaming_content), "wav_24000", 24000, "明天见。")
    assert Job.objects.get(pk=job_id).history_item.voice_id == VOICE  # type: ignore[union-attr]

    owner = Client()
    owner.force_login(tenant_a.owner)  # type: ignore[arg-type]
    found = owner.get("/history/?q=天气").content.decode()
    assert found.count("data-item-id=") == 1 and TEXT in found


def test_a_chinese_alias_rule_inside_chinese_text(tenant_a: TenantCtx, kokoro: Voice) -> None:
    client = tenant_a.client()
    rules = [{"type": "alias", "string_to_replace": "AI", "alias": "人工智能"}]
    made = client.post("/v1/pronunciation-dictionaries/add-from-rules", {"name": "zh", "rules": rules}, format="json")
    assert made.status_code == 200, made.content
    text = "AI很好。"
    plain = client.post(f"{URL}?output_format=pcm_24000", {"text": text}, format="json")
    locators = [{"pronunciation_dictionary_id": made.json()["id"]}]
    aliased = client.post(
        f"{URL}?output_format=pcm_24000", {"text": text, "pronunciation_dictionary_locators": locators}, format="json"
    )
    assert plain.status_code == aliased.status_code == 200
    # "人工智能" (four syllables) instead of the letters A I read in English: a longer utterance.
    assert _speech(aliased.content, "pcm_24000", 24000, "人工智能很好。") > _speech(plain.content, "pcm_24000", 24000)


def test_the_playground_offers_the_chinese_voice_for_chinese_text(
    tenant_a: TenantCtx, joe: Voice, kokoro: Voice
) -> None:
    owner = Client()
    owner.force_login(tenant_a.owner)  # type: ignore[arg-type]
    page = owner.get("/playground/").content.decode()
    # English sample text: the default voice; typed Chinese switches to the configured Chinese voice.
    assert '<option value="joe" data-model="en_US-joe-medium" selected>' in page
    assert '"zh": "zf_xiaoxiao"' in page and '"en": "joe"' in page


@pytest.mark.django_db(transaction=True)
class TestServed:
    """The paths that need a real server: chunked HTTP, SSE, the two WebSockets."""

    def test_the_stream_and_sse(self, live_server_url: str, tenant_a: TenantCtx, kokoro: Voice) -> None:
        with httpx.stream(
            "POST",
            f"{live_server_url}{URL}/stream?output_format=pcm_24000",
            json={"text": TEXT},
            headers={"xi-api-key": tenant_a.key},
            timeout=120,
        ) as response:
            assert response.status_code == 200 and response.headers.get("transfer-encoding") == "chunked"
            streamed = b"".join(response.iter_raw())
        _speech(streamed, "pcm_24000", 24000)

        events = []
        with httpx.stream(
            "POST",
            f"{live_server_url}/v1/audio/speech",
            json={"model": "tts-1", "input": TEXT, "voice": VOICE, "response_format": "pcm", "stream_format": "sse"},
            headers={"Authorization": f"Bearer {tenant_a.key}"},
            timeout=120,
        ) as response:
            assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
        assert events[-1]["type"] == "speech.audio.done"
        pcm = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
        _speech(pcm, "pcm_24000", 24000)

    def test_the_websocket_cuts_chinese_pieces_at_chinese_sentence_ends(
        self, live_server_url: str, tenant_a: TenantCtx, kokoro: Voice
    ) -> None:
        pieces = ["今天", "天气", "很好。", "我们", "去", "散步。"]
        url = live_server_url.replace("http://", "ws://") + f"/v1/text-to-speech/{VOICE}/stream-input"
        with connect(f"{url}?output_format=pcm_24000&auto_mode=true&xi-api-key={tenant_a.key}") as ws:
            ws.send(json.dumps({"text": " "}))
            for piece in pieces:
                ws.send(json.dumps({"text": piece}))
            ws.send(json.dumps({"text": ""}))
            audio, messages = read_to_close(ws)
        spoken = ["".join(m["alignment"]["chars"]).strip() for m in messages if m.get("audio") and m.get("alignment")]
        # No spaces anywhere: each piece is spoken as soon as its full-width full stop arrives.
        assert spoken == ["今天天气很好。", "我们去散步。"], messages
        _speech(audio, "pcm_24000", 24000, "".join(pieces))
        assert SynthesisRecord.objects.get(source="websocket").text == "".join(pieces)

    def test_the_multi_context_websocket(self, live_server_url: str, tenant_a: TenantCtx, kokoro: Voice) -> None:
        url = live_server_url.replace("http://", "ws://") + f"/v1/text-to-speech/{VOICE}/multi-stream-input"
        with connect(f"{url}?output_format=pcm_24000") as ws:
            ws.send(json.dumps({"text": " ", "context_id": "zh", "xi_api_key": tenant_a.key}))
            ws.send(json.dumps({"text": TEXT, "context_id": "zh"}))
            ws.send(json.dumps({"text": "", "context_id": "zh", "flush": True}))
            ws.send(json.dumps({"close_socket": True}))  # after what was flushed is spoken
            rest, messages = read_to_close(ws)
        assert any(m.get("isFinal") and m.get("contextId") == "zh" for m in messages), messages
        _speech(rest, "pcm_24000", 24000)
