"""The audio cache: a hit is the same audio without the engine, still billed and in the history;
tenants, formats and model versions never share an entry they should not."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, second_version
from tests.limits.conftest import EngineCalls
from tts.audio.formats import parse_elevenlabs_format
from tts.models import ModelVersion, SynthesisRecord, Voice
from tts.synthesis import SynthesisRequest, segments_for
from tts.synthesis.cache.audio import AudioCache, CachedAudio, audio_cache, audio_cache_key

TEXT = "The lighthouse keeper climbed the stairs. The lamp was already warm."
URL = "/v1/text-to-speech/joe"


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def post(ctx: TenantCtx, text: str = TEXT, fmt: str = "mp3_44100_128", **body: object) -> Any:
    return ctx.client().post(f"{URL}?output_format={fmt}", {"text": text, **body}, format="json")


def test_it_serves_a_hit_with_identical_bytes_without_the_engine(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    first = post(tenant_a)
    assert first.status_code == 200, first.content
    assert first["x-cache"] == "miss"
    synthesized = engine_calls.count
    assert synthesized > 0

    second = post(tenant_a)
    assert second.status_code == 200
    assert second["x-cache"] == "hit"
    assert engine_calls.count == synthesized
    assert second.content == first.content
    samples, rate = decode_audio(second.content, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=TEXT)

    # Billed and recorded like a synthesis, marked as a hit, with the audio it sent.
    miss_record = SynthesisRecord.objects.get(pk=first["history-item-id"])
    hit_record = SynthesisRecord.objects.get(pk=second["history-item-id"])
    assert (miss_record.cache_hit, hit_record.cache_hit) == (False, True)
    assert hit_record.status == "success"
    assert hit_record.characters == len(TEXT)
    assert hit_record.sample_rate == 44100
    assert hit_record.duration_s == pytest.approx(miss_record.duration_s, abs=0.01)
    assert hit_record.audio.read() == second.content
    assert spent(tenant_a) == 2 * len(TEXT)


def test_it_keeps_exact_lengths_in_a_cached_wav(tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls) -> None:
    first = post(tenant_a, fmt="wav_22050")
    second = post(tenant_a, fmt="wav_22050")
    assert second["x-cache"] == "hit"
    assert second.content == first.content
    samples, rate = decode_audio(second.content, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert int.from_bytes(second.content[40:44], "little") == len(second.content) - 44


def test_it_does_not_share_entries_between_tenants(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    assert post(tenant_a)["x-cache"] == "miss"
    before = engine_calls.count
    response = post(tenant_b)
    assert response.status_code == 200
    assert response["x-cache"] == "miss"
    assert engine_calls.count > before
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.tenant == tenant_b.tenant and not record.cache_hit


def test_it_shares_entries_of_shared_voices_when_configured(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, engine_calls: EngineCalls, settings: object
) -> None:
    settings.TTS_AUDIO_CACHE_SHARE_SHARED_VOICES = True  # type: ignore[attr-defined]
    first = post(tenant_a)
    before = engine_calls.count
    second = post(tenant_b)
    assert second["x-cache"] == "hit"
    assert engine_calls.count == before
    assert second.content == first.content
    # Each tenant still pays for what it asked for.
    assert spent(tenant_a) == spent(tenant_b) == len(TEXT)


def test_it_misses_after_another_model_version_is_activated(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    assert post(tenant_a)["x-cache"] == "miss"
    old = ModelVersion.objects.get(model_id=joe.model_id, status="active")
    old.status = ModelVersion.Status.RETIRED
    old.save()
    new = second_version(old, status=ModelVersion.Status.ACTIVE, activated_at=timezone.now())
    before = engine_calls.count
    response = post(tenant_a)
    assert response.status_code == 200
    assert response["x-cache"] == "miss"
    assert engine_calls.count > before
    assert SynthesisRecord.objects.get(pk=response["history-item-id"]).model_version == new
    assert post(tenant_a)["x-cache"] == "hit"


@pytest.mark.parametrize(
    ("change", "body"),
    [
        pytest.param("fmt", {}, id="format"),
        pytest.param("speed", {"voice_settings": {"speed": 1.3}}, id="speed"),
        # Beside an ignored setting, the speed still splits the key.
        pytest.param("speed", {"voice_settings": {"speed": 1.3, "style": 0.9}}, id="speed-beside-ignored"),
        # Piper draws noise: stability (away from 0.5) and a seed reach its engine.
        pytest.param("stability", {"voice_settings": {"stability": 0.9}}, id="stability-on-piper"),
        pytest.param("seed", {"seed": 7}, id="seed-on-piper"),
        pytest.param("text", {}, id="text"),
    ],
)
def test_it_misses_when_anything_that_changes_the_audio_differs(
    tenant_a: TenantCtx, joe: Voice, change: str, body: dict
) -> None:
    post(tenant_a, fmt="pcm_16000")
    fmt = "pcm_24000" if change == "fmt" else "pcm_16000"
    text = TEXT + " Then it rained." if change == "text" else TEXT
    response = post(tenant_a, text=text, fmt=fmt, **body)
    assert response.status_code == 200
    assert response["x-cache"] == "miss"


@pytest.mark.parametrize(
    "ignored",
    [
        pytest.param({"similarity_boost": 0.1}, id="similarity_boost"),
        pytest.param({"style": 0.9}, id="style"),
        pytest.param({"use_speaker_boost": True}, id="use_speaker_boost"),
        pytest.param({"stability": 0.5}, id="stability-at-the-voices-own-noise"),
        pytest.param({"similarity_boost": 1.0, "style": 0.0, "use_speaker_boost": False}, id="every-ignored-setting"),
    ],
)
def test_it_hits_when_only_a_setting_the_engine_ignores_differs(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls, ignored: dict[str, object]
) -> None:
    first = post(tenant_a, fmt="pcm_16000", voice_settings={"speed": 1.1})
    assert first.status_code == 200, first.content
    assert first["x-cache"] == "miss"
    made = engine_calls.count
    second = post(tenant_a, fmt="pcm_16000", voice_settings={"speed": 1.1, **ignored})
    assert second.status_code == 200, second.content
    assert second["x-cache"] == "hit"
    assert engine_calls.count == made
    assert second.content == first.content
    # The record still says what was asked.
    record = SynthesisRecord.objects.get(pk=second["history-item-id"])
    assert record.cache_hit and record.settings == {"speed": 1.1, **ignored}


def test_its_key_leaves_out_the_noise_knobs_of_an_engine_that_draws_none(tenant_a: TenantCtx, joe: Voice) -> None:
    """Kokoro draws no noise: a seed and stability reach nothing, so they split no entry; on Piper
    they do."""
    fmt = parse_elevenlabs_format("pcm_24000")
    piper = ModelVersion.objects.get(model_id=joe.model_id, status="active")
    kokoro = second_version(piper, engine=ModelVersion.Engine.KOKORO_ONNX)

    def key(version: ModelVersion, **fields: Any) -> str | None:
        req = SynthesisRequest(tenant=tenant_a.tenant, voice_id="joe", text=TEXT, output_format=fmt, source="api")
        req = dataclasses.replace(req, **fields)
        return audio_cache_key(
            req, voice=joe, model_version=version, segments=segments_for(TEXT, language="en", normalization="auto")
        )

    plain: dict[str, Any] = {}
    noisy: dict[str, Any] = {"seed": 7, "settings": {"stability": 0.9}}
    assert key(kokoro, **plain) == key(kokoro, **noisy) is not None
    assert key(piper, **plain) != key(piper, **noisy)
    assert key(kokoro, speed=1.3) != key(kokoro)  # speed reaches every engine
    # At stability 1.0 Piper has no noise left: the seed changes nothing (tests/api/test_seed.py).
    steady = {"settings": {"stability": 1.0}}
    assert key(piper, seed=1, **steady) == key(piper, seed=2, **steady) != key(piper, seed=1)


def test_it_keeps_no_cached_copy_of_requests_without_logging(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    url = f"{URL}?output_format=pcm_16000&enable_logging=false"
    client = tenant_a.client()
    assert client.post(url, {"text": TEXT}, format="json")["x-cache"] == "miss"
    assert client.post(url, {"text": TEXT}, format="json")["x-cache"] == "miss"


def test_it_says_hit_or_miss_on_the_openai_route(tenant_a: TenantCtx, joe: Voice) -> None:
    body = {"model": "tts-1", "input": TEXT, "voice": "alloy", "response_format": "flac"}
    first = tenant_a.client().post("/v1/audio/speech", body, format="json")
    second = tenant_a.client().post("/v1/audio/speech", body, format="json")
    assert (first["x-cache"], second["x-cache"]) == ("miss", "hit")
    assert second.content == first.content
    samples, rate = decode_audio(second.content, "flac")
    assert_speech(samples, rate, text=TEXT)


def test_it_streams_a_hit(tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls) -> None:
    whole = post(tenant_a, fmt="pcm_16000")
    before = engine_calls.count
    stream: Any = tenant_a.client().post(f"{URL}/stream?output_format=pcm_16000", {"text": TEXT}, format="json")
    assert stream.status_code == 200
    assert b"".join(stream.streaming_content) == whole.content
    assert engine_calls.count == before
    record = SynthesisRecord.objects.filter(tenant=tenant_a.tenant).order_by("-created_at").first()
    assert record is not None and record.cache_hit and record.status == "success"


@pytest.mark.redis
def test_it_finds_entries_of_other_processes_in_redis(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    first = post(tenant_a, fmt="opus_48000_64")
    audio_cache.clear_local()  # what another process sees: nothing in its own L1
    before = engine_calls.count
    second = post(tenant_a, fmt="opus_48000_64")
    assert second["x-cache"] == "hit"
    assert engine_calls.count == before
    assert second.content == first.content


def test_it_evicts_the_least_recently_used_entries_past_its_byte_bound(settings: object) -> None:
    settings.TTS_AUDIO_CACHE_L1_BYTES = 4000  # type: ignore[attr-defined]
    settings.REDIS_URL = ""  # type: ignore[attr-defined]  # L1 only
    cache = AudioCache()
    fmt = parse_elevenlabs_format("pcm_16000")
    for name in "abcd":
        cache.put(name, CachedAudio(name.encode() * 1000, fmt, 0.03))
    cache.get("a")  # recently used: kept
    cache.put("e", CachedAudio(b"e" * 1000, fmt, 0.03))
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("e") is not None
    cache.put("huge", CachedAudio(b"x" * 3000, fmt, 0.1))  # too large a share of the bound
    assert cache.get("huge") is None
