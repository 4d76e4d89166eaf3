"""Window sizes for a whole sentence cut over idle workers (tts/inference/windows.py: split_evenly)."""

from __future__ import annotations

import pytest

from tts.inference.windows import plan_windows, split_evenly


@pytest.mark.parametrize(
    ("frames", "workers", "size"),
    [
        (263, 2, 132),  # a short sentence: one window per worker
        (100, 2, 100),  # too short to be worth two: one window
        (600, 2, 300),  # under the bound: still one per worker
        (1543, 2, 386),  # past it: four windows, two per worker, none over 512
        (1100, 1, 367),  # a busy engine (one idle worker): three windows in turn
        (3600, 2, 450),  # 400 characters at half speed: eight windows
    ],
)
def test_windows_are_shared_evenly_and_bounded(frames: int, workers: int, size: int) -> None:
    assert split_evenly(frames, workers, minimum=96, maximum=512) == size
    windows = plan_windows(frames, first=size, size=size, decoder_overlap=11, flow_overlap=32)
    cores = [w.core[1] - w.core[0] for w in windows]
    assert sum(cores) == frames and max(cores) <= 512
    if frames >= 2 * 96:
        assert len(windows) % workers == 0  # every worker the same share


def test_without_a_bound_one_window_per_worker() -> None:
    assert split_evenly(1543, 2, minimum=96) == 772
