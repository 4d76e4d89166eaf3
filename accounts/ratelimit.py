"""Request-rate limits per API key and per tenant, and a cap on concurrent syntheses per tenant.

Rates come from ``Plan.requests_per_minute`` (a key may use
``TTS_RATE_LIMIT_KEY_PERCENT`` % of it, 100 by default); the concurrency cap
from ``Plan.max_concurrent_streams``.

**Sliding window log.** Each admitted request is one member of a Redis sorted
set scored by its time; a request is admitted when fewer than ``limit``
members are younger than the window (``TTS_RATE_LIMIT_WINDOW_S``, 60 s). So
no 60-second span ever holds more than the limit: unlike a fixed window,
there is no burst of twice the limit across a minute boundary. The key and
tenant windows are checked and updated in one Lua script, so a request refused
by one limit spends nothing from the other, and concurrent requests on any
number of processes see one count. Times come from the Redis server's clock,
so processes on machines with skewed clocks agree.

**Concurrency slots** are members of a per-tenant sorted set scored by a lease
deadline (``TTS_STREAM_SLOT_LEASE_S``, 60 s): a live holder renews its
leases every third of a lease (a thread per process), so a WebSocket open for
hours keeps its slot, while a process that dies frees its slots when their
lease runs out instead of leaking them.

Without ``REDIS_URL`` both live in this process (same algorithms, a lock
instead of Lua). When Redis is unreachable they fall back to the in-process
versions, so limits keep holding per process instead of failing requests or
vanishing; Redis is tried again after ``TTS_REDIS_RETRY_S`` and used again as
soon as it answers. The outage is logged once, not per request.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from infra.redis_circuit import RedisCircuit

from .models import ApiKey, Tenant

logger = logging.getLogger(__name__)


class LimitExceeded(Exception):
    """A request refused by a limit: carries what an API error needs."""

    def __init__(self, message: str, *, code: str, status: int, retry_after: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.retry_after = retry_after


_clients: dict[str, Any] = {}
_scripts: dict[tuple[str, str], Any] = {}


def _redis_location() -> str:
    return str(settings.CACHES["default"].get("LOCATION", ""))


def redis_client() -> Any:
    """The raw client behind the default (django-redis) cache, one per process.

    ``get_redis_connection`` builds a new client object for every thread that
    asks (Django's caches are per thread, and every request has its own
    thread); the client is thread-safe and pooled, so one is kept and shared.
    """
    location = _redis_location()
    client = _clients.get(location)
    if client is None:
        from django_redis import get_redis_connection

        client = _clients.setdefault(location, get_redis_connection("default"))
    return client


def redis_script(source: str) -> Any:
    """A Lua script registered once per process (calls are one ``EVALSHA``)."""
    key = (_redis_location(), source)
    script = _scripts.get(key)
    if script is None:
        script = _scripts.setdefault(key, redis_client().register_script(source))
    return script


def _identity(obj: Tenant | ApiKey) -> str:
    # The creation time next to the pk: a recreated database reuses pks while
    # Redis still holds the old counters.
    return f"{obj.pk}.{int(obj.created_at.timestamp() * 1_000_000)}"


def _prefix() -> str:
    return f"{settings.TTS_REDIS_KEY_PREFIX}:limits"


# --- request rate -----------------------------------------------------------

# KEYS: window sets; ARGV: window ms, member, then one limit per key.
# Returns {0, 0} when admitted, else {index of the full window, ms until a place frees}.
_RATE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local limit = tonumber(ARGV[2 + i])
  local count = redis.call('ZCARD', key)
  if count >= limit then
    local wait = window
    if limit > 0 then
      local oldest = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
      if oldest[2] then wait = tonumber(oldest[2]) + window - now end
    end
    return {i, wait}
  end
end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[2])
  redis.call('PEXPIRE', key, window)
end
return {0, 0}
"""


@dataclass
class _Window:
    name: str
    key: str
    limit: int


class _LocalWindows:
    """The sliding-window log in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[str, deque[float]] = {}

    def hit(self, windows: list[_Window], window_s: float) -> tuple[int, float]:
        now = time.monotonic()
        with self._lock:
            for i, w in enumerate(windows, start=1):
                log = self._logs.setdefault(w.key, deque())
                while log and log[0] <= now - window_s:
                    log.popleft()
                if len(log) >= w.limit:
                    wait = window_s if w.limit <= 0 else log[len(log) - w.limit] + window_s - now
                    return i, wait
            for w in windows:
                self._logs[w.key].append(now)
            return 0, 0.0

    def clear(self) -> None:
        with self._lock:
            self._logs.clear()


_local_windows = _LocalWindows()
_rate_circuit = RedisCircuit("rate limits", "counting requests in this process")


def _key_limit(tenant_limit: int) -> int:
    return max(1, math.ceil(tenant_limit * settings.TTS_RATE_LIMIT_KEY_PERCENT / 100))


def check_request_rate(*, tenant: Tenant, api_key: ApiKey | None) -> None:
    """Count one request against the key's and the tenant's rate, or raise ``LimitExceeded``."""
    per_minute = tenant.plan.requests_per_minute
    window_s = settings.TTS_RATE_LIMIT_WINDOW_S
    windows: list[_Window] = []
    if api_key is not None:
        windows.append(_Window("API key", f"{_prefix()}:rate:key:{_identity(api_key)}", _key_limit(per_minute)))
    windows.append(_Window("tenant", f"{_prefix()}:rate:tenant:{_identity(tenant)}", per_minute))
    full, wait_s = _hit_windows(windows, window_s)
    if not full:
        return
    w = windows[full - 1]
    raise LimitExceeded(
        f"Rate limit exceeded: this {w.name} may make {w.limit} requests per "
        f"{_window_words(window_s)}. Retry after the Retry-After header's seconds.",
        code="rate_limit_exceeded",
        status=429,
        retry_after=max(1, math.ceil(wait_s)),
    )


def check_tenant_action_rate(*, tenant: Tenant, action: str, per_minute: int, what: str) -> None:
    """Count one ``action`` of ``tenant`` in its own sliding window of a minute, or raise
    ``LimitExceeded`` (429, ``Retry-After``); ``what`` names the action in the message."""
    window = _Window("tenant", f"{_prefix()}:rate:{action}:{_identity(tenant)}", per_minute)
    full, wait_s = _hit_windows([window], 60)
    if full:
        raise LimitExceeded(
            f"Rate limit exceeded: this tenant may make {per_minute} {what} per minute. "
            "Retry after the Retry-After header's seconds.",
            code="rate_limit_exceeded",
            status=429,
            retry_after=max(1, math.ceil(wait_s)),
        )


def _window_words(window_s: int) -> str:
    return "minute" if window_s == 60 else f"{window_s} seconds"


def _hit_windows(windows: list[_Window], window_s: int) -> tuple[int, float]:
    if _rate_circuit.available():
        try:
            script = redis_script(_RATE_SCRIPT)
            limits = [w.limit for w in windows]
            full, wait_ms = script(keys=[w.key for w in windows], args=[window_s * 1000, uuid.uuid4().hex, *limits])
            _rate_circuit.succeeded()
            return int(full), int(wait_ms) / 1000
        except Exception as exc:
            _rate_circuit.failed(exc)
    return _local_windows.hit(windows, window_s)


# --- concurrent syntheses -----------------------------------------------------

# KEYS[1]: the tenant's slot set; ARGV: token, cap, lease ms. 1 = acquired.
_ACQUIRE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
"""


_RENEW_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local renewed = 0
for i = 1, #KEYS do
  renewed = renewed + redis.call('ZADD', KEYS[i], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[1]))
end
return renewed
"""


class _LeaseRenewer:
    """Renews the Redis leases of the slots this process holds, every third of a lease.

    A slot's lease (``TTS_STREAM_SLOT_LEASE_S``) is what frees it when its
    holder dies; a live holder (a long WebSocket) keeps it by renewal, so the
    lease can be short and a crashed process's slots come back within it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: weakref.WeakSet[StreamSlot] = weakref.WeakSet()
        self._thread: threading.Thread | None = None

    def add(self, slot: StreamSlot) -> None:
        with self._lock:
            self._held.add(slot)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="tts-slot-leases", daemon=True)
                self._thread.start()

    def discard(self, slot: StreamSlot) -> None:
        with self._lock:
            self._held.discard(slot)

    def renew_now(self) -> int:
        with self._lock:
            slots = [slot for slot in self._held if not slot.released]
        if not slots:
            return 0
        lease_ms = settings.TTS_STREAM_SLOT_LEASE_S * 1000
        try:
            renewed = redis_script(_RENEW_SCRIPT)(
                keys=[slot.key for slot in slots], args=[lease_ms, *(slot.token for slot in slots)]
            )
            _slot_circuit.succeeded()
            return int(renewed or 0)
        except Exception as exc:
            _slot_circuit.failed(exc)
            return 0

    def _run(self) -> None:
        while True:
            time.sleep(max(1.0, settings.TTS_STREAM_SLOT_LEASE_S / 3))
            self.renew_now()


_lease_renewer = _LeaseRenewer()


class _LocalSlots:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, set[str]] = {}

    def acquire(self, key: str, token: str, cap: int) -> bool:
        with self._lock:
            held = self._held.setdefault(key, set())
            if len(held) >= cap:
                return False
            held.add(token)
            return True

    def release(self, key: str, token: str) -> None:
        with self._lock:
            self._held.get(key, set()).discard(token)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()


_local_slots = _LocalSlots()
_slot_circuit = RedisCircuit("concurrency caps", "counting streams in this process")


@dataclass(eq=False)  # hashable by identity: the lease renewer keeps a weak set of them
class StreamSlot:
    """One of a tenant's concurrent-synthesis places; ``release()`` is idempotent."""

    key: str
    token: str
    in_redis: bool
    released: bool = field(default=False)

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        if not self.in_redis:
            _local_slots.release(self.key, self.token)
            return
        _lease_renewer.discard(self)
        try:
            redis_client().zrem(self.key, self.token)
            _slot_circuit.succeeded()
        except Exception as exc:
            # The lease frees it when Redis comes back.
            _slot_circuit.failed(exc)

    def __del__(self) -> None:
        # Safety net for a prepared synthesis whose generator never started.
        if not self.released:
            self.release()


def acquire_stream_slot(*, tenant: Tenant) -> StreamSlot:
    """Take one of the tenant's ``max_concurrent_streams`` places, or raise ``LimitExceeded``."""
    cap = tenant.plan.max_concurrent_streams
    key = f"{_prefix()}:streams:{_identity(tenant)}"
    token = uuid.uuid4().hex
    acquired: bool | None = None
    in_redis = False
    if _slot_circuit.available():
        try:
            script = redis_script(_ACQUIRE_SCRIPT)
            acquired = bool(script(keys=[key], args=[token, cap, settings.TTS_STREAM_SLOT_LEASE_S * 1000]))
            in_redis = True
            _slot_circuit.succeeded()
        except Exception as exc:
            _slot_circuit.failed(exc)
    if acquired is None:
        acquired = _local_slots.acquire(key, token, cap)
    if not acquired:
        raise LimitExceeded(
            f"Concurrency limit exceeded: this tenant may run {cap} syntheses or streams at the same "
            "time. Wait for one to finish.",
            code="too_many_concurrent_requests",
            status=429,
            retry_after=1,
        )
    slot = StreamSlot(key=key, token=token, in_redis=in_redis)
    if in_redis:
        _lease_renewer.add(slot)
    return slot


def reset_local_limits() -> None:
    """Forget the in-process counters (tests)."""
    _local_windows.clear()
    _local_slots.clear()
