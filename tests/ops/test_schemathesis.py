"""schemathesis against /api/schema/: every route, with a valid key, gets bounded,
derandomized examples (valid and invalid bodies, query strings and paths); none may get a 5xx.

Runs in process through Django's WSGI handler, on the test database, with the real engine:
the tenant's plan allows 40 characters per request, so a generated text is spoken quickly
or refused before work. The schema is the one /api/schema/ serves (same generator), built
at collection; ``tests/ops/test_openapi.py`` checks that route itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig

from accounts.ratelimit import reset_local_limits
from tests.fixtures import TenantCtx, make_joe, make_tenant


def _served_schema() -> dict[str, Any]:
    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


# Paths name the voice that exists and a valid format, so generated bodies reach the pipeline's
# own checks (ids that do not exist are covered by the other routes' 404s and tests/api).
_PARAMETERS = {"path.voice_id": "joe", "query.output_format": "pcm_16000"}
schema = schemathesis.openapi.from_dict(
    _served_schema(), config=SchemathesisConfig.from_dict({"parameters": _PARAMETERS})
)
schema.app = get_wsgi_application()


@pytest.fixture
def fuzz_tenant(db: None) -> Iterator[TenantCtx]:
    make_joe()
    ctx = make_tenant("fuzz", limit=10_000_000, per_request=40)
    ctx.tenant.plan.requests_per_minute = 1_000_000
    ctx.tenant.plan.save()
    reset_local_limits()
    # As Django's test client does: the handler must not close the test's connection
    # (and with it the test transaction) when a request starts or finishes.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield ctx
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=12,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@pytest.mark.slow
def test_no_route_answers_a_server_error(case: Any, fuzz_tenant: TenantCtx) -> None:
    case.call_and_validate(headers={"xi-api-key": fuzz_tenant.key}, checks=[not_a_server_error])
