"""SIGTERM in a daphne process: drain (tts/synthesis/runs/shutdown.py), then stop the reactor.

Twisted installs its own SIGTERM handler (stop the reactor at once, which
cancels every open request) when the reactor starts; this one replaces it
then, so a stop drains first. Only server processes call
:func:`install_graceful_shutdown` (``ttsplatform/asgi.py``).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from django.conf import settings

from tts.synthesis import drain

logger = logging.getLogger(__name__)


def install_graceful_shutdown() -> None:
    try:
        from twisted.internet import reactor
    except ImportError:  # not under daphne (uvicorn and friends handle SIGTERM themselves)
        return
    reactor.callWhenRunning(_install, reactor)  # type: ignore[attr-defined]


def _install(reactor: Any) -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    started = threading.Event()

    def on_sigterm(signum: int, frame: object) -> None:
        if started.is_set():
            return
        started.set()
        timeout = settings.TTS_SHUTDOWN_DRAIN_S
        logger.warning("SIGTERM: draining for up to %d s, refusing new syntheses", timeout)

        def drain_then_stop() -> None:
            left = drain(timeout)
            if left:
                logger.warning("drain ran out: %d syntheses stop at their next segment, refunded", left)
            reactor.callFromThread(reactor.stop)

        threading.Thread(target=drain_then_stop, name="tts-drain", daemon=True).start()

    signal.signal(signal.SIGTERM, on_sigterm)
