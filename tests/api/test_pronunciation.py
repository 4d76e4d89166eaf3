"""Pronunciation dictionaries over HTTP: isolation, limits, versions in the cache key, OpenAI-route defaults."""

from __future__ import annotations

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import PronunciationDictionary, SynthesisRecord, Voice

TEXT = "The UN met today."
URL = "/v1/text-to-speech/joe?output_format=pcm_16000"
ALIAS = {"type": "alias", "string_to_replace": "UN", "alias": "United Nations General Assembly"}


def _create(ctx: TenantCtx, rules: list[dict[str, object]], name: str = "d") -> dict[str, object]:
    response = ctx.client().post(
        "/v1/pronunciation-dictionaries/add-from-rules", {"name": name, "rules": rules}, format="json"
    )
    assert response.status_code == 200, response.content
    return dict(response.json())


def _seconds(content: bytes, rate: int | None = 16000, fmt: str = "pcm_16000") -> float:
    samples, got = decode_audio(content, fmt)
    assert_speech(samples, got, expected_rate=rate)
    return len(samples) / got


def test_another_tenants_dictionary_and_too_many_locators_are_refused(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice
) -> None:
    theirs = _create(tenant_b, [ALIAS])
    response = tenant_a.client().post(
        URL,
        {"text": TEXT, "pronunciation_dictionary_locators": [{"pronunciation_dictionary_id": theirs["id"]}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["detail"]["param"] == "pronunciation_dictionary_locators"
    assert tenant_a.client().get(f"/v1/pronunciation-dictionaries/{theirs['id']}").status_code == 404
    mine = [_create(tenant_a, [ALIAS], name=str(n)) for n in range(4)]
    locators = [{"pronunciation_dictionary_id": d["id"]} for d in mine]
    response = tenant_a.client().post(URL, {"text": TEXT, "pronunciation_dictionary_locators": locators}, format="json")
    assert response.status_code == 400 and response.json()["detail"]["status"] == "too_many_dictionaries"
    assert not SynthesisRecord.objects.filter(tenant=tenant_a.tenant).exists()


def test_a_new_version_is_a_new_cache_entry(tenant_a: TenantCtx, joe: Voice) -> None:
    d = _create(tenant_a, [ALIAS])
    body = {"text": TEXT, "seed": 1, "pronunciation_dictionary_locators": [{"pronunciation_dictionary_id": d["id"]}]}
    first = tenant_a.client().post(URL, body, format="json")
    again = tenant_a.client().post(URL, body, format="json")
    assert (first["x-cache"], again["x-cache"]) == ("miss", "hit")
    changed = tenant_a.client().post(
        f"/v1/pronunciation-dictionaries/{d['id']}/set-rules",
        {"rules": [{**ALIAS, "alias": "United Nations"}]},
        format="json",
    )
    assert changed.status_code == 200 and changed.json()["version_id"] != d["version_id"]
    after = tenant_a.client().post(URL, body, format="json")
    assert after["x-cache"] == "miss"
    assert _seconds(after.content) < _seconds(first.content)
    record = SynthesisRecord.objects.get(pk=after["history-item-id"])
    assert record.settings["pronunciation_dictionary_locators"][0]["version_id"] == changed.json()["version_id"]
    pinned = {
        **body,
        "pronunciation_dictionary_locators": [{"pronunciation_dictionary_id": d["id"], "version_id": d["version_id"]}],
    }
    assert tenant_a.client().post(URL, pinned, format="json")["x-cache"] == "hit"  # the old version, still cached


def test_default_dictionaries_apply_to_the_openai_route(tenant_a: TenantCtx, joe: Voice) -> None:
    body = {"model": "tts-1", "voice": "joe", "input": TEXT, "response_format": "wav"}
    client = tenant_a.client()
    plain = client.post("/v1/audio/speech", body, format="json")
    d = _create(tenant_a, [ALIAS])
    made = PronunciationDictionary.objects.get(dictionary_id=d["id"])
    made.is_default = True
    made.save()  # as the admin does: the cached "no defaults" of this tenant is forgotten
    aliased = client.post("/v1/audio/speech", body, format="json")
    assert plain.status_code == aliased.status_code == 200
    assert _seconds(aliased.content, None, "wav") > _seconds(plain.content, None, "wav") + 0.5
