"""Logs: JSON lines with the request id (also a response header and on the history
item), and no request text unless TTS_LOG_REQUEST_TEXT says so."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import httpx
import pytest
from django.test import override_settings

from infra.logging import JsonFormatter, RequestIdFilter, current_request_id, loggable_text
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.servers import ServerProc
from tts.models import SynthesisRecord, Voice

SECRET = "Purple elephants negotiate quietly at midnight."


def test_it_formats_one_json_object_per_line_with_extras_and_the_request_id() -> None:
    token = current_request_id.set("req-1234abcd")
    try:
        record = logging.LogRecord("tts.synthesis", logging.INFO, __file__, 1, "done %s", ("x",), None)
        record.voice_id = "joe"
        RequestIdFilter().filter(record)
        line = JsonFormatter().format(record)
    finally:
        current_request_id.reset(token)
    payload = json.loads(line)
    assert payload["message"] == "done x"
    assert payload["level"] == "INFO" and payload["logger"] == "tts.synthesis"
    assert payload["request_id"] == "req-1234abcd"
    assert payload["voice_id"] == "joe"
    assert "\n" not in line


def test_it_keeps_text_out_of_logs_unless_asked() -> None:
    assert loggable_text(SECRET) == f"<{len(SECRET)} characters>"
    with override_settings(TTS_LOG_REQUEST_TEXT=True):
        assert loggable_text(SECRET) == SECRET


@pytest.mark.server
@pytest.mark.django_db(transaction=True)
def test_it_logs_json_with_the_request_id_of_the_history_item(
    tenant_a: TenantCtx, joe: Voice, daphne_factory: Callable[..., ServerProc]
) -> None:
    server = daphne_factory({"LOG_FORMAT": "json", "LOG_LEVEL": "INFO"})
    headers = {"xi-api-key": tenant_a.key, "X-Request-ID": "ops-log-test-0001"}
    url = server.url + "/v1/text-to-speech/joe?output_format=wav_22050"
    response = httpx.post(url, json={"text": SECRET}, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    samples, rate = decode_audio(response.content, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=SECRET)
    assert response.headers["X-Request-ID"] == "ops-log-test-0001"
    record = SynthesisRecord.objects.get(pk=response.headers["history-item-id"])
    assert record.request_id == "ops-log-test-0001"

    generated = httpx.post(url, json={"text": "Hello."}, headers={"xi-api-key": tenant_a.key}, timeout=60)
    new_id = generated.headers["X-Request-ID"]
    assert len(new_id) == 32 and new_id != "ops-log-test-0001"
    assert SynthesisRecord.objects.get(pk=generated.headers["history-item-id"]).request_id == new_id

    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    finished = [e for e in lines if e["logger"] == "tts.synthesis" and e.get("history_item_id") == str(record.pk)]
    assert len(finished) == 1, lines
    entry = finished[0]
    assert entry["request_id"] == "ops-log-test-0001"
    assert entry["status"] == "success" and entry["characters"] == len(SECRET)
    assert entry["text"] == f"<{len(SECRET)} characters>"
    assert "elephants" not in server.log()
