"""A graceful stop of a server process: drain, then cancel with refunds.

On SIGTERM (wired in ``ttsplatform/shutdown.py``) the process starts
draining: ``/readyz`` answers 503 so load balancers stop sending traffic, new
syntheses are refused with 503 ``server_shutting_down`` (clients retry
elsewhere), and the syntheses already running may finish for up to
``TTS_SHUTDOWN_DRAIN_S`` (set it below the orchestrator's grace period:
Kubernetes' default is 30 s). Then the rest are ended here: their runs end
failed (``server_shutting_down``) with the characters never spoken refunded,
their streams stop at the next segment, and the process exits.
"""

from __future__ import annotations

import threading
import time

from django.db import connections

from tts.errors import SynthesisError
from tts.synthesis.runs.recovery import heartbeats

draining = threading.Event()
aborted = threading.Event()


def refuse_if_draining() -> None:
    if draining.is_set():
        raise SynthesisError(
            "This server is shutting down; send the request again (another server will take it).",
            code="server_shutting_down",
            status=503,
            retry_after=1,
        )


def stop_if_aborted() -> None:
    """Called between segments: a synthesis still running when the drain ran out stops here."""
    if aborted.is_set():
        raise SynthesisError(
            "This server shut down before the synthesis ended; what was not spoken was refunded.",
            code="server_shutting_down",
            status=503,
            retry_after=1,
        )


def drain(timeout: float, *, poll: float = 0.2) -> int:
    """Refuse new work, wait up to ``timeout`` s for running syntheses, then abort the rest.

    Returns how many were still running when the drain ran out. Blocking: call it from a thread.
    """
    draining.set()
    deadline = time.monotonic() + timeout
    while heartbeats.live() and time.monotonic() < deadline:
        time.sleep(poll)
    aborted.set()
    left = heartbeats.live()
    try:
        for run in left:
            # Ended here, whatever its stream does next (the server is about to stop serving
            # it): billed for what went out, the rest refunded, the record final.
            run.fail("server_shutting_down")
    finally:
        connections.close_all()
    return len(left)
