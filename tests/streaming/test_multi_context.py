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
        # The user barges in: once the agent's first audio is out, its context is closed.
        while True:
            msg = json.loads(ws.recv(timeout=60))
            messages.append(msg)
            if msg.get("audio"):
                audio[msg["contextId"]] += base64.b64decode(msg["audio"])
            if msg.get("contextId") == "agent" and msg.get("audio"):
                break
        ws.send(json.dumps({"context_id": "agent", "close_context": True}))
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
