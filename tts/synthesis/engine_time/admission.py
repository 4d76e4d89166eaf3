"""Admission of engine work: a bound on syntheses queued for this process's engine.

Every synthesis that needs the engine (a cache miss) takes a ticket before it
reserves quota; past ``TTS_ENGINE_MAX_QUEUE`` tickets in flight, new work is
refused with 503 and a ``Retry-After`` instead of joining a queue whose wait
grows for every tenant. Cache hits never take a ticket: they do not touch the
engine, so a busy engine does not stop them.

The bound is per process on purpose: each process has its own engine and its
own queue, and a load balancer retries elsewhere on 503. ``0`` disables it.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from django.conf import settings

from accounts.models import ApiKey, Tenant
from accounts.ratelimit import LimitExceeded, StreamSlot, acquire_stream_slot, check_request_rate

#: Sources limited elsewhere: a job's request was counted when it was submitted,
#: and the worker pool's size bounds how many run at once.
UNLIMITED_SOURCES = frozenset({"job"})


class EngineBusy(LimitExceeded):
    pass


class EngineAdmission:
    """Counts admitted engine work and learns how long one synthesis takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        # Exponentially weighted mean of a synthesis' wall time, for Retry-After.
        self._mean_s = 1.0

    def admit(self) -> EngineTicket:
        bound = settings.TTS_ENGINE_MAX_QUEUE
        with self._lock:
            if bound and self.in_flight >= bound:
                waiting = self.in_flight
                mean = self._mean_s
            else:
                self.in_flight += 1
                return EngineTicket(self)
        # Roughly when one place frees up; never 0, never absurd.
        retry = min(60, max(1, math.ceil(mean)))
        raise EngineBusy(
            f"The speech engine is at capacity ({waiting} syntheses queued, the bound is {bound}). "
            "Retry after the Retry-After header's seconds.",
            code="system_busy",
            status=503,
            retry_after=retry,
        )

    def _done(self, seconds: float | None) -> None:
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)
            if seconds is not None:
                self._mean_s = 0.8 * self._mean_s + 0.2 * seconds


class EngineTicket:
    """One admitted synthesis; ``release()`` is idempotent."""

    def __init__(self, admission: EngineAdmission) -> None:
        self._admission = admission
        self._started = time.monotonic()
        self.released = False

    def release(self, *, completed: bool = False) -> None:
        if self.released:
            return
        self.released = True
        self._admission._done(time.monotonic() - self._started if completed else None)

    def __del__(self) -> None:
        # Safety net for a prepared synthesis whose generator never started.
        if not self.released:
            self.release()


engine_admission = EngineAdmission()


@dataclass
class SynthesisAdmission:
    """What one synthesis holds: a tenant concurrency slot and, on a cache miss, an engine ticket."""

    slot: StreamSlot | None = None
    ticket: EngineTicket | None = None
    #: False for sources limited elsewhere (jobs): they take no slot.
    limited: bool = True

    def hold_slot(self, *, tenant: Tenant) -> None:
        """Take one of the tenant's concurrency places, or raise ``LimitExceeded``."""
        if self.limited and self.slot is None:
            self.slot = acquire_stream_slot(tenant=tenant)

    def admit_engine(self) -> None:
        if self.ticket is None:
            self.ticket = engine_admission.admit()

    def release(self, *, completed: bool = False) -> None:
        """Give everything back; safe to call more than once (and to take places again after)."""
        ticket, slot, self.ticket, self.slot = self.ticket, self.slot, None, None
        if ticket is not None:
            ticket.release(completed=completed)
        if slot is not None:
            slot.release()

    @property
    def held(self) -> bool:
        return self.ticket is not None or self.slot is not None


def synthesis_admit(*, tenant: Tenant, api_key: ApiKey | None, source: str) -> SynthesisAdmission:
    """Count the request against the rate limits, or raise ``LimitExceeded``.

    The caller then takes a concurrency place (``hold_slot``) unless the request
    is answered at once from the cache, and an engine place (``admit_engine``)
    on a cache miss.
    """
    if source in UNLIMITED_SOURCES:
        return SynthesisAdmission(limited=False)
    check_request_rate(tenant=tenant, api_key=api_key)
    return SynthesisAdmission()
