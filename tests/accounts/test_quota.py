"""Character quota: atomic reservation, refunds, and no overspend under parallel load."""

from __future__ import annotations

import concurrent.futures
import json
import urllib.error
import urllib.request

import pytest

from accounts.models import Usage
from accounts.quota import QuotaExceeded, refund_characters, reserve_characters
from tests.fixtures import TenantCtx, make_joe, make_tenant
from tts.models import SynthesisRecord


def test_it_reserves_and_refunds(tenant_a: TenantCtx) -> None:
    tenant_a.tenant.plan.monthly_character_limit = 100
    tenant_a.tenant.plan.save()
    first = reserve_characters(tenant=tenant_a.tenant, characters=60)
    with pytest.raises(QuotaExceeded) as exc:
        reserve_characters(tenant=tenant_a.tenant, characters=41)
    assert "41" in str(exc.value) and "40" in str(exc.value)
    reserve_characters(tenant=tenant_a.tenant, characters=40)
    refund_characters(first)
    refund_characters(first)  # a second refund of the same reservation changes nothing
    usage = Usage.objects.get(tenant=tenant_a.tenant)
    assert (usage.characters, usage.requests) == (40, 1)


def test_it_refunds_part_of_a_reservation(tenant_a: TenantCtx) -> None:
    reservation = reserve_characters(tenant=tenant_a.tenant, characters=50)
    refund_characters(reservation, 20)
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 30
    refund_characters(reservation)
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 0


def _post(url: str, key: str, text: str) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps({"text": text}).encode(),
        method="POST",
        headers={"xi-api-key": key, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_it_never_overspends_under_parallel_requests(live_server_url: str) -> None:
    make_joe()
    ctx = make_tenant("racer", limit=100)
    text = "Twenty characters!!!"  # 20 characters: five fit in the limit, seven must not
    url = f"{live_server_url}/v1/text-to-speech/joe?output_format=pcm_16000"
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(lambda _: _post(url, ctx.key, text), range(12)))
    assert statuses.count(200) == 5, statuses
    assert statuses.count(429) == 7, statuses
    usage = Usage.objects.get(tenant=ctx.tenant)
    assert usage.characters == 5 * len(text) == 100
    assert SynthesisRecord.objects.filter(tenant=ctx.tenant, status="success").count() == 5
