"""A Piper voice with phoneme durations: a copy of its ONNX model with the
alignment output that ``piper.patch_voice_with_alignment`` adds.

Piper voices compute each phoneme's length (the ``Ceil`` of the duration
predictor) but do not output it. Marking that tensor as a graph output
changes nothing else: same weights, same audio. The operator's file is never
modified; the copy lives in the data dir, named by the source's sha256, so
importing the same file twice reuses it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


class AlignmentPatchError(Exception):
    """The model cannot be given an alignment output; the message says why."""


def has_alignment_output(model_path: str | Path) -> bool:
    """Whether the ONNX model already outputs phoneme durations (a second output)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    return len(model.graph.output) > 1


def patched_model_copy(source: str | Path, dest_dir: str | Path, sha256: str) -> Path:
    """``dest_dir/<sha256>.onnx``: ``source`` with the alignment output, written once.

    Raises ``AlignmentPatchError`` if the graph has no single duration tensor
    to expose (not a Piper/VITS export) or ``onnx`` is not installed.
    """
    dest = Path(dest_dir) / f"{sha256}.onnx"
    if dest.is_file():
        return dest
    try:
        import onnx
        from piper.patch_voice_with_alignment import add_alignment_output
    except ImportError as exc:
        raise AlignmentPatchError(f"the onnx package is needed to add alignment output: {exc}") from exc
    try:
        model = onnx.load(str(source))
        tensor = add_alignment_output(model)
    except Exception as exc:  # onnx raises its own types for unreadable graphs
        raise AlignmentPatchError(f"cannot add an alignment output to {source}: {exc}") from exc
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Written under a temporary name and renamed: a concurrent import never reads half a file.
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{sha256}.", suffix=".onnx")
    os.close(fd)
    try:
        onnx.save(model, tmp)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.info("wrote %s with alignment output %s", dest, tensor)
    return dest
