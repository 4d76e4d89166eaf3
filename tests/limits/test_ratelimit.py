"""Requests per minute per API key and per tenant: exactly the limit gets through, across
parallel requests and server processes; refusals are 429s that name the limit and spend nothing."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from accounts.keys import api_key_create
from accounts.models import Usage
from accounts.ratelimit import LimitExceeded, RedisCircuit, check_request_rate
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.servers import ServerProc
from tts.models import SynthesisRecord, Voice

TEXT = "Rain again on the harbour."
URL = "/v1/text-to-speech/joe?output_format=pcm_16000"


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def set_rate(ctx: TenantCtx, per_minute: int) -> None:
    ctx.tenant.plan.requests_per_minute = per_minute
    ctx.tenant.plan.max_concurrent_streams = 100  # only the rate is under test here
    ctx.tenant.plan.save()


def fire(urls: list[str], key: str) -> list[httpx.Response]:
    """All requests at once, one thread each."""

    def one(url: str) -> httpx.Response:
        return httpx.post(url, json={"text": TEXT}, headers={"xi-api-key": key}, timeout=120)

    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        return list(pool.map(one, urls))


def check_outcome(ctx: TenantCtx, responses: list[httpx.Response], limit: int) -> None:
    ok = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code == 429]
    assert len(ok) == limit, [(r.status_code, r.text[:200]) for r in responses if r.status_code != 200]
    assert len(refused) == len(responses) - limit
    for response in refused:
        assert int(response.headers["Retry-After"]) >= 1
        detail = response.json()["detail"]
        assert detail["status"] == "rate_limit_exceeded"
        assert f"{limit} requests per minute" in detail["message"]
    for response in ok:
        samples, rate = decode_audio(response.content, "pcm_16000")
        assert_speech(samples, rate, expected_rate=16000, text=TEXT)
    # Refused requests leave no record and spend no quota.
    assert SynthesisRecord.objects.filter(tenant=ctx.tenant, status="success").count() == limit
    assert SynthesisRecord.objects.filter(tenant=ctx.tenant).count() == limit
    assert spent(ctx) == limit * len(TEXT)


@pytest.mark.django_db(transaction=True)
def test_it_lets_exactly_the_limit_through_parallel_requests(
    live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    set_rate(tenant_a, 5)
    responses = fire([live_server_url + URL] * 15, tenant_a.key)
    check_outcome(tenant_a, responses, 5)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_it_enforces_one_combined_limit_across_two_server_processes(
    daphne_factory: Callable[..., ServerProc], tenant_a: TenantCtx, joe: Voice, limits_prefix: str
) -> None:
    set_rate(tenant_a, 6)
    env = {"TTS_REDIS_KEY_PREFIX": limits_prefix}
    one, two = daphne_factory(env), daphne_factory(env)
    responses = fire([one.url + URL, two.url + URL] * 9, tenant_a.key)
    # Counted per process, 12 would get through.
    check_outcome(tenant_a, responses, 6)


def test_it_names_the_key_limit_and_then_the_tenant_limit(tenant_a: TenantCtx, joe: Voice, settings: object) -> None:
    settings.TTS_RATE_LIMIT_KEY_PERCENT = 75  # type: ignore[attr-defined]  # 4 per minute -> 3 per key
    set_rate(tenant_a, 4)
    other_key = api_key_create(tenant=tenant_a.tenant, name="second").raw_key
    first, second = tenant_a.client(), tenant_a.client(other_key)
    for _ in range(3):
        assert first.post(URL, {"text": TEXT}, format="json").status_code == 200
    by_key = first.post(URL, {"text": TEXT}, format="json")
    assert by_key.status_code == 429
    assert "API key may make 3 requests per minute" in by_key.json()["detail"]["message"]
    assert int(by_key["Retry-After"]) >= 1

    assert second.post(URL, {"text": TEXT}, format="json").status_code == 200
    by_tenant = second.post(URL, {"text": TEXT}, format="json")
    assert by_tenant.status_code == 429
    assert "tenant may make 4 requests per minute" in by_tenant.json()["detail"]["message"]
    assert spent(tenant_a) == 4 * len(TEXT)


def test_it_answers_in_the_openai_dialect(tenant_a: TenantCtx, joe: Voice) -> None:
    set_rate(tenant_a, 1)
    body = {"model": "tts-1", "input": TEXT, "voice": "alloy", "response_format": "pcm"}
    assert tenant_a.client().post("/v1/audio/speech", body, format="json").status_code == 200
    refused = tenant_a.client().post("/v1/audio/speech", body, format="json")
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["type"] == "rate_limit_error" and error["code"] == "rate_limit_exceeded"
    assert "1 requests per minute" in error["message"]
    assert refused["Retry-After"]


def test_it_keeps_counting_in_process_when_redis_is_unreachable(
    tenant_a: TenantCtx, monkeypatch: pytest.MonkeyPatch, settings: object, caplog: pytest.LogCaptureFixture
) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # type: ignore[attr-defined]
    set_rate(tenant_a, 3)

    def unreachable() -> None:
        raise ConnectionError("connection refused")

    monkeypatch.setattr("accounts.ratelimit.redis_client", unreachable)
    monkeypatch.setattr("accounts.ratelimit.redis_script", lambda source: unreachable())
    monkeypatch.setattr(
        "accounts.ratelimit._rate_circuit", RedisCircuit("rate limits", "counting requests in this process")
    )
    caplog.set_level("WARNING", logger="accounts.ratelimit")
    for _ in range(3):
        check_request_rate(tenant=tenant_a.tenant, api_key=tenant_a.api_key)
    with pytest.raises(LimitExceeded) as refused:
        check_request_rate(tenant=tenant_a.tenant, api_key=tenant_a.api_key)
    assert refused.value.status == 429
    outage_lines = [r for r in caplog.records if "Redis is unavailable" in r.getMessage()]
    assert len(outage_lines) == 1  # once per outage, not per request


def test_it_slides_its_window(monkeypatch: pytest.MonkeyPatch) -> None:
    from accounts import ratelimit

    now = [1000.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: now[0])
    windows = ratelimit._LocalWindows()
    window = [ratelimit._Window("tenant", "k", 2)]
    assert windows.hit(window, 60)[0] == 0
    now[0] += 40
    assert windows.hit(window, 60)[0] == 0
    now[0] += 10
    full, wait = windows.hit(window, 60)
    assert full == 1 and wait == pytest.approx(10)  # the first request leaves the window at t+60
    now[0] += 10.5
    assert windows.hit(window, 60)[0] == 0  # a fixed window would have let both through at the boundary
    assert windows.hit(window, 60)[0] == 1
