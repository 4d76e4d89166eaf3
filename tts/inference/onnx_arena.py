"""One ONNX Runtime CPU arena for every windowed session of the process.

Without an arena each run maps its activations afresh and the kernel zeroes
every page (joe's 349-character sentence: 240,000 page faults a run, 1.6x the
time). With one arena per session, each of an engine's sessions (encoder,
flow, decoder, the wide encoder) keeps the peak it once needed, and every
loaded voice adds its own: the windowed engine tests peaked at 2.2 GB.
Sessions that call ``use_shared_arena`` instead draw from one arena
registered with ONNX Runtime's environment, which holds the peak of what
runs at the same time across all of them (1.7 GB for the same tests, and
faster). It never shrinks: it holds the most that ran at once, which a
split model bounds (no window over ``max_window_frames``). A voice that could
not be split runs each sentence whole, so the longest sentence it was given
sets the arena's size (``TTS_SEGMENT_MAX_CHARS`` and the slow-down floor
bound it; without an arena glibc's heap kept about as much, fragmented, and
every run was 4x slower).
"""

from __future__ import annotations

import threading
from typing import Any

import onnxruntime

_lock = threading.Lock()
_registered = False


def use_shared_arena(options: Any) -> None:
    """Make sessions created with ``options`` (``onnxruntime.SessionOptions``) use the process's arena."""
    global _registered
    with _lock:
        if not _registered:
            info = onnxruntime.OrtMemoryInfo(
                "Cpu", onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, onnxruntime.OrtMemType.DEFAULT
            )
            # No cap, ONNX Runtime's default growth (each extension twice the last), no initial chunk.
            onnxruntime.create_and_register_allocator(info, onnxruntime.OrtArenaCfg(0, 0, -1, -1))
            _registered = True
    options.enable_cpu_mem_arena = True
    options.add_session_config_entry("session.use_env_allocators", "1")
