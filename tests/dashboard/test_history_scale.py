"""The history page on 100,000 rows (PostgreSQL): bounded queries, and every filter served by an index."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord
from tts.usage.history import history_for_tenant

ROWS = 100_000

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def fill_history(ctx: TenantCtx, rows: int) -> None:
    """``rows`` history items in one INSERT ... SELECT, seconds apart, mixed voices, sources and statuses."""
    overrides = {
        "id": "gen_random_uuid()",
        "tenant_id": "%s",
        "voice_id": "(ARRAY['joe','amy','kim'])[1 + mod(i, 3)]",
        "source": "(ARRAY['elevenlabs','openai','websocket','playground','job'])[1 + mod(i, 5)]",
        "status": "CASE WHEN mod(i, 50) = 0 THEN 'failed' ELSE 'success' END",
        "text": "'item ' || i",
        "created_at": "%s - make_interval(secs => i)",
    }
    columns, values, params = [], [], []
    for field in SynthesisRecord._meta.concrete_fields:
        columns.append(connection.ops.quote_name(field.column))
        if field.attname in overrides:
            values.append(overrides[field.attname])
            if field.attname == "tenant_id":
                params.append(ctx.tenant.pk)
            elif field.attname == "created_at":
                params.append(timezone.now())
        else:
            default = field.get_default()
            values.append("%s")
            params.append(field.get_db_prep_save(default, connection))
    sql = (
        f"INSERT INTO {SynthesisRecord._meta.db_table} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM generate_series(1, {rows}) AS i"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        cursor.execute(f"ANALYZE {SynthesisRecord._meta.db_table}")


def test_it_pages_and_filters_100k_rows_through_indexes(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client, django_assert_max_num_queries
) -> None:
    fill_history(tenant_a, ROWS)
    # Another tenant's rows too, as in any real table: a plan must find this tenant's rows
    # through its own index, not by filtering a table-wide one (the admin's, by created_at).
    fill_history(tenant_b, ROWS)
    since = timezone.now() - dt.timedelta(hours=10)
    filters: list[dict[str, object]] = [
        {},
        {"voice_id": "amy"},
        {"source": "openai"},
        {"status": "failed"},
        {"date_after": since},
    ]
    for kwargs in filters:
        plan = history_for_tenant(tenant_a.tenant, **kwargs)[:26].explain()  # type: ignore[arg-type]
        assert re.search(r"Index Scan using history_tenant_\w+", plan), f"{kwargs}: {plan}"
        # Rows come in index order; at most an incremental sort of ties, which stops at the limit.
        assert "Seq Scan" not in plan and not re.search(r"(?<!Incremental )Sort  \(", plan), plan
    # Failed items are every 50th, all from the ElevenLabs API: none comes through OpenAI.
    pages = {
        "/history/": 25,
        "/history/?voice=joe": 25,
        "/history/?status=failed": 25,
        "/history/?source=openai&status=failed": 0,
    }
    for url, count in pages.items():
        with django_assert_max_num_queries(8):
            response = owner_a.get(url)
        assert response.status_code == 200
        assert response.content.count(b'data-item-id="') == count, url
