"""G.711 mu-law and A-law companding in numpy (telephony: ``ulaw_8000``, ``alaw_8000``).

``audioop`` did this until Python 3.13 removed it. These follow the same
reference algorithm (Sun's ``g711.c``, which ``audioop`` also used), so the
bytes match ``audioop.lin2ulaw``/``lin2alaw`` exactly; the tests check that
while ``audioop`` still exists. Decoding is a 256-entry table lookup.
"""

from __future__ import annotations

import numpy as np

# Segment end points of the 14-bit (mu-law) and 13-bit (A-law) magnitudes.
_ULAW_SEG_END = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF], dtype=np.int32)
_ALAW_SEG_END = np.array([0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF], dtype=np.int32)
_ULAW_BIAS = 0x84
_ULAW_CLIP = 8159


def _as_int32(pcm16: np.ndarray) -> np.ndarray:
    arr = np.asarray(pcm16)
    if arr.dtype != np.int16:
        raise TypeError(f"expected int16 samples, got {arr.dtype}")
    return arr.astype(np.int32)


def lin2ulaw(pcm16: np.ndarray) -> bytes:
    """int16 samples -> mu-law bytes."""
    val = _as_int32(pcm16) >> 2  # 14-bit, arithmetic shift like the C code
    negative = val < 0
    mask = np.where(negative, 0x7F, 0xFF)
    mag = np.minimum(np.where(negative, -val, val), _ULAW_CLIP) + (_ULAW_BIAS >> 2)
    seg = np.searchsorted(_ULAW_SEG_END, mag, side="left")
    code = (np.minimum(seg, 7) << 4) | ((mag >> (np.minimum(seg, 7) + 1)) & 0xF)
    code = np.where(seg >= 8, 0x7F, code)
    return (code ^ mask).astype(np.uint8).tobytes()


def lin2alaw(pcm16: np.ndarray) -> bytes:
    """int16 samples -> A-law bytes."""
    val = _as_int32(pcm16) >> 3  # 13-bit
    negative = val < 0
    mask = np.where(negative, 0x55, 0xD5)
    mag = np.where(negative, -val - 1, val)
    seg = np.searchsorted(_ALAW_SEG_END, mag, side="left")
    clamped = np.minimum(seg, 7)
    low = np.where(seg < 2, mag >> 1, mag >> np.maximum(clamped, 1)) & 0xF
    code = np.where(seg >= 8, 0x7F, (clamped << 4) | low)
    return (code ^ mask).astype(np.uint8).tobytes()


def _ulaw_table() -> np.ndarray:
    u = ~np.arange(256, dtype=np.int32) & 0xFF
    t = (((u & 0x0F) << 3) + _ULAW_BIAS) << ((u & 0x70) >> 4)
    return np.where(u & 0x80, _ULAW_BIAS - t, t - _ULAW_BIAS).astype(np.int16)


def _alaw_table() -> np.ndarray:
    a = np.arange(256, dtype=np.int32) ^ 0x55
    seg = (a & 0x70) >> 4
    t = (a & 0x0F) << 4
    t = np.where(seg == 0, t + 8, (t + 0x108) << np.maximum(seg - 1, 0))
    return np.where(a & 0x80, t, -t).astype(np.int16)


_ULAW_TO_LINEAR = _ulaw_table()
_ALAW_TO_LINEAR = _alaw_table()


def ulaw2lin(data: bytes) -> np.ndarray:
    """mu-law bytes -> int16 samples."""
    return _ULAW_TO_LINEAR[np.frombuffer(data, dtype=np.uint8)]


def alaw2lin(data: bytes) -> np.ndarray:
    """A-law bytes -> int16 samples."""
    return _ALAW_TO_LINEAR[np.frombuffer(data, dtype=np.uint8)]
