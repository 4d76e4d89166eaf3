"""SIGTERM on a real daphne: new syntheses are refused, running ones drain for
TTS_SHUTDOWN_DRAIN_S, the rest stop with a refund, and the process exits."""

from __future__ import annotations

import signal
import time
from typing import Any

import httpx
import pytest

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server]

SENTENCE = "The lighthouse keeper wrote the weather in his book every evening at six o'clock."


def test_it_drains_then_cancels_with_refunds_and_exits(daphne_factory: Any, tenant_a: TenantCtx, joe: Voice) -> None:
    server = daphne_factory({"TTS_SHUTDOWN_DRAIN_S": "3", "TTS_AUDIO_CACHE_ENABLED": "false"})
    headers = {"xi-api-key": tenant_a.key}
    long_text = " ".join([SENTENCE] * 40)  # far more than 3 s of synthesis
    url = f"{server.url}/v1/text-to-speech/joe/stream?output_format=pcm_16000"
    client = httpx.Client(timeout=60)
    with client, client.stream("POST", url, json={"text": long_text}, headers=headers) as response:
        assert response.status_code == 200
        chunks = response.iter_bytes()
        received = len(next(chunks))
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        refused = client.post(url, json={"text": "Anyone there?"}, headers=headers)
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        assert refused.json()["detail"]["status"] == "server_shutting_down"
        ready = client.get(f"{server.url}/readyz")
        assert ready.status_code == 503 and ready.json()["reason"] == "shutting down"
        try:
            for chunk in chunks:
                received += len(chunk)
        except httpx.HTTPError:
            pass  # the server closed the stream when the drain ran out
    assert server.proc.wait(timeout=30) is not None
    records = list(SynthesisRecord.objects.all())
    assert len(records) == 1  # the refused request left no row
    record = records[0]
    assert record.status == "failed" and record.error_code == "server_shutting_down"
    assert 0 < record.characters < len(long_text)
    assert received > 0
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == record.characters
