"""A breaker for Redis outages: callers skip Redis for a while after a failure
instead of waiting on a dead server with every request, and log once per outage."""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

logger = logging.getLogger(__name__)


class RedisCircuit:
    """Skips Redis for ``TTS_REDIS_RETRY_S`` after a failure; logs once per outage.

    Without it every request would wait on a dead Redis and log an error.
    """

    def __init__(self, name: str, fallback: str) -> None:
        self.name = name
        self.fallback = fallback
        self._down = False
        self._retry_at = 0.0
        self._lock = threading.Lock()

    def available(self) -> bool:
        return bool(settings.REDIS_URL) and time.monotonic() >= self._retry_at

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self._retry_at = time.monotonic() + settings.TTS_REDIS_RETRY_S
            if self._down:
                return
            self._down = True
        logger.warning("Redis is unavailable for %s, %s until it answers again: %s", self.name, self.fallback, exc)

    def succeeded(self) -> None:
        if not self._down:
            return
        with self._lock:
            was_down, self._down = self._down, False
        if was_down:
            logger.warning("Redis is back for %s", self.name)
