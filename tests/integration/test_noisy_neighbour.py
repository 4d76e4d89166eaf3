"""One tenant within its plan cannot make another wait: the noisy-neighbour scenario of
bench/bench_neighbours.py on a real daphne, with fewer requests and a looser bound than
the benchmark's target (2x), because this machine runs other work beside the suite."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest

from tests.fixtures import TenantCtx
from tests.servers import ROOT
from tts.models import SynthesisRecord, Voice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.server, pytest.mark.slow]


def _bench() -> Any:
    bench = str(ROOT / "bench")
    if bench not in sys.path:  # as when it runs as a script: its sibling modules (readiness) import
        sys.path.append(bench)
    spec = importlib.util.spec_from_file_location("bench_neighbours", ROOT / "bench" / "bench_neighbours.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def test_a_noisy_tenant_does_not_starve_a_quiet_one(
    daphne_factory: Any, tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice
) -> None:
    from accounts.models import Plan

    # A is on the free plan's limits (the defaults) and stays inside them.
    free = Plan()
    plan = tenant_a.tenant.plan
    plan.max_concurrent_streams, plan.requests_per_minute = free.max_concurrent_streams, free.requests_per_minute
    plan.save()
    assert plan.max_concurrent_streams == 4
    server = daphne_factory({"TTS_AUDIO_CACHE_ENABLED": "false"})
    report = _bench().measure(server.url, tenant_a.key, tenant_b.key, quiet=6, noisy=10, body_mb=8)
    print(report.markdown())
    assert report.server_errors == 0 and set(report.b_statuses) == {200}
    assert max(report.healthz_ms) < 1000
    assert report.ratio < 4.0, report.markdown()
    # A really was busy: streams ran, the whitespace flood went out, big bodies were refused.
    assert any(k.startswith("stream 200") for k in report.a_statuses) and report.ws_frames > 100
    assert not any(k.startswith("body 2") for k in report.a_statuses)
    # Every request of B was written once, successful.
    b_rows = SynthesisRecord.objects.filter(tenant=tenant_b.tenant)
    assert b_rows.count() == 17 and set(b_rows.values_list("status", flat=True)) == {"success"}
