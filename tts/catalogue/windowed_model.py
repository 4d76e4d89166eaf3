"""A Piper voice split for windowed decoding: its graph in three parts beside the model version.

At import (``model_import``) the served model (the alignment-capable copy when
there is one) is cut into encoder, flow and decoder
(``tts.inference.onnx_split``), written to the data dir named by the source's
sha256 (importing the same file twice reuses them), and their hashes, cut
names and measured overlaps are kept in ``ModelVersion.options["windowed"]``.
The engine checks the hashes when it loads and falls back to the whole graph
if a part is missing or changed. The operator's file is never modified.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from tts.inference.onnx_split import GraphSplitError, write_parts

logger = logging.getLogger(__name__)


def probe_ids(config: dict[str, Any]) -> list[int]:
    """A short, valid id sequence for the voice: BOS, some phonemes, EOS."""
    id_map: dict[str, list[int]] = config.get("phoneme_id_map") or {}
    ids = [values[0] for key, values in id_map.items() if values and key not in ("^", "$")][:24]
    return [id_map.get("^", [1])[0], *ids, id_map.get("$", [2])[0]]


def windowed_options(model_path: str | Path, dest_dir: str | Path, sha256: str, config: dict[str, Any]) -> dict | None:
    """``options["windowed"]`` for a model served from ``model_path``, or ``None`` if it cannot be split."""
    try:
        parts = write_parts(model_path, dest_dir, sha256, probe_ids(config))
    except GraphSplitError as exc:
        logger.warning("%s; this voice will decode whole sentences (no in-sentence streaming)", exc)
        return None
    logger.info(
        "split %s for windowed decoding: flow overlap %d, decoder overlap %d frames",
        model_path,
        parts.flow_overlap,
        parts.decoder_overlap,
    )
    return parts.as_options()
