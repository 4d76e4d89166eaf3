"""Where a cache hit's time goes: the platform's HTTP application driven in-process, no server.

The ASGI application daphne serves for HTTP (``ttsplatform.handler`` behind
the body limit) is called directly, with a ``POST /v1/text-to-speech/joe``
scope, after one request that fills the cache: every measured request is a hit
that authenticates, rate-limits, bills and writes its history row (and audio
link), exactly as under daphne, minus daphne's and Twisted's HTTP handling.
It prints the CPU time this process used per hit (user + system: robust to
other load on the machine). For a profile, run it under py-spy and summarize
py-spy's collapsed stacks with ``--summarize`` (time per function, self and
inclusive, over every thread: the view runs in ``sync_to_async``'s threads).

Usage (same environment as bench/bench_cache.py)::

    .venv/bin/python bench/profile_cache_hit.py --requests 2000
    DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/profile_cache_hit.py
    py-spy record -r 1000 --format raw -o hit.txt -- .venv/bin/python bench/profile_cache_hit.py --requests 3000
    .venv/bin/python bench/profile_cache_hit.py --summarize hit.txt
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_cache import TEXT, ensure_postgres_db, setup_platform  # noqa: E402


def scope_for(path: str, query: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    raw += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw.append((b"host", b"127.0.0.1"))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": raw,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }


async def call(app: Any, scope: dict[str, Any], body: bytes) -> tuple[int, dict[str, str], bytes]:
    sent = False
    status = 0
    headers: dict[str, str] = {}
    chunks: list[bytes] = []
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            headers.update({k.decode(): v.decode() for k, v in message.get("headers", [])})
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                finished.set()

    await app(scope, receive, send)
    return status, headers, b"".join(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--summarize", type=Path, help="summarize py-spy's raw (collapsed) output instead")
    parser.add_argument("--lines", type=int, default=60)
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize, args.lines)
        return

    var_dir = Path(tempfile.mkdtemp(prefix="tts-profile-"))
    database_url = os.environ.get("DATABASE_URL", "")  # none: SQLite in VAR_DIR, as `make run` has it
    if database_url.startswith("postgres"):
        ensure_postgres_db(database_url)
    env = {
        "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-secret-key-not-for-production"),
        "VAR_DIR": str(var_dir),
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "TTS_REDIS_KEY_PREFIX": f"profile-{os.getpid()}",
    }
    key, tenant_id = setup_platform(env)

    from ttsplatform.body_limit import BodyLimitASGI
    from ttsplatform.handler import get_http_application

    app = BodyLimitASGI(get_http_application())
    body = json.dumps({"text": TEXT}).encode()
    scope = scope_for("/v1/text-to-speech/joe", "output_format=wav_22050", {"xi-api-key": key}, body)

    async def run() -> None:
        status, headers, audio = await call(app, dict(scope), body)
        assert status == 200, (status, audio[:300])
        for _ in range(args.warmup):
            status, headers, _ = await call(app, dict(scope), body)
            assert status == 200 and headers.get("x-cache") == "hit", (status, headers)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(args.requests):
            status, headers, _ = await call(app, dict(scope), body)
            assert status == 200 and headers.get("x-cache") == "hit", (status, headers)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        print(
            f"{args.requests} hits: {cpu * 1000 / args.requests:.2f} ms CPU per hit, "
            f"{wall * 1000 / args.requests:.2f} ms wall per hit (load average {os.getloadavg()[0]:.1f})"
        )

    asyncio.run(run())
    from tts.models import SynthesisRecord

    rows = SynthesisRecord.objects.filter(tenant_id=tenant_id, cache_hit=True, status="success").count()
    assert rows == args.requests + args.warmup, (rows, args.requests + args.warmup)


# Stacks of the setup (imports, migrations, the voice's import, the miss that fills the cache):
# left out of the summary, which is about the hits.
SETUP_FRAMES = (
    "setup_platform",
    "_find_and_load",
    "EngineRegistry",
    "FairScheduler",
    "WorkPool",
    "synthesis_iter_bytes",
)

# Threads waiting (py-spy without --idle still samples some of them).
WAITING_FRAMES = ("Condition.wait (threading.py)", "EpollSelector.select (selectors.py)", "Event.wait (threading.py)")


def summarize(path: Path, lines: int) -> None:
    """Self and inclusive share of samples per function, from py-spy's ``--format raw`` output."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        if any(skip in stack for skip in SETUP_FRAMES) or stack.endswith(WAITING_FRAMES):
            continue
        total += count
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + count
    print(f"{total} samples")
    for title, table in (("inclusive", inclusive), ("self", own)):
        print(f"\n{title}:")
        for frame, count in sorted(table.items(), key=lambda kv: -kv[1])[:lines]:
            print(f"{100 * count / total:6.1f}%  {frame}")


if __name__ == "__main__":
    main()
