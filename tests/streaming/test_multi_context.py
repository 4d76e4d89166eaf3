"""multi-stream-input: several contexts on one WebSocket, each its own utterance, record and bill."""

from __future__ import annotations

import base64
import json
import time
from collections import defaultdict
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db(transaction=True)

LONG = (
    "The harbour was quiet that morning. Fishing boats rocked against the old stone wall. "
    "A gull cried once, and then the bay was still again. Somewhere a radio played an old song. "
    "The fishermen mended their nets in the low sun. Nobody spoke of the storm that was coming. "
)
SHORT = "Hello there, how can I help you today? "


def url(http_url: str) -> str:
    return http_url.replace("http://", "ws://") + "/v1/text-to-speech/joe/multi-stream-input?output_format=pcm_16000"


def test_two_interleaved_contexts_one_closed_early_and_refunded(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    audio: dict[str, bytearray] = defaultdict(bytearray)
    finals: list[str] = []
    messages: list[dict[str, Any]] = []
    with connect(url(live_server_url)) as ws:
        ws.send(json.dumps({"text": " ", "context_id": "agent", "xi_api_key": tenant_a.key}))
        ws.send(json.dumps({"text": " ", "context_id": "barge"}))
        long_words = LONG.split(" ")
        short_words = SHORT.split(" ")
        for i in range(max(len(long_words), len(short_words))):  # interleaved, word by word
            if i < len(long_words) and long_words[i]:
                ws.send(json.dumps({"text": long_words[i] + " ", "context_id": "agent"}))
            if i < len(short_words) and short_words[i]:
                ws.send(json.dumps({"text": short_words[i] + " ", "context_id": "barge"}))
        ws.send(json.dumps({"text": "", "context_id": "barge"}))  # keep-alive: nothing ends
        ws.send(json.dumps({"text": "", "context_id": "agent", "flush": True}))
        ws.send(json.dumps({"text": "", "context_id": "barge", "flush": True}))
        # The user barges in: once the agent's first audio is out, its context is stopped.
        while True:
            msg = json.loads(ws.recv(timeout=60))
            messages.append(msg)
            if msg.get("audio"):
                audio[msg["contextId"]] += base64.b64decode(msg["audio"])
            if msg.get("contextId") == "agent" and msg.get("audio"):
                break
        ws.send(json.dumps({"context_id": "agent", "close_context": True, "immediate": True}))
        ws.send(json.dumps({"close_socket": True}))
        try:
            while True:
                msg = json.loads(ws.recv(timeout=60))
                messages.append(msg)
                if msg.get("audio"):
                    audio[msg["contextId"]] += base64.b64decode(msg["audio"])
                if msg.get("isFinal"):
                    finals.append(msg["contextId"])
        except ConnectionClosed:
            pass
        assert ws.close_code == 1000
    assert sorted(finals) == ["agent", "barge"]
    assert all("contextId" in m for m in messages if m.get("audio"))
    samples, rate = decode_audio(bytes(audio["barge"]), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=SHORT)

    records = {r.text.strip()[:5]: r for r in SynthesisRecord.objects.filter(tenant=tenant_a.tenant)}
    agent, barge = records["The h"], records["Hello"]
    assert barge.status == "success" and barge.characters == len(SHORT)
    deadline = time.monotonic() + 30  # the agent's run ends on its stream thread, after the segment in flight
    while agent.status == "pending" and time.monotonic() < deadline:
        time.sleep(0.1)
        agent.refresh_from_db()
    assert agent.status == "cancelled"
    spoken = Usage.objects.get(tenant=tenant_a.tenant).characters
    agent_billed = spoken - len(SHORT)
    assert 0 < agent_billed < len(LONG)  # what was spoken of the agent's turn, the rest refunded


def test_a_sixth_context_is_refused_and_the_others_go_on(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    with connect(url(live_server_url)) as ws:
        ws.send(json.dumps({"text": " ", "context_id": "c0", "xi_api_key": tenant_a.key}))
        for n in range(1, 5):
            ws.send(json.dumps({"text": " ", "context_id": f"c{n}"}))
        ws.send(json.dumps({"text": " ", "context_id": "c5"}))
        error = json.loads(ws.recv(timeout=30))
        assert error["error"] == "max_active_contexts_exceeded" and error["code"] is None
        ws.send(json.dumps({"text": "", "context_id": "c5"}))  # missing context_id is fine, 6th is not
        assert json.loads(ws.recv(timeout=30))["error"] == "max_active_contexts_exceeded"
        ws.send(json.dumps({"context_id": "c0", "close_context": True}))
        assert json.loads(ws.recv(timeout=30)) == {"isFinal": True, "contextId": "c0"}
        ws.send(json.dumps({"text": "Now there is room for this context again. ", "context_id": "c5", "flush": True}))
        ws.send(json.dumps({"close_socket": True}))
        got = bytearray()
        finals = []
        try:
            while True:
                msg = json.loads(ws.recv(timeout=60))
                if msg.get("audio"):
                    got += base64.b64decode(msg["audio"])
                if msg.get("isFinal"):
                    finals.append(msg["contextId"])
        except ConnectionClosed:
            pass
    assert sorted(finals) == ["c1", "c2", "c3", "c4", "c5"]
    samples, rate = decode_audio(bytes(got), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text="Now there is room for this context again.")
    assert SynthesisRecord.objects.get(tenant=tenant_a.tenant).status == "success"


def _drain(ws: Any, timeout: float = 60) -> list[dict[str, Any]]:
    """Every message until the server closes the connection."""
    messages: list[dict[str, Any]] = []
    try:
        while True:
            messages.append(json.loads(ws.recv(timeout=timeout)))
    except ConnectionClosed:
        pass
    return messages


def _audio_of(messages: list[dict[str, Any]], context_id: str) -> bytes:
    return b"".join(base64.b64decode(m["audio"]) for m in messages if m.get("audio") and m["contextId"] == context_id)


def test_close_context_right_after_flush_speaks_the_text_to_its_end(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    """pipecat's and LiveKit Agents' turn: open, text, flush and close within milliseconds. The
    audio comes whole, then isFinal, and the whole text is billed (issue 44)."""
    with connect(url(live_server_url) + "&sync_alignment=true") as ws:
        ws.send(json.dumps({"text": " ", "context_id": "turn-1", "xi_api_key": tenant_a.key}))
        ws.send(json.dumps({"text": SHORT, "context_id": "turn-1"}))
        ws.send(json.dumps({"context_id": "turn-1", "flush": True}))
        ws.send(json.dumps({"context_id": "turn-1", "close_context": True}))
        messages: list[dict[str, Any]] = []
        while not messages or not messages[-1].get("isFinal"):
            messages.append(json.loads(ws.recv(timeout=60)))
        ws.send(json.dumps({"close_socket": True}))
        messages += _drain(ws)
        assert ws.close_code == 1000
    finals = [i for i, m in enumerate(messages) if m.get("isFinal")]
    assert [messages[i]["contextId"] for i in finals] == ["turn-1"]
    assert all(not m.get("audio") for m in messages[finals[0] :])  # isFinal after the last audio
    samples, rate = decode_audio(_audio_of(messages, "turn-1"), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=SHORT)
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "success" and record.characters == len(SHORT)
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == record.characters


def test_five_turns_closed_and_reopened_in_quick_succession(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    """An agent's barge-ins: each turn closed as the next opens. The latest turn is spoken whole;
    closing turns past the context limit are stopped oldest first, each with its isFinal."""
    turns = [f"turn-{n}" for n in range(6)]
    with connect(url(live_server_url)) as ws:
        ws.send(json.dumps({"text": " ", "context_id": turns[0], "xi_api_key": tenant_a.key}))
        for n, turn in enumerate(turns):
            if n:
                ws.send(json.dumps({"text": " ", "context_id": turn}))
            ws.send(json.dumps({"text": f"This is turn number {n}. ", "context_id": turn, "flush": True}))
            ws.send(json.dumps({"context_id": turn, "close_context": True}))
        ws.send(json.dumps({"close_socket": True}))
        messages = _drain(ws)
        assert ws.close_code == 1000
    assert not [m for m in messages if m.get("error")]
    assert sorted(m["contextId"] for m in messages if m.get("isFinal")) == sorted(turns)
    samples, rate = decode_audio(_audio_of(messages, turns[-1]), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text="This is turn number 5.")
    records = SynthesisRecord.objects.filter(tenant=tenant_a.tenant)
    assert records.count() == 6 and not records.filter(status="pending").exists()
    last = records.get(text__contains="number 5")
    assert last.status == "success"
    # What was billed is what the records say was spoken: stopped turns refunded the rest.
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == sum(r.characters for r in records)


def test_flush_then_new_text_in_the_same_context_speaks_both(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    first, second = "The first sentence is flushed. ", "Then a second one follows. "
    with connect(url(live_server_url)) as ws:
        ws.send(json.dumps({"text": " ", "context_id": "c", "xi_api_key": tenant_a.key}))
        ws.send(json.dumps({"text": first, "context_id": "c", "flush": True}))
        ws.send(json.dumps({"text": second, "context_id": "c", "flush": True}))
        ws.send(json.dumps({"context_id": "c", "close_context": True}))
        ws.send(json.dumps({"close_socket": True}))
        messages = _drain(ws)
        assert ws.close_code == 1000
    assert [m["contextId"] for m in messages if m.get("isFinal")] == ["c"]
    samples, rate = decode_audio(_audio_of(messages, "c"), "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=first + second)
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "success" and first.strip() in record.text and second.strip() in record.text
