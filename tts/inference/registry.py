"""Loaded engines, one per model version, shared by every request in a process.

The registry loads a model version on first use (or at start-up when it is
preloaded), warms it with a short synthesis, and unloads versions nobody used
for a while. It is keyed by the version's id, artifact hash and engine, so a version
whose files changed is loaded afresh. With ``max_loaded`` it holds at most that many
engines and drops the least recently used one to load another (a process
serving many private voices stays within its memory). Engines are found by name through a dict
of dotted paths (``TTS_ENGINES``), imported on first use: torch is only
imported when a ``vits-torch`` version is loaded.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .engine import Engine, EngineError, ModelSpec, SynthesisParams

logger = logging.getLogger(__name__)

WARMUP_TEXT = "Hello."


# A version's id, artifact hash and engine: a changed file or a switch of
# engine (an admin edit) loads afresh.
_Key = tuple[int, str, str]


def _key(spec: ModelSpec) -> _Key:
    return (spec.id, spec.sha256, spec.engine)


@dataclass
class _Loaded:
    spec: ModelSpec
    engine: Engine
    loaded_at: float
    last_used: float
    warmed: bool = False


def _import_engine(path: str) -> Callable[..., Engine]:
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EngineError(f"engine {path} is not installed: {exc}") from exc
    factory: Callable[..., Engine] = getattr(module, attr)
    return factory


class EngineRegistry:
    def __init__(self, engine_paths: Mapping[str, str], *, threads: int = 1, max_loaded: int = 0) -> None:
        self._paths = dict(engine_paths)
        self._threads = threads
        self._max_loaded = max_loaded  # 0: no bound
        self._loaded: dict[_Key, _Loaded] = {}
        self._lock = threading.Lock()
        self._load_locks: dict[_Key, threading.Lock] = {}

    def engine_trait(self, name: str, trait: str) -> bool:
        """A class attribute of engine ``name`` (``cuts_first_clause``), without loading a model;
        False for an engine that is unknown or not installed."""
        path = self._paths.get(name)
        if path is None:
            return False
        try:
            return bool(getattr(_import_engine(path), trait, False))
        except EngineError:
            return False

    def get(self, spec: ModelSpec) -> Engine:
        """The engine for ``spec``, loading it (once, even under concurrent callers) if needed."""
        key = _key(spec)
        entry = self._loaded.get(key)
        if entry is None:
            with self._lock:
                load_lock = self._load_locks.setdefault(key, threading.Lock())
            with load_lock:
                entry = self._loaded.get(key)
                if entry is None:
                    entry = self._load(spec)
        entry.last_used = time.monotonic()
        return entry.engine

    def _load(self, spec: ModelSpec) -> _Loaded:
        path = self._paths.get(spec.engine)
        if path is None:
            raise EngineError(f"unknown engine {spec.engine!r}; known: {', '.join(sorted(self._paths))}")
        started = time.monotonic()
        engine = _import_engine(path)(spec, threads=self._threads)
        now = time.monotonic()
        entry = _Loaded(spec=spec, engine=engine, loaded_at=now, last_used=now)
        with self._lock:
            # A newer artifact of the same version replaces the old one.
            for old_key in [k for k in self._loaded if k[0] == spec.id]:
                self._retire(old_key)
            if self._max_loaded:
                by_use = sorted(self._loaded, key=lambda k: self._loaded[k].last_used)
                for old_key in by_use[: max(0, len(by_use) + 1 - self._max_loaded)]:
                    self._retire(old_key)
            self._loaded[_key(spec)] = entry
        logger.info("loaded model version %s (%s) in %.2fs", spec.id, spec.engine, now - started)
        return entry

    def warm(self, spec: ModelSpec) -> None:
        """Load ``spec`` and run one short synthesis so the first request is not slow."""
        engine = self.get(spec)
        entry = self._loaded[_key(spec)]
        if entry.warmed:
            return
        ids = [i for sentence in engine.phonemize(WARMUP_TEXT) for i in engine.phonemes_to_ids(sentence)]
        engine.synthesize_ids(ids, SynthesisParams())
        entry.warmed = True

    def is_warm(self, spec: ModelSpec) -> bool:
        entry = self._loaded.get(_key(spec))
        return bool(entry and entry.warmed)

    def loaded_specs(self) -> list[ModelSpec]:
        return [entry.spec for entry in list(self._loaded.values())]

    def unload(self, spec_id: int) -> None:
        with self._lock:
            for key in [k for k in self._loaded if k[0] == spec_id]:
                self._retire(key)

    def unload_idle(self, idle_seconds: float, *, keep: set[int] | None = None) -> list[int]:
        """Unload versions unused for ``idle_seconds`` (except ids in ``keep``)."""
        cutoff = time.monotonic() - idle_seconds
        removed: list[int] = []
        with self._lock:
            for key, entry in list(self._loaded.items()):
                if entry.last_used < cutoff and not (keep and key[0] in keep):
                    self._retire(key)
                    removed.append(key[0])
        return removed

    def _retire(self, key: _Key) -> None:
        entry = self._loaded.pop(key, None)
        if entry is None:
            return
        # No close() here: requests already holding this engine finish with it
        # (the old version completes what it started); dropping our reference
        # frees its memory once they are done.
        logger.info("unloaded model version %s", key[0])
        del entry
        # What the engine's runs left in the shared ONNX Runtime arena and no run holds now.
        from .onnx_arena import shrink_shared_arena

        shrink_shared_arena()

    def close_all(self) -> None:
        with self._lock:
            entries = list(self._loaded.values())
            self._loaded.clear()
        for entry in entries:
            entry.engine.close()
