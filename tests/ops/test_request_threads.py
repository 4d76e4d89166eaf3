"""The HTTP handler's request threads (ttsplatform/handler.py): one request at a time on a
thread taken from a pool, kept for the next request with its database connection."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.db import connection

from ttsplatform.handler import RequestThread, RequestThreads, get_http_application


async def _get(app: Any, path: str) -> int:
    status = 0
    done = asyncio.Event()
    first = True

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    return status


@pytest.mark.django_db(transaction=True)
def test_sequential_requests_reuse_one_thread_and_its_connection() -> None:
    seen: list[tuple[int, int | None]] = []

    def at_start(**_: object) -> None:
        connection.ensure_connection()  # what a view's first query does

    def at_finish(**_: object) -> None:
        # After Django's own close_old_connections (registered first): what survives the request.
        raw = connection.connection
        seen.append((threading.get_ident(), id(raw) if raw is not None else None))

    app = get_http_application()
    request_started.connect(at_start, dispatch_uid="test-request-threads-start")
    request_finished.connect(at_finish, dispatch_uid="test-request-threads-finish")
    try:

        async def three() -> list[int]:
            return [await _get(app, "/v1/models") for _ in range(3)]

        statuses = asyncio.run(three())
    finally:
        request_started.disconnect(dispatch_uid="test-request-threads-start")
        request_finished.disconnect(dispatch_uid="test-request-threads-finish")
    assert statuses == [401, 401, 401]  # no key: answered, through the whole chain
    assert len(seen) == 3
    threads = {ident for ident, _ in seen}
    assert len(threads) == 1 and threading.get_ident() not in threads, seen
    assert app.threads.idle_count == 1
    if connection.settings_dict["CONN_MAX_AGE"]:  # SQLite by default: one connection for the three
        assert seen[0][1] is not None and len({raw for _, raw in seen}) == 1, seen
    else:  # PostgreSQL without persistent connections: closed after each request
        assert {raw for _, raw in seen} == {None}, seen


def test_concurrent_requests_get_their_own_threads() -> None:
    pool = RequestThreads(keep=8)
    first, second = pool.acquire(), pool.acquire()
    assert first is not second
    pool.release(first)
    pool.release(second)
    assert pool.idle_count == 2
    assert pool.acquire() is second  # last used first
    for thread in (first, second):
        thread.shutdown()


def test_a_thread_still_running_is_not_kept_and_ends_after_its_work() -> None:
    pool = RequestThreads(keep=8)
    thread = pool.acquire()
    release = threading.Event()
    running = thread.submit(release.wait, 10)
    pool.release(thread)  # its request ended (a client that went away) while the view still runs
    assert pool.idle_count == 0
    assert pool.acquire() is not thread
    release.set()
    assert running.result(timeout=10) is True
    assert thread.idle


def test_at_most_keep_idle_threads_are_kept() -> None:
    pool = RequestThreads(keep=1)
    threads = [pool.acquire() for _ in range(3)]
    for thread in threads:
        pool.release(thread)
    assert pool.idle_count == 1
    kept = pool.acquire()
    assert kept is threads[0]
    assert all(t._shutdown for t in threads[1:])  # type: ignore[attr-defined]
    kept.shutdown()
    assert isinstance(kept, RequestThread)
