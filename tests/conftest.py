"""Shared fixtures: named tenants and keys (a, b), the joe voice, live daphne servers.

Tests that need PostgreSQL or Redis skip with a reason when those are not
configured, unless ``TTS_REQUIRE_SERVICES=1`` (as in CI), where they fail.
"""

from __future__ import annotations

import os

import pytest

from tests.fixtures import *  # noqa: F403
from tests.servers import *  # noqa: F403


@pytest.fixture(autouse=True)
def _fresh_lookup_caches() -> None:
    """Each test starts with no cached keys, voices or versions: rows of an earlier test's
    (rolled-back) transaction must not answer for this one's."""
    from infra.lookup_cache import clear_lookup_caches

    clear_lookup_caches()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.conf import settings

    has_pg = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    has_redis = bool(settings.REDIS_URL)
    if os.environ.get("TTS_REQUIRE_SERVICES") == "1":
        if not has_pg or not has_redis:
            raise pytest.UsageError("TTS_REQUIRE_SERVICES=1 needs DATABASE_URL (PostgreSQL) and REDIS_URL set")
        import redis

        try:
            redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2).ping()
        except redis.RedisError as exc:
            raise pytest.UsageError(f"Redis at {settings.REDIS_URL} cannot be reached: {exc}") from exc
    for item in items:
        if item.get_closest_marker("postgres") and not has_pg:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://..."))
        if item.get_closest_marker("redis") and not has_redis:
            item.add_marker(pytest.mark.skip(reason="needs Redis: set REDIS_URL=redis://..."))
