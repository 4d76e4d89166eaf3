"""The reference deployments' endpoints, called as their documents show, with ``requests`` against daphne."""

from __future__ import annotations

import base64
import io
import wave

import pytest
import requests
from django.contrib.auth import get_user_model

from accounts.keys import api_key_create
from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import make_joe, make_tenant, second_version
from tts.models import ModelVersion, SynthesisRecord

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Welcome to the lightweight speech service, the harbour is quiet tonight."


def wav_info(data: bytes) -> tuple[int, int, int]:
    with wave.open(io.BytesIO(data)) as w:
        return w.getframerate(), w.getsampwidth(), w.getnchannels()


def test_api_tts_whole_and_streamed(live_server_url: str) -> None:
    make_joe()
    ctx = make_tenant("cosy-webui")
    url = f"{live_server_url}/api/tts"
    headers = {"xi-api-key": ctx.key}
    whole = requests.post(url, json={"text": TEXT, "speaker": "joe", "streaming": False}, headers=headers, timeout=120)
    assert whole.status_code == 200 and whole.headers["Content-Type"] == "audio/wav"
    assert wav_info(whole.content) == (16000, 2, 1)
    samples, rate = decode_audio(whole.content, "wav_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)

    # streaming: chunked transfer, read piece by piece as the article's client does
    with requests.post(
        url, json={"text": TEXT, "speaker": "xiaoyu", "streaming": True}, headers=headers, stream=True, timeout=120
    ) as streamed:
        assert streamed.status_code == 200
        assert streamed.headers.get("Transfer-Encoding") == "chunked"
        pieces = [p for p in streamed.iter_content(chunk_size=None) if p]
    assert len(pieces) > 1
    data = b"".join(pieces)
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    samples, rate = decode_audio(data, "wav_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)

    assert Usage.objects.get(tenant=ctx.tenant).characters == 2 * len(TEXT)  # billed the same way
    assert set(SynthesisRecord.objects.filter(tenant=ctx.tenant).values_list("source", "status")) == {
        ("compat", "success")
    }


def test_lite_tts_answers_base64_json_and_fastapi_errors(live_server_url: str) -> None:
    make_joe()
    ctx = make_tenant("cosy-lite", per_request=100)
    url = f"{live_server_url}/tts"
    auth = {"Authorization": f"Bearer {ctx.key}"}
    r = requests.post(url, json={"text": TEXT, "speaker": "male_01", "language": "en"}, headers=auth, timeout=120)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "success" and body["sample_rate"] == 22050
    audio = base64.b64decode(body["audio"])
    assert wav_info(audio)[0] == 22050
    samples, rate = decode_audio(audio, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert body["duration"] == pytest.approx(len(samples) / rate, abs=0.05)

    too_long = requests.post(url, json={"text": "x " * 80}, headers=auth, timeout=30)
    assert too_long.status_code == 400 and isinstance(too_long.json()["detail"], str)
    malformed = requests.post(url, json={"speaker": "joe"}, headers=auth, timeout=30)
    assert malformed.status_code == 422 and malformed.json()["detail"][0]["loc"] == ["body", "text"]
    unauthenticated = requests.post(url, json={"text": TEXT}, timeout=30)
    assert unauthenticated.status_code == 401 and "detail" in unauthenticated.json()


def test_admin_reload_needs_a_staff_key_and_activates_everywhere(live_server_url: str) -> None:
    old, _ = make_joe()
    new = second_version(old)
    ctx = make_tenant("cosy-ops")
    url = f"{live_server_url}/api/admin/reload"
    tenant_key = requests.post(url, json={"model": old.model_id}, headers={"xi-api-key": ctx.key}, timeout=30)
    assert tenant_key.status_code == 403 and "detail" in tenant_key.json()
    with pytest.raises(ValueError):
        api_key_create(tenant=ctx.tenant, name="no", scopes=["models:admin"])  # not for tenants' own keys
    staff = get_user_model().objects.create_user(username="ops", password="pw-ops-ops-ops", is_staff=True)
    issued = api_key_create(tenant=ctx.tenant, name="ops", scopes=["models:admin"], created_by=staff)
    headers = {"xi-api-key": issued.raw_key}
    missing = requests.post(url, json={"model": "nope"}, headers=headers, timeout=30)
    assert missing.status_code == 404 and "en_US-joe-medium" in missing.json()["detail"]
    done = requests.post(url, json={"model": old.model_id, "version": "2"}, headers=headers, timeout=30)
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "success" and done.json()["version"] == "2"
    assert ModelVersion.objects.get(pk=new.pk).status == "active"
    assert ModelVersion.objects.get(pk=old.pk).status == "retired"
    spoken = requests.post(
        f"{live_server_url}/api/tts",
        json={"text": TEXT, "speaker": "joe"},
        headers={"xi-api-key": ctx.key},
        timeout=120,
    )
    assert spoken.status_code == 200
    assert SynthesisRecord.objects.get(tenant=ctx.tenant).model_version_id == new.pk  # served by the new version
