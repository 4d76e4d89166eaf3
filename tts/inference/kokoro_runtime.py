"""Which runtime runs Kokoro: ONNX Runtime on the int8 graph, or OpenVINO on the fp32 graph (#42).

``TTS_KOKORO_RUNTIME`` (ttsplatform/settings/engines.py) picks the engine class:

- ``onnxruntime`` (the default): the served int8 graph, as before;
- ``openvino``: the fp32 graph (``kokoro_fp32``) in ``bf16`` where the CPU has BF16 instructions
  (``/proc/cpuinfo``: ``avx512_bf16`` or ``amx_bf16``), else ``f32``; ONNX Runtime when the
  ``openvino`` extra is not installed or the graph cannot be built (logged);
- ``auto``: OpenVINO only where it pays: the CPU has BF16, OpenVINO is installed, and a short
  start-up probe (one sentence, both runtimes, after a warm-up) finds it at most
  ``PROBE_MAX_RATIO`` of ONNX Runtime's time with the same speech (``same_speech``). What it chose
  and why is logged.

The speech measures (magnitude-spectrum SNR, RMS loudness, duration) are here so that the probe,
the bench (bench/bench_kokoro_runtime.py) and the tests judge alike. No Django here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

RUNTIMES = ("auto", "onnxruntime", "openvino")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
#: OpenVINO is chosen by ``auto`` only at this share of ONNX Runtime's probe time or less.
PROBE_MAX_RATIO = 0.8
#: The same speech: loudness within this many dB, duration within this share, spectra this close.
SAME_LOUDNESS_DB = 1.0
SAME_DURATION = 0.02
#: The int8 graph and its fp32 graph on ONNX Runtime differ by about 12 dB (docs/benchmarks.md);
#: a runtime further from the int8 graph than this says something else than it does.
SAME_SPECTRUM_DB = 8.0


def cpu_flags(path: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The first CPU's feature flags (empty where there is no ``/proc/cpuinfo``)."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def openvino_precision(flags: frozenset[str]) -> str:
    """``bf16`` where the CPU computes in BF16, else ``f32``."""
    return "bf16" if any(flag in flags for flag in BF16_FLAGS) else "f32"


@dataclass(frozen=True)
class SpeechDifference:
    """How one runtime's audio for a sentence differs from a reference's."""

    spectrum_snr_db: float
    loudness_db: float  # this audio's RMS over the reference's, in dB
    duration_ratio: float  # this audio's length over the reference's


def rms_db(audio: np.ndarray) -> float:
    return float(20 * np.log10(max(float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))), 1e-9)))


def _magnitudes(audio: np.ndarray, n_fft: int = 1024, hop: int = 256) -> np.ndarray:
    if len(audio) < n_fft:
        audio = np.pad(audio, (0, n_fft - len(audio)))
    frames = np.lib.stride_tricks.sliding_window_view(audio.astype(np.float64), n_fft)[::hop]
    return np.abs(np.fft.rfft(frames * np.hanning(n_fft), axis=-1))


def speech_difference(audio: np.ndarray, reference: np.ndarray) -> SpeechDifference:
    """Magnitude-spectrum SNR over the common length, loudness and duration against ``reference``."""
    n = min(len(audio), len(reference))
    ours, theirs = _magnitudes(audio[:n]), _magnitudes(reference[:n])
    error = float(np.sum(np.square(ours - theirs)))
    snr = float(10 * np.log10(float(np.sum(np.square(theirs))) / max(error, 1e-12)))
    return SpeechDifference(snr, rms_db(audio) - rms_db(reference), len(audio) / max(1, len(reference)))


def same_speech(difference: SpeechDifference) -> bool:
    return (
        abs(difference.loudness_db) <= SAME_LOUDNESS_DB
        and abs(difference.duration_ratio - 1) <= SAME_DURATION
        and difference.spectrum_snr_db >= SAME_SPECTRUM_DB
    )


@dataclass(frozen=True)
class ProbeResult:
    onnxruntime_s: float
    openvino_s: float
    difference: SpeechDifference

    def pays(self) -> bool:
        return self.openvino_s <= PROBE_MAX_RATIO * self.onnxruntime_s and same_speech(self.difference)

    def describe(self) -> str:
        d = self.difference
        return (
            f"probe {self.openvino_s:.2f} s on OpenVINO, {self.onnxruntime_s:.2f} s on ONNX Runtime "
            f"(x{self.openvino_s / max(self.onnxruntime_s, 1e-9):.2f}, wins at x{PROBE_MAX_RATIO}); "
            f"speech {d.spectrum_snr_db:.1f} dB spectrum SNR, {d.loudness_db:+.2f} dB loudness, "
            f"duration x{d.duration_ratio:.3f}"
        )
