"""The compose stack's smoke (`make deploy-check`, step 2): every way in, with real clients.

Against a running stack (deploy/compose.yaml): the probes and metrics, the ``openai`` SDK (a Kokoro
voice through OpenAI's name ``alloy``), the ``elevenlabs`` SDK (joe, the history's stored audio, the
billed characters), a stream-input WebSocket, a job run by the Celery worker, a Wyoming synthesize,
and the dashboard's and the admin's logins. Each audio is decoded and checked (rate, length, not
silence); the tenant's billed characters must equal what was spoken.

    python deploy/check/smoke.py --base http://127.0.0.1:PORT --wyoming 127.0.0.1:PORT --credentials FILE
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clients import (
    CheckFailed,
    assert_speech,
    character_count,
    decode,
    elevenlabs_speech,
    ensure,
    history_audio,
    history_characters,
    job_audio,
    latest_history_id,
    login,
    openai_speech,
    stream_input,
    submit_job,
    wait_job,
    wyoming_synthesize,
)

TEXT = "The harbour was quiet that morning, and the gulls argued over scraps near the market."
STREAM = ["The lighthouse keeper ", "climbed the stairs at dusk. ", "He lit the lamp and watched the ships. "]
JOB = "The ferry left at nine. It crossed the bay in an hour. The passengers watched the islands pass by."
WYOMING = "Good evening. The kitchen lights are now off."


def probes(base: str) -> None:
    for path in ("/healthz", "/readyz"):
        response = httpx.get(f"{base}{path}", timeout=10)
        ensure(response.status_code == 200, f"{path}: {response.status_code} {response.text[:200]}")
    metrics = httpx.get(f"{base}/metrics", timeout=10)
    ensure(metrics.status_code == 200 and "tts_" in metrics.text, f"/metrics: {metrics.status_code}, no tts_ metric")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True)
    parser.add_argument("--wyoming", required=True, help="HOST:PORT of the Wyoming service")
    parser.add_argument("--credentials", required=True, help="JSON: key, user, password, admin, admin_password")
    args = parser.parse_args()
    creds = json.loads(Path(args.credentials).read_text())
    base, key = args.base.rstrip("/"), creds["key"]
    ws_base = base.replace("http", "ws", 1)
    host, _, port = args.wyoming.rpartition(":")
    spoken = 0

    def step(name: str, run: Callable[[], object]) -> None:
        started = time.monotonic()
        run()
        print(f"ok  {name} ({time.monotonic() - started:.1f} s)", flush=True)

    def openai_step() -> None:
        nonlocal spoken
        assert_speech(openai_speech(base, key, TEXT), rate=24000, text=TEXT, what="openai SDK, alloy (Kokoro)")
        spoken += len(TEXT)

    def elevenlabs_step() -> None:
        nonlocal spoken
        assert_speech(elevenlabs_speech(base, key, TEXT), rate=16000, text=TEXT, what="elevenlabs SDK, joe")
        spoken += len(TEXT)
        stored = history_audio(base, key, latest_history_id(base, key, TEXT))
        assert_speech(stored, rate=16000, text=TEXT, what="the history's stored audio")

    def stream_step() -> None:
        nonlocal spoken
        result = asyncio.run(stream_input(ws_base, key, STREAM))
        ensure(
            result.final and result.close_code == 1000, f"stream-input: final {result.final}, close {result.close_code}"
        )
        assert_speech(decode(result.audio, "pcm_16000"), rate=16000, text="".join(STREAM), what="stream-input")
        spoken += len("".join(STREAM).strip())

    def job_step() -> None:
        nonlocal spoken
        job_id = submit_job(base, key, JOB)
        state = wait_job([base], key, job_id, timeout=180)
        ensure(state["status"] == "succeeded", f"job {job_id}: {state}")
        assert_speech(job_audio(base, key, job_id), rate=16000, text=JOB, what="job audio")
        spoken += len(JOB)

    def wyoming_step() -> None:
        nonlocal spoken
        audio = asyncio.run(wyoming_synthesize(host, int(port), WYOMING))
        assert_speech(audio, rate=audio.rate, text=WYOMING, what="Wyoming synthesize")
        ensure(audio.rate == 22050, f"Wyoming: {audio.rate} Hz, joe speaks at 22050")
        spoken += len(WYOMING)

    def logins_step() -> None:
        dashboard = login(base, "/login/?next=/", creds["user"], creds["password"])
        page = dashboard.get("/")
        ensure(page.status_code == 200 and creds["tenant"] in page.text, f"dashboard: {page.status_code}")
        admin = login(base, "/admin/login/?next=/admin/", creds["admin"], creds["admin_password"])
        page = admin.get("/admin/tts/modelversion/")
        ensure(page.status_code == 200 and "kokoro" in page.text.lower(), f"admin model versions: {page.status_code}")

    try:
        step("/healthz, /readyz, /metrics", lambda: probes(base))
        step("openai SDK", openai_step)
        step("elevenlabs SDK + history audio", elevenlabs_step)
        step("stream-input WebSocket", stream_step)
        step("job on the Celery worker", job_step)
        step("Wyoming synthesize", wyoming_step)
        step("dashboard and admin login", logins_step)
        billed, items = character_count(base, key), history_characters(base, key)
        ensure(len(items) == 5, f"{len(items)} history items for 5 syntheses")
        ensure(billed == sum(items) >= spoken, f"billed {billed} characters, history {sum(items)}, texts {spoken}")
        print(f"ok  5 history items; billed = their characters ({billed}; the texts hold {spoken})")
    except CheckFailed as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
