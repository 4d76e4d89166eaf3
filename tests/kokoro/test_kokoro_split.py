"""Kokoro's graph split in two (``tts.inference.kokoro_split``): hash-checked parts that give the
served graph's audio, and refusal of a graph that is not a served Kokoro graph."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest

from tts.inference.kokoro_model import package_sha256
from tts.inference.kokoro_split import KokoroParts, KokoroSplitError, _session, find_cut, run_parts, split_kokoro

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def parts(kokoro_dir: str, tmp_path_factory: pytest.TempPathFactory) -> KokoroParts:
    # split_kokoro checks the parts' audio and durations against the graph's before returning.
    return split_kokoro(Path(kokoro_dir) / f"kokoro-{package_sha256()}.onnx", tmp_path_factory.mktemp("kokoro-parts"))


def test_parts_are_hash_checked(parts: KokoroParts) -> None:
    assert parts.verify() == ""
    again = KokoroParts.from_options(parts.to_options())
    assert again == parts
    tampered = dataclasses.replace(parts, sha256={**parts.sha256, "decoder": "0" * 64})
    assert "decoder part" in tampered.verify() and "SHA-256" in tampered.verify()
    missing = dataclasses.replace(parts, paths={**parts.paths, "predictor": parts.paths["predictor"] + ".gone"})
    assert "missing" in missing.verify()


def test_the_parts_give_the_graphs_audio(kokoro_dir: str, parts: KokoroParts) -> None:
    tokens = np.asarray([[0, *range(40, 80), 0]], dtype=np.int64)
    feed = {
        "tokens": tokens,
        "style": np.full((1, 256), 0.05, dtype=np.float32),
        "speed": np.asarray([1.0], dtype=np.float32),
    }
    whole = _session(Path(kokoro_dir) / f"kokoro-{package_sha256()}.onnx").run(None, feed)
    audio, outputs = run_parts(_session(parts.paths["predictor"]), _session(parts.paths["decoder"]), parts.names, feed)
    np.testing.assert_array_equal(audio, np.asarray(whole[0]).reshape(-1))
    # Durations (timestamps) come from the predictor part unchanged.
    np.testing.assert_array_equal(outputs["durations"], whole[1])


def test_a_graph_that_is_not_kokoros_is_refused(parts: KokoroParts, tmp_path: Path) -> None:
    with pytest.raises(KokoroSplitError, match="not a served Kokoro graph"):
        find_cut(onnx.load(parts.paths["decoder"], load_external_data=False))
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(KokoroSplitError, match="not an ONNX model"):
        split_kokoro(junk, tmp_path)
