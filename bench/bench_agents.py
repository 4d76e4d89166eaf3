"""Time to first audio through the voice-agent frameworks' own TTS classes (issue 44).

A benchmark, not a test: it starts the platform (daphne, sqlite, the demo tenant, joe and Kokoro's
voices as ``make run`` registers them, audio cache off so every turn is synthesized) and runs
the clients of tests/agents (tests/agents/install.sh installs the pinned frameworks) one turn
at a time, each in a process of its own:

* pipecat ``ElevenLabsTTSService`` (multi-stream-input; the socket opens when the pipeline
  starts, before the clock does) and ``ElevenLabsHttpTTSService`` (``/stream/with-timestamps``);
* LiveKit Agents ``elevenlabs.TTS.stream()`` (multi-stream-input; the socket opens on the first
  text, inside the clock) and ``synthesize()`` (``/stream``).

Time to first audio: from the moment the client hands the turn's text to the class (pipecat:
the first ``LLMTextFrame``; LiveKit: ``push_text`` / ``synthesize``) to the first audio frame the
class gives back. Voices: joe (Piper, windowed decoding) and Kokoro's ``af_heart``. One turn per
voice and client is run first and not counted (connection set-up, the first Kokoro English
text warming its front end).

    .venv/bin/python bench/bench_agents.py [--rounds 5] [--clients pipecat-ws livekit-stream]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_streaming import start_platform

ROOT = Path(__file__).resolve().parent.parent
AGENTS_PY = ROOT / "var" / "agents" / "py" / "bin" / "python"
CLIENTS = ROOT / "tests" / "agents" / "clients"
TEXT = "Sure, I can help with that. Your table for two is booked at seven tonight."

CLIENT_ARGS = {
    "pipecat-ws": ["pipecat_client.py", "--service", "ws", "--stop-frame-timeout", "15"],
    "pipecat-http": ["pipecat_client.py", "--service", "http", "--stop-frame-timeout", "15"],
    "livekit-stream": ["livekit_client.py", "--mode", "stream"],
    "livekit-synthesize": ["livekit_client.py", "--mode", "synthesize"],
}


def turn(client: str, url: str, key: str, voice: str) -> float:
    script, *args = CLIENT_ARGS[client]
    command = [str(AGENTS_PY), str(CLIENTS / script), *args, "--url", url, "--key", key, "--voice", voice]
    proc = subprocess.run([*command, "--text", TEXT], capture_output=True, text=True, timeout=180)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{client} {voice}: exit {proc.returncode}\n{proc.stdout[-1000:]}\n{proc.stderr[-2000:]}")
    result = json.loads(lines[-1])
    return float(result["ttfa_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", nargs="+", default=list(CLIENT_ARGS), choices=list(CLIENT_ARGS))
    parser.add_argument("--voices", nargs="+", default=["joe", "af_heart"])
    args = parser.parse_args()
    if not AGENTS_PY.exists():
        sys.exit("no agents' virtualenv: run bash tests/agents/install.sh first")
    # Kokoro's 54 voices (make voices) when they are there; without them only the Japanese five.
    os.environ.setdefault("TTS_KOKORO_VOICES_DIR", str(ROOT / "var" / "npm"))
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp:
        proc, url, key = start_platform(Path(tmp), None)
        try:
            rows = []
            for voice in args.voices:
                for client in args.clients:
                    turn(client, url, key, voice)  # not counted
                    times = [turn(client, url, key, voice) for _ in range(args.rounds)]
                    rows.append((client, voice, times))
                    print(f"{client} {voice}: " + " ".join(f"{t:.3f}" for t in times), file=sys.stderr)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"Time to first audio, seconds, {args.rounds} turns each: {TEXT!r}\n")
    print("| client | voice | median | min | max |")
    print("|---|---|---|---|---|")
    for client, voice, times in rows:
        print(f"| {client} | {voice} | {statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f} |")


if __name__ == "__main__":
    main()
