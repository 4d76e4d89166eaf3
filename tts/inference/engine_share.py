"""Engine-seconds per tenant, one ledger for every engine of a process (and of a host).

Every engine run of this process (a Kokoro sentence in an engine-scheduler
worker, a Piper window in an engine's work pool) runs inside
``EngineShare.running(key)``: the CPU time its thread spends is charged to
the tenant ``key``. A tenant's *usage* is its charged engine-seconds, decaying
with a half-life (``half_life_s``), so it says how much of the CPU the tenant
has had lately. The engine scheduler and every work pool take, of the tenants
with work waiting, the one with the least usage: engine-seconds are shared,
not requests, whatever engine a tenant's work runs on (a Kokoro sentence costs
about twelve Piper ones per second of audio, and is charged that).

**Demotion.** A run cannot be interrupted once it is inside ONNX Runtime, and a
Kokoro sentence takes a second or more of a core. So when a run of tenant B
starts (or B is running in another process of the host) while threads of
this process run work of a tenant with more usage than B (by more than
``margin_s``), those threads are lowered to ``demoted_nice`` (19), and so is
a run of such a tenant that starts while B runs: the kernel then gives B's
threads (at the engine's nice, 10) about seven times their CPU until the
demoted runs end. A demoted thread is raised back when its run ends;
where the process may not raise a thread's priority (no ``CAP_SYS_NICE``,
``RLIMIT_NICE`` 0: the usual container), ``running`` says so and the pool or
scheduler replaces that thread with a fresh one.

**The host.** ``merge_remote`` takes the usage and the running tenants of the
host's other processes (``tts.synthesis.engine_time.host_share`` publishes and reads
them through Redis): usage is then the host's, and a run of a tenant with less
usage in another process (a Wyoming server, a Celery worker) demotes this
process's threads of dearer tenants as a local one would.

Nothing here imports Django: the platform configures the process's ledger
(``configure``) from its settings when it builds the engine registry.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

#: The least a run is charged (seconds): its thread's overhead, and a turn for runs that only wait.
MIN_CHARGE_S = 0.001


@dataclass
class _Running:
    key: Hashable
    tid: int
    base_nice: int | None
    demoted: bool = False


@dataclass
class RunOutcome:
    """What ``EngineShare.running`` tells the worker once the run is over."""

    #: CPU seconds the run's thread spent.
    seconds: float = 0.0
    #: The thread was demoted and could not be raised back: the caller should replace it.
    retire: bool = False


@dataclass
class _Usage:
    value: float = 0.0
    at: float = field(default_factory=time.monotonic)


class EngineShare:
    """Per-tenant engine-seconds (decaying), the runs in progress, and demotion of dearer tenants' threads."""

    def __init__(self, *, half_life_s: float = 10.0, margin_s: float = 0.05, demoted_nice: int = 19) -> None:
        self.half_life_s = half_life_s
        self.margin_s = margin_s
        self.demoted_nice = demoted_nice
        #: Demotion on: off where the OS has no per-thread nice (not Linux) or the platform says so.
        self.demote = sys.platform.startswith("linux")
        self._lock = threading.Lock()
        self._usage: dict[Hashable, _Usage] = {}
        self._running: dict[int, _Running] = {}
        #: The host's other processes: their usage per tenant and the tenants they run now.
        self._remote_usage: dict[Hashable, float] = {}
        self._remote_running: set[Hashable] = set()
        #: Threads demoted, and replaced because they could not be raised back, since start.
        self.demotions = 0
        self.retired = 0

    def configure(self, *, half_life_s: float, margin_s: float, demote: bool) -> None:
        self.half_life_s = max(0.1, half_life_s)
        self.margin_s = max(0.0, margin_s)
        self.demote = demote and sys.platform.startswith("linux")

    # --- usage -------------------------------------------------------------------

    def _decayed(self, entry: _Usage, now: float) -> float:
        return entry.value * math.pow(0.5, (now - entry.at) / self.half_life_s)

    def charge(self, key: Hashable, seconds: float) -> None:
        """Add ``seconds`` of engine time to ``key`` (negative: take back an over-estimate)."""
        now = time.monotonic()
        with self._lock:
            entry = self._usage.setdefault(key, _Usage(0.0, now))
            entry.value = max(0.0, self._decayed(entry, now) + seconds)
            entry.at = now
            if len(self._usage) > 4096:  # forget tenants whose usage has decayed away
                self._usage = {k: u for k, u in self._usage.items() if self._decayed(u, now) > 1e-3}

    def usage(self, key: Hashable) -> float:
        """The tenant's decayed engine-seconds, this process's and (when merged) the host's other processes'."""
        now = time.monotonic()
        with self._lock:
            return self._usage_locked(key, now)

    def _usage_locked(self, key: Hashable, now: float) -> float:
        entry = self._usage.get(key)
        local = self._decayed(entry, now) if entry is not None else 0.0
        return local + self._remote_usage.get(key, 0.0)

    def least_used(self, keys: Iterable[Hashable]) -> Hashable:
        """Of ``keys`` (in arrival order), the one with the least usage; the first of equals."""
        now = time.monotonic()
        with self._lock:
            return min(keys, key=lambda k: self._usage_locked(k, now))

    def local_usage(self) -> dict[Hashable, float]:
        """This process's own usage per tenant (what it publishes to the host)."""
        now = time.monotonic()
        with self._lock:
            return {k: v for k, u in self._usage.items() if (v := self._decayed(u, now)) > 1e-3}

    def running_keys(self) -> set[Hashable]:
        with self._lock:
            return {run.key for run in self._running.values()}

    def merge_remote(self, usage: dict[Hashable, float], running: set[Hashable]) -> None:
        """The host's other processes' usage and running tenants; demotes local runs of dearer tenants."""
        with self._lock:
            self._remote_usage = dict(usage)
            self._remote_running = set(running)
            now = time.monotonic()
            for key in running:
                self._demote_dearer_locked(key, now)

    # --- runs --------------------------------------------------------------------

    @contextmanager
    def running(self, key: Hashable, *, estimate: float = 0.0) -> Iterator[RunOutcome]:
        """Around one engine run of ``key`` on this thread: charges its CPU time, demotes dearer runs.

        ``estimate``: engine-seconds charged at once (so that the next pick already
        counts this run), replaced by the measured CPU time at the end.
        """
        outcome = RunOutcome()
        tid = threading.get_native_id()
        if estimate:
            self.charge(key, estimate)
        with self._lock:
            base = _nice_of(tid) if self.demote else None
            run = _Running(key, tid, base)
            self._running[tid] = run
            now = time.monotonic()
            self._demote_dearer_locked(key, now)
            if base is not None and self._cheaper_running_locked(key, now):
                # A cheaper tenant runs (here or in another process of the host): start below it.
                run.demoted = _set_nice(tid, max(base, self.demoted_nice))
                self.demotions += int(run.demoted)
        started = time.thread_time()
        try:
            yield outcome
        finally:
            outcome.seconds = time.thread_time() - started
            # Every run costs at least a quantum: runs that only wait (for a pool's windows) still take turns.
            self.charge(key, max(outcome.seconds, MIN_CHARGE_S) - estimate)
            with self._lock:
                ended = self._running.pop(tid, None)
            if ended is not None and ended.demoted and ended.base_nice is not None:
                outcome.retire = not _set_nice(tid, ended.base_nice)
                if outcome.retire:
                    with self._lock:
                        self.retired += 1

    def _cheaper_running_locked(self, key: Hashable, now: float) -> bool:
        if not self.demote:
            return False
        keys = {r.key for r in self._running.values() if not r.demoted} | self._remote_running
        keys.discard(key)
        mine = self._usage_locked(key, now)
        return any(self._usage_locked(other, now) + self.margin_s < mine for other in keys)

    def _demote_dearer_locked(self, key: Hashable, now: float) -> None:
        if not self.demote:
            return
        bar = self._usage_locked(key, now) + self.margin_s
        for run in self._running.values():
            if run.demoted or run.key == key or run.base_nice is None:
                continue
            if self._usage_locked(run.key, now) > bar and _set_nice(run.tid, max(run.base_nice, self.demoted_nice)):
                run.demoted = True
                self.demotions += 1


def _nice_of(tid: int) -> int | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, tid)
    except OSError:
        return None


def _set_nice(tid: int, nice: int) -> bool:
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        return False
    return True


#: The process's ledger: the engine scheduler and every engine's work pool charge it.
engine_share = EngineShare()
