"""Real Wyoming server processes for the tests (``manage.py wyoming_server``), shared by the session.

The server is bound to one API key when it starts, so every test makes the
tenant behind that same key again (transactional tests empty the tables in
between); the servers read keys and voices without the lookup cache.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from accounts.keys import hash_key
from accounts.models import ApiKey
from tests.fixtures import TenantCtx, make_tenant
from tests.servers import DEPLOYED_MALLOC, ROOT, free_port, test_database_url

#: The key both servers speak with (a fixed one: the rows behind it are made anew in every test).
WYOMING_KEY = "tts_0a1b2c3d4e5f_wyoming-test-secret-0123456789abcdefghijklmnop"


def make_wyoming_tenant(*, limit: int = 100_000) -> TenantCtx:
    ctx = make_tenant("wyo", limit=limit)
    prefix = WYOMING_KEY.split("_")[1]
    ApiKey.objects.filter(prefix=prefix).delete()
    key = ApiKey.objects.create(
        tenant=ctx.tenant, name="wyoming", prefix=prefix, secret_hash=hash_key(WYOMING_KEY), scopes=["tts"]
    )
    return TenantCtx(tenant=ctx.tenant, owner=ctx.owner, key=WYOMING_KEY, api_key=key)


@dataclass
class WyomingServer:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    #: A second port of the table, open only to a network the tests are not in.
    closed_port: int = 0
    #: Where its Prometheus metrics are served (0: none).
    metrics_port: int = 0

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"wyoming_server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"wyoming_server not listening on {port} after {timeout}s")


def start_wyoming(env_extra: dict[str, str], *, table: dict[str, object] | None = None) -> WyomingServer:
    port = free_port()
    env = dict(os.environ)
    env.update(
        DATABASE_URL=test_database_url(),
        PYTHONUNBUFFERED="1",
        TTS_LOOKUP_CACHE_S="0",
        TTS_WYOMING_API_KEY=WYOMING_KEY,
        TTS_WYOMING_PORT=str(port),
    )
    env.update(env_extra)
    closed_port = 0
    var = Path(env.get("VAR_DIR", "/tmp"))
    if table is not None:
        closed_port = free_port()
        path = var / f"wyoming-listeners-{port}.json"
        path.write_text(json.dumps({str(port): WYOMING_KEY, str(closed_port): table}), encoding="utf-8")
        env["TTS_WYOMING_LISTENERS_FILE"] = str(path)
        env.pop("TTS_WYOMING_API_KEY")
    log_path = var / f"wyoming-{port}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - the child process owns it
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "wyoming_server"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    server = WyomingServer(proc, port, log_path, closed_port, int(env.get("TTS_WYOMING_METRICS_PORT", "0")))
    try:
        _wait_port(port, proc)
    except Exception:
        server.stop()
        raise RuntimeError(f"wyoming_server did not start:\n{server.log()[-4000:]}") from None
    return server


def _session_server(django_db_blocker: pytest.FixtureRequest, env: dict[str, str], **kwargs: object) -> WyomingServer:
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        ctx = make_wyoming_tenant()  # the key must exist when the server checks it at start
        try:
            return start_wyoming(env, **kwargs)  # type: ignore[arg-type]
        finally:  # each test makes its own again
            plan = ctx.tenant.plan
            ctx.tenant.delete()
            plan.delete()
            get_user_model().objects.filter(pk=ctx.owner.pk).delete()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def wyoming_server(django_db_setup: None, django_db_blocker: pytest.FixtureRequest) -> Iterator[WyomingServer]:
    """The server every protocol test talks to (default bounds; malloc as deployed: the hostile
    clients' test measures its memory)."""
    server = _session_server(django_db_blocker, dict(DEPLOYED_MALLOC))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def strict_wyoming_server(django_db_setup: None, django_db_blocker: pytest.FixtureRequest) -> Iterator[WyomingServer]:
    """A server with small bounds (idle, event time, connections per listener and per address, events
    per address), audio resampled to 16 kHz, describe answers kept 1 s, its own metrics port, and a
    second port no test may use. Only one test synthesizes on it (its metrics count one synthesis)."""
    env = {
        "TTS_WYOMING_SAMPLE_RATE": "16000",
        "TTS_WYOMING_METRICS_PORT": str(free_port()),
        "TTS_WYOMING_IDLE_TIMEOUT_S": "1.5",
        "TTS_WYOMING_EVENT_TIMEOUT_S": "1",
        "TTS_WYOMING_MAX_CONNECTIONS": "3",
        "TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS": "2",
        "TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS": "30",
        "TTS_WYOMING_MAX_EVENT_BYTES": "4096",
        "TTS_WYOMING_MAX_PAYLOAD_BYTES": "1024",
        "TTS_WYOMING_DESCRIBE_CACHE_S": "1",
    }
    server = _session_server(
        django_db_blocker, env, table={"api_key": WYOMING_KEY, "allowed_networks": ["192.0.2.0/24"]}
    )
    yield server
    server.stop()


@pytest.fixture
def wyoming_tenant(transactional_db: None) -> TenantCtx:
    return make_wyoming_tenant()
