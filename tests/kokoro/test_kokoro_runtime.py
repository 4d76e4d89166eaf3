"""Kokoro's runtime (#42): the setting picks it, ONNX Runtime stays where OpenVINO cannot run or does
not pay, and OpenVINO's speech (when the extra is installed) is ONNX Runtime's in length and loudness."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from tests.audio_checks import assert_speech
from tts.inference import kokoro_onnx
from tts.inference.engine import EngineError, ModelSpec, SynthesisParams
from tts.inference.kokoro_model import package_sha256
from tts.inference.kokoro_onnx import KokoroAutoEngine, KokoroOnnxEngine, KokoroOpenVinoEngine
from tts.inference.kokoro_openvino import openvino_installed
from tts.inference.kokoro_runtime import cpu_flags, openvino_precision, rms_db, speech_difference

needs_openvino = pytest.mark.skipif(not openvino_installed(), reason="the [openvino] extra is not installed")
SENTENCE = "今日は晴れです。"


def spec_for(directory: str) -> ModelSpec:
    sha = package_sha256()
    return ModelSpec(
        id=1,
        engine="kokoro-onnx",
        model_path=str(Path(directory) / f"kokoro-{sha}.onnx"),
        config_path=str(Path(directory) / f"kokoro-{sha}.json"),
        sha256=sha,
    )


@pytest.fixture
def engines_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], ModuleType]]:
    """``ttsplatform.settings.engines`` read again under the environment a test sets; restored after."""
    import ttsplatform.settings.engines as module

    yield lambda: importlib.reload(module)
    monkeypatch.delenv("TTS_KOKORO_RUNTIME", raising=False)
    importlib.reload(module)


@pytest.mark.parametrize(
    ("value", "engine"),
    [("onnxruntime", KokoroOnnxEngine), ("openvino", KokoroOpenVinoEngine), ("auto", KokoroAutoEngine)],
)
def test_it_picks_the_engine_class_by_the_setting(
    engines_settings: Callable[[], ModuleType], monkeypatch: pytest.MonkeyPatch, value: str, engine: type
) -> None:
    monkeypatch.setenv("TTS_KOKORO_RUNTIME", value)
    module = engines_settings()
    assert value == module.TTS_KOKORO_RUNTIME
    chosen = import_string(module.TTS_ENGINES["kokoro-onnx"])
    assert chosen is engine and chosen.runtime_setting == value


def test_it_defaults_to_onnxruntime_and_refuses_an_unknown_runtime(
    engines_settings: Callable[[], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TTS_KOKORO_RUNTIME", raising=False)
    assert engines_settings().TTS_KOKORO_RUNTIME == "onnxruntime"
    monkeypatch.setenv("TTS_KOKORO_RUNTIME", "tensorrt")
    with pytest.raises(ImproperlyConfigured, match="TTS_KOKORO_RUNTIME"):
        engines_settings()


def test_it_reads_the_cpus_bf16_flags(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 avx512_vnni\n\nflags\t: other\n")
    flags = cpu_flags(cpuinfo)
    assert "avx512_bf16" in flags and "other" not in flags
    assert openvino_precision(flags) == "bf16"
    assert openvino_precision(frozenset({"amx_bf16"})) == "bf16"
    assert openvino_precision(frozenset({"avx512f"})) == "f32"
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_the_speech_measures_see_loudness_and_length() -> None:
    tone = np.sin(np.linspace(0, 400 * np.pi, 24000)).astype(np.float32)
    same = speech_difference(tone, tone)
    assert same.spectrum_snr_db > 100 and same.loudness_db == 0 and same.duration_ratio == 1
    quieter = speech_difference(tone * 0.5, tone)
    assert quieter.loudness_db == pytest.approx(-6.02, abs=0.01)
    assert speech_difference(tone[:12000], tone).duration_ratio == 0.5
    assert rms_db(np.zeros(10, dtype=np.float32)) < -150


@pytest.mark.slow
@pytest.mark.parametrize("engine_class", [KokoroAutoEngine, KokoroOpenVinoEngine])
def test_it_stays_on_onnxruntime_without_openvino(
    kokoro_dir: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, engine_class: type
) -> None:
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino raises ImportError
    with caplog.at_level(logging.INFO, logger="tts.inference.kokoro_onnx"):
        engine = engine_class(spec_for(kokoro_dir), threads=1)
    assert engine.runtime == "onnxruntime" and engine.session is not None
    assert "not installed" in engine.runtime_reason and "not installed" in caplog.text
    ids = engine.phonemes_to_ids(engine.phonemize(SENTENCE, "ja")[0])
    assert_speech(engine.synthesize_ids(ids, SynthesisParams(speaker_id=0)).audio, 24000)
    engine.close()


@pytest.mark.slow
def test_auto_stays_on_onnxruntime_where_the_cpu_has_no_bf16(kokoro_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kokoro_onnx, "cpu_flags", lambda: frozenset({"avx512f", "avx512_vnni"}))
    monkeypatch.setattr(kokoro_onnx, "openvino_installed", lambda: True)
    engine = KokoroAutoEngine(spec_for(kokoro_dir), threads=1)
    assert engine.runtime == "onnxruntime" and "no BF16" in engine.runtime_reason
    engine.close()


@pytest.fixture(scope="module")
def pair(kokoro_dir: str) -> Iterator[tuple[KokoroOnnxEngine, KokoroOnnxEngine]]:
    if not openvino_installed():
        pytest.skip("the [openvino] extra is not installed")
    onnx = KokoroOnnxEngine(spec_for(kokoro_dir), threads=1)
    openvino = KokoroOpenVinoEngine(spec_for(kokoro_dir), threads=1)
    yield onnx, openvino
    onnx.close()
    openvino.close()


@pytest.mark.slow
@needs_openvino
def test_openvino_speaks_as_onnxruntime_does(pair: tuple[KokoroOnnxEngine, KokoroOnnxEngine]) -> None:
    onnx, openvino = pair
    assert openvino.runtime.startswith("openvino-") and openvino.session is None, openvino.runtime_reason
    assert "probe" in openvino.runtime_reason
    ids = onnx.phonemes_to_ids(onnx.phonemize(SENTENCE, "ja")[0])
    params = SynthesisParams(speaker_id=0)
    ours, theirs = openvino.synthesize_ids(ids, params), onnx.synthesize_ids(ids, params)
    assert_speech(ours.audio, ours.sample_rate, text=SENTENCE, ms_per_char=150)
    # Durations (the timestamps) come with it and account for every sample.
    assert ours.phoneme_samples is not None and int(ours.phoneme_samples.sum()) == len(ours.audio)
    assert abs(len(ours.audio) / len(theirs.audio) - 1) <= 0.02
    assert abs(rms_db(ours.audio) - rms_db(theirs.audio)) <= 1.0


@pytest.mark.slow
@needs_openvino
def test_a_cancelled_run_ends_on_openvino_too(pair: tuple[KokoroOnnxEngine, KokoroOnnxEngine]) -> None:
    from tts.inference.work_pool import CancelSignal, work_key

    _, openvino = pair
    ids = [0, *([openvino.vocab["a"], openvino.vocab["k"]] * 10), 0]
    params = SynthesisParams(speaker_id=0)
    signal = CancelSignal()
    with work_key("A", cancel=signal):
        signal.set()
        with pytest.raises(EngineError, match="cancelled"):
            openvino.synthesize_ids(ids, params)  # a cancelled run never starts
    assert len(openvino.synthesize_ids(ids, params).audio) > 0  # the engine is fine afterwards
