"""Sample-rate conversion for audio that arrives one piece at a time.

The engine hands us a sentence at a time. Resampling each piece on its own
would restart the filter at every join and leave a click (and a few samples
too many or too few) there, so one :class:`StreamResampler` lives for the whole
response and carries the filter state across pieces (``soxr.ResampleStream``).
Its output is the same, sample for sample, however the input is cut up, and
matches a one-shot ``soxr.resample`` of the whole signal.
"""

from __future__ import annotations

import numpy as np
import soxr

DEFAULT_QUALITY = "HQ"


def as_mono_float32(samples: np.ndarray) -> np.ndarray:
    """``samples`` as a contiguous 1-D float32 array (a ``(n, 1)`` column is accepted)."""
    arr = np.asarray(samples)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"expected mono samples (1-D), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating):
        # Integer PCM would be silently ~32767x too loud; make the caller say what it means.
        raise TypeError(f"expected float samples in [-1, 1], got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.float32)


class StreamResampler:
    """Float32 mono resampler that keeps its state between ``process`` calls.

    Call ``process`` for each piece and ``flush`` once at the end for the tail
    the filter still holds. With equal rates it passes samples through.
    Not thread-safe: one instance per response.
    """

    def __init__(self, in_rate: int, out_rate: int, *, quality: str = DEFAULT_QUALITY) -> None:
        if in_rate <= 0 or out_rate <= 0:
            raise ValueError(f"sample rates must be positive, got {in_rate} -> {out_rate}")
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream: soxr.ResampleStream | None = None
        if in_rate != out_rate:
            self._stream = soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality=quality)
        self._flushed = False

    @property
    def is_identity(self) -> bool:
        return self._stream is None

    def process(self, chunk: np.ndarray) -> np.ndarray:
        """Resample one piece; may return fewer samples than the ratio suggests (filter delay)."""
        if self._flushed:
            raise RuntimeError("process() after flush()")
        x = as_mono_float32(chunk)
        if self._stream is None:
            return x
        return np.asarray(self._stream.resample_chunk(x, last=False), dtype=np.float32)

    def flush(self) -> np.ndarray:
        """The samples still inside the filter; the resampler is finished afterwards."""
        if self._flushed:
            return np.zeros(0, dtype=np.float32)
        self._flushed = True
        if self._stream is None:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(
            self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True),
            dtype=np.float32,
        )
