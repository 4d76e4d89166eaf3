"""Redis stops and comes back during a run of requests: no request fails because of the
cache or the limits, the outage is logged once, and the cache is used again afterwards.

Runs its own throwaway redis-server on a free port; the shared one is never touched.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
import redis

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.servers import ServerProc, free_port
from tts.models import Voice

URL = "/v1/text-to-speech/joe?output_format=pcm_16000"


class RedisServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
            finally:
                client.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def keys(self) -> int:
        client = redis.Redis(port=self.port)
        try:
            return int(client.dbsize())
        finally:
            client.close()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs the redis-server binary")
    server = RedisServer(free_port())
    server.start()
    yield server
    server.stop()


def speak(server: ServerProc, ctx: TenantCtx, text: str) -> httpx.Response:
    response = httpx.post(server.url + URL, json={"text": text}, headers={"xi-api-key": ctx.key}, timeout=60)
    assert response.status_code == 200, response.text
    samples, rate = decode_audio(response.content, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=text)
    return response


@pytest.mark.django_db(transaction=True)
def test_it_survives_redis_stopping_and_uses_it_again_after_restart(
    daphne_factory: Callable[..., ServerProc], own_redis: RedisServer, tenant_a: TenantCtx, joe: Voice
) -> None:
    server = daphne_factory(
        {
            "REDIS_URL": own_redis.url,
            "TTS_REDIS_RETRY_S": "1",
            # No in-process copy: every hit below comes from Redis.
            "TTS_AUDIO_CACHE_L1_BYTES": "0",
        }
    )
    first = "The ferry left on time."
    assert speak(server, tenant_a, first).headers["x-cache"] == "miss"
    assert speak(server, tenant_a, first).headers["x-cache"] == "hit"

    own_redis.stop()
    during = [
        speak(server, tenant_a, text)
        for text in (first, "The tide was out and the mud shone.", first, "Gulls circled over the empty boats.")
    ]
    assert [r.headers["x-cache"] for r in during] == ["miss"] * 4

    own_redis.start()  # empty: it kept nothing
    text = "Back in harbour by noon."
    deadline = time.monotonic() + 30
    outcomes = []
    while time.monotonic() < deadline:
        outcomes.append(speak(server, tenant_a, text).headers["x-cache"])
        if outcomes[-1] == "hit":
            break
        time.sleep(0.3)
    assert outcomes[-1] == "hit", outcomes
    assert own_redis.keys() > 0

    log = server.log()
    # Logged once per outage, not once per request.
    assert log.count("Redis is unavailable for the audio cache") == 1, log[-3000:]
    assert log.count("Redis is unavailable for rate limits") == 1, log[-3000:]
    assert "Redis is back for the audio cache" in log
