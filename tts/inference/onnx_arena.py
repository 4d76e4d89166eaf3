"""One ONNX Runtime CPU arena for every windowed session of the process.

Without an arena each run maps its activations afresh and the kernel zeroes
every page (joe's 349-character sentence: 240,000 page faults a run, 1.6x the
time). With one arena per session, each of an engine's sessions (encoder,
flow, decoder, the wide encoder) keeps the peak it once needed, and every
loaded voice adds its own: the windowed engine tests peaked at 2.2 GB.
Sessions that call ``use_shared_arena`` instead draw from one arena
registered with ONNX Runtime's environment, which holds the peak of what
runs at the same time across all of them (1.7 GB for the same tests, and
faster). It holds the most that ran at once, which a split model bounds (no
window over ``max_window_frames``); a voice that could not be split runs each
sentence whole, as long as the sentence, so its sessions keep no arena.
Weights are allocated outside it (``use_device_allocator_for_initializers``),
so it holds activations only, and ``shrink_shared_arena`` gives its free
regions back when the registry drops an engine (a whole test suite's engines
had grown a pytest process to 3.4 GB without it).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import onnxruntime

_lock = threading.Lock()
_registered = False
_shrinker: onnxruntime.InferenceSession | None = None


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
    options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")


def shrink_shared_arena() -> bool:
    """Give the arena's free regions back to the system; False when no session ever used it.

    ONNX Runtime shrinks an arena at the end of a run that asks for it: a one-node
    session on the shared arena makes that run.
    """
    global _shrinker
    with _lock:
        if not _registered:
            return False
        if _shrinker is None:
            from onnx import TensorProto, helper

            graph = helper.make_graph(
                [helper.make_node("Identity", ["x"], ["y"])],
                "shrink",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
            )
            options = onnxruntime.SessionOptions()
            options.enable_cpu_mem_arena = True
            options.add_session_config_entry("session.use_env_allocators", "1")
            _shrinker = onnxruntime.InferenceSession(
                helper.make_model(graph).SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
            )
        shrinker = _shrinker
    run = onnxruntime.RunOptions()
    run.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    shrinker.run(None, {"x": np.zeros(1, dtype=np.float32)}, run)
    return True
