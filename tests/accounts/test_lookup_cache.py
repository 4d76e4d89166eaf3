"""The per-process lookup cache of API keys, voices and active model versions: read once,
changes seen at once in the process that makes them and within ``TTS_LOOKUP_CACHE_S``
in every other one."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.keys import api_key_revoke
from infra import lookup_cache
from infra.lookup_cache import LookupCache
from tests.fixtures import TenantCtx, second_version
from tests.servers import ServerProc
from tts.catalogue.model_import import activate_model_version
from tts.models import ModelVersion, SynthesisRecord, Voice

TEXT = "Short and sweet."
URL = "/v1/text-to-speech/joe?output_format=pcm_16000"


@pytest.fixture(autouse=True)
def _ttl_longer_than_the_test(settings: Any) -> None:
    """Three syntheses on a loaded machine can take longer than the 2 s default; tests of expiry set their own."""
    settings.TTS_LOOKUP_CACHE_S = 60


def selects_from(queries: CaptureQueriesContext, table: str) -> int:
    return sum(1 for q in queries.captured_queries if q["sql"].startswith("SELECT") and f'FROM "{table}"' in q["sql"])


def three_requests(ctx: TenantCtx) -> CaptureQueriesContext:
    client = ctx.client()
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            assert client.post(URL, {"text": TEXT}, format="json").status_code == 200
    return queries


def test_it_reads_the_key_voice_and_version_once_for_many_requests(
    tenant_a: TenantCtx, joe: Voice, settings: Any
) -> None:
    queries = three_requests(tenant_a)
    assert selects_from(queries, "accounts_apikey") == 1
    assert selects_from(queries, "tts_voice") == 1
    assert selects_from(queries, "tts_modelversion") == 1


def test_it_answers_a_warm_cache_hit_with_two_statements(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    client.post(URL, {"text": TEXT}, format="json")  # the miss, which fills both caches
    with CaptureQueriesContext(connection) as queries:
        hit = client.post(URL, {"text": TEXT}, format="json")
    assert hit["x-cache"] == "hit"
    statements = [q["sql"].split(" ", 3)[:3] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert statements == [["INSERT", "INTO", '"tts_synthesisrecord"'], ["UPDATE", '"accounts_usage"', "SET"]]


def test_it_resolves_an_openai_voice_name_once(tenant_a: TenantCtx, joe: Voice) -> None:
    body = {"model": "tts-1", "input": TEXT, "voice": "alloy", "response_format": "wav"}
    client = tenant_a.client()
    first = client.post("/v1/audio/speech", body, format="json")
    assert first.status_code == 200  # "alloy" is no voice here: the default voice speaks
    assert SynthesisRecord.objects.get(pk=first["history-item-id"]).voice_id == "joe"
    with CaptureQueriesContext(connection) as queries:
        for _ in range(2):
            assert client.post("/v1/audio/speech", body, format="json").status_code == 200
    assert selects_from(queries, "tts_voice") == 0


def test_it_reads_them_on_every_request_when_turned_off(tenant_a: TenantCtx, joe: Voice, settings: object) -> None:
    settings.TTS_LOOKUP_CACHE_S = 0  # type: ignore[attr-defined]
    queries = three_requests(tenant_a)
    assert selects_from(queries, "accounts_apikey") == 3
    assert selects_from(queries, "tts_voice") == 3


def test_it_refuses_a_revoked_key_at_once_in_this_process(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    assert client.get("/v1/voices").status_code == 200  # cached now
    api_key_revoke(api_key=tenant_a.api_key)
    response = client.get("/v1/voices")
    assert response.status_code == 401
    assert response.json()["detail"]["status"] == "api_key_revoked"


def test_it_applies_a_plan_change_at_once_in_this_process(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    assert client.post(URL, {"text": TEXT}, format="json").status_code == 200
    plan = tenant_a.tenant.plan
    plan.max_characters_per_request = 5
    plan.save()
    response = client.post(URL, {"text": TEXT}, format="json")
    assert response.status_code == 413


def test_it_stops_serving_a_deactivated_voice_at_once_in_this_process(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    assert client.post(URL, {"text": TEXT}, format="json").status_code == 200
    joe.is_active = False
    joe.save()
    response = client.post(URL, {"text": TEXT}, format="json")
    assert response.status_code == 404
    assert response.json()["detail"]["status"] == "voice_not_found"


def test_it_serves_a_newly_activated_version_at_once_in_this_process(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    assert client.post(URL, {"text": TEXT}, format="json").status_code == 200
    old = ModelVersion.objects.get(model_id=joe.model_id, status="active")
    new = second_version(old)
    activate_model_version(new)  # UPDATEs, no save(): the service clears the caches itself
    response = client.post(URL, {"text": TEXT + " Again."}, format="json")
    assert response.status_code == 200
    assert SynthesisRecord.objects.get(pk=response["history-item-id"]).model_version == new


def test_it_does_not_keep_a_row_read_before_a_clear() -> None:
    cache: LookupCache[str, str] = LookupCache("test")

    def load_while_cleared() -> str:
        cache.clear()  # a change lands while this (now stale) read is in flight
        return "stale"

    assert cache.get("k", load_while_cleared) == "stale"
    assert cache.get("k", lambda: "fresh") == "fresh"
    assert cache.get("k", lambda: "never read") == "fresh"


def test_it_keeps_rows_for_the_ttl_and_no_longer(monkeypatch: pytest.MonkeyPatch, settings: object) -> None:
    settings.TTS_LOOKUP_CACHE_S = 2  # type: ignore[attr-defined]
    now = [1000.0]
    monkeypatch.setattr(lookup_cache.time, "monotonic", lambda: now[0])
    cache: LookupCache[str, int] = LookupCache("test")
    loads: list[int] = []

    def load() -> int:
        loads.append(1)
        return len(loads)

    assert cache.get("k", load) == 1
    now[0] += 1.9
    assert cache.get("k", load) == 1
    now[0] += 0.2
    assert cache.get("k", load) == 2
    assert cache.get("missing", lambda: None) is None
    assert cache.get("missing", lambda: None) is None  # nothing kept for absent rows


@pytest.mark.server
@pytest.mark.django_db(transaction=True)
def test_it_refuses_a_key_revoked_by_another_process_within_the_ttl(
    daphne_factory: Callable[..., ServerProc], tenant_a: TenantCtx, joe: Voice
) -> None:
    server = daphne_factory({"TTS_LOOKUP_CACHE_S": "1"})
    headers = {"xi-api-key": tenant_a.key}
    assert httpx.get(server.url + "/v1/voices", headers=headers, timeout=30).status_code == 200
    api_key_revoke(api_key=tenant_a.api_key)  # in this process: the server only sees the database
    revoked_at = time.monotonic()
    status = 200
    while status == 200 and time.monotonic() - revoked_at < 10:
        status = httpx.get(server.url + "/v1/voices", headers=headers, timeout=30).status_code
        time.sleep(0.05)
    assert status == 401
    assert time.monotonic() - revoked_at < 3  # the 1 s TTL, and slack for a slow machine
