"""The engine-time estimate bounds the real engine's work, for every engine and every language (#32 item 2).

Hypothesis builds hostile requests of each language (digits, fractions, currencies, phoneme blocks,
SSML rate, say-as, speed); the real front end prepares them (``segments_for``) and the real engine
speaks every segment. Two bounds, as the budget uses them (``tts/synthesis/engine_time/budget.py``):

* what a run is charged (its speech times the engine's factor) is within ``CHARGE_RATIO`` of the
  up-front low estimate, plus a sentence's worth: the estimate, refused past the budget, bounds the work;
* the CPU the engine really spent is within ``CPU_RATIO`` of what it is charged (the measured factor
  holds, with room for a shared machine), plus a constant for the call itself.

Few examples per engine and language: each runs the model (the suite's time is budgeted).
"""

from __future__ import annotations

import functools
import time

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tts.catalogue.engines import get_registry, spec_for
from tts.errors import SynthesisError
from tts.inference.engine import Engine
from tts.models import ModelVersion, Voice
from tts.synthesis.alignment.timestamps import synthesize_segment_timed
from tts.synthesis.engine_time.budget import low_speech_seconds
from tts.synthesis.engine_time.cost import engine_cost_factor, estimate_engine_seconds
from tts.synthesis.stages.engine import segment_params
from tts.synthesis.stages.estimate import effective_speed
from tts.synthesis.stages.parse import segments_for

pytestmark = pytest.mark.django_db

#: Charged engine time over the low estimate: real speech runs at up to about 2x the brisk pace the
#: estimate assumes (a Han character 0.2 s against its 0.09).
CHARGE_RATIO = 3.0
#: Real CPU over the charged engine time: the factor is a median; a shared 2-core machine varies.
CPU_RATIO = 3.0
#: One short call's fixed cost (seconds of audio a sentence may make beyond the estimate, and CPU).
SLACK_AUDIO_S = 1.5
SLACK_CPU_S = 0.5

WORDS = {
    "en": ["The harbour was quiet.", "Dr. Smith paid $3.50.", "1/7777777777777777", "WWWWWWWW", "Read [[ a a a ]]."],
    "zh": ["今天天气很好。", "比分是1/77777777。", "价格是€111.50。", "2026年12月2日。", "ABC的猫。"],
    "ja": ["今日は良い天気です。", "価格は€111.50です。", "1/77777777です。", "カタカナ。", "\uff21\uff22\uff23。"],
    "es": ["El puerto estaba tranquilo.", "Pagó 3,50 €.", "1/77777777", "Dr. García."],
    "fr": ["Le port était calme.", "Il a payé 3,50 €.", "1/77777777", "M. Dupont."],
    "hi": ["बंदरगाह शांत था।", "कीमत ₹111.50 है।", "1/77777777", "नमस्ते।"],
    "it": ["Il porto era tranquillo.", "Ha pagato 3,50 €.", "1/77777777", "Sig. Rossi."],
    "pt": ["O porto estava calmo.", "Pagou R$ 3,50.", "1/77777777", "Sr. Silva."],
}


def texts(language: str) -> st.SearchStrategy[str]:
    plain = st.lists(st.sampled_from(WORDS[language]), min_size=1, max_size=2).map(" ".join)
    rate = st.builds(
        lambda r, t: f'<speak><prosody rate="{r}">{t}</prosody></speak>', st.sampled_from(["25%", "x-slow"]), plain
    )
    say_as = st.builds(
        lambda t: f'<speak><say-as interpret-as="digits">{t}</say-as></speak>', st.sampled_from(["7777777", "1234"])
    )
    phoneme = st.just('<speak><phoneme alphabet="ipa" ph="h\u0259\u02c8lo\u028a w\u025dld">x</phoneme></speak>')
    return st.one_of(plain, rate, say_as, phoneme)


def _check(engine: Engine, engine_name: str, voice: Voice, language: str, text: str, speed: float) -> None:
    try:
        segments = segments_for(text, language=language, normalization="auto")
    except SynthesisError:
        return  # refused before any engine work
    speed_of = functools.partial(effective_speed, speed)
    # As admission estimates a request that could reach its budget: its phonemes counted too.
    audio = low_speech_seconds(segments, speed_of, language=language, phonemes_past=0.0)
    estimate = estimate_engine_seconds(engine_name, audio)
    speech = 0.0
    cpu = time.process_time()
    for segment in segments:
        params = segment_params(engine, segment, speaker_index=voice.speaker_index, speed=speed)
        pcm, _ = synthesize_segment_timed(engine, segment, params, silence_ms=0)
        speech += max(0.0, len(pcm) / engine.sample_rate - segment.pause_after_ms / 1000)
    cpu = time.process_time() - cpu
    factor = engine_cost_factor(engine_name)
    charged = speech * factor
    assert charged <= CHARGE_RATIO * estimate + SLACK_AUDIO_S * factor * len(segments), (text, speech, estimate)
    assert cpu <= CPU_RATIO * charged + SLACK_CPU_S * len(segments), (text, cpu, charged)


def _run(voice: Voice, language: str, examples: int) -> None:
    version = ModelVersion.objects.get(model_id=voice.model_id, status=ModelVersion.Status.ACTIVE)
    engine = get_registry().get(spec_for(version))

    @hsettings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(text=texts(language), speed=st.sampled_from([0.25, 1.0, 4.0]))
    def check(text: str, speed: float) -> None:
        _check(engine, version.engine, voice, language, text, speed)

    check()


@pytest.mark.parametrize("engine", ["piper-onnx", "vits-torch"])
def test_joe_on_each_engine_is_charged_within_the_estimate(engine: str) -> None:
    from tests.fixtures import make_joe

    _run(make_joe(engine)[1], "en", examples=4)


@pytest.mark.parametrize("language", sorted(WORDS))
def test_kokoro_in_each_language_is_charged_within_the_estimate(kokoro: Voice, language: str) -> None:
    _run(kokoro, language, examples=2)
