"""``POST /tts`` (CosyVoice Lite's base64 JSON) written as the audio is made, and cached (#32 item 6).

Before, the route built the whole WAV, then its base64, then the JSON in memory: a 4,404-character
text was a 74.6 MB body, +200 MB of RSS and 57 s before the first byte. Now the document is
written around the stream (``tts.api.reference.Base64AudioJson``) and a repeated request is a
cache hit like on every other route. Against daphne: ``tests/integration/test_reference_endpoints.py``.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.streaming.test_run_ownership import failing_engine_after
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db

TEXT = "The harbour was quiet that morning. Fishing boats rocked against the old stone wall."


def post(ctx: TenantCtx, text: str = TEXT) -> Any:
    return ctx.client().post("/tts", {"text": text, "speaker": "joe"}, format="json")


def document(response: Any) -> dict[str, Any]:
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))


def test_the_document_is_written_while_the_audio_is_made(tenant_a: TenantCtx, joe: Voice) -> None:
    response = post(tenant_a)
    pieces = iter(response.streaming_content)
    head, first_audio = next(pieces), next(pieces)
    assert head == b'{"audio": "' and base64.b64decode(first_audio)[:4] == b"RIFF"
    # The first sentence is out; the second is not synthesized yet: nothing waits for the whole file.
    assert SynthesisRecord.objects.get(tenant=tenant_a.tenant).status == "pending"
    body = json.loads(head + first_audio + b"".join(pieces))
    assert list(body) == ["audio", "sample_rate", "duration", "status"] and body["status"] == "success"
    samples, rate = decode_audio(base64.b64decode(body["audio"]), "wav_22050")
    assert body["sample_rate"] == rate == 22050
    assert body["duration"] == pytest.approx(len(samples) / rate, abs=0.002)
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "success" and record.source == "compat" and record.characters == len(TEXT)


def test_a_repeated_request_is_answered_from_the_cache(tenant_a: TenantCtx, joe: Voice) -> None:
    first = post(tenant_a)
    body = document(first)
    assert first["x-cache"] == "miss"
    again = post(tenant_a)
    repeat = document(again)
    assert again["x-cache"] == "hit" and repeat["status"] == "success"
    assert repeat["duration"] == body["duration"] and repeat["sample_rate"] == body["sample_rate"]
    streamed, _ = decode_audio(base64.b64decode(body["audio"]), "wav_22050")
    cached, _ = decode_audio(base64.b64decode(repeat["audio"]), "wav_22050")
    assert np.array_equal(streamed, cached)  # the entry is the sealed file: same samples, exact sizes
    assert sorted(SynthesisRecord.objects.values_list("cache_hit", flat=True)) == [False, True]
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 2 * len(TEXT)


def test_an_engine_failure_after_the_first_audio_ends_the_document_with_an_error(
    tenant_a: TenantCtx, joe: Voice, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.TTS_AUDIO_CACHE_ENABLED = False
    failing_engine_after(monkeypatch, 1)
    body = document(post(tenant_a))
    assert body["status"] == "error" and body["detail"] and "sample_rate" not in body
    assert base64.b64decode(body["audio"])[:4] == b"RIFF"  # what was made before the failure
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == "failed"
    # Billed for what was delivered (the first sentence), the rest refunded.
    assert 0 < Usage.objects.get(tenant=tenant_a.tenant).characters == record.characters < len(TEXT)


def test_a_refusal_is_still_fastapis_error_before_any_byte(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post("/tts", {"text": "x " * 3000, "speaker": "joe"}, format="json")
    assert response.status_code == 400 and not response.streaming
    assert isinstance(response.json()["detail"], str)
    assert not SynthesisRecord.objects.filter(tenant=tenant_a.tenant).exists()
