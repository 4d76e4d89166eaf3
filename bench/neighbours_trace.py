"""Where a request's time goes, per tenant: the ASGI app of ``bench_neighbours.py --trace``.

Not the platform's code: it wraps ``ttsplatform.asgi.application`` and patches,
in the serving process only, the places a request can wait:

* **scheduler wait**: from ``FairScheduler.submit`` to the task's start;
* **pool wait**: from ``WorkPool.submit`` (a window, an encoder run) to its start;
* **engine runs**: wall time inside ``EngineShare.running`` and the CPU time
  its thread had meanwhile (wall minus CPU: time the run was ready but another
  thread had the core);
* **database**: time in Django's cursor ``execute``/``executemany``;
* **Redis**: time in ``redis`` client commands (rate limits, slots).

Each is added to the tenant the request is for (its ``xi-api-key``, named by
``BENCH_TRACE_KEYS``), through a context variable that Django's threads and the
engine scheduler's tenant key carry. Totals and per-request means are written
to ``BENCH_TRACE_OUT`` (JSON) when the server stops, and the figures of the
phase the bench is in (quiet/noisy) are split by ``POST /__trace/phase``.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ttsplatform.settings")
django.setup()

from ttsplatform.asgi import application as _inner  # noqa: E402

_who: contextvars.ContextVar[str] = contextvars.ContextVar("bench_trace_who", default="")
_keys: dict[str, str] = {v: k for k, v in json.loads(os.environ.get("BENCH_TRACE_KEYS", "{}")).items()}
_tenant_who: dict[Any, str] = {}
_lock = threading.Lock()
_phase = ["start"]
_stats: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))


def _add(who: str, what: str, seconds: float, count: int = 1) -> None:
    if not who:
        return
    with _lock:
        entry = _stats[(_phase[0], who)]
        entry[what] += seconds
        entry[what + "_n"] += count


def _who_for_key(key: Any) -> str:
    return _tenant_who.get(key, "")


def _patch() -> None:
    from django.db.backends import utils as db_utils

    from tts.inference import engine_share as share_module
    from tts.inference import work_pool
    from tts.synthesis.engine_time import scheduler as engine_scheduler

    submit = engine_scheduler.FairScheduler.submit

    def traced_submit(self: Any, key: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        who = _who.get()
        if who:
            _tenant_who[key] = who
        queued = time.perf_counter()

        def run(*a: Any, **k: Any) -> Any:
            _add(who or _who_for_key(key), "scheduler_wait", time.perf_counter() - queued)
            return fn(*a, **k)

        return submit(self, key, run, *args, **kwargs)

    engine_scheduler.FairScheduler.submit = traced_submit  # type: ignore[method-assign]

    pool_submit = work_pool.WorkPool.submit

    def traced_pool_submit(self: Any, fn: Callable[[], Any], *, priority: int = 0, key: Any = None) -> Any:
        tenant = work_pool._current_key.get() if key is None else key
        queued = time.perf_counter()

        def run() -> Any:
            _add(_who_for_key(tenant), "pool_wait", time.perf_counter() - queued)
            return fn()

        return pool_submit(self, run, priority=priority, key=key)

    work_pool.WorkPool.submit = traced_pool_submit  # type: ignore[method-assign]

    running = share_module.EngineShare.running

    @contextlib.contextmanager
    def traced_running(self: Any, key: Any, *, estimate: float = 0.0) -> Iterator[Any]:
        started = time.perf_counter()
        with running(self, key, estimate=estimate) as outcome:
            yield outcome
        who = _who_for_key(key)
        _add(who, "run_wall", time.perf_counter() - started)
        _add(who, "run_cpu", outcome.seconds, 0)

    share_module.EngineShare.running = traced_running  # type: ignore[method-assign]

    for name in ("execute", "executemany"):
        original = getattr(db_utils.CursorWrapper, name)

        def traced(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return _original(self, *args, **kwargs)
            finally:
                _add(_who.get(), "database", time.perf_counter() - started)

        setattr(db_utils.CursorWrapper, name, traced)

    try:
        import redis
    except ImportError:
        return
    command = redis.Redis.execute_command

    def traced_command(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return command(self, *args, **kwargs)
        finally:
            _add(_who.get(), "redis", time.perf_counter() - started)

    redis.Redis.execute_command = traced_command  # type: ignore[method-assign]


def _dump() -> None:
    out = os.environ.get("BENCH_TRACE_OUT")
    if not out:
        return
    with _lock:
        data = {f"{phase}/{who}": dict(values) for (phase, who), values in _stats.items()}
    with open(out, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)


_patch()
atexit.register(_dump)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"] == "/__trace/phase":
        query = scope.get("query_string", b"").decode()
        with _lock:
            _phase[0] = query or "unnamed"
        _dump()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = dict(scope.get("headers") or [])
    who = _keys.get(headers.get(b"xi-api-key", b"").decode(), "")
    token = _who.set(who)
    started = time.perf_counter()
    try:
        await _inner(scope, receive, send)
    finally:
        _who.reset(token)
        if scope["type"] == "http" and who:
            _add(who, "request", time.perf_counter() - started)
