"""A WebSocket connection gets a request id: the caller's ``X-Request-ID`` or a new one, in
error messages, on its log lines and on its history item."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
from websockets.sync.client import connect

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.servers import ServerProc, start_daphne
from tests.streaming.test_websocket import read_to_close, recv_json, ws_url
from tts.models import SynthesisRecord, Voice

pytestmark = [pytest.mark.server, pytest.mark.django_db(transaction=True)]

TEXT = "Every connection has a name. "


@pytest.fixture(scope="module")
def server(django_db_setup: None) -> Iterator[ServerProc]:
    """One server for both tests: each looks only for the log lines of its own request ids."""
    server = start_daphne({"LOG_LEVEL": "INFO", "LOG_FORMAT": "json"})
    yield server
    server.stop()


def log_lines(server: ServerProc) -> list[dict[str, object]]:
    return [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]


def test_it_takes_the_callers_request_id_through_to_history_and_logs(
    server: ServerProc, tenant_a: TenantCtx, joe: Voice
) -> None:
    with connect(
        ws_url(server.url, f"xi-api-key={tenant_a.key}"), additional_headers={"X-Request-ID": "ws-trace-0001"}
    ) as ws:
        ws.send(json.dumps({"text": " "}))
        ws.send(json.dumps({"text": TEXT, "flush": True}))
        ws.send(json.dumps({"text": ""}))
        audio, messages = read_to_close(ws)
    assert messages[-1] == {"isFinal": True}
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert (record.source, record.status, record.request_id) == ("websocket", "success", "ws-trace-0001")
    # The server writes the connection's last line once its side has closed too: give it a moment.
    deadline = time.monotonic() + 15
    while True:
        mine = [line for line in log_lines(server) if line["request_id"] == "ws-trace-0001"]
        ended = any("ended after" in str(line["message"]) for line in mine)
        if ended or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert any("connecting" in str(line["message"]) for line in mine), mine
    assert ended, mine


def test_it_makes_one_when_the_caller_sends_none_or_a_bad_one(
    server: ServerProc, tenant_a: TenantCtx, joe: Voice
) -> None:
    seen = []
    for headers in ({}, {"X-Request-ID": "bad id with spaces"}):
        with connect(ws_url(server.url, f"xi-api-key={tenant_a.key}"), additional_headers=headers) as ws:
            ws.send("not json")  # an error message names the connection's id
            error = recv_json(ws)
            assert error["error"] == "invalid_json"
            assert re.fullmatch(r"[0-9a-f]{32}", error["request_id"])
            seen.append(error["request_id"])
    assert seen[0] != seen[1]
    for request_id in seen:
        assert any(
            line["request_id"] == request_id and "connecting" in str(line["message"]) for line in log_lines(server)
        )
