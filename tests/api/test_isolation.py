"""Tenant isolation: a second tenant gets 404 for the first tenant's items, audio and private voices."""

from __future__ import annotations

import pytest

from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice


@pytest.fixture
def a_item(tenant_a: TenantCtx, joe: Voice) -> str:
    response = tenant_a.client().post("/v1/text-to-speech/joe", {"text": "Only for alpha."}, format="json")
    assert response.status_code == 200
    return response["history-item-id"]


@pytest.fixture
def a_private_voice(tenant_a: TenantCtx, joe: Voice) -> Voice:
    return Voice.objects.create(voice_id="alpha-joe", name="Alpha Joe", model_id=joe.model_id, tenant=tenant_a.tenant)


def test_it_hides_history_items(tenant_a: TenantCtx, tenant_b: TenantCtx, a_item: str) -> None:
    b = tenant_b.client()
    assert b.get(f"/v1/history/{a_item}").status_code == 404
    assert b.get(f"/v1/history/{a_item}/audio").status_code == 404
    assert b.delete(f"/v1/history/{a_item}").status_code == 404
    assert b.post("/v1/history/download", {"history_item_ids": [a_item]}, format="json").status_code == 404
    assert b.get("/v1/history").json()["history"] == []
    assert b.get(f"/v1/history?start_after_history_item_id={a_item}").status_code == 400
    assert SynthesisRecord.objects.filter(pk=a_item).exists()


def test_it_hides_private_voices(tenant_a: TenantCtx, tenant_b: TenantCtx, a_private_voice: Voice) -> None:
    a, b = tenant_a.client(), tenant_b.client()
    assert a.get("/v1/voices/alpha-joe").status_code == 200
    assert b.get("/v1/voices/alpha-joe").status_code == 404
    assert "alpha-joe" not in [v["voice_id"] for v in b.get("/v1/voices").json()["voices"]]
    assert "alpha-joe" in [v["voice_id"] for v in a.get("/v1/voices").json()["voices"]]
    response = b.post("/v1/text-to-speech/alpha-joe", {"text": "Hi"}, format="json")
    assert response.status_code == 404
    response = b.post("/v1/audio/speech", {"model": "tts-1", "input": "Hi", "voice": "alpha-joe"}, format="json")
    assert response.status_code == 404
    response = a.post("/v1/text-to-speech/alpha-joe?output_format=pcm_16000", {"text": "Hi there."}, format="json")
    assert response.status_code == 200


def test_it_keeps_usage_apart(tenant_a: TenantCtx, tenant_b: TenantCtx, a_item: str) -> None:
    assert tenant_a.client().get("/v1/user/subscription").json()["character_count"] == len("Only for alpha.")
    assert tenant_b.client().get("/v1/user/subscription").json()["character_count"] == 0
