"""Fixtures for cache and limit tests: a Redis key prefix of their own, fresh in-process state,
and a counter of engine work."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings as django_settings

from accounts.ratelimit import reset_local_limits
from tts.inference.piper_onnx import PiperOnnxEngine
from tts.synthesis.cache.audio import audio_cache


@pytest.fixture(autouse=True)
def limits_prefix(settings: object) -> Iterator[str]:
    """Every test writes its own Redis keys (and starts with empty in-process caches)."""
    prefix = f"test-limits-{uuid.uuid4().hex[:12]}"
    settings.TTS_REDIS_KEY_PREFIX = prefix  # type: ignore[attr-defined]
    audio_cache.clear_local()
    reset_local_limits()
    yield prefix
    audio_cache.clear_local()
    reset_local_limits()
    if django_settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(django_settings.REDIS_URL)
        try:
            keys = list(client.scan_iter(match=f"*{prefix}*", count=1000))
            if keys:
                client.delete(*keys)
        except redis.RedisError:
            pass
        finally:
            client.close()


@dataclass
class EngineCalls:
    count: int = 0


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> EngineCalls:
    """Counts inference calls of the ONNX engine in this process (every engine instance)."""
    calls = EngineCalls()
    real = PiperOnnxEngine.synthesize_ids

    def counting(self: PiperOnnxEngine, *args: Any, **kwargs: Any) -> Any:
        calls.count += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PiperOnnxEngine, "synthesize_ids", counting)
    return calls
