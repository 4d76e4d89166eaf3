"""The ASGI handler for HTTP: Django's, with the middleware chain and the view run in one thread.

Django's own ``ASGIHandler`` builds an async middleware chain. Every
sync-only middleware then needs an adapter, and every ``MiddlewareMixin``
runs its ``process_request`` and ``process_response`` through
``sync_to_async``: with our stack that is about fifteen hops between the event
loop and a worker thread per request, measured at 2.5 ms of CPU on a 2-core
machine (a 401 on ``/v1/models``: 5.2 ms with Django's handler, 2.7 ms here).

Here the chain is built in sync mode (as under WSGI) and the whole of it,
view included, runs in one ``sync_to_async`` call: one hop per request. The
event loop still reads the body, sends the response (streamed responses are
async iterators and stream as before) and watches for a disconnect, so
nothing about the protocol changes. Async views still work: the sync chain
runs them with ``async_to_sync``.

Django gives every request its own thread (a new ``ThreadSensitiveContext``
with a new one-thread executor, shut down at the end), so every request also
opened its own database connection: 0.3 ms of CPU for the thread and, on
SQLite, 1.1-1.6 ms for the connection (WAL's shared memory, the schema).
Here a request still has one thread to itself, but the thread is taken from
a pool of idle ones and given back after the request (``RequestThreads``),
as a WSGI server's threads are: Django's persistent connections
(``CONN_MAX_AGE``) then live in it from one request to the next. Concurrency
is not bounded by the pool: a request that finds no idle thread gets a new
one; at most ``WEB_IDLE_REQUEST_THREADS`` idle ones are kept. A thread still
running code when its request ends (a client that went away while the view
ran) is not given back: it finishes and exits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler


class RequestThread(ThreadPoolExecutor):
    """One thread running one request's synchronous code at a time; knows whether it is idle."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="request")
        self._lock = threading.Lock()
        self._pending = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            self._pending += 1
        future = super().submit(fn, *args, **kwargs)
        # Registered before asyncio's own callback, so it has run when the awaiting request resumes.
        future.add_done_callback(self._done)
        return future

    def _done(self, _: Future[Any]) -> None:
        with self._lock:
            self._pending -= 1

    @property
    def idle(self) -> bool:
        return self._pending == 0


class RequestThreads:
    """Idle request threads, last used first (its connection is the freshest); used from the event loop only."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._idle: list[RequestThread] = []

    def acquire(self) -> RequestThread:
        return self._idle.pop() if self._idle else RequestThread()

    def release(self, thread: RequestThread) -> None:
        if thread.idle and len(self._idle) < self.keep:
            self._idle.append(thread)
        else:
            thread.shutdown(wait=False)  # finishes what it runs, then its thread exits

    @property
    def idle_count(self) -> int:
        return len(self._idle)


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)
        chain: Any = self._middleware_chain  # type: ignore[has-type]
        # Thread-sensitive: the request's own thread (its ThreadSensitiveContext below), where
        # the request_started/finished receivers run too.
        self._middleware_chain = sync_to_async(chain, thread_sensitive=True)
        self.threads = RequestThreads(settings.WEB_IDLE_REQUEST_THREADS)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        thread = self.threads.acquire()
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.handle(scope, receive, send)
        finally:
            self.threads.release(thread)


def get_http_application() -> SyncChainASGIHandler:
    """Like ``django.core.asgi.get_asgi_application``, with the one-hop handler."""
    import django

    django.setup(set_prefix=False)
    return SyncChainASGIHandler()
