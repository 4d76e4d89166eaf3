"""Kokoro's front ends load on their language's first text, not with the engine (#34): a process
that speaks English never holds OpenJTalk's dictionary (~90 MB) or jieba's and pypinyin's (~150 MB).
In a fresh interpreter, since front ends are shared per process once loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tts.inference.kokoro_model import package_sha256

pytestmark = pytest.mark.slow

SCRIPT = """
import json, sys
from tts.inference.engine import ModelSpec
from tts.inference.kokoro_onnx import KokoroOnnxEngine
heavy = ("pyopenjtalk", "tts.text.g2p.ja", "tts.text.g2p.zh")
loaded = lambda: sorted(m for m in heavy if m in sys.modules)
seen = {}
engine = KokoroOnnxEngine(ModelSpec(1, "kokoro-onnx", sys.argv[1], sys.argv[2], sys.argv[3]), threads=1)
seen["engine"] = loaded()
for code, text in (("en", "The harbour is quiet."), ("zh", "今晚的港口很安静。"), ("ja", "今夜の港は静かです。")):
    utterances = len(engine.phonemize(text, code))
    seen[code] = (loaded(), utterances)
print(json.dumps(seen))
"""


def test_each_front_end_loads_on_its_languages_first_text(kokoro_dir: str) -> None:
    sha = package_sha256()
    model, config = Path(kokoro_dir) / f"kokoro-{sha}.onnx", Path(kokoro_dir) / f"kokoro-{sha}.json"
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(model), str(config), sha],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["engine"] == []
    assert seen["en"] == [[], 1]
    assert seen["zh"] == [["tts.text.g2p.zh"], 1]
    assert seen["ja"] == [["pyopenjtalk", "tts.text.g2p.ja", "tts.text.g2p.zh"], 1]
