"""Alignment times on the WebSockets, by ElevenLabs' two conventions (issue 44, docs/websocket.md).

Without ``sync_alignment`` each message's times restart at zero and a client's clock advances by
each message's span (pipecat adds them up so); with ``sync_alignment=true`` they run from the
start of the utterance (LiveKit Agents reads them as they come). Either way each message's first
character must fall inside that message's own audio.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from websockets.sync.client import connect

from tests.fixtures import TenantCtx

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "The harbour was quiet that morning. Fishing boats rocked against the old stone wall. "
MS_PER_BYTE = 1000 / 32000  # pcm_16000: 16-bit mono


def speak(live_server_url: str, key: str, route: str, sync: bool) -> list[dict[str, Any]]:
    query = f"output_format=pcm_16000&sync_alignment={str(sync).lower()}"
    url = live_server_url.replace("http://", "ws://") + f"/v1/text-to-speech/joe/{route}?{query}"
    messages = []
    with connect(url) as ws:
        if route == "multi-stream-input":
            ws.send(json.dumps({"text": " ", "context_id": "a", "xi_api_key": key}))
            ws.send(json.dumps({"text": TEXT, "context_id": "a", "flush": True}))
            ws.send(json.dumps({"context_id": "a", "close_context": True}))
        else:
            ws.send(json.dumps({"text": " ", "xi_api_key": key}))
            ws.send(json.dumps({"text": TEXT, "flush": True}))
            ws.send(json.dumps({"text": ""}))
        while not messages or not messages[-1].get("isFinal"):
            messages.append(json.loads(ws.recv(timeout=60)))
    return [m for m in messages if m.get("audio")]


@pytest.mark.parametrize("route", ["stream-input", "multi-stream-input"])
@pytest.mark.parametrize("sync", [False, True])
@pytest.mark.parametrize("voice", ["joe", "joe_windowed"])
def test_each_message_times_its_own_audio(
    live_server_url: str, tenant_a: TenantCtx, request: pytest.FixtureRequest, voice: str, route: str, sync: bool
) -> None:
    """joe: times estimated per segment; joe_windowed: the engine's durations, a sentence in windows."""
    request.getfixturevalue(voice)
    audio_ms = 0.0  # where each message's audio starts
    clock_ms = 0  # pipecat's clock: the sum of the spans so far
    chars: list[str] = []
    starts: list[float] = []
    for message in speak(live_server_url, tenant_a.key, route, sync):
        seconds_ms = len(base64.b64decode(message["audio"])) * MS_PER_BYTE
        alignment = message["alignment"]
        if alignment:
            first = alignment["charStartTimesMs"][0] + (0 if sync else clock_ms)
            assert audio_ms - 2 <= first <= audio_ms + seconds_ms + 2, (first, audio_ms, seconds_ms)
            starts += [t + (0 if sync else clock_ms) for t in alignment["charStartTimesMs"]]
            chars += alignment["chars"]
            clock_ms += alignment["charStartTimesMs"][-1] + alignment["charDurationsMs"][-1]
        audio_ms += seconds_ms
    assert "".join(chars).split() == TEXT.split()
    assert starts == sorted(starts)
    assert starts[-1] > 0.6 * audio_ms  # the last word is late in the utterance
