"""GET /v1/voices, /v1/models, /v1/user/subscription in ElevenLabs' shapes."""

from __future__ import annotations

from tests.fixtures import TenantCtx
from tts.catalogue import ELEVENLABS_MODELS
from tts.models import ModelVersion, Voice
from tts.synthesis.stages.resolve import FOREIGN_MODEL_PREFIXES


def test_it_lists_voices(tenant_a: TenantCtx, joe: Voice) -> None:
    voices = tenant_a.client().get("/v1/voices").json()["voices"]
    assert [v["voice_id"] for v in voices] == ["joe"]
    assert voices[0]["category"] == "premade" and voices[0]["labels"]["language"] == "en"
    detail = tenant_a.client().get("/v1/voices/joe").json()
    assert detail["name"] == "Joe" and detail["high_quality_base_model_ids"] == ["en_US-joe-medium"]


def test_it_lists_active_models_only(tenant_a: TenantCtx, joe: Voice) -> None:
    ModelVersion.objects.create(
        model_id="draft-model", version="1", model_path="x", config_path="y", sha256="0", sample_rate=16000
    )
    models = tenant_a.client().get("/v1/models").json()
    assert [m["model_id"] for m in models if not m["model_id"].startswith("eleven_")] == ["en_US-joe-medium"]
    assert models[0]["can_do_text_to_speech"] is True
    assert models[0]["languages"] == [{"language_id": "en", "name": "English"}]
    assert models[0]["maximum_text_length_per_request"] == 5000
    assert models[0]["served_by"] == ["en_US-joe-medium"] and models[0]["engine"]


def test_it_lists_the_elevenlabs_ids_it_accepts_mapped_to_its_models(
    tenant_a: TenantCtx, joe: Voice, kokoro: Voice
) -> None:
    models = {m["model_id"]: m for m in tenant_a.client().get("/v1/models").json()}
    assert list(models)[:2] == ["en_US-joe-medium", "kokoro-82m-ja"]  # the platform's own first
    kokoro_languages = models["kokoro-82m-ja"]["languages"]
    for alias in ("eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2_5", "eleven_v3"):
        entry = models[alias]
        assert entry["can_do_text_to_speech"] is True and entry["can_do_voice_conversion"] is False
        assert entry["served_by"] == ["en_US-joe-medium", "kokoro-82m-ja"]
        assert entry["languages"][0] == {"language_id": "en", "name": "English"}
        assert {lang["language_id"] for lang in entry["languages"]} == {
            "en",
            *(lang["language_id"] for lang in kokoro_languages),
        }
        assert entry["maximum_text_length_per_request"] == 5000
        assert "en_US-joe-medium" in entry["description"]
    assert models["eleven_flash_v2_5"]["name"] == "Eleven Flash v2.5"
    listed = [model_id for model_id in models if model_id.startswith("eleven_")]
    assert listed == [model_id for model_id, _ in ELEVENLABS_MODELS]
    assert all(model_id.startswith(FOREIGN_MODEL_PREFIXES) for model_id in listed)  # each one is accepted
    # What the list offers is what a request may name: each voice speaks it with its own model.
    client = tenant_a.client()
    for voice_id in ("joe", kokoro.voice_id):
        spoken = client.post(
            f"/v1/text-to-speech/{voice_id}?output_format=pcm_16000",
            {"text": "Hello there.", "model_id": "eleven_flash_v2_5"},
            format="json",
        )
        assert spoken.status_code == 200 and len(spoken.content) > 16000, voice_id


def test_it_lists_no_elevenlabs_ids_when_no_model_serves_them(tenant_a: TenantCtx, joe: Voice) -> None:
    ModelVersion.objects.update(status=ModelVersion.Status.RETIRED)
    assert tenant_a.client().get("/v1/models").json() == []


def test_it_lists_only_models_whose_voices_the_tenant_may_use(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, django_assert_max_num_queries
) -> None:
    def private_model(model_id: str, owner: TenantCtx) -> None:
        ModelVersion.objects.create(
            model_id=model_id,
            version="1",
            model_path="x",
            config_path="y",
            sha256="0",
            sample_rate=22050,
            status=ModelVersion.Status.ACTIVE,
        )
        Voice.objects.create(
            voice_id=f"{model_id}-voice", name=model_id, language="en", model_id=model_id, tenant=owner.tenant
        )

    private_model("alpha-secret-model", tenant_a)
    private_model("beta-secret-model", tenant_b)
    # Active, but no voice at all uses it: nobody can speak with it.
    ModelVersion.objects.create(
        model_id="orphan-model",
        version="1",
        model_path="x",
        config_path="y",
        sha256="0",
        sample_rate=22050,
        status=ModelVersion.Status.ACTIVE,
    )
    with django_assert_max_num_queries(4):
        models_a = tenant_a.client().get("/v1/models").json()
    models_b = tenant_b.client().get("/v1/models").json()
    assert [m["model_id"] for m in models_a][:2] == ["alpha-secret-model", "en_US-joe-medium"]
    assert [m["model_id"] for m in models_b][:2] == ["beta-secret-model", "en_US-joe-medium"]
    # The ElevenLabs ids after them name only the tenant's own models.
    assert {tuple(m["served_by"]) for m in models_a[2:]} == {("alpha-secret-model", "en_US-joe-medium")}
    assert {tuple(m["served_by"]) for m in models_b[2:]} == {("beta-secret-model", "en_US-joe-medium")}
    assert not any("beta" in str(m) for m in models_a)


def test_it_reports_the_subscription(tenant_a: TenantCtx, joe: Voice) -> None:
    tenant_a.client().post("/v1/text-to-speech/joe", {"text": "Count me."}, format="json")
    sub = tenant_a.client().get("/v1/user/subscription").json()
    assert sub["character_count"] == len("Count me.")
    assert sub["character_limit"] == 100_000
    assert sub["next_character_count_reset_unix"] > 0
    assert sub["tier"] == "plan-alpha"
    user = tenant_a.client().get("/v1/user").json()
    assert user["subscription"]["character_count"] == len("Count me.")


def test_voices_no_active_version_serves_are_not_listed(tenant_a: TenantCtx, joe: Voice) -> None:
    Voice.objects.create(voice_id="orphan", name="Aaron Orphan", language="en", model_id="no-such-model")
    client = tenant_a.client()
    assert [v["voice_id"] for v in client.get("/v1/voices").json()["voices"]] == ["joe"]
    ModelVersion.objects.filter(model_id=joe.model_id).update(status=ModelVersion.Status.RETIRED)
    assert client.get("/v1/voices").json() == {"voices": [], "has_more": False, "total_count": 0}
    assert client.get("/v1/voices?language=en").json()["voices"] == []
    # Asked for by id it is still there, and speaking with it says why it cannot.
    assert client.get("/v1/voices/joe").status_code == 200
    spoken = client.post("/v1/text-to-speech/joe", {"text": "Hello."}, format="json")
    assert spoken.status_code == 503 and spoken.json()["detail"]["status"] == "model_unavailable"
    ModelVersion.objects.filter(model_id=joe.model_id).update(status=ModelVersion.Status.ACTIVE)
    assert [v["voice_id"] for v in client.get("/v1/voices").json()["voices"]] == ["joe"]
