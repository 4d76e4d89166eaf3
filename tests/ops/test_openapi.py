"""The OpenAPI schema covers every REST route, validates, and is served with a docs page."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView


def rest_routes() -> set[str]:
    """Every DRF route in the URLconf, as OpenAPI spells its path."""
    found: set[str] = set()

    def walk(patterns: list, prefix: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                view = getattr(entry.callback, "cls", None)
                # The schema and docs views themselves are not part of the API, nor are
                # views that opt out (``schema = None``: the catch-all 404 of unknown routes).
                if (
                    view is not None
                    and issubclass(view, APIView)
                    and not view.__module__.startswith("drf_spectacular")
                    and getattr(view, "schema", True) is not None
                ):
                    path = "/" + prefix + str(entry.pattern)
                    for converter in ("str:", "int:", "uuid:", "slug:", "path:"):
                        path = path.replace("<" + converter, "<")
                    found.add(path.replace("<", "{").replace(">", "}"))

    walk(get_resolver().url_patterns, "")
    return found


@pytest.mark.django_db
def test_it_generates_a_valid_schema_without_warnings() -> None:
    out = io.StringIO()
    # --fail-on-warn: an unannotated view or an unknown field fails this test.
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    schema = yaml.safe_load(out.getvalue())
    assert schema["openapi"].startswith("3.")
    routes = rest_routes()
    assert routes, "no REST routes found"
    missing = routes - set(schema["paths"])
    assert not missing, f"routes without a schema: {sorted(missing)}"
    assert "ApiKeyAuth" in schema["components"]["securitySchemes"]
    speech = schema["paths"]["/v1/text-to-speech/{voice_id}"]["post"]
    assert "audio/mpeg" in speech["responses"]["200"]["content"]
    assert "400" in speech["responses"] and "429" in speech["responses"]
    operation_ids = [op["operationId"] for ops in schema["paths"].values() for op in ops.values()]
    assert len(operation_ids) == len(set(operation_ids))


@pytest.mark.django_db
def test_it_serves_the_schema_and_docs_without_a_key() -> None:
    response = Client().get("/api/schema/")
    assert response.status_code == 200
    assert "/v1/audio/speech" in yaml.safe_load(response.content)["paths"]
    docs = Client().get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower() and b"/api/schema/" in docs.content


def test_it_serves_the_docs_page_without_a_cdn(client) -> None:
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html
