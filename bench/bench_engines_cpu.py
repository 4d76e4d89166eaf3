"""CPU benchmark of the two engines serving the joe voice, side by side in one run.

1. single stream: ONNX Runtime versus torch on the short, medium and long texts;
2. concurrency: 1, 4 and 16 clients against one torch engine (batching off,
   the CPU default, and on, to check that default), with ONNX Runtime beside;
3. windowed decoding: time to the first audio of the long single sentence
   versus its full synthesis.

Run from the repository root: ``.venv/bin/python bench/bench_engines_cpu.py``
(``--quick`` for a smoke run). Prints markdown.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

from engine_bench import (
    DEFAULT_TEXTS,
    QUIET,
    first_chunk_time,
    joe_spec,
    load_texts,
    markdown_table,
    median_time,
    run_clients,
    sentence_ids,
    synthesize_all,
)

from tts.inference.piper_onnx import PiperOnnxEngine
from tts.inference.vits_torch import VitsTorchEngine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=Path, default=DEFAULT_TEXTS)
    parser.add_argument("--repeat", type=int, default=5, help="runs per single-stream figure (median)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of each engine")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--quick", action="store_true", help="one repeat, short texts only")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    texts = load_texts(args.texts)

    import torch

    onnx = PiperOnnxEngine(joe_spec("piper-onnx"), threads=args.threads)
    vits = VitsTorchEngine(joe_spec("vits-torch"), threads=args.threads)
    vits_batched = VitsTorchEngine(joe_spec("vits-torch", batching=True), threads=args.threads)
    rate = vits.sample_rate
    for engine in (onnx, vits, vits_batched):
        synthesize_all(engine, sentence_ids(engine, texts["short"]))  # warm-up

    print(f"# Engines on CPU: {platform.processor() or platform.machine()}, {args.threads} thread(s) per engine\n")
    print(f"torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M')}, median of {repeat}, noise off\n")

    print("## Single stream (sentences one after another)\n")
    rows = []
    for key in ["short"] if args.quick else ["short", "medium", "long"]:
        sentences = sentence_ids(vits, texts[key])
        audio = synthesize_all(vits, sentences) / rate
        onnx_times, torch_times = [], []
        for _ in range(repeat):  # interleaved, so load changes on a shared machine hit both
            onnx_times.append(median_time(lambda s=sentences: synthesize_all(onnx, s), 1))
            torch_times.append(median_time(lambda s=sentences: synthesize_all(vits, s), 1))
        t_onnx, t_torch = statistics.median(onnx_times), statistics.median(torch_times)
        rows.append([key, len(sentences), audio, t_onnx, t_torch, t_torch / t_onnx, t_onnx / audio, t_torch / audio])
    print(
        markdown_table(
            ["text", "sentences", "audio s", "onnx s", "torch s", "torch/onnx", "onnx RTF", "torch RTF"], rows
        )
    )

    print("\n## Concurrent clients (each synthesizes every sentence of the medium text)\n")
    sentences = sentence_ids(vits, texts["medium"])
    rows = []
    for clients in args.clients:
        for label, engine in (("onnx", onnx), ("torch", vits), ("torch, batching on", vits_batched)):
            result = run_clients(engine, sentences, clients)
            rows.append(
                [
                    label,
                    clients,
                    result.wall_seconds,
                    result.audio_per_second,
                    result.latency(0.5),
                    result.latency(0.95),
                ]
            )
    print(markdown_table(["engine", "clients", "wall s", "audio s per s", "p50 latency s", "p95 latency s"], rows))
    print(f"\nbatching on: {vits_batched.batch_stats()}")

    print("\n## Windowed decoding: first audio of the long single sentence\n")
    key = "short" if args.quick else "long_single_sentence"
    ids = sentence_ids(vits, texts[key])[0]
    onnx_full, full, first = [], [], []
    for _ in range(repeat):  # interleaved, as above
        onnx_full.append(median_time(lambda: onnx.synthesize_ids(ids, QUIET), 1))
        full.append(median_time(lambda: vits.synthesize_ids(ids, QUIET), 1))
        first.append(first_chunk_time(vits, ids))
    t_onnx, t_full, t_first = statistics.median(onnx_full), statistics.median(full), statistics.median(first)
    audio = len(vits.synthesize_ids(ids, QUIET).audio) / rate
    print(
        markdown_table(
            [
                "text",
                "chars",
                "audio s",
                "onnx full s",
                "torch full s",
                "torch/onnx",
                "torch first chunk s",
                "first/full",
            ],
            [[key, len(texts[key]), audio, t_onnx, t_full, t_full / t_onnx, t_first, t_first / t_full]],
        )
    )
    print(f"\nfirst window {vits.window_frames} frames, later windows {vits.chunk_frames} frames")


if __name__ == "__main__":
    main()
