"""The text encoder's relative attention computed on its band, not on a padded square.

VITS (and so every Piper voice) adds to each attention score a learned term
for the relative position of key and query, but only within a window
(``window_size`` = 4: 9 positions). The reference code pads the 9 embeddings
with zeros to ``2t - 1`` rows and multiplies the queries by all of them, then
shifts the ``t x (2t - 1)`` product into a ``t x t`` matrix with pads and
reshapes; the value side does the same backwards. For a 349-character
sentence (t = 717 phoneme ids) those two products and four pads are over
half of the encoder's time, all of it spent on zeros, and the encoder is what
a stream waits for before its first window.

``banded_relative_attention`` rewrites each layer's attention core in memory
(as ``onnx_noise`` and ``onnx_conv2d`` do; the files keep their hashes): the
queries meet the 9 embeddings only (``t x 9``), and one pad and two reshapes
place that band on the diagonals of the ``t x t`` scores (and take the band
of the attention weights back for the values). The numbers are the same up to
float rounding: the terms dropped are exact zeros.

A layer is rewritten only when its core is the reference one: found from its
weights' names (``...attn_layers.N.conv_q.weight``, ``emb_rel_k``, ...), made
of the expected operators, with one mask and one softmax. Anything else (a
proximal bias, another export) is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

# The operators of the reference core (torch.onnx's export of MultiHeadAttention.attention).
_CORE_OPS = frozenset(
    {
        "Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Transpose", "Div", "Mul", "MatMul", "Sub",
        "Add", "Slice", "Pad", "Where", "Softmax", "Equal", "Cast", "ConstantOfShape", "Constant", "Squeeze",
    }
)  # fmt: skip
_LAYER = re.compile(r"^(?P<prefix>.*attn_layers\.(?P<n>\d+)\.)conv_q\.weight$")


def banded_relative_attention(model: Any) -> int:
    """Rewrite ``model``'s (an ``onnx.ModelProto``, edited in place) relative attention layers; returns how many."""
    from onnx import numpy_helper

    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    conv_by_weight = {node.input[1]: node for node in graph.node if node.op_type == "Conv" and len(node.input) > 1}

    rewritten = 0
    new_cores: dict[int, list[Any]] = {}  # id(conv_o) -> the nodes of its new core, placed before it
    rewired: dict[str, str] = {}  # conv_o's old input -> the new core's output
    for weight in initializers:
        match = _LAYER.match(weight)
        if not match:
            continue
        prefix = match["prefix"]
        names = [f"{prefix}conv_{x}.weight" for x in "qkvo"] + [f"{prefix}emb_rel_k", f"{prefix}emb_rel_v"]
        if not all(n in initializers for n in names) or not all(n in conv_by_weight for n in names[:4]):
            continue
        conv_q, conv_k, conv_v, conv_o = (conv_by_weight[n] for n in names[:4])
        core = _core(producer, consumers, {conv_q.output[0], conv_k.output[0], conv_v.output[0]}, conv_o.input[0])
        if core is None:
            continue
        where = next(node for node in core if node.op_type == "Where")
        div = next((node for node in core if node.op_type == "Div" and node.input[1] in initializers), None)
        if div is None:
            continue
        emb_k = numpy_helper.to_array(initializers[names[4]])
        emb_v = numpy_helper.to_array(initializers[names[5]])
        channels = int(initializers[names[0]].dims[0])
        if emb_k.ndim != 3 or emb_k.shape != emb_v.shape or emb_k.shape[1] % 2 == 0:
            continue
        depth = int(emb_k.shape[2])
        if channels % depth:
            continue
        tag = f"__banded{match['n']}"
        nodes, inits, out = _banded_core(
            tag,
            q=conv_q.output[0],
            k=conv_k.output[0],
            v=conv_v.output[0],
            condition=where.input[0],
            fill=where.input[1],
            scale=div.input[1],
            emb_k=emb_k,
            emb_v=emb_v,
            heads=channels // depth,
        )
        new_cores[id(conv_o)] = nodes
        graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in inits.items())
        rewired[conv_o.input[0]] = out
        rewritten += 1
    if not rewritten:
        return 0
    ordered: list[Any] = []
    for node in graph.node:  # each new core just before its conv_o: every input it reads is made by then
        ordered += new_cores.get(id(node), [])
        for i, name in enumerate(node.input):
            if name in rewired:
                node.input[i] = rewired[name]
        ordered.append(node)
    del graph.node[:]
    graph.node.extend(ordered)
    _prune(model)
    return rewritten


def _core(producer: dict[str, Any], consumers: dict[str, list[Any]], sources: set[str], sink: str) -> list[Any] | None:
    """The nodes on a path from the q/k/v convolutions to conv_o's input, if they are the reference core."""
    after: set[int] = set()
    stack = list(sources)
    while stack:
        name = stack.pop()
        if name == sink:  # not past conv_o: the rest of the graph is not this layer's core
            continue
        for node in consumers.get(name, []):
            if id(node) not in after:
                after.add(id(node))
                stack.extend(node.output)
    before: dict[int, Any] = {}
    stack = [sink]
    while stack:
        node = producer.get(stack.pop())
        if node is not None and id(node) not in before:
            before[id(node)] = node
            stack.extend(node.input)
    core = [node for key, node in before.items() if key in after]
    ops = [node.op_type for node in core]
    if not core or not set(ops) <= _CORE_OPS:
        return None
    if ops.count("Where") != 1 or ops.count("Softmax") != 1 or ops.count("MatMul") != 4:
        return None
    return core


def _banded_core(
    tag: str,
    *,
    q: str,
    k: str,
    v: str,
    condition: str,
    fill: str,
    scale: str,
    emb_k: np.ndarray,
    emb_v: np.ndarray,
    heads: int,
) -> tuple[list[Any], dict[str, np.ndarray], str]:
    """Nodes computing the attention output (before conv_o) from q, k, v: [b, C, t] each."""
    from onnx import TensorProto, helper

    depth = int(emb_k.shape[2])
    window = int(emb_k.shape[1]) // 2
    band = 2 * window + 1
    inits = {
        f"{tag}_split": np.array([0, heads, depth, -1], dtype=np.int64),
        f"{tag}_merge": np.array([0, heads * depth, -1], dtype=np.int64),
        f"{tag}_flat": np.array([0, 0, -1], dtype=np.int64),
        f"{tag}_keep": np.array([0, 0], dtype=np.int64),
        f"{tag}_two": np.array([2], dtype=np.int64),
        f"{tag}_three": np.array([3], dtype=np.int64),
        f"{tag}_zero": np.array([0], dtype=np.int64),
        f"{tag}_one": np.array([1], dtype=np.int64),
        f"{tag}_window": np.array([window], dtype=np.int64),
        f"{tag}_band": np.array([band], dtype=np.int64),
        f"{tag}_wide": np.array([2 * window], dtype=np.int64),
        f"{tag}_no_pad7": np.zeros(7, dtype=np.int64),
        f"{tag}_no_pad5": np.zeros(5, dtype=np.int64),
        f"{tag}_pad_window": np.array([0, 0, 0, window, 0, 0, 0, window], dtype=np.int64),
        f"{tag}_emb_k": np.ascontiguousarray(np.transpose(emb_k, (0, 2, 1))),  # [1 or h, depth, band]
        f"{tag}_emb_v": np.ascontiguousarray(emb_v),  # [1 or h, band, depth]
    }
    nodes: list[Any] = []

    def node(op: str, inputs: Iterable[str], **attrs: Any) -> str:
        out = f"{tag}_{len(nodes)}_{op}"
        nodes.append(helper.make_node(op, list(inputs), [out], name=out, **attrs))
        return out

    def const(name: str) -> str:
        return f"{tag}_{name}"

    # Sequence length t, and t + 2w, as 1-D tensors.
    t = node("Gather", [node("Shape", [q]), const("two")], axis=0)  # [1]
    t_wide = node("Add", [t, const("wide")])
    # Heads: [b, C, t] -> [b, h, d, t]; queries and values as [b, h, t, d].
    queries = node("Div", [node("Transpose", [node("Reshape", [q, const("split")])], perm=[0, 1, 3, 2]), scale])
    keys = node("Reshape", [k, const("split")])
    values = node("Transpose", [node("Reshape", [v, const("split")])], perm=[0, 1, 3, 2])
    scores = node("MatMul", [queries, keys])  # [b, h, t, t]
    # The relative term on its band: [b, h, t, 2w+1], then placed on the diagonals.
    rel = node("MatMul", [queries, const("emb_k")])
    padded = node("Pad", [rel, node("Concat", [const("no_pad7"), t], axis=0)])  # [b, h, t, t + 2w + 1]
    flat = node("Reshape", [padded, const("flat")])
    cut = node("Slice", [flat, const("zero"), node("Mul", [t, t_wide]), const("two")])
    shifted = node("Reshape", [cut, node("Concat", [const("keep"), t, t_wide], axis=0)])  # [b, h, t, t + 2w]
    local = node("Slice", [shifted, const("window"), node("Add", [t, const("window")]), const("three")])
    # The mask as arithmetic (exact for a 0/1 mask and finite scores): ONNX Runtime's broadcasting
    # Where took 5x as long here as a Mul and an Add.
    keep = node("Cast", [node("Not", [condition])], to=TensorProto.FLOAT)
    filled = node("Mul", [node("Cast", [condition], to=TensorProto.FLOAT), fill])
    masked = node("Add", [node("Mul", [node("Add", [scores, local]), keep]), filled])
    weights = node("Softmax", [masked], axis=-1)
    out = node("MatMul", [weights, values])  # [b, h, t, d]
    # The attention weights' band, [b, h, t, 2w+1], for the relative values.
    wide = node("Pad", [weights, const("pad_window")])  # [b, h, t, t + 2w]
    flat_wide = node("Pad", [node("Reshape", [wide, const("flat")]), node("Concat", [const("no_pad5"), t], axis=0)])
    rows = node("Reshape", [flat_wide, node("Concat", [const("keep"), t, node("Add", [t_wide, const("one")])], axis=0)])
    diagonal = node("Slice", [rows, const("zero"), const("band"), const("three")])
    out = node("Add", [out, node("MatMul", [diagonal, const("emb_v")])])
    merged = node("Reshape", [node("Transpose", [out], perm=[0, 1, 3, 2]), const("merge")])  # [b, C, t]
    return nodes, inits, merged


def _prune(model: Any) -> None:
    """Drop the nodes and initializers that no graph output needs any more (the old cores)."""
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    needed: set[int] = set()
    stack = [out.name for out in graph.output]
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is not None and id(node) not in needed:
            needed.add(id(node))
            stack.extend(node.input)
    kept = [node for node in graph.node if id(node) in needed]
    used = {name for node in kept for name in node.input} | {out.name for out in graph.output}
    del graph.node[:]
    graph.node.extend(kept)
    _drop_initializers(graph, lambda name: name not in used)


def _drop_initializers(graph: Any, unused: Any) -> None:
    """Delete the initializers ``unused(name)`` says nothing reads, in place (a rebuild copies every weight)."""
    for index in range(len(graph.initializer) - 1, -1, -1):
        if unused(graph.initializer[index].name):
            del graph.initializer[index]
