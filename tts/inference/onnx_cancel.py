"""An ONNX Runtime run that ends early when nobody waits for it any more.

A whole-sentence run of a large model (Kokoro's, up to 510 tokens: seconds of
CPU) cannot be dropped like queued work once it started. ONNX Runtime checks
``RunOptions.terminate`` between the graph's nodes and then fails the run, so
:func:`cancellable_run` gives the run its own ``RunOptions`` and sets that flag
when the calling thread's work is cancelled (``work_pool.current_cancel``: a
stream whose client went away). The engine turns the failure into an
``EngineError`` as for any failed run; the pipeline, seeing its run's stop
signal set, records a cancel, not a failure. Without a signal (a job, a warm-up,
a direct call) the run is an ordinary one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import onnxruntime

from .work_pool import current_cancel, raise_if_cancelled


@contextmanager
def cancellable_run() -> Iterator[onnxruntime.RunOptions | None]:
    """``RunOptions`` for one ``session.run`` that terminates when the current work is cancelled."""
    signal = current_cancel()
    if signal is None:
        yield None
        return
    raise_if_cancelled()  # cancelled while it waited for its turn: never start
    options = onnxruntime.RunOptions()
    handle = signal.on_set(lambda: setattr(options, "terminate", True))
    try:
        yield options
    finally:
        signal.remove(handle)
