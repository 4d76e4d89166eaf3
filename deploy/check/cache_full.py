"""A full audio cache never loses queue or quota state (#41 item 5), shown on the compose stack.

`make deploy-check`, after the smoke: a job is submitted, then the audio cache's own Redis
(``redis-cache``: ``maxmemory``, ``allkeys-lru``) is written past twice its limit with big values
(``redis-cli`` in its container: the fastest way to fill it). Then:

* redis-cache evicted keys, its ``used_memory`` is at most its ``maxmemory``, and it is the same
  process (same ``run_id``, not OOM-killed, not restarted); it still takes the platform's audio;
* the broker's Redis (queue, rate windows, stream slots) evicted nothing and kept every rate window
  it held before the fill;
* the job submitted before the fill succeeds with its audio, a stream-input stream opens and
  speaks, and the billed characters still equal the history's, grown by what was spoken.

    python deploy/check/cache_full.py --base http://127.0.0.1:PORT --credentials FILE \\
        --cache CONTAINER --broker CONTAINER
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clients import (
    CheckFailed,
    assert_speech,
    character_count,
    decode,
    elevenlabs_speech,
    ensure,
    history_characters,
    job_audio,
    stream_input,
    submit_job,
    wait_job,
)

JOB = (
    "The night train left the mountain station a little after ten. Snow had closed the pass the week "
    "before, and the carriages were full of people who had waited for days. A conductor walked the "
    "corridor with a lantern, counting tickets and answering the same question again and again. "
    "Nobody knew when they would reach the coast, but everyone agreed the tea was very good."
)
STREAM = ["After the storm ", "the fishermen mended their nets ", "on the harbour wall. "]
AFTER = "The cache was full a moment ago, and this sentence is still spoken and stored."
VALUE_BYTES = 4 * 1024 * 1024  # an audio entry may be up to 8 MB (TTS_AUDIO_CACHE_MAX_ENTRY_BYTES)
MB = 1024 * 1024


def redis(container: str, *args: str) -> str:
    result = subprocess.run(["podman", "exec", container, "redis-cli", *args], capture_output=True, text=True)
    ensure(result.returncode == 0, f"redis-cli {' '.join(args)} in {container}: {result.stderr.strip()}")
    return result.stdout


def info(container: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in redis(container, "INFO", "everything").splitlines():
        name, sep, value = line.strip().partition(":")
        if sep and not name.startswith("#"):
            fields[name] = value
    return fields


def keys(container: str, pattern: str) -> set[str]:
    return set(redis(container, "--scan", "--pattern", pattern).split())


def fill(container: str, total: int) -> int:
    """Writes ``total`` bytes in values of ``VALUE_BYTES`` into the container's Redis; the count written."""
    count = -(-total // VALUE_BYTES)
    script = (
        f"i=0; while [ $i -lt {count} ]; do "
        f"head -c {VALUE_BYTES} /dev/urandom | redis-cli -x SET ttsck:fill:$i | grep -qx OK || exit 1; "
        "i=$((i + 1)); done"
    )
    result = subprocess.run(["podman", "exec", container, "sh", "-c", script], capture_output=True, text=True)
    ensure(result.returncode == 0, f"filling {container}: a SET was refused ({result.stderr.strip()[-300:]})")
    return count


def container_state(container: str) -> dict[str, object]:
    out = subprocess.run(
        ["podman", "inspect", "--format", "{{json .State}}", container], capture_output=True, text=True, check=True
    ).stdout
    return dict(json.loads(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True)
    parser.add_argument("--credentials", required=True)
    parser.add_argument("--cache", required=True, help="the redis-cache container")
    parser.add_argument("--broker", required=True, help="the redis container (broker, limits, slots)")
    args = parser.parse_args()
    creds = json.loads(Path(args.credentials).read_text())
    base, key = args.base.rstrip("/"), creds["key"]
    try:
        cache0, broker0 = info(args.cache), info(args.broker)
        maxmemory = int(cache0["maxmemory"])
        policy = cache0["maxmemory_policy"]
        ensure(maxmemory > 0 and policy == "allkeys-lru", f"redis-cache: maxmemory {maxmemory}, {policy}")
        ensure(broker0["maxmemory_policy"] == "noeviction", f"redis: {broker0['maxmemory_policy']}")
        billed0, items0 = character_count(base, key), len(history_characters(base, key))
        audio0 = keys(args.cache, "*:audio:*")

        job_id = submit_job(base, key, JOB)
        windows = keys(args.broker, "*:limits:rate:*")  # the job's request is in these, among others
        ensure(bool(windows), "the broker holds no rate window after a request")
        started = time.monotonic()
        written = fill(args.cache, 2 * maxmemory)
        fill_s = time.monotonic() - started
        cache1, broker1 = info(args.cache), info(args.broker)
        windows1 = keys(args.broker, "*:limits:rate:*")
        state = container_state(args.cache)

        evicted = int(cache1["evicted_keys"]) - int(cache0["evicted_keys"])
        used, peak = int(cache1["used_memory"]), int(cache1["used_memory_peak"])
        gone = len(audio0 - keys(args.cache, "*:audio:*"))
        print(
            f"ok  redis-cache filled: {written} x {VALUE_BYTES // MB} MB in {fill_s:.1f} s, {evicted} keys evicted "
            f"(of the smoke's {len(audio0)} audio entries, {gone} gone); "
            f"used_memory {used / MB:.1f} MB <= maxmemory {maxmemory / MB:.0f} MB (peak {peak / MB:.1f} MB)",
            flush=True,
        )
        ensure(evicted > 0, "redis-cache evicted nothing: it was not filled past its limit")
        ensure(used <= maxmemory, f"redis-cache: used_memory {used} over maxmemory {maxmemory}")
        ensure(cache1["run_id"] == cache0["run_id"], "redis-cache restarted during the fill")
        ensure(
            state.get("OOMKilled") is False and state.get("Running") is True,
            f"redis-cache: OOMKilled {state.get('OOMKilled')}, running {state.get('Running')}",
        )
        print(f"ok  redis-cache not OOM-killed, same process (run_id {cache1['run_id'][:8]}), up", flush=True)

        ensure(broker1["evicted_keys"] == broker0["evicted_keys"] == "0", "the broker's Redis evicted keys")
        if fill_s < 50:  # a window lives 60 s after its last request
            ensure(windows <= windows1, f"rate windows lost during the fill: {sorted(windows - windows1)}")
        print(
            f"ok  broker Redis: 0 keys evicted, {len(windows)} rate windows kept; used_memory "
            f"{int(broker0['used_memory']) / MB:.1f} -> {int(broker1['used_memory']) / MB:.1f} MB",
            flush=True,
        )

        job = wait_job([base], key, job_id, timeout=300)
        ensure(job["status"] == "succeeded", f"job {job_id} submitted before the fill: {job}")
        assert_speech(job_audio(base, key, job_id), rate=16000, text=JOB, what="the job submitted before the fill")
        print(f"ok  the job submitted before the fill succeeded ({job_id})", flush=True)

        ws_base = base.replace("http", "ws", 1)
        result = asyncio.run(stream_input(ws_base, key, STREAM))
        ensure(result.final and result.close_code == 1000, f"stream-input: {result.close_code} {result.error}")
        assert_speech(decode(result.audio, "pcm_16000"), rate=16000, text="".join(STREAM), what="stream after fill")
        assert_speech(elevenlabs_speech(base, key, AFTER), rate=16000, text=AFTER, what="a request after the fill")
        deadline = time.monotonic() + 10  # the entry is written once the response has ended
        while not (fresh := keys(args.cache, "*:audio:*") - audio0) and time.monotonic() < deadline:
            time.sleep(0.5)
        ensure(bool(fresh), "redis-cache took no new audio entry after the fill")
        slots = keys(args.broker, "*:limits:streams:*")
        held = sum(int(redis(args.broker, "ZCARD", slot).strip() or 0) for slot in slots)
        print(f"ok  a stream opened and spoke after the fill; {held} stream slots held now; a new audio entry cached")

        items = history_characters(base, key)
        billed = character_count(base, key)
        new = items[: len(items) - items0]
        ensure(len(new) == 3, f"{len(new)} new history items for the job, the stream and the request")
        ensure(billed == sum(items) and billed - billed0 == sum(new), f"billed {billed0} -> {billed}, history {items}")
        print(f"ok  quota: billed {billed0} -> {billed} characters = the history's, +{sum(new)} for 3 syntheses")
    except CheckFailed as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
