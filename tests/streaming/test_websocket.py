"""The stream-input WebSocket against a real daphne, driven by a ``websockets`` client
with text arriving in pieces, as an LLM writes it."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client
from elevenlabs.client import ElevenLabs
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from accounts.keys import api_key_create
from accounts.models import Membership, Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

SENTENCES = [
    "The harbour was quiet that morning.",
    "Fishing boats rocked against the old stone wall.",
    "A gull cried once, and then the bay was still again.",
    "Somewhere a radio played an old song about the sea.",
]
TEXT = " ".join(SENTENCES) + " "

pytestmark = pytest.mark.django_db(transaction=True)


def ws_url(http_url: str, query: str = "") -> str:
    if "output_format=" not in query:
        query = f"output_format=pcm_16000&{query}"
    return http_url.replace("http://", "ws://") + f"/v1/text-to-speech/joe/stream-input?{query}"


def llm_pieces(text: str) -> list[str]:
    """Word by word, trailing spaces kept, like tokens from an LLM."""
    return [w + " " for w in text.split()]


def recv_json(ws: ClientConnection, timeout: float = 30) -> dict[str, Any]:
    return json.loads(ws.recv(timeout=timeout))


def read_to_close(ws: ClientConnection) -> tuple[bytes, list[dict[str, Any]]]:
    audio = bytearray()
    messages = []
    try:
        while True:
            frame = ws.recv(timeout=60)
            if isinstance(frame, bytes):
                audio += frame
                continue
            msg = json.loads(frame)
            messages.append(msg)
            if msg.get("audio"):
                audio += base64.b64decode(msg["audio"])
    except ConnectionClosed:
        pass
    return bytes(audio), messages


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def test_it_speaks_text_that_arrives_in_pieces(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    pieces = llm_pieces(TEXT)
    half = len(pieces) // 2
    with connect(ws_url(live_server_url)) as ws:
        ws.send(
            json.dumps(
                {
                    "text": " ",
                    "voice_settings": {"stability": 0.5, "similarity_boost": 0.8},
                    "generation_config": {"chunk_length_schedule": [50]},
                    "xi_api_key": tenant_a.key,
                }
            )
        )
        for piece in pieces[:half]:
            ws.send(json.dumps({"text": piece, "try_trigger_generation": True}))
        # Audio comes back while the second half of the text has not even been written.
        first = recv_json(ws)
        assert first["audio"] and first["isFinal"] is None
        assert first["alignment"]["chars"] and len(first["alignment"]["charStartTimesMs"]) == len(
            first["alignment"]["chars"]
        )
        for piece in pieces[half:]:
            ws.send(json.dumps({"text": piece}))
        ws.send(json.dumps({"text": ""}))
        rest, messages = read_to_close(ws)
        assert ws.close_code == 1000
    audio = base64.b64decode(first["audio"]) + rest
    assert messages[-1] == {"isFinal": True}
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)
    record = SynthesisRecord.objects.get()
    assert record.status == "success" and record.source == "websocket"
    assert record.text == TEXT and record.characters == len(TEXT)
    assert record.ttfb_ms is not None and record.latency_ms is not None and record.ttfb_ms < record.latency_ms
    assert record.duration_s == pytest.approx(len(samples) / rate, abs=0.1)
    usage = Usage.objects.get(tenant=tenant_a.tenant)
    assert usage.characters == len(TEXT) and usage.requests == 1  # one utterance, one request


def test_it_matches_the_rest_api_sentence_by_sentence(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    """auto_mode speaks whole sentences, so the stream is the REST response's audio."""
    with connect(
        ws_url(live_server_url, f"output_format=mp3_44100_128&auto_mode=true&xi-api-key={tenant_a.key}")
    ) as ws:
        ws.send(json.dumps({"text": " "}))
        for piece in llm_pieces(TEXT):
            ws.send(json.dumps({"text": piece}))
        ws.send(json.dumps({"text": ""}))
        streamed, messages = read_to_close(ws)
    assert sum(1 for m in messages if m.get("audio")) >= len(SENTENCES) - 1
    rest = httpx.post(
        f"{live_server_url}/v1/text-to-speech/joe?output_format=mp3_44100_128",
        json={"text": TEXT},
        headers={"xi-api-key": tenant_a.key},
        timeout=60,
    )
    a, rate = decode_audio(streamed, "mp3_44100_128")
    b, _ = decode_audio(rest.content, "mp3_44100_128")
    assert_speech(a, rate, expected_rate=44100, text=TEXT)
    # Same segments, same pauses: the lengths agree to within the model's own variation.
    assert abs(len(a) - len(b)) / rate < 0.15 * len(b) / rate


def test_it_sends_binary_frames_when_asked(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    with connect(
        ws_url(live_server_url, "output_format=ulaw_8000&binary_audio=true"),
        additional_headers={"xi-api-key": tenant_a.key},
    ) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": SENTENCES[0] + " ", "flush": True}))
        ws.send(json.dumps({"text": ""}))
        audio, messages = read_to_close(ws)
    assert messages[-1] == {"isFinal": True}
    meta = [m for m in messages if "audioBytes" in m]
    assert meta and sum(m["audioBytes"] for m in meta) == len(audio)
    samples, rate = decode_audio(audio, "ulaw_8000")
    assert_speech(samples, rate, expected_rate=8000, text=SENTENCES[0])


def test_it_accepts_a_dashboard_session(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    client = Client()
    client.force_login(tenant_a.owner)  # type: ignore[arg-type]
    session = SessionStore(session_key=client.cookies["sessionid"].value)
    session["current_tenant_id"] = tenant_a.tenant.pk
    session.save()
    # The client sends Host itself (a second one would reach daphne as "h,h", which is no origin).
    headers = {"Cookie": f"sessionid={session.session_key}", "Origin": live_server_url}
    with connect(ws_url(live_server_url), additional_headers=headers) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": SENTENCES[1] + " ", "flush": True}))
        ws.send(json.dumps({"text": ""}))
        audio, _ = read_to_close(ws)
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, text=SENTENCES[1])
    record = SynthesisRecord.objects.get()
    assert record.source == "playground" and record.tenant == tenant_a.tenant and record.api_key is None
    # Another site's page cannot use that cookie; nor can a user outside the tenant.
    outsider = get_user_model().objects.create_user(username="outsider", password="pw-outsider")
    for origin, user in (("http://evil.example", tenant_a.owner), (live_server_url, outsider)):
        c = Client()
        c.force_login(user)  # type: ignore[arg-type]
        s = SessionStore(session_key=c.cookies["sessionid"].value)
        s["current_tenant_id"] = tenant_a.tenant.pk
        s.save()
        hdrs = {"Cookie": f"sessionid={s.session_key}", "Origin": origin}
        with connect(ws_url(live_server_url), additional_headers=hdrs) as ws:
            ws.send(json.dumps({"text": " "}))
            error = recv_json(ws)
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=10)
        assert error["error"] == "missing_api_key" and ws.close_code == 4008
    assert not Membership.objects.filter(user=outsider).exists()


def test_it_cancels_and_refunds_when_the_client_goes_away(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    long_text = " ".join(f"Line {n} of a story that the listener will never hear to its end." for n in range(40))
    with connect(ws_url(live_server_url, f"xi-api-key={tenant_a.key}")) as ws:
        ws.send(json.dumps({"text": " "}))
        for start in range(0, len(long_text), 400):
            ws.send(json.dumps({"text": long_text[start : start + 400], "flush": True}))
        assert recv_json(ws)["audio"]
    # The socket is closed mid-utterance.
    record = SynthesisRecord.objects.get()
    deadline = time.monotonic() + 30
    while record.status == "pending" and time.monotonic() < deadline:
        time.sleep(0.1)
        record.refresh_from_db()
    assert record.status == "cancelled"
    assert 0 < record.duration_s < len(long_text) * 0.06 / 2
    assert 0 < record.characters < len(long_text)
    assert spent(tenant_a) == record.characters
    assert Usage.objects.get(tenant=tenant_a.tenant).requests == 1


def error_then_close(ws: ClientConnection) -> tuple[dict[str, Any], int | None]:
    error = recv_json(ws)
    with pytest.raises(ConnectionClosed):
        while True:
            ws.recv(timeout=10)
    return error, ws.close_code


@pytest.mark.parametrize(
    ("first", "code", "close_code"),
    [
        pytest.param({"text": "Hello there. "}, "init_required", 4008, id="text-before-init"),
        pytest.param({"text": 5}, "invalid_message", 4008, id="init-text-not-a-string"),
        pytest.param({"text": " ", "xi_api_key": "tts_000000000000_nope"}, "invalid_api_key", 4008, id="bad-key"),
        pytest.param({"text": " "}, "missing_api_key", 4008, id="no-key"),
        pytest.param(
            {"text": " ", "generation_config": {"chunk_length_schedule": [5]}},
            "invalid_generation_config",
            4008,
            id="bad-schedule",
        ),
        pytest.param(
            {"text": " ", "voice_settings": {"speed": "fast"}}, "invalid_voice_settings", 4008, id="bad-speed"
        ),
    ],
)
def test_it_refuses_a_bad_first_message(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice, first: dict[str, Any], code: str, close_code: int
) -> None:
    keyed = "xi_api_key" in first or code == "missing_api_key"
    query = "" if keyed else f"xi-api-key={tenant_a.key}"
    with connect(ws_url(live_server_url, query)) as ws:
        ws.send(json.dumps(first))
        error, got_close = error_then_close(ws)
    assert error["error"] == code and error["code"] == close_code and error["message"]
    assert got_close == close_code
    assert not SynthesisRecord.objects.exists() and spent(tenant_a) == 0


def test_it_reports_malformed_messages_and_goes_on(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    with connect(ws_url(live_server_url, f"xi-api-key={tenant_a.key}")) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send("{not json")
        assert recv_json(ws)["error"] == "invalid_json"
        ws.send(json.dumps({"text": ["a"]}))
        bad_text = recv_json(ws)
        assert bad_text["error"] == "invalid_message" and bad_text["param"] == "text" and bad_text["code"] is None
        ws.send(json.dumps({"text": "Hi. ", "flush": "yes"}))
        assert recv_json(ws)["param"] == "flush"
        ws.send(b"\x00\x01")
        assert recv_json(ws)["error"] == "invalid_message"
        # Still usable.
        ws.send(json.dumps({"text": SENTENCES[2] + " ", "flush": True}))
        ws.send(json.dumps({"text": ""}))
        audio, messages = read_to_close(ws)
    assert messages[-1] == {"isFinal": True}
    assert_speech(*decode_audio(audio, "pcm_16000"), text=SENTENCES[2])


def test_it_closes_on_oversized_frames_and_inactivity(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    with connect(ws_url(live_server_url, f"xi-api-key={tenant_a.key}"), max_size=None) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": "word " * 20_000}))
        error, close_code = error_then_close(ws)
    assert error["error"] == "message_too_large" and close_code == 4009
    started = time.monotonic()
    with connect(ws_url(live_server_url, f"xi-api-key={tenant_a.key}&inactivity_timeout=1")) as ws:
        ws.send(json.dumps({"text": " "}))
        error, close_code = error_then_close(ws)
    assert error["error"] == "input_timeout_exceeded" and close_code == 4008
    assert time.monotonic() - started >= 1
    with connect(ws_url(live_server_url, f"xi-api-key={tenant_a.key}&inactivity_timeout=181")) as ws:
        error, close_code = error_then_close(ws)
    assert error["param"] == "inactivity_timeout" and close_code == 4008
    assert not SynthesisRecord.objects.exists()


def test_it_needs_the_tts_scope(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    reader = api_key_create(tenant=tenant_a.tenant, name="reader", scopes=["voices:read"]).raw_key
    with connect(ws_url(live_server_url, f"xi-api-key={reader}")) as ws:
        error, close_code = error_then_close(ws)
    assert error["error"] == "missing_scope" and close_code == 4008


def test_it_works_with_the_elevenlabs_sdk_realtime_client(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    client = ElevenLabs(api_key=tenant_a.key, base_url=live_server_url)
    # The SDK always dials wss://; this test server speaks plain ws://.
    client.text_to_speech._ws_base_url = live_server_url.replace("http://", "ws://")
    audio = b"".join(
        client.text_to_speech.convert_realtime("joe", text=iter(llm_pieces(TEXT)), output_format="pcm_16000")
    )
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)
    record = SynthesisRecord.objects.get()
    assert record.status == "success" and record.characters == len(record.text) > 0
