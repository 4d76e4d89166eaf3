"""The torch engine on random-weight voices exported like Piper's: loader naming, shapes, checkpoints, batching."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch")

from tests.inference.random_vits import RandomVoice, fold_dp_logs_into_exp  # noqa: E402
from tts.inference.engine import EngineError, ModelSpec, SynthesisParams  # noqa: E402
from tts.inference.piper_onnx import PiperOnnxEngine  # noqa: E402
from tts.inference.vits.weights import load_voice_weights  # noqa: E402
from tts.inference.vits_torch import VitsTorchEngine  # noqa: E402

QUIET = SynthesisParams(noise_scale=0.0, noise_w=0.0)
TEXTS = ["Hi.", "The harbour was quiet that morning, and gulls argued over scraps near the market."]


def spec(model: Path, config: Path, engine: str = "vits-torch", **options: object) -> ModelSpec:
    return ModelSpec(7, engine, str(model), str(config), device="cpu", options=dict(options))


def id_sequences(engine: VitsTorchEngine) -> list[list[int]]:
    return [engine.phonemes_to_ids(engine.phonemize(text)[0]) for text in TEXTS]


def assert_same_audio(actual: np.ndarray, expected: np.ndarray) -> None:
    assert len(actual) == len(expected)
    assert np.corrcoef(actual, expected)[0, 1] > 0.999
    assert np.abs(actual - expected).max() < 1e-3


@pytest.mark.parametrize("voice_fixture", ["random_voice_medium", "random_voice_x_low_multi", "random_voice_high"])
def test_it_matches_onnx_runtime_on_random_voices(request: pytest.FixtureRequest, voice_fixture: str) -> None:
    voice: RandomVoice = request.getfixturevalue(voice_fixture)
    torch_engine = VitsTorchEngine(spec(voice.onnx_path, voice.config_path))
    onnx_engine = PiperOnnxEngine(spec(voice.onnx_path, voice.config_path, "piper-onnx"))
    speakers = range(voice.hparams.n_speakers) if voice.hparams.n_speakers > 1 else [None]
    for speaker in speakers:
        params = SynthesisParams(speaker_id=speaker, noise_scale=0.0, noise_w=0.0, length_scale=1.1)
        for ids in id_sequences(torch_engine):
            expected = onnx_engine.synthesize_ids(ids, params).audio
            actual = torch_engine.synthesize_ids(ids, params)
            assert_same_audio(actual.audio, expected)
            assert actual.phoneme_samples is not None
            assert actual.phoneme_samples.sum() == len(expected)


def test_it_names_the_anonymous_and_misnamed_initializers(random_voice_medium: RandomVoice) -> None:
    voice = random_voice_medium
    graph = onnx.load(str(voice.onnx_path)).graph
    names = {t.name for t in graph.initializer}
    # The export really has the traps of Piper's: folded flow convolutions, "sid", folded logs.
    assert sum(name.startswith("onnx::Conv_") for name in names) == 32
    assert "sid" in names and "enc_p.emb.weight" not in names
    assert "dp.flows.0.logs" not in names and not any(name.startswith("dp.flows.1.") for name in names)
    exp = next(n for n in graph.node if n.name == "/dp/flows.0/Exp")
    assert exp.input[0] in names  # -logs, folded

    weights = load_voice_weights(voice.onnx_path)
    assert weights.hparams == voice.hparams
    for name, expected in voice.state_dict.items():
        torch.testing.assert_close(weights.state_dict[name], expected, atol=1e-6, rtol=1e-5, msg=name)


def test_it_reads_dp_logs_folded_into_exp(random_voice_medium: RandomVoice, tmp_path: Path) -> None:
    voice = random_voice_medium
    refolded = tmp_path / "voice.onnx"
    fold_dp_logs_into_exp(voice.onnx_path, refolded)
    assert not any(
        n.op_type == "Exp" and n.name.startswith("/dp/flows.0/") for n in onnx.load(str(refolded)).graph.node
    )
    weights = load_voice_weights(refolded)
    torch.testing.assert_close(weights.state_dict["dp.flows.0.logs"], voice.state_dict["dp.flows.0.logs"])

    torch_engine = VitsTorchEngine(spec(refolded, voice.config_path))
    onnx_engine = PiperOnnxEngine(spec(refolded, voice.config_path, "piper-onnx"))
    ids = id_sequences(torch_engine)[1]
    assert_same_audio(torch_engine.synthesize_ids(ids, QUIET).audio, onnx_engine.synthesize_ids(ids, QUIET).audio)


def test_it_loads_piper_checkpoints(random_voice_x_low_multi: RandomVoice) -> None:
    voice = random_voice_x_low_multi
    weights = load_voice_weights(voice.checkpoint_path)
    assert weights.hparams == voice.hparams  # dilations and strides come from hyper_parameters here
    from_checkpoint = VitsTorchEngine(spec(voice.checkpoint_path, voice.config_path))
    from_onnx = VitsTorchEngine(spec(voice.onnx_path, voice.config_path))
    params = SynthesisParams(speaker_id=2, noise_scale=0.0, noise_w=0.0)
    for ids in id_sequences(from_onnx):
        np.testing.assert_allclose(
            from_checkpoint.synthesize_ids(ids, params).audio, from_onnx.synthesize_ids(ids, params).audio, atol=1e-5
        )


def test_it_decodes_windows_equal_to_the_whole(random_voice_high: RandomVoice) -> None:
    voice = random_voice_high
    whole = VitsTorchEngine(spec(voice.onnx_path, voice.config_path, chunk_frames=1_000_000))
    windowed = VitsTorchEngine(spec(voice.onnx_path, voice.config_path, window_frames=5, chunk_frames=40))
    ids = id_sequences(whole)[1]
    reference = whole.synthesize_ids(ids, QUIET).audio
    pieces = [piece.audio for piece in windowed.iter_synthesize_ids(ids, QUIET)]
    assert len(pieces) >= 3
    np.testing.assert_allclose(np.concatenate(pieces), reference, atol=1e-5)


def test_it_batches_concurrent_requests_like_unbatched_ones(random_voice_x_low_multi: RandomVoice) -> None:
    voice = random_voice_x_low_multi
    batched = VitsTorchEngine(spec(voice.onnx_path, voice.config_path, batching=True, max_wait_ms=50, chunk_frames=48))
    plain = VitsTorchEngine(spec(voice.onnx_path, voice.config_path, batching=False, chunk_frames=48))
    sequences = id_sequences(plain)
    requests = [
        (sequences[i % 2], SynthesisParams(speaker_id=i % 3, noise_scale=0.0, noise_w=0.0, length_scale=0.8 + 0.1 * i))
        for i in range(4)
    ]
    results: dict[int, np.ndarray] = {}
    barrier = threading.Barrier(len(requests))

    def synthesize(index: int) -> None:
        ids, params = requests[index]
        barrier.wait()
        results[index] = batched.synthesize_ids(ids, params).audio

    threads = [threading.Thread(target=synthesize, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    stats = batched.batch_stats()
    assert stats["prior_items"] == len(requests) and stats["prior_batches"] < len(requests)
    assert stats["window_batches"] < stats["window_items"]
    # Padding to a bucket only changes what the decoder sees past a segment's
    # end, so samples closer to the end than its receptive field may differ.
    edge = (batched.decoder_overlap + 1) * batched.hop_length
    for index, (ids, params) in enumerate(requests):
        expected = plain.synthesize_ids(ids, params).audio
        assert len(results[index]) == len(expected)
        np.testing.assert_allclose(results[index][:-edge], expected[:-edge], atol=1e-4)
    batched.close()


def test_it_streams_the_first_window_ahead_of_the_rest_when_batching(random_voice_x_low_multi: RandomVoice) -> None:
    voice = random_voice_x_low_multi
    engine = VitsTorchEngine(spec(voice.onnx_path, voice.config_path, batching=True, chunk_frames=32))
    pieces = list(engine.iter_synthesize_ids(id_sequences(engine)[1], QUIET, window_frames=8))
    assert len(pieces) >= 3
    # Queued with its segment's other windows, the first would come no earlier than they do.
    assert engine.batch_stats()["window_batches"] == 2
    assert engine.batch_stats()["window_items"] == len(pieces)
    engine.close()


def test_it_rejects_speakers_out_of_range(random_voice_x_low_multi: RandomVoice) -> None:
    voice = random_voice_x_low_multi
    engine = VitsTorchEngine(spec(voice.onnx_path, voice.config_path))
    with pytest.raises(EngineError, match="speaker 3 out of range"):
        engine.synthesize_ids([1, 20, 2], SynthesisParams(speaker_id=3))


def test_it_folds_both_weight_norm_spellings() -> None:
    from torch.nn.utils import parametrizations, weight_norm

    from tts.inference.vits.weights import fold_weight_norm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the old spelling is deprecated, and still in checkpoints
        old_style = weight_norm(torch.nn.Conv1d(4, 6, 3))
    new_style = parametrizations.weight_norm(torch.nn.Conv1d(4, 6, 3))
    for conv in (old_style, new_style):
        folded = fold_weight_norm({f"flow.{k}": v for k, v in conv.state_dict().items()})
        assert set(folded) == {"flow.weight", "flow.bias"}
        torch.testing.assert_close(folded["flow.weight"], conv.weight.detach())


def test_it_plans_windows_that_tile_the_segment_with_enough_context() -> None:
    from tts.inference.vits.runner import plan_windows

    for frames in (1, 7, 40, 99, 100, 131, 1000):
        windows = plan_windows(frames, first=8, size=40, decoder_overlap=3, flow_overlap=5)
        assert windows[0].core == (0, min(frames, 8))
        assert [w.core[0] for w in windows[1:]] == [w.core[1] for w in windows[:-1]]
        assert windows[-1].core[1] == frames
        assert all(w.core[1] - w.core[0] < 60 for w in windows)  # a merged remainder stays under half a window
        for w in windows:
            assert w.decoder == (max(0, w.core[0] - 3), min(frames, w.core[1] + 3))
            assert w.flow == (max(0, w.decoder[0] - 5), min(frames, w.decoder[1] + 5))
