"""Engine threads' priorities on Linux: absolute nice values, and threads started from one never demoted.

Linux keeps a nice value per thread, and a new thread inherits its creator's. Without
CAP_SYS_NICE (the shipped containers have none) a thread may lower its priority but never raise
it back. So two rules hold every engine thread to the priority it was given:

* a worker's nice is set to an absolute value, ``base_nice() + increment``, never added to what it
  inherited (a worker started from a demoted thread would otherwise stay at 19 for good);
* workers are started by ``start_thread``: from one spawner thread that runs at the process's base
  nice and is never demoted, never from the thread that asks (which may be a demoted worker that
  retires: ``engine_share``). The spawner starts with the first worker (no thread at import): that
  first call comes before any run, so before any thread was demoted.

``base_nice`` is the main thread's nice (``PRIO_PROCESS`` with the process id names the main
thread on Linux), what the process was started with. Elsewhere than Linux nothing is changed.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading

logger = logging.getLogger(__name__)

LINUX = sys.platform.startswith("linux")


def base_nice() -> int:
    """The process's own nice: its main thread's (0 where it cannot be read)."""
    if not LINUX:
        return 0
    try:
        return os.getpriority(os.PRIO_PROCESS, os.getpid())
    except OSError:
        return 0


def thread_nice(tid: int | None = None) -> int | None:
    """The nice of thread ``tid`` (this one by default); ``None`` where it cannot be read."""
    if not LINUX:
        return None
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id() if tid is None else tid)
    except OSError:
        return None


def set_thread_nice(nice: int, tid: int | None = None) -> bool:
    """Set thread ``tid`` (this one by default) to ``nice`` (clamped to -20..19); False if refused."""
    if not LINUX:
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id() if tid is None else tid, max(-20, min(19, nice)))
    except OSError:
        return False
    return True


def set_this_thread_below_base(increment: int) -> None:
    """This thread at ``base_nice() + increment``: absolute, whatever it inherited."""
    if not LINUX:
        return
    target = min(19, base_nice() + max(0, increment))
    if thread_nice() == target:
        return
    if not set_thread_nice(target):
        # Raising a priority needs CAP_SYS_NICE: a thread started by start_thread never has to.
        logger.info("engine worker priority left at %s (wanted %d)", thread_nice(), target)


class _Spawner:
    """One thread, at the process's base nice, that starts the threads others ask for."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[threading.Thread, threading.Event]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def start(self, thread: threading.Thread) -> None:
        self._ensure_running()
        done = threading.Event()
        self._requests.put((thread, done))
        done.wait()

    def _ensure_running(self) -> None:
        with self._lock:
            if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
                return
            if self._pid != os.getpid():  # a forked child: its parent's spawner is not here
                self._requests = queue.SimpleQueue()
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._loop, name="tts-thread-spawner", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        set_this_thread_below_base(0)  # at the base, even if started from a lowered thread (with the right)
        while True:
            thread, done = self._requests.get()
            try:
                thread.start()
            except BaseException:
                logger.exception("could not start thread %s", thread.name)
            finally:
                done.set()


_spawner = _Spawner()


def start_thread(thread: threading.Thread) -> None:
    """Start ``thread`` from the spawner, so it begins at the process's base nice, not its caller's."""
    if not LINUX:
        thread.start()
        return
    _spawner.start(thread)
