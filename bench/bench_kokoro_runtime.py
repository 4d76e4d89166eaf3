"""Kokoro's runtimes side by side (#42): ONNX Runtime on the int8 graph, ONNX Runtime on the fp32
graph (the reference for the speech), OpenVINO on the fp32 graph in f32, in bf16 as the engine runs
it (the decoder's convolutions in bf16, the rest in f32) and with every node in bf16.

A measurement, not a test. Each runtime lives in a process of its own (so its peak RSS is its own),
loaded once; the same phoneme inputs go through them interleaved, round by round, one process at
a time, 1 thread each. Reported per runtime, medians over ``--rounds``:

* wall and CPU seconds (user + system of the whole process, OpenVINO's threads included) for the
  timing sentences together, RTF (wall over the audio's length), and the process's peak RSS;
* for every sentence, its speech against ONNX Runtime fp32's: magnitude-spectrum SNR, RMS loudness
  difference (dB) and duration ratio (``tts.inference.kokoro_runtime.speech_difference``).

Sentences: a few of ``../shared/bench/texts.json`` in English and Chinese and the Japanese text of
``bench_kokoro.py``, all read by jf_alpha (the package's voices; a runtime does not depend on the
voice). Raw model audio, before the engine trims its edges.

    .venv/bin/python bench/bench_kokoro_runtime.py [--rounds 5] [--models-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tts.inference.engine import ModelSpec  # noqa: E402
from tts.inference.kokoro_fp32 import fp32_graph  # noqa: E402
from tts.inference.kokoro_model import prepare_kokoro_files  # noqa: E402
from tts.inference.kokoro_onnx import KokoroOnnxEngine  # noqa: E402
from tts.inference.kokoro_runtime import cpu_flags, rms_db, speech_difference  # noqa: E402

RATE = 24000
TEXTS = ROOT.parent / "shared" / "bench" / "texts.json"
JA = (
    "昔々、ある山のふもとに小さな村がありました。村の人々は毎朝早く起きて、畑を耕していました。"
    "ある日、一人の旅人が村を訪れました。"
)
RUNTIMES = ("ort-int8", "ort-fp32", "ov-f32", "ov-bf16", "ov-bf16-whole")
REFERENCE = "ort-fp32"


def sentences() -> list[tuple[str, str]]:
    """(language, sentence): three each in zh, ja and en."""
    texts = json.loads(TEXTS.read_text(encoding="utf-8"))
    zh = [*[s + "。" for s in texts["zh_medium"].split("。") if s.strip()][:2], texts["zh_short"]]
    ja = [s + "。" for s in JA.split("。") if s.strip()][:3]
    en = [texts["short"], *[s.strip() + "." for s in texts["medium"].split(". ")[:2]]]
    return [("zh", s) for s in zh] + [("ja", s) for s in ja] + [("en", s) for s in en]


def worker(runtime: str, model: str, config: str, fp32: str, decoder_inputs: tuple[str, ...], conn: Any) -> None:
    """Load ``runtime`` and answer ("run", feed) with (wall, cpu, audio) until ("peak", None)."""
    import onnxruntime

    from tts.inference.kokoro_openvino import OpenVinoKokoro

    if runtime == "ort-int8":
        engine = KokoroOnnxEngine(ModelSpec(id=1, engine="kokoro-onnx", model_path=model, config_path=config))
        run = lambda feed: engine._run(feed)[0]  # noqa: E731
    elif runtime == "ort-fp32":
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(fp32, options, providers=["CPUExecutionProvider"])
        run = lambda feed: session.run(None, feed)[0]  # noqa: E731
    elif runtime == "ov-bf16-whole":  # every node in bf16: what the engine does not serve
        import openvino

        whole = openvino.Core().compile_model(
            fp32, "CPU", {"INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1}
        )
        request = whole.create_infer_request()
        run = lambda feed: request.infer(feed)[whole.outputs[0]]  # noqa: E731
    else:
        compiled = OpenVinoKokoro(
            fp32, precision=runtime.split("-")[1], threads=1, concurrency=1, decoder_inputs=decoder_inputs
        )
        run = lambda feed: compiled.run(feed)["audio"]  # noqa: E731
    conn.send("ready")
    while True:
        kind, feed = conn.recv()
        if kind == "peak":
            conn.send(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            return
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        audio = np.asarray(run(feed), dtype=np.float32).reshape(-1)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        conn.send((wall, cpu, audio))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models-dir", default="")
    args = parser.parse_args()
    models = Path(args.models_dir or tempfile.mkdtemp(prefix="kokoro-runtime-"))
    files = prepare_kokoro_files(models)
    engine = KokoroOnnxEngine(
        ModelSpec(id=1, engine="kokoro-onnx", model_path=str(files.model_path), config_path=str(files.config_path))
    )
    style_row = engine.styles[0, 3]
    graph = fp32_graph(files.model_path, style_row)
    feeds = []
    for language, text in sentences():
        pieces = engine.phonemize(text, language)
        ids = engine.phonemes_to_ids(pieces[0])
        feeds.append(
            (
                language,
                text,
                {
                    "tokens": np.asarray([ids], dtype=np.int64),
                    "style": engine.style_for(0, len(ids) - 2),
                    "speed": np.asarray([1.0], dtype=np.float32),
                },
            )
        )
    engine.close()
    del engine
    flags = cpu_flags()
    print(
        f"CPU BF16: {sorted(f for f in flags if 'bf16' in f) or 'none'}; {len(feeds)} sentences, {args.rounds} rounds"
    )

    context = multiprocessing.get_context("spawn")
    pipes = {}
    processes = []
    for runtime in RUNTIMES:
        ours, theirs = context.Pipe()
        process = context.Process(
            target=worker,
            args=(
                runtime,
                str(files.model_path),
                str(files.config_path),
                str(graph.path),
                graph.decoder_inputs,
                theirs,
            ),
        )
        process.start()
        ours.recv()
        pipes[runtime] = ours
        processes.append(process)

    # Timing: one sentence a language (the longest), every runtime in turn each round.
    timing = [
        max((f for f in feeds if f[0] == lang), key=lambda f: f[2]["tokens"].shape[1]) for lang in ("zh", "ja", "en")
    ]
    walls: dict[str, list[float]] = {r: [] for r in RUNTIMES}
    cpus: dict[str, list[float]] = {r: [] for r in RUNTIMES}
    for _ in range(args.rounds + 1):  # the first round warms up
        round_wall = {r: 0.0 for r in RUNTIMES}
        round_cpu = {r: 0.0 for r in RUNTIMES}
        for _, _, feed in timing:
            for runtime in RUNTIMES:
                pipes[runtime].send(("run", feed))
                wall, cpu, _audio = pipes[runtime].recv()
                round_wall[runtime] += wall
                round_cpu[runtime] += cpu
        for runtime in RUNTIMES:
            walls[runtime].append(round_wall[runtime])
            cpus[runtime].append(round_cpu[runtime])
    audio_s = {}
    speech: dict[str, list[tuple[str, str, Any]]] = {r: [] for r in RUNTIMES}
    for language, text, feed in feeds:
        outputs = {}
        for runtime in RUNTIMES:
            pipes[runtime].send(("run", feed))
            outputs[runtime] = pipes[runtime].recv()[2]
        for runtime in RUNTIMES:
            speech[runtime].append((language, text, speech_difference(outputs[runtime], outputs[REFERENCE])))
        audio_s[text] = len(outputs[REFERENCE]) / RATE
        print(
            f"  {language} {len(outputs[REFERENCE]) / RATE:5.2f} s, {rms_db(outputs[REFERENCE]):6.1f} dBFS: {text[:40]}"
        )
    peaks = {}
    for runtime in RUNTIMES:
        pipes[runtime].send(("peak", None))
        peaks[runtime] = pipes[runtime].recv()
    for process in processes:
        process.join()

    timed_audio = sum(audio_s[text] for _, text, _ in timing)
    sizes = ", ".join(f"{language} {feed['tokens'].shape[1]} ids" for language, _, feed in timing)
    print(f"\nTiming: {sizes}; {timed_audio:.1f} s of audio; medians of {args.rounds}, interleaved")
    print("| runtime | wall | RTF | CPU s | peak RSS |")
    print("|---|---|---|---|---|")
    for runtime in RUNTIMES:
        wall = statistics.median(walls[runtime][1:])
        print(
            f"| {runtime} | {wall:.2f} s | {wall / timed_audio:.2f} | {statistics.median(cpus[runtime][1:]):.2f} "
            f"| {peaks[runtime]:.0f} MB |"
        )
    print(f"\nSpeech against {REFERENCE} (spectrum SNR dB / loudness dB / duration ratio), per language (min..max):")
    print("| runtime | zh | ja | en |")
    print("|---|---|---|---|")
    for runtime in RUNTIMES:
        if runtime == REFERENCE:
            continue
        cells = []
        for lang in ("zh", "ja", "en"):
            diffs = [d for language, _, d in speech[runtime] if language == lang]
            snr = [d.spectrum_snr_db for d in diffs]
            loud = [d.loudness_db for d in diffs]
            dur = [d.duration_ratio for d in diffs]
            cells.append(
                f"{min(snr):.1f}..{max(snr):.1f} dB / {min(loud):+.2f}..{max(loud):+.2f} dB / "
                f"{min(dur):.3f}..{max(dur):.3f}"
            )
        print(f"| {runtime} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
