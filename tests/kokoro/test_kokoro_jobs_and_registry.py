"""A Japanese voice in a long-form job and in captions; the registry warms, reloads and unloads
Kokoro like any engine."""

from __future__ import annotations

from pathlib import Path

from django.test import TestCase

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.jobs.conftest import dispatched  # noqa: F401  (fixture)
from tts.inference.engine import ModelSpec
from tts.inference.kokoro_model import package_sha256
from tts.inference.registry import EngineRegistry
from tts.jobs.runner import job_run
from tts.models import Job, Voice

TEXT = "今日は晴れです。公園を歩きます。"


def test_a_job_speaks_japanese(tenant_a: TenantCtx, kokoro: Voice, dispatched: list) -> None:  # noqa: F811
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = tenant_a.client().post(
            "/v1/jobs", {"voice_id": "jf_alpha", "text": TEXT, "output_format": "wav_24000"}, format="json"
        )
    assert response.status_code == 202, response.content
    job_id = response.json()["job_id"]
    assert job_run(job_id) == "succeeded"
    audio = tenant_a.client().get(f"/v1/jobs/{job_id}/audio")
    samples, rate = decode_audio(b"".join(audio.streaming_content), "wav_24000")
    assert_speech(samples, rate, expected_rate=24000)
    job = Job.objects.get(pk=job_id)
    assert job.history_item is not None and job.history_item.voice_id == "jf_alpha"


def test_captions_follow_the_japanese_text(tenant_a: TenantCtx, kokoro: Voice) -> None:
    client = tenant_a.client()
    response = client.post(
        "/v1/text-to-speech/jf_alpha/with-timestamps?output_format=pcm_24000", {"text": TEXT}, format="json"
    )
    assert response.status_code == 200, response.content
    item = response["history-item-id"]
    vtt = client.get(f"/v1/history/{item}/captions?format=vtt")
    assert vtt.status_code == 200
    body = vtt.content.decode()
    assert body.startswith("WEBVTT") and "今日は晴れです。" in body and "公園を歩きます。" in body


def test_the_registry_warms_and_unloads_kokoro(kokoro_dir: str) -> None:
    sha = package_sha256()
    spec = ModelSpec(
        id=7,
        engine="kokoro-onnx",
        model_path=str(Path(kokoro_dir) / f"kokoro-{sha}.onnx"),
        config_path=str(Path(kokoro_dir) / f"kokoro-{sha}.json"),
        sha256=sha,
    )
    registry = EngineRegistry({"kokoro-onnx": "tts.inference.kokoro_onnx.KokoroOnnxEngine"})
    registry.warm(spec)  # the registry's own English warm-up text goes through the Japanese front end
    assert registry.is_warm(spec)
    assert registry.unload_idle(0.0) == [7]
    assert registry.loaded_specs() == []
