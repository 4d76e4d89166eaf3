"""GPU benchmark of the torch engine serving the joe voice (run by ``bench/gpu.sh``).

1. decoder precision: SNR of float16 and bfloat16 decoders against float32,
   and the type the engine picks by itself;
2. throughput at 1, 4, 16 and 64 concurrent clients (dynamic batching on):
   real-time factor per stream and seconds of audio per second in total,
   for the chosen decoder type and for float32;
3. windowed decoding: time to the first audio of the long single sentence.

Everything runs in one process in a few minutes; it prints markdown.
"""

from __future__ import annotations

import argparse
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
)

from tts.inference.vits_torch import VitsTorchEngine, snr_db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=Path, default=DEFAULT_TEXTS)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--rounds", type=int, default=2, help="passes over the medium text per client")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    texts = load_texts(args.texts)

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available to torch: install a CUDA build of torch on a GPU machine")
    started = time.perf_counter()
    auto = VitsTorchEngine(joe_spec("vits-torch", device="cuda"))
    fp32 = VitsTorchEngine(joe_spec("vits-torch", device="cuda", decoder_dtype="float32"))
    print(f"# Torch engine on {torch.cuda.get_device_name()}\n")
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    print(f"engine picked decoder {auto.decoder_dtype} (SNR {auto.decoder_snr_db} dB), batching {auto.batching}\n")

    print("## Decoder precision against float32 (noise off)\n")
    rows = []
    for key in ("short", "medium", "long_single_sentence"):
        first_sentence = texts[key].split(". ")[0]
        rows.append(
            [key] + [fp32.measure_decoder_snr(dtype, first_sentence) for dtype in (torch.float16, torch.bfloat16)]
        )
    ids = sentence_ids(fp32, texts["medium"])[0]
    rows.append(
        [
            "engine output, medium",
            snr_db(fp32.synthesize_ids(ids, QUIET).audio, auto.synthesize_ids(ids, QUIET).audio),
            "-",
        ]
    )
    print(markdown_table(["text", "float16 SNR dB", "bfloat16 SNR dB"], rows))

    print("\n## Concurrent clients (each synthesizes the medium text's sentences)\n")
    sentences = sentence_ids(auto, texts["medium"])
    rows = []
    for label, engine in ((str(auto.decoder_dtype), auto), ("torch.float32", fp32)):
        for clients in args.clients:
            run_clients(engine, sentences, clients)  # warm-up: cuDNN autotunes each new bucket shape
            result = run_clients(engine, sentences, clients, rounds=args.rounds)
            rows.append(
                [label, clients, result.stream_rtf, result.audio_per_second, result.latency(0.5), result.latency(0.95)]
            )
    print(
        markdown_table(
            ["decoder", "clients", "RTF per stream", "audio s per s", "p50 latency s", "p95 latency s"], rows
        )
    )
    print(f"\nbatches: {auto.batch_stats()}")

    print("\n## Windowed decoding: first audio of the long single sentence\n")
    ids = sentence_ids(auto, texts["long_single_sentence"])[0]
    full = median_time(lambda: auto.synthesize_ids(ids, QUIET), args.repeat)
    rows = []
    for window in (16, 32, 64):
        first = statistics.median(first_chunk_time(auto, ids, window) for _ in range(args.repeat))
        rows.append([window, first, full, first / full])
    print(markdown_table(["first window frames", "first chunk s", "full s", "first/full"], rows))
    audio_seconds = len(auto.synthesize_ids(ids, QUIET).audio) / auto.sample_rate
    print(f"\naudio {audio_seconds:.2f} s; whole run {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
