"""Kokoro's fp32 graph on OpenVINO's CPU plugin: a second runtime beside ONNX Runtime (#42).

OpenVINO is an optional extra (``pip install .[openvino]``, about 180 MB); nothing imports it
unless this runtime is asked for. The graph is the fp32 one built from the package's int8 weights
(``kokoro_fp32``), compiled once for ``bf16`` (where the CPU has BF16 instructions) or ``f32``.
Inputs of any length run without a recompile.

What the engine relies on, kept as with ONNX Runtime:

- threads: ``INFERENCE_NUM_THREADS`` is the engine's thread count times its concurrency, one stream
  (and one infer request) per concurrent synthesis, no pinning (the cores are shared);
- cancellation: a run is started asynchronously and ``InferRequest.cancel`` is called when the
  current work's cancel signal is set (``work_pool.current_cancel``); the failed wait becomes the
  engine's ``EngineError`` as ONNX Runtime's terminated run does;
- memory: when no run is left, the compiled model's intermediate buffers are released
  (``CompiledModel.release_memory``), as the ONNX Runtime session shrinks its arena after each run.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .work_pool import current_cancel, raise_if_cancelled

PRECISIONS = ("bf16", "f32")


def openvino_installed() -> bool:
    """Whether the ``openvino`` package imports (the extra is installed)."""
    try:
        import openvino  # noqa: F401
    except ImportError:
        return False
    return True


class OpenVinoKokoro:
    """A compiled Kokoro graph with one infer request per concurrent synthesis.

    In ``bf16`` the graph runs as two compiled models: everything before ``decoder_inputs`` (the
    text encoder, the predictor, the sine source) in f32, the decoder's convolutions after them in
    bf16 (``kokoro_fp32.decoder_cut``). The whole graph in bf16 is as fast but not the same speech.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        precision: str,
        threads: int,
        concurrency: int,
        decoder_inputs: tuple[str, ...] = (),
    ) -> None:
        import openvino

        if precision not in PRECISIONS:
            raise ValueError(f"precision {precision!r}: one of {', '.join(PRECISIONS)}")
        if precision == "bf16" and not decoder_inputs:
            raise ValueError("bf16 needs the decoder's inputs (kokoro_fp32.decoder_cut)")
        self.precision = precision
        core = openvino.Core()

        def compiled(model: Any, hint: str) -> Any:
            return core.compile_model(
                model,
                "CPU",
                {
                    "INFERENCE_PRECISION_HINT": hint,
                    "NUM_STREAMS": max(1, concurrency),
                    "INFERENCE_NUM_THREADS": max(1, threads) * max(1, concurrency),
                    "ENABLE_CPU_PINNING": False,
                },
            )

        if precision == "f32":
            self.stages = [compiled(str(model_path), "f32")]
        else:
            front, back = _split(core, str(model_path), decoder_inputs)
            self.stages = [compiled(front, "f32"), compiled(back, "bf16")]
        self._stage_inputs = [[port.get_any_name() for port in stage.inputs] for stage in self.stages]
        self._requests: queue.SimpleQueue[list[Any]] = queue.SimpleQueue()
        for _ in range(max(1, concurrency)):
            self._requests.put([stage.create_infer_request() for stage in self.stages])
        self._lock = threading.Lock()
        self._running = 0

    def run(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The graph's outputs by name for ``feed``; raises when the run fails or is cancelled."""
        requests = self._requests.get()
        signal = current_cancel()
        with self._lock:
            self._running += 1
        try:
            outputs: dict[str, np.ndarray] = {}
            inputs: dict[str, np.ndarray] = feed
            for index, (stage, request) in enumerate(zip(self.stages, requests, strict=True)):
                if index:
                    inputs = {name: outputs[name] for name in self._stage_inputs[index]}
                if signal is not None:
                    raise_if_cancelled()  # cancelled while it waited for its turn: never start
                request.start_async(inputs)
                handle = signal.on_set(request.cancel) if signal is not None else None
                try:
                    request.wait()
                finally:
                    if signal is not None and handle is not None:
                        signal.remove(handle)
                for i, port in enumerate(stage.outputs):
                    value = np.array(request.get_output_tensor(i).data, copy=True)
                    for name in port.get_names():
                        outputs[name] = value
            return outputs
        finally:
            self._requests.put(requests)
            with self._lock:  # no run starts while the buffers go
                self._running -= 1
                if self._running == 0:
                    for stage in self.stages:
                        if hasattr(stage, "release_memory"):
                            stage.release_memory()

    def close(self) -> None:
        while True:
            try:
                self._requests.get_nowait()
            except queue.Empty:
                break
        self.stages = []


def _split(core: Any, model_path: str, cut: tuple[str, ...]) -> tuple[Any, Any]:
    """The graph as two OpenVINO models: inputs -> the tensors named in ``cut`` (and the durations),
    and ``cut`` -> the audio."""
    import openvino
    from openvino import opset13

    def ports(model: Any) -> dict[str, Any]:
        found = {}
        for op in model.get_ops():
            for output in op.outputs():
                for name in output.get_names() & set(cut):
                    found[name] = output
        return found

    def result(model: Any, name: str) -> Any:
        return next(r for r in model.get_results() if name in r.input_value(0).get_names())

    whole = core.read_model(model_path)
    found = ports(whole)
    missing = sorted(set(cut) - set(found))
    if missing:
        raise ValueError(f"the decoder's inputs {', '.join(missing[:3])} are not in the graph")
    front = openvino.Model(
        [opset13.result(found[name]) for name in cut] + [result(whole, "durations")], whole.get_parameters(), "front"
    )
    whole = core.read_model(model_path)  # a second copy: the back's inputs replace the front's tensors
    found = ports(whole)
    parameters = []
    for name in cut:
        output = found[name]
        parameter = opset13.parameter(output.get_partial_shape(), output.get_element_type(), name=name)
        parameter.output(0).set_names({name})
        for target in list(output.get_target_inputs()):
            target.replace_source_output(parameter.output(0))
        parameters.append(parameter)
    back = openvino.Model([result(whole, "audio")], parameters, "back")
    return front, back
