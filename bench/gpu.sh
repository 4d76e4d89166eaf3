#!/usr/bin/env bash
# GPU benchmark of the torch engine, then of the ONNX engine's windowed path, in one go
# (a few minutes on one CUDA GPU).
#
# Needs: a CUDA machine, this repository with its virtualenv, and a CUDA build
# of torch in it (not the CPU pin the Makefile installs), e.g.
#   .venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cu128
# Run from anywhere: bench/gpu.sh [extra args for bench_engines_gpu.py]
# Prints markdown and keeps a copy in bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}

"$PY" - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit(f"torch {torch.__version__} sees no CUDA device: install a CUDA build of torch")
print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}", file=sys.stderr)
PY

mkdir -p bench/results
out="bench/results/engines-gpu-$(date +%Y%m%d-%H%M%S).md"
# The tests that need CUDA first (they skip without it), then the measurements.
"$PY" -m pytest -q -p no:cacheprovider tests/inference/test_vits_torch_cuda.py
# The torch engine's door on CUDA (#24): over TTS_ENGINE_MAX_PHONEME_IDS refused before the device.
"$PY" -m pytest -q -p no:cacheprovider tests/inference/test_engine_door_cuda.py
timeout 240 "$PY" bench/bench_engines_gpu.py "$@" | tee "$out"
echo "written: $out" >&2

# The default engine's windowed path (ONNX Runtime: graph split at import, windows over
# the workers) on the CUDA provider when onnxruntime-gpu is installed, else noted and skipped.
onnx_out="bench/results/onnx-windowed-gpu-$(date +%Y%m%d-%H%M%S).md"
if "$PY" -c 'import onnxruntime, sys; sys.exit("CUDAExecutionProvider" not in onnxruntime.get_available_providers())'; then
  timeout 300 "$PY" bench/bench_onnx_windowed.py --device cuda --rounds 5 | tee "$onnx_out"
  echo "written: $onnx_out" >&2
else
  echo "onnxruntime has no CUDA provider (pip install onnxruntime-gpu): windowed ONNX on GPU skipped" >&2
fi

# The adaptive stream path (#28): the paced windows equal the whole decode at every switch of
# window size, then what a stream costs beside the whole file (the platform's Piper engine
# takes the CUDA provider when onnxruntime-gpu is installed, else this measures the CPU).
"$PY" -m pytest -q -p no:cacheprovider tests/inference/test_piper_onnx_windowed.py -k adaptive
cost_out="bench/results/stream-cost-gpu-$(date +%Y%m%d-%H%M%S).md"
timeout 600 "$PY" bench/bench_stream_cost.py --rounds 2 | tee "$cost_out"
echo "written: $cost_out" >&2
