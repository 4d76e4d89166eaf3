"""Can Kokoro's decoder run in windows? The split parts against the graph, windows against the whole decode.

A measurement, not a test. For one Japanese sentence (the first of ``bench_kokoro.TEXT``) and the
``zh_short`` text of ``bench/texts.json`` (a copy of ``../shared/bench/texts.json``), read by jf_alpha:

* the whole sentence through the two parts of ``tts.inference.kokoro_split`` against the served
  graph (largest sample difference);
* the decoder over windows of ``core`` frames each widened by ``overlap`` frames of context on each
  side, the kept audio against the whole decode: waveform SNR and log-spectral distance (LSD, dB,
  1024-point frames);
* the decoder over the whole sentence but its last ``k`` frames (the kept audio before them against
  the whole decode): how far one sample depends on frames far from it.

    .venv/bin/python bench/bench_kokoro_windows.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tts.inference.engine import ModelSpec  # noqa: E402
from tts.inference.kokoro_model import FRAME_SAMPLES, prepare_kokoro_files  # noqa: E402
from tts.inference.kokoro_onnx import KokoroOnnxEngine  # noqa: E402
from tts.inference.kokoro_split import _session, run_parts, split_kokoro  # noqa: E402

JA = "昔々、ある山のふもとに小さな村がありました。"
TEXTS = ROOT / "bench" / "texts.json"


def snr_db(ref: np.ndarray, out: np.ndarray) -> float:
    err = float(((out - ref) ** 2).sum())
    return float("inf") if err == 0 else 10 * np.log10(float((ref**2).sum()) / err)


def lsd_db(ref: np.ndarray, out: np.ndarray) -> float:
    def spec(x: np.ndarray) -> np.ndarray:
        frames = np.lib.stride_tricks.sliding_window_view(x, 1024)[::256] * np.hanning(1024)
        return np.abs(np.fft.rfft(frames, axis=1)) + 1e-4

    return float(np.sqrt(((20 * np.log10(spec(out) / spec(ref))) ** 2).mean()))


def spectral_snr_db(ref: np.ndarray, out: np.ndarray) -> float:
    """SNR of the STFT magnitudes (phase ignored): how far apart the two sound, not their waveforms."""

    def mag(x: np.ndarray) -> np.ndarray:
        frames = np.lib.stride_tricks.sliding_window_view(x, 1024)[::256] * np.hanning(1024)
        return np.abs(np.fft.rfft(frames, axis=1))

    a, b = mag(ref), mag(out)
    return float(10 * np.log10((a**2).sum() / max(float(((a - b) ** 2).sum()), 1e-30)))


def decode(decoder: object, names: list[str], outputs: dict[str, np.ndarray], d0: int, d1: int) -> np.ndarray:
    asr, f0, n, ref, phase = names
    feed = {
        asr: outputs[asr][:, :, d0:d1],
        f0: outputs[f0][:, 2 * d0 : 2 * d1],
        n: outputs[n][:, 2 * d0 : 2 * d1],
        ref: outputs[ref],
        phase: outputs[phase][:, 2 * d0 : 2 * d1],
    }
    result = decoder.run(None, {k: np.ascontiguousarray(v) for k, v in feed.items()})  # type: ignore[attr-defined]
    return np.asarray(result[0], dtype=np.float32).reshape(-1)


def main() -> None:
    zh = json.loads(TEXTS.read_text(encoding="utf-8"))["zh_short"]
    with tempfile.TemporaryDirectory(prefix="bench-kokoro-windows-") as tmp:
        files = prepare_kokoro_files(tmp)
        parts = split_kokoro(files.model_path, tmp)
        sizes = {p: Path(path).stat().st_size / 1e6 for p, path in parts.paths.items()}
        print(
            f"graph {files.model_path.stat().st_size / 1e6:.1f} MB; parts "
            + ", ".join(f"{p} {s:.1f} MB" for p, s in sizes.items())
        )
        spec = ModelSpec(1, "kokoro-onnx", str(files.model_path), str(files.config_path))
        engine = KokoroOnnxEngine(spec)
        whole_graph = engine.session
        predictor, decoder = _session(parts.paths["predictor"]), _session(parts.paths["decoder"])
        names = parts.names.decoder_inputs()
        for label, text, language in (("ja", JA, "ja"), ("zh_short", zh, "zh")):
            piece = engine.phonemize_aligned(text, language)[0]
            ids = engine.phonemes_to_ids(piece.phonemes)
            feed = {
                "tokens": np.asarray([ids], dtype=np.int64),
                "style": engine.style_for(0, len(ids) - 2),
                "speed": np.asarray([1.0], dtype=np.float32),
            }
            started = time.perf_counter()
            graph_audio = np.asarray(whole_graph.run(None, feed)[0]).reshape(-1)
            graph_s = time.perf_counter() - started
            started = time.perf_counter()
            audio, outputs = run_parts(predictor, decoder, parts.names, feed)
            parts_s = time.perf_counter() - started
            frames = outputs[names[0]].shape[-1]
            print(
                f"\n{label}: {frames} frames ({frames * FRAME_SAMPLES / 24000:.2f} s); graph {graph_s:.2f} s, "
                f"parts {parts_s:.2f} s, largest difference {np.abs(audio - graph_audio).max():.2e}"
            )
            for core, overlap in ((24, 16), (48, 32), (frames // 2 + 1, 48)):
                kept = []
                for c0 in range(0, frames, core):
                    c1 = min(frames, c0 + core)
                    d0, d1 = max(0, c0 - overlap), min(frames, c1 + overlap)
                    kept.append(
                        decode(decoder, names, outputs, d0, d1)[(c0 - d0) * FRAME_SAMPLES : (c1 - d0) * FRAME_SAMPLES]
                    )
                out = np.concatenate(kept)
                print(
                    f"  windows core {core:3d} overlap {overlap:2d}: "
                    f"SNR {snr_db(audio, out):5.1f} dB, LSD {lsd_db(audio, out):5.2f} dB, "
                    f"magnitude SNR {spectral_snr_db(audio, out):5.1f} dB"
                )
            for left_off in (5, 20):
                d1 = frames - left_off
                keep = (d1 - 30) * FRAME_SAMPLES
                out = decode(decoder, names, outputs, 0, d1)[:keep]
                print(
                    f"  whole but the last {left_off:2d} frames: kept audio SNR {snr_db(audio[:keep], out):5.1f} dB, "
                    f"LSD {lsd_db(audio[:keep], out):5.2f} dB, "
                    f"magnitude SNR {spectral_snr_db(audio[:keep], out):5.1f} dB"
                )
        engine.close()


if __name__ == "__main__":
    main()
