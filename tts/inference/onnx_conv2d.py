"""1-D convolutions of an ONNX graph rewritten as 2-D ones over a height-1 image.

Every convolution in a Piper (VITS) voice is 1-D: the text encoder's
feed-forward layers, the flows' WaveNets and the HiFi-GAN decoder, which is
most of a sentence's work. ONNX Runtime runs a 1-D ``Conv`` on the CPU as
im2col plus a matrix product, but has direct convolution kernels in a blocked
channel layout (its NCHWc transformer, on AVX2/AVX-512 and NEON) for 2-D ones
only. The same convolution written as ``Unsqueeze -> Conv (kernel 1 x k) ->
Squeeze`` takes those kernels: measured on joe's decoder, one thread, 0.78x the
time (the flow 0.90x, the encoder 0.82x on a short sentence), and the same
numbers up to float rounding (123-132 dB SNR against the 1-D graph).

The edit is made in memory when a session is created, like ``onnx_noise``:
the files on disk (an operator's model, the hash-checked parts) never change.
Where the blocked kernels are not available the 2-D convolution is the same
im2col path as before, so nothing gets slower.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_AXES = "__conv2d_height_axis"


def convs_as_2d(model: Any) -> int:
    """Rewrite ``model``'s (an ``onnx.ModelProto``, edited in place) 1-D ``Conv`` nodes; returns how many."""
    from onnx import helper, numpy_helper

    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    nodes: list[Any] = []
    replaced: set[str] = set()
    converted = 0

    def height(op: str, source: str, target: str, name: str) -> Any:
        if opset >= 13:  # axes are an input from opset 13 on, an attribute before
            return helper.make_node(op, [source, _AXES], [target], name=name)
        return helper.make_node(op, [source], [target], name=name, axes=[2])

    for node in graph.node:
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        weight = initializers.get(node.input[1])
        kernel = attrs.get("kernel_shape")
        rank = len(kernel) if kernel is not None else (len(weight.dims) - 2 if weight is not None else None)
        if rank != 1:
            nodes.append(node)
            continue
        converted += 1
        base = node.name or f"conv{converted}"
        x4, w4, y4 = f"{base}__x2d", f"{base}__w2d", f"{base}__y2d"
        nodes.append(height("Unsqueeze", node.input[0], x4, f"{base}__unsqueeze_x"))
        if weight is not None:
            graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(weight)[:, :, None, :], w4))
            replaced.add(weight.name)
        else:  # a computed weight: ONNX Runtime folds the constant subgraph when the session is created
            nodes.append(height("Unsqueeze", node.input[1], w4, f"{base}__unsqueeze_w"))
        new_attrs: dict[str, Any] = {}
        if kernel is not None:
            new_attrs["kernel_shape"] = [1, kernel[0]]
        if "pads" in attrs:
            new_attrs["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
        for name in ("strides", "dilations"):
            if name in attrs:
                new_attrs[name] = [1, attrs[name][0]]
        for name in ("group", "auto_pad"):
            if name in attrs:
                new_attrs[name] = attrs[name]
        nodes.append(helper.make_node("Conv", [x4, w4, *node.input[2:]], [y4], name=base, **new_attrs))
        nodes.append(height("Squeeze", y4, node.output[0], f"{base}__squeeze_y"))
    if not converted:
        return 0
    if opset >= 13:
        graph.initializer.append(numpy_helper.from_array(np.array([2], dtype=np.int64), _AXES))
    del graph.node[:]
    graph.node.extend(nodes)
    # The 3-D weights that nothing reads any more (a weight shared with a subgraph or an output stays).
    used = {name for node in graph.node for name in node.input} | {out.name for out in graph.output}
    has_subgraphs = any(a.type in (a.GRAPH, a.GRAPHS) for node in graph.node for a in node.attribute)
    if not has_subgraphs:  # in place: a rebuild would copy every weight
        for index in range(len(graph.initializer) - 1, -1, -1):
            name = graph.initializer[index].name
            if name in replaced and name not in used:
                del graph.initializer[index]
    return converted
