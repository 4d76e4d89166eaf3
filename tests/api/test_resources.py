"""GET /v1/voices, /v1/models, /v1/user/subscription in ElevenLabs' shapes."""

from __future__ import annotations

from tests.fixtures import TenantCtx
from tts.models import ModelVersion, Voice


def test_it_lists_voices(tenant_a: TenantCtx, joe: Voice) -> None:
    voices = tenant_a.client().get("/v1/voices").json()["voices"]
    assert [v["voice_id"] for v in voices] == ["joe"]
    assert voices[0]["category"] == "premade" and voices[0]["labels"]["language"] == "en"
    detail = tenant_a.client().get("/v1/voices/joe").json()
    assert detail["name"] == "Joe" and detail["high_quality_base_model_ids"] == ["en_US-joe-medium"]


def test_it_lists_active_models_only(tenant_a: TenantCtx, joe: Voice) -> None:
    ModelVersion.objects.create(model_id="draft-model", version="1", model_path="x", config_path="y", sha256="0",
                                sample_rate=16000)
    models = tenant_a.client().get("/v1/models").json()
    assert [m["model_id"] for m in models] == ["en_US-joe-medium"]
    assert models[0]["can_do_text_to_speech"] is True
    assert models[0]["languages"] == [{"language_id": "en", "name": "English"}]
    assert models[0]["maximum_text_length_per_request"] == 5000


def test_it_lists_only_models_whose_voices_the_tenant_may_use(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, django_assert_max_num_queries
) -> None:
    def private_model(model_id: str, owner: TenantCtx) -> None:
        ModelVersion.objects.create(model_id=model_id, version="1", model_path="x", config_path="y", sha256="0",
                                    sample_rate=22050, status=ModelVersion.Status.ACTIVE)
        Voice.objects.create(voice_id=f"{model_id}-voice", name=model_id, language="en", model_id=model_id,
                             tenant=owner.tenant)

    private_model("alpha-secret-model", tenant_a)
    private_model("beta-secret-model", tenant_b)
    # Active, but no voice at all uses it: nobody can speak with it.
    ModelVersion.objects.create(model_id="orphan-model", version="1", model_path="x", config_path="y", sha256="0",
                                sample_rate=22050, status=ModelVersion.Status.ACTIVE)
    with django_assert_max_num_queries(4):
        seen_a = [m["model_id"] for m in tenant_a.client().get("/v1/models").json()]
    seen_b = [m["model_id"] for m in tenant_b.client().get("/v1/models").json()]
    assert seen_a == ["alpha-secret-model", "en_US-joe-medium"]
    assert seen_b == ["beta-secret-model", "en_US-joe-medium"]


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
