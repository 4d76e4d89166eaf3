"""One ONNX Runtime CPU arena for every windowed session of the process.

Without an arena each run maps its activations afresh and the kernel zeroes
every page (joe's 349-character sentence: 240,000 page faults a run, 1.6x the
time). With one arena per session, each of an engine's sessions (encoder,
flow, decoder, the wide encoder) keeps the peak it once needed, and every
loaded voice adds its own: the windowed engine tests peaked at 2.2 GB.
Sessions that call ``use_shared_arena`` instead draw from one arena
registered with ONNX Runtime's environment, which holds the peak of what
runs at the same time across all of them (1.7 GB for the same tests, and
faster). It never shrinks, so it is only for sessions whose runs are bounded
(windows of at most ``max_window_frames``); a graph run whole, as long as
its sentence, keeps no arena.
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
