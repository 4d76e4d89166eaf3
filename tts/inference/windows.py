"""Overlapping decoding windows over a segment's latent frames (no torch, no onnx).

Both engines that decode in windows (``vits_torch`` and ``piper_onnx``) plan
them here: each window keeps the audio of its ``core`` and computes it from
enough frames on each side (the flows' and the decoder's receptive fields)
that the kept audio equals what one pass over the whole segment gives.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """One decoding window, in latent frames: the audio of ``core`` is kept.

    ``decoder`` is ``core`` widened by the decoder's receptive field and
    ``flow`` is ``decoder`` widened by the flows' (both clipped to the segment).
    """

    core: tuple[int, int]
    decoder: tuple[int, int]
    flow: tuple[int, int]


def plan_windows(
    frames: int, *, first: int, size: int, decoder_overlap: int, flow_overlap: int, start: int = 0, count: int = 0
) -> list[Window]:
    """Cover ``frames`` with cores of ``first``, then ``size`` frames, each with its context.

    ``start``: the first core begins there (the frames before it are decoded
    already); ``count`` > 0: at most that many windows (the rest planned later).

    A remainder under half a window joins the window before it (unless that is
    a short first window, which is there for latency): fewer, larger windows
    repeat less overlap.
    """
    windows: list[Window] = []
    while start < frames and (count <= 0 or len(windows) < count):
        core = first if not windows else size
        end = min(frames, start + core)
        if core >= size and frames - end < size // 2:
            end = frames
        dec = (max(0, start - decoder_overlap), min(frames, end + decoder_overlap))
        flow = (max(0, dec[0] - flow_overlap), min(frames, dec[1] + flow_overlap))
        windows.append(Window(core=(start, end), decoder=dec, flow=flow))
        start = end
    return windows


def split_evenly(frames: int, parts: int, *, minimum: int, maximum: int = 0) -> int:
    """A window size that covers ``frames`` in about ``parts`` windows of at least ``minimum`` frames.

    With ``maximum``, windows hold no more than that: the count is then the
    next multiple of ``parts`` (the idle workers) that keeps them under it, so
    every worker gets the same share rather than one taking a last window alone.
    """
    parts = max(1, min(parts, frames // max(1, minimum)))
    if maximum > 0 and -(-frames // parts) > maximum:
        rounds = -(-frames // (parts * maximum))
        parts *= rounds
    return max(1, -(-frames // parts))
