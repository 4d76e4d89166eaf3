"""Keeping each process's loaded models in step with the database, without restarts.

Every web and worker process runs one ``ModelLifecycle`` thread. At start-up
it loads and warms every active (and every preloaded) model version; until
that is done ``/readyz`` says not ready, so no traffic reaches a cold engine.
Then it polls the ``ModelVersion`` table every ``TTS_MODEL_POLL_SECONDS``: a
version activated or preloaded by another process (the admin, ``manage.py
activate_model``) is loaded and warmed here within a few seconds, and a
retired one is dropped from the registry. Requests resolve the active version
through a per-process lookup cache (``infra/lookup_cache.py``) that the
poller clears when it sees the active versions change, so a process switches
within one poll (and within ``TTS_LOOKUP_CACHE_S`` at the latest); the process
that activated it switches at once. Dropping never closes an
engine: a stream that started on the old version keeps its engine object and
finishes on it. Versions nobody used for ``TTS_MODEL_IDLE_UNLOAD_SECONDS``
(except preloaded ones) are unloaded and load again on the next request.

Engine work here runs on this thread, never on an event loop.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q

from infra.gc_tuning import freeze_startup_objects
from infra.lookup_cache import clear_lookup_caches
from tts.catalogue.engines import get_registry, spec_for
from tts.inference.engine import ModelSpec
from tts.inference.registry import EngineRegistry
from tts.models import ModelVersion

logger = logging.getLogger(__name__)

Key = tuple[int, str]  # (model version id, sha256): how the registry tells versions apart


@dataclass
class Readiness:
    ready: bool
    reason: str = ""
    models: dict[str, str] = field(default_factory=dict)


def _wanted_versions() -> list[ModelVersion]:
    """Versions every process should hold: the active ones and the preloaded ones not retired."""
    return list(
        ModelVersion.objects.filter(Q(status=ModelVersion.Status.ACTIVE) | Q(preload=True))
        .exclude(status=ModelVersion.Status.RETIRED)
        .order_by("pk")
    )


def _label(version: ModelVersion) -> str:
    return f"{version.model_id} v{version.version}"


class ModelLifecycle:
    def __init__(self, registry: EngineRegistry, *, poll_seconds: float, idle_seconds: float) -> None:
        self.registry = registry
        self.poll_seconds = poll_seconds
        self.idle_seconds = idle_seconds
        self.warmup_done = threading.Event()
        self.warmup_seconds: float | None = None
        self.last_error = ""
        self._idle_unloaded: set[Key] = set()
        # Versions that would not load or warm here, with why; retried every pass.
        self._failures: dict[Key, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen_versions: frozenset[tuple[int, str, str]] = frozenset()

    # --- thread ------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="model-lifecycle", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        started = time.monotonic()
        try:
            # Start-up warm-up: retried until it works (the database may come up after us).
            while not self._stop.is_set():
                if self._step():
                    break
                self._stop.wait(self.poll_seconds)
            if self._stop.is_set():
                return
            self.warmup_seconds = time.monotonic() - started
            # The engines and their graphs are loaded for good: no full collection rescans them.
            freeze_startup_objects()
            self.warmup_done.set()
            logger.info("model warm-up finished in %.2fs; ready", self.warmup_seconds)
            while not self._stop.wait(self.poll_seconds):
                if self._step() and self.idle_seconds > 0:
                    self.unload_idle()
        finally:
            connection.close()

    def _step(self) -> bool:
        try:
            self.sync()
        except Exception as exc:
            self.last_error = f"{exc.__class__.__name__}: {exc}"
            logger.warning("model lifecycle: %s", self.last_error, exc_info=True)
            # A broken connection is reopened on the next attempt.
            connection.close()
            return False
        self.last_error = ""
        return True

    # --- one pass ----------------------------------------------------------

    def sync(self) -> None:
        """Bring this process's registry in line with the database once."""
        wanted = _wanted_versions()
        specs = {(v.pk, v.sha256): spec_for(v) for v in wanted}
        seen = frozenset((v.pk, v.sha256, v.status) for v in wanted)
        if seen != self._seen_versions:
            # Another version is active (or one changed): requests of this process resolve it now.
            self._seen_versions = seen
            clear_lookup_caches()
        for spec in self.registry.loaded_specs():
            if (spec.id, spec.sha256) not in specs:
                # Retired, back to draft, deleted or replaced. In-flight requests keep their engine.
                self.registry.unload(spec.id)
                logger.info("model version %s is no longer wanted here; unloaded", spec.id)
        loaded = {(s.id, s.sha256) for s in self.registry.loaded_specs()}
        for version in wanted:
            key = (version.pk, version.sha256)
            if key in self._idle_unloaded:
                if key not in loaded:
                    continue  # unloaded for idleness; the next request loads it
                self._idle_unloaded.discard(key)  # a request loaded it again: warm it below
            spec = specs[key]
            if not self.registry.is_warm(spec):
                self._warm(version, spec)
        self._idle_unloaded &= set(specs)
        self._failures = {k: v for k, v in self._failures.items() if k in specs}

    def _warm(self, version: ModelVersion, spec: ModelSpec) -> None:
        """Load and warm one version; a broken one is reported, not allowed to stop the others."""
        key = (version.pk, version.sha256)
        started = time.monotonic()
        try:
            self.registry.warm(spec)
        except Exception as exc:
            message = f"{exc.__class__.__name__}: {exc}"
            if self._failures.get(key) != message:  # once per distinct error, not every poll
                logger.error("model %s could not be loaded: %s", _label(version), message, exc_info=True)
            self._failures[key] = message
            return
        self._failures.pop(key, None)
        logger.info("model %s loaded and warmed in %.2fs", _label(version), time.monotonic() - started)

    def unload_idle(self) -> list[int]:
        keep = set(ModelVersion.objects.filter(preload=True).values_list("pk", flat=True))
        loaded = {s.id: (s.id, s.sha256) for s in self.registry.loaded_specs()}
        removed = self.registry.unload_idle(self.idle_seconds, keep=keep)
        for spec_id in removed:
            if spec_id in loaded:
                self._idle_unloaded.add(loaded[spec_id])
            logger.info("model version %s idle for %ss; unloaded", spec_id, self.idle_seconds)
        return removed

    # --- readiness ---------------------------------------------------------

    def readiness(self) -> Readiness:
        """Ready once warm-up finished and every active version is warm (or idle-unloaded on purpose)."""
        if not self.warmup_done.is_set():
            reason = "models warming up"
            if self.last_error:
                reason += f" (last error: {self.last_error})"
            return Readiness(False, reason)
        states: dict[str, str] = {}
        cold: list[str] = []
        for version in ModelVersion.objects.filter(status=ModelVersion.Status.ACTIVE).order_by("model_id"):
            spec = spec_for(version)
            if self.registry.is_warm(spec):
                states[_label(version)] = "warm"
            elif (version.pk, version.sha256) in self._idle_unloaded:
                states[_label(version)] = "unloaded (idle)"
            elif (version.pk, version.sha256) in self._failures:
                states[_label(version)] = f"failed: {self._failures[(version.pk, version.sha256)]}"
                cold.append(_label(version))
            else:
                states[_label(version)] = "loading"
                cold.append(_label(version))
        if cold:
            return Readiness(False, f"models not warm yet: {', '.join(cold)}", states)
        return Readiness(True, "", states)


_lifecycle: ModelLifecycle | None = None
_lifecycle_lock = threading.Lock()
_lifecycle_pid = 0


def get_lifecycle() -> ModelLifecycle | None:
    """This process's lifecycle, or None where it does not run (manage.py commands, tests)."""
    return _lifecycle if _lifecycle_pid == os.getpid() else None


def start_lifecycle(registry: EngineRegistry | None = None) -> ModelLifecycle | None:
    """Start this process's lifecycle thread once; a no-op when ``TTS_MODEL_LIFECYCLE`` is off."""
    global _lifecycle, _lifecycle_pid
    if not settings.TTS_MODEL_LIFECYCLE:
        return None
    with _lifecycle_lock:
        # A forked child (a prefork Celery worker) gets its own: threads do not survive fork.
        if _lifecycle is None or _lifecycle_pid != os.getpid():
            _lifecycle = ModelLifecycle(
                registry or get_registry(),
                poll_seconds=settings.TTS_MODEL_POLL_SECONDS,
                idle_seconds=settings.TTS_MODEL_IDLE_UNLOAD_SECONDS,
            )
            _lifecycle_pid = os.getpid()
            _lifecycle.start()
        return _lifecycle


def connect_worker_signals() -> None:
    """Run the lifecycle in Celery workers too: in each pool process, or the main one for solo/threads pools."""
    from celery.signals import worker_process_init, worker_ready

    from infra.malloc_tuning import tune_malloc_from_settings

    def _in_pool_process(**_: Any) -> None:
        tune_malloc_from_settings()
        start_lifecycle()

    def _in_main_process(sender: Any = None, **_: Any) -> None:
        pool = getattr(sender, "pool", None)
        if pool is not None and type(pool).__module__.endswith(".prefork"):
            return  # each forked child starts its own
        tune_malloc_from_settings()
        start_lifecycle()

    worker_process_init.connect(_in_pool_process, weak=False)
    worker_ready.connect(_in_main_process, weak=False)
