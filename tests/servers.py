"""Real server processes for integration tests: daphne on a free port, sharing
the test database (and Redis, when configured) with the test process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
#: glibc's malloc as deployments run it (TTS_MALLOC_MMAP_THRESHOLD's default, ttsplatform/settings/deploy.py),
#: for a server whose memory a test measures; the others keep the dynamic threshold (tests/settings.py).
DEPLOYED_MALLOC = {"TTS_MALLOC_MMAP_THRESHOLD": str(256 * 1024)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_database_url() -> str:
    """A DATABASE_URL for the test database pytest-django created."""
    cfg = connection.settings_dict
    if cfg["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{cfg['NAME']}"
    user = cfg.get("USER") or ""
    password = f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{cfg.get('HOST') or '127.0.0.1'}:{cfg.get('PORT') or 5432}/{cfg['NAME']}"


class ServerProc:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
        self.proc = proc
        self.url = url
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_http(url: str, timeout: float = 60.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{url} not ready after {timeout}s: {last}")


def start_daphne(extra_env: dict[str, str] | None = None, *, ready_path: str = "/healthz") -> ServerProc:
    port = free_port()
    env = dict(os.environ)
    env["DATABASE_URL"] = test_database_url()
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra_env or {})
    log_path = Path(env.get("VAR_DIR", "/tmp")) / f"daphne-{port}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - the child process owns it
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = ServerProc(proc, f"http://127.0.0.1:{port}", log_path)
    try:
        wait_http(server.url + ready_path, proc=proc)
    except Exception:
        server.stop()
        raise RuntimeError(f"daphne did not start:\n{server.log()[-4000:]}") from None
    return server


@pytest.fixture(scope="session")
def live_server_url(django_db_setup: None, django_db_blocker: object) -> Iterator[str]:
    """One daphne for the session; tests using it need ``django_db(transaction=True)``."""
    server = start_daphne()
    yield server.url
    server.stop()


@pytest.fixture
def daphne_factory(django_db_setup: None) -> Iterator[Callable[..., ServerProc]]:
    started: list[ServerProc] = []

    def factory(extra_env: dict[str, str] | None = None, **kwargs: str) -> ServerProc:
        server = start_daphne(extra_env, **kwargs)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


__all__ = [
    "DEPLOYED_MALLOC",
    "ServerProc",
    "daphne_factory",
    "free_port",
    "live_server_url",
    "start_daphne",
    "test_database_url",
    "wait_http",
]
