"""The reference deployments' endpoints, called as their documents show, with ``requests`` against daphne."""

# The articles' Chinese requests verbatim: their full-width punctuation is the point.
# ruff: noqa: RUF001

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
from tests.fixtures import make_joe, make_kokoro, make_tenant, second_version
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
        url, json={"text": TEXT, "speaker": "joe", "streaming": True}, headers=headers, stream=True, timeout=120
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
    r = requests.post(url, json={"text": TEXT, "speaker": "joe", "language": "en"}, headers=auth, timeout=120)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "success" and body["sample_rate"] == 22050
    audio = base64.b64decode(body["audio"])
    assert wav_info(audio)[0] == 22050
    samples, rate = decode_audio(audio, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert body["duration"] == pytest.approx(len(samples) / rate, abs=0.05)
    # Written as the audio is made (#32): chunked, never a whole body in memory; the same request
    # again is a cache hit, as on every other route.
    assert r.headers.get("Transfer-Encoding") == "chunked" and r.headers["x-cache"] == "miss"
    again = requests.post(url, json={"text": TEXT, "speaker": "joe", "language": "en"}, headers=auth, timeout=120)
    assert again.status_code == 200 and again.headers["x-cache"] == "hit"
    assert again.json()["duration"] == body["duration"] and again.json()["status"] == "success"

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


# The articles' own requests, byte for byte as printed (../shared/reference/): only the key is added.
WEBUI_CURL_BODY = '{"text":"你好，这是一条测试语音。","speaker":"xiaoyu","streaming":true}'
LITE_CURL_BODY = '{"text": "欢迎使用轻量级语音合成服务", "speaker": "male_01"}'
WEBUI_PYTHON_TEXT = "欢迎使用 CosyVoice WebUI，一路发发发！"


def seed_speakers() -> None:
    """The speaker table as migration 0011 fills it (these tests' transactions empty every table)."""
    from importlib import import_module

    from django.apps import apps

    import_module("tts.migrations.0011_reference_speakers").add_default_speakers(apps, None)


def test_the_articles_requests_as_printed(live_server_url: str, kokoro_dir: str) -> None:
    """CosyVoice WebUI's curl (streamed 16 kHz WAV) and its Python client, CosyVoice Lite's curl (base64
    WAV in JSON): Chinese text, the articles' speaker names, answered by the voices the table maps them to."""
    seed_speakers()
    make_joe()
    make_kokoro(kokoro_dir)
    ctx = make_tenant("cosy-articles")
    headers = {"Content-Type": "application/json", "xi-api-key": ctx.key}

    with requests.post(
        f"{live_server_url}/api/tts", data=WEBUI_CURL_BODY.encode(), headers=headers, stream=True, timeout=180
    ) as streamed:
        assert streamed.status_code == 200, streamed.text
        assert streamed.headers.get("Transfer-Encoding") == "chunked"
        data = b"".join(p for p in streamed.iter_content(chunk_size=None) if p)
    assert wav_info(data) == (16000, 2, 1)
    samples, rate = decode_audio(data, "wav_16000")
    assert_speech(samples, rate, expected_rate=16000, text="你好，这是一条测试语音。", ms_per_char=230, tolerance=0.6)

    # The WebUI article's Python client: {"text": TEXT, "speaker": SPEAKER, "streaming": False}
    whole = requests.post(
        f"{live_server_url}/api/tts",
        json={"text": WEBUI_PYTHON_TEXT, "speaker": "xiaoyu", "streaming": False},
        headers={"xi-api-key": ctx.key},
        timeout=180,
    )
    assert whole.status_code == 200 and whole.headers["Content-Type"] == "audio/wav"
    samples, rate = decode_audio(whole.content, "wav_16000")
    assert_speech(samples, rate, expected_rate=16000)

    lite = requests.post(f"{live_server_url}/tts", data=LITE_CURL_BODY.encode(), headers=headers, timeout=180)
    assert lite.status_code == 200, lite.text
    body = lite.json()
    assert body["status"] == "success" and body["sample_rate"] == 24000
    samples, rate = decode_audio(base64.b64decode(body["audio"]), "wav_24000")
    assert_speech(samples, rate, expected_rate=24000, text="欢迎使用轻量级语音合成服务", ms_per_char=230, tolerance=0.6)
    assert body["duration"] == pytest.approx(len(samples) / rate, abs=0.05)

    records = SynthesisRecord.objects.filter(tenant=ctx.tenant).order_by("created_at")
    assert [r.voice_id for r in records] == ["zf_xiaoyi", "zf_xiaoyi", "zm_yunxi"]
    assert {r.status for r in records} == {"success"}


def test_a_speaker_without_a_voice_is_a_400_that_lists_the_speakers(live_server_url: str, kokoro_dir: str) -> None:
    seed_speakers()
    make_joe()
    make_kokoro(kokoro_dir)
    ctx = make_tenant("cosy-speakers")
    for url in (f"{live_server_url}/api/tts", f"{live_server_url}/tts"):
        for speaker in ("粤语女", "韩语女", "nobody_07"):
            r = requests.post(
                url, json={"text": "你好", "speaker": speaker}, headers={"xi-api-key": ctx.key}, timeout=30
            )
            assert r.status_code == 400, r.text
            detail = r.json()["detail"]
            assert f"Speaker '{speaker}'" in detail and "Speakers available:" in detail
            assert all(
                name in detail for name in ("中文女", "中文男", "英文女", "英文男", "日语男", "xiaoyu", "male_01")
            )
            assert "粤语女" not in detail.split("Speakers available:")[1]
    # language is honoured: an English CosyVoice speaker reading English, a Chinese one told "en"
    r = requests.post(
        f"{live_server_url}/tts",
        json={"text": "Hello there.", "speaker": "英文女", "language": "en"},
        headers={"xi-api-key": ctx.key},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    assert SynthesisRecord.objects.get(tenant=ctx.tenant).voice_id == "af_heart"
    assert Usage.objects.get(tenant=ctx.tenant).characters == len("Hello there.")  # the 400s billed nothing
