"""Pronunciation dictionaries as a hostile tenant writes them: one pass (no chains), the spoken
text bounded while applying, string lengths capped (rules API and PLS), rules compiled once per
version, admission before any dictionary work, per-tenant bounds, pruning and a write rate.
Each refusal: its status and field, nothing billed, no row left behind, and its CPU time."""

from __future__ import annotations

import asyncio
import io
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts import ratelimit
from accounts.models import Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.audio.formats import parse_elevenlabs_format
from tts.errors import SynthesisError
from tts.models import (
    PronunciationDictionary,
    PronunciationDictionaryUse,
    PronunciationDictionaryVersion,
    SynthesisRecord,
    Voice,
)
from tts.pronunciation import apply as pronunciation_apply
from tts.synthesis.live.streaming import LiveUtterance
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.pipeline import synthesis_prepare
from tts.text.lexicon import Rule, to_pls
from tts.text.lexicon_match import CompiledRules

pytestmark = pytest.mark.django_db

URL = "/v1/text-to-speech/joe?output_format=pcm_16000"
LOCATORS = "pronunciation_dictionary_locators"
#: Issue #24's chain: 5 rules in 468 bytes that, applied one after another, made "w0" 300,000 characters.
CHAIN = [{"type": "alias", "string_to_replace": f"w{k}", "alias": " ".join([f"w{k + 1}"] * 10)} for k in range(5)]


@pytest.fixture(autouse=True)
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rule sets compiled in this test (their sizes), with a cold cache."""
    pronunciation_apply.clear_compiled_rules()
    made: list[int] = []

    class Counting(CompiledRules):
        def __init__(self, rules: Any) -> None:
            super().__init__(rules)
            made.append(len(self.rules))

    monkeypatch.setattr(pronunciation_apply, "CompiledRules", Counting)
    return made


def create(ctx: TenantCtx, rules: list[dict[str, Any]], name: str = "d") -> dict[str, Any]:
    response = ctx.client().post(
        "/v1/pronunciation-dictionaries/add-from-rules", {"name": name, "rules": rules}, format="json"
    )
    assert response.status_code == 200, response.content
    return dict(response.json())


def locate(*made: dict[str, Any]) -> list[dict[str, str]]:
    return [{"pronunciation_dictionary_id": d["id"]} for d in made]


def nothing_billed(ctx: TenantCtx) -> None:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    assert usage is None or usage.characters == 0
    assert not SynthesisRecord.objects.filter(tenant=ctx.tenant).exists()
    assert not PronunciationDictionaryUse.objects.exists()


def cpu(call: Callable[[], Any]) -> tuple[Any, float]:
    """The result and the CPU seconds of this thread (the test client runs the view here)."""
    started = time.thread_time()
    out = call()
    return out, time.thread_time() - started


def test_a_chain_of_aliases_is_applied_once(tenant_a: TenantCtx, joe: Voice) -> None:
    d = create(tenant_a, CHAIN)
    response = tenant_a.client().post(URL, {"text": "w0", LOCATORS: locate(d)}, format="json")
    assert response.status_code == 200, response.content
    samples, rate = decode_audio(response.content, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000)
    assert len(samples) / rate < 15  # ten "w1", not 100,000 "w5"
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    # Billed for what it speaks (ten "w1", 29 characters), not for the 2 it sent: no request costs
    # more than it bills (docs/limits.md, the cost rule).
    assert record.characters == len(" ".join(["w1"] * 10)) == 29 and record.text == "w0"
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 29


def test_a_text_that_would_grow_past_the_bound_is_a_413_naming_the_dictionary(tenant_a: TenantCtx, joe: Voice) -> None:
    d = create(tenant_a, [{"type": "alias", "string_to_replace": "w0", "alias": "x" * 400}], name="wide")
    text = " ".join(["w0"] * 500)  # 1,499 characters that would become 200,499
    response, seconds = cpu(lambda: tenant_a.client().post(URL, {"text": text, LOCATORS: locate(d)}, format="json"))
    assert response.status_code == 413
    detail = response.json()["detail"]
    assert detail["status"] == "pronunciation_dictionary_expansion_exceeded"
    assert detail["param"] == LOCATORS
    assert d["id"] in detail["message"] and "'wide'" in detail["message"] and "5000 characters" in detail["message"]
    assert seconds < 0.5, seconds  # stopped at the bound, not after building 200,000 characters
    nothing_billed(tenant_a)


def test_a_default_dictionary_past_the_bound_names_the_openai_input(tenant_a: TenantCtx, joe: Voice) -> None:
    d = create(tenant_a, [{"type": "alias", "string_to_replace": "w0", "alias": "x" * 400}])
    PronunciationDictionary.objects.filter(dictionary_id=d["id"]).update(is_default=True)
    body = {"model": "tts-1", "voice": "joe", "input": "w0 " * 20, "response_format": "wav"}
    response = tenant_a.client().post("/v1/audio/speech", body, format="json")
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "pronunciation_dictionary_expansion_exceeded" and error["param"] == "input"
    assert error["type"] == "invalid_request_error" and "default" in error["message"]
    nothing_billed(tenant_a)


def test_rule_lengths_are_capped_in_the_rules_api(tenant_a: TenantCtx, settings: Any) -> None:
    client = tenant_a.client()
    long_alias = [{"type": "alias", "string_to_replace": "UN", "alias": "x" * 501}]
    response = client.post(
        "/v1/pronunciation-dictionaries/add-from-rules", {"name": "d", "rules": long_alias}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["detail"]["param"] == "rules[0].alias"
    d = create(tenant_a, [{"type": "alias", "string_to_replace": "UN", "alias": "United Nations"}])
    rules = [
        {"type": "alias", "string_to_replace": "ok", "alias": "fine"},
        {"type": "phoneme", "string_to_replace": "x" * 101, "phoneme": "a"},
    ]
    response = client.post(f"/v1/pronunciation-dictionaries/{d['id']}/add-rules", {"rules": rules}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"]["param"] == "rules[1].string_to_replace"
    settings.TTS_DICTIONARY_MAX_PHONEME_CHARS = 10
    rules = [{"type": "phoneme", "string_to_replace": "y", "phoneme": "a" * 11}]
    response = client.post(f"/v1/pronunciation-dictionaries/{d['id']}/set-rules", {"rules": rules}, format="json")
    assert response.status_code == 400 and response.json()["detail"]["param"] == "rules[0].phoneme"
    assert PronunciationDictionary.objects.filter(tenant=tenant_a.tenant).count() == 1
    assert PronunciationDictionaryVersion.objects.filter(dictionary__dictionary_id=d["id"]).count() == 1


def test_an_800_kb_pls_alias_is_refused(tenant_a: TenantCtx) -> None:
    pls = to_pls([Rule("alias", "Geneva", alias="jeh-nee-vah"), Rule("alias", "UN", alias="x" * 800_000)])
    upload = SimpleUploadedFile("big.pls", pls, content_type="application/pls+xml")
    response, seconds = cpu(
        lambda: tenant_a.client().post(
            "/v1/pronunciation-dictionaries/add-from-file", {"name": "big", "file": upload}, format="multipart"
        )
    )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail["status"] == "invalid_pls" and detail["param"] == "file"
    assert "lexeme 2" in detail["message"] and "800000 characters" in detail["message"]
    assert not PronunciationDictionary.objects.filter(tenant=tenant_a.tenant).exists()
    assert seconds < 1, seconds


def test_rules_are_compiled_once_per_version(tenant_a: TenantCtx, joe: Voice, compiles: list[int]) -> None:
    rules = [{"type": "alias", "string_to_replace": f"term{i}", "alias": f"spoken {i}"} for i in range(2000)]
    d = create(tenant_a, rules)
    client = tenant_a.client()
    for text in ("term7", "term8", "term9"):
        assert client.post(URL, {"text": text, LOCATORS: locate(d)}, format="json").status_code == 200
    assert compiles == [2000]
    changed = client.post(
        f"/v1/pronunciation-dictionaries/{d['id']}/add-rules",
        {"rules": [{"type": "alias", "string_to_replace": "extra", "alias": "more"}]},
        format="json",
    )
    assert changed.status_code == 200
    assert client.post(URL, {"text": "extra", LOCATORS: locate(d)}, format="json").status_code == 200
    assert compiles == [2000, 2001]  # the new version, compiled once; the old one still cached
    pinned = [{"pronunciation_dictionary_id": d["id"], "version_id": d["version_id"]}]
    assert client.post(URL, {"text": "term1", LOCATORS: pinned}, format="json").status_code == 200
    assert compiles == [2000, 2001]


def test_the_compiled_rules_cache_is_bounded(
    tenant_a: TenantCtx, joe: Voice, compiles: list[int], settings: Any
) -> None:
    settings.TTS_DICTIONARY_CACHE_BYTES = 0  # nothing kept: every request compiles
    d = create(tenant_a, CHAIN)
    for _ in range(2):
        response = tenant_a.client().post(URL, {"text": "Hi.", LOCATORS: locate(d)}, format="json")
        assert response.status_code == 200
    assert compiles == [5, 5]


def test_a_rate_limited_request_does_no_dictionary_work(tenant_a: TenantCtx, joe: Voice, compiles: list[int]) -> None:
    d = create(tenant_a, CHAIN)
    plan = tenant_a.tenant.plan
    plan.requests_per_minute = 1
    plan.save()
    client = tenant_a.client()
    assert client.post(URL, {"text": "Hello."}, format="json").status_code == 200
    response = client.post(URL, {"text": "w0", LOCATORS: locate(d)}, format="json")
    assert response.status_code == 429 and response.json()["detail"]["status"] == "rate_limit_exceeded"
    assert int(response["Retry-After"]) >= 1
    assert compiles == []
    assert SynthesisRecord.objects.filter(tenant=tenant_a.tenant).count() == 1


def test_a_request_over_the_concurrency_cap_does_no_dictionary_work(
    tenant_a: TenantCtx, joe: Voice, compiles: list[int], settings: Any
) -> None:
    settings.REDIS_URL = ""
    d = create(tenant_a, CHAIN)
    plan = tenant_a.tenant.plan
    plan.max_concurrent_streams = 1
    plan.save()
    held = ratelimit.acquire_stream_slot(tenant=tenant_a.tenant)
    try:
        response = tenant_a.client().post(f"{URL}", {"text": "w0", LOCATORS: locate(d)}, format="json")
        assert response.status_code == 429
        assert response.json()["detail"]["status"] == "too_many_concurrent_requests"
    finally:
        held.release()
    assert compiles == []
    nothing_billed(tenant_a)


def test_the_tenant_bounds_on_dictionaries_and_bytes(tenant_a: TenantCtx, settings: Any) -> None:
    settings.TTS_DICTIONARY_MAX_PER_TENANT = 2
    first = create(tenant_a, CHAIN, name="one")
    create(tenant_a, CHAIN, name="two")
    client = tenant_a.client()
    response = client.post(
        "/v1/pronunciation-dictionaries/add-from-rules", {"name": "three", "rules": CHAIN}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["detail"]["status"] == "pronunciation_dictionary_limit_reached"
    assert PronunciationDictionary.objects.filter(tenant=tenant_a.tenant).count() == 2
    stored = sum(PronunciationDictionaryVersion.objects.values_list("rule_bytes", flat=True))
    settings.TTS_DICTIONARY_MAX_TENANT_BYTES = stored + 100
    more = [{"type": "alias", "string_to_replace": f"extra{i}", "alias": "some more words"} for i in range(10)]
    response = client.post(f"/v1/pronunciation-dictionaries/{first['id']}/add-rules", {"rules": more}, format="json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail["status"] == "pronunciation_dictionary_storage_limit_reached" and detail["param"] == "rules"
    assert PronunciationDictionaryVersion.objects.filter(dictionary__tenant=tenant_a.tenant).count() == 2


def test_old_versions_are_pruned_unless_history_used_them(tenant_a: TenantCtx, joe: Voice, settings: Any) -> None:
    settings.TTS_DICTIONARY_KEEP_VERSIONS = 2
    settings.TTS_DICTIONARY_MAX_VERSIONS = 3
    d = create(tenant_a, CHAIN)
    client = tenant_a.client()
    pinned = [{"pronunciation_dictionary_id": d["id"], "version_id": d["version_id"]}]
    spoken = client.post(URL, {"text": "Hi.", LOCATORS: pinned}, format="json")
    assert spoken.status_code == 200  # version 1 is now in a history item

    def change(n: int) -> Any:
        rule = {"type": "alias", "string_to_replace": f"v{n}", "alias": f"version {n}"}
        return client.post(f"/v1/pronunciation-dictionaries/{d['id']}/add-rules", {"rules": [rule]}, format="json")

    for n in (2, 3, 4):
        assert change(n).status_code == 200
    numbers = sorted(PronunciationDictionaryVersion.objects.values_list("number", flat=True))
    assert numbers == [1, 3, 4]  # 2 pruned; 1 kept for its history item; the newest two
    download = client.get(f"/v1/pronunciation-dictionaries/{d['id']}/{d['version_id']}/download")
    assert download.status_code == 200 and b"w1 w1" in download.content
    assert change(5).status_code == 200  # 3 pruned
    client.delete(f"/v1/history/{spoken['history-item-id']}")
    assert change(6).status_code == 200  # version 1 is no longer used: pruned with 4
    assert sorted(PronunciationDictionaryVersion.objects.values_list("number", flat=True)) == [5, 6]
    # Every kept version used by history: past TTS_DICTIONARY_MAX_VERSIONS a change is refused.
    for number in (5, 6):
        version = PronunciationDictionaryVersion.objects.get(number=number)
        locator = [{"pronunciation_dictionary_id": d["id"], "version_id": version.version_id}]
        assert client.post(URL, {"text": "Hi.", LOCATORS: locator}, format="json").status_code == 200
    assert change(7).status_code == 200  # 5, 6 (used) and 7
    refused = change(8)
    assert refused.status_code == 400
    assert refused.json()["detail"]["status"] == "pronunciation_dictionary_version_limit_reached"
    assert sorted(PronunciationDictionaryVersion.objects.values_list("number", flat=True)) == [5, 6, 7]


def test_dictionary_writes_are_rate_limited(tenant_a: TenantCtx, settings: Any) -> None:
    settings.TTS_DICTIONARY_WRITES_PER_MINUTE = 2
    d = create(tenant_a, CHAIN)
    client = tenant_a.client()
    body = {"rule_strings": ["w0"]}
    assert client.post(f"/v1/pronunciation-dictionaries/{d['id']}/remove-rules", body, format="json").status_code == 200
    response = client.post(f"/v1/pronunciation-dictionaries/{d['id']}/remove-rules", body, format="json")
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    assert response.json()["detail"]["status"] == "rate_limit_exceeded"
    pls = io.BytesIO(to_pls([Rule("alias", "UN", alias="United Nations")]))
    upload = client.post("/v1/pronunciation-dictionaries/add-from-file", {"name": "f", "file": pls}, format="multipart")
    assert upload.status_code == 429
    assert PronunciationDictionaryVersion.objects.filter(dictionary__tenant=tenant_a.tenant).count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_live_utterance_compiles_once_and_admits_each_piece_before_applying(
    tenant_a: TenantCtx, joe: Voice, compiles: list[int], settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.REDIS_URL = ""
    d = create(tenant_a, CHAIN)
    applied: list[str] = []
    real_apply = pronunciation_apply.apply_compiled

    def counting_apply(text: str, *args: Any, **kwargs: Any) -> Any:
        applied.append(text)
        return real_apply(text, *args, **kwargs)

    monkeypatch.setattr(pronunciation_apply, "apply_compiled", counting_apply)
    request = SynthesisRequest(
        tenant=tenant_a.tenant,
        voice_id="joe",
        text="First w0.",
        output_format=parse_elevenlabs_format("pcm_16000"),
        source="websocket",
        pronunciation_dictionary_locators=locate(d),
    )
    run = synthesis_prepare(request)
    utterance = LiveUtterance(run)

    def held() -> int:
        return sum(len(tokens) for tokens in ratelimit._local_slots._held.values())

    def wait_idle() -> None:
        for _ in range(1200):
            if not run.admission.held:
                return
            time.sleep(0.05)
        raise AssertionError("the utterance did not go idle")

    chunks: list[Any] = []

    async def drain() -> None:
        async for chunk in utterance.stream:
            chunks.append(chunk)

    reader = threading.Thread(target=asyncio.run, args=(drain(),))
    reader.start()
    wait_idle()
    assert utterance.add_text(" Then w0 again.")
    wait_idle()
    # Each piece billed for what the dictionary makes of it: "w0" speaks as ten "w1" (29 characters).
    assert run.characters == len("First w0.") + 27 + len(" Then w0 again.") + 27
    # At the tenant's cap, a piece is refused before the dictionaries touch it.
    plan = tenant_a.tenant.plan
    plan.max_concurrent_streams = 1
    plan.save()
    other = ratelimit.acquire_stream_slot(tenant=tenant_a.tenant)
    with pytest.raises(SynthesisError) as refused:
        utterance.add_text(" Refused w0.")
    assert refused.value.status == 429 and len(applied) == 2
    other.release()
    # A piece the quota refuses after its admission gives its slot back.
    Usage.objects.filter(tenant=tenant_a.tenant).update(characters=plan.monthly_character_limit)
    with pytest.raises(SynthesisError) as over_quota:
        utterance.add_text(" Over the quota w0.")
    assert over_quota.value.code == "quota_exceeded"
    wait_idle()
    assert held() == 0
    utterance.end()
    reader.join(60)
    assert utterance.stream.finished.wait(60) and chunks
    assert compiles == [5] and len(applied) == 3  # compiled once for the utterance, one pass per piece
    record = SynthesisRecord.objects.get(pk=run.record.pk)
    assert record.status == "success" and record.text == "First w0. Then w0 again."
    assert PronunciationDictionaryUse.objects.filter(record=record).count() == 1
