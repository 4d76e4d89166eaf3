"""Waiting for a server that the benchmarks started: until it is ready, not merely alive.

``/healthz`` answers as soon as the process serves HTTP; ``/readyz`` only once
every preloaded model version is loaded and warmed. ``setup_demo`` registers
the Japanese Kokoro voices with preload on, so a bench that started timing at
``/healthz`` measured while the model lifecycle thread was still loading and
warming Kokoro on the same cores (seen with py-spy: a short sentence's first
window took 40 ms instead of 20).
"""

from __future__ import annotations

import subprocess
import time

import httpx


def wait_ready(
    base: str, proc: subprocess.Popen[bytes] | None = None, *, timeout: float = 180.0, consecutive: int = 1
) -> None:
    """Until ``base/readyz`` answers 200 ``consecutive`` times in a row (one per process behind a shared port)."""
    deadline = time.monotonic() + timeout
    streak = 0
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{base}: server exited with {proc.returncode}")
        try:
            ok = httpx.get(f"{base}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            ok = False
        streak = streak + 1 if ok else 0
        if streak >= consecutive:
            return
        time.sleep(0.05 if ok else 0.25)
    raise TimeoutError(f"{base} was not ready after {timeout:.0f} s")
