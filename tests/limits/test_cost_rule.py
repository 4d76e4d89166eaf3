"""The cost rule (#24 item 4), property-tested: whatever a request's fields hold, what reaches the engine
is bounded by a constant times its billed characters plus a constant (docs/limits.md, "The cost rule").

Hostile requests are built from SSML (say-as, phoneme blocks, breaks, rate), dictionary rules, context,
speed and seed; the real planning runs (dictionaries applied, text prepared and segmented, context
trimmed, each sentence phonemized with joe) and the real synthesis loop calls an engine that only counts
the ids it is given (no model runs per example) and checks them at the real door.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tts.catalogue.engines import get_registry, spec_for
from tts.errors import SynthesisError
from tts.inference.engine import EngineOutput, SynthesisParams, check_phoneme_ids
from tts.models import Voice
from tts.pronunciation.apply import spoken_limit
from tts.synthesis.alignment.timestamps import SegmentContext, SegmentTiming, iter_segment_timed
from tts.synthesis.stages.parse import segments_for
from tts.synthesis.stages.stitching import _head, _tail
from tts.text.lexicon import Rule
from tts.text.lexicon_match import CompiledRules, ExpansionLimitExceeded, apply_compiled

pytestmark = pytest.mark.django_db

#: Phoneme ids per character reaching the engine (Piper: one id and one pad per phoneme, and a
#: phoneme per character or so; spelled-out numbers and say-as readings are inside the factor).
IDS_PER_CHAR = 3


class CountingEngine:
    """joe's front end, and an engine that counts what it is asked to synthesize instead of running."""

    windowed = False

    def __init__(self, real: object) -> None:
        self.real = real
        self.sample_rate = int(real.sample_rate)  # type: ignore[attr-defined]
        self.calls: list[int] = []

    def phonemize(self, text: str) -> list[list[str]]:
        return self.real.phonemize(text)  # type: ignore[attr-defined,no-any-return]

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        return self.real.phonemes_to_ids(phonemes)  # type: ignore[attr-defined,no-any-return]

    def synthesize_ids(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        check_phoneme_ids(phoneme_ids)
        self.calls.append(len(phoneme_ids))
        n = len(phoneme_ids)
        return EngineOutput(np.zeros(n, dtype=np.float32), self.sample_rate, np.ones(n, dtype=np.int64))


words = st.sampled_from(["W", "one", "1000000", "Dr.", "x" * 60, "-".join(["w"] * 40), "日本", "$3.50", "&amp;"])
plain = st.lists(words, min_size=1, max_size=12).map(" ".join)
say_as = st.builds(
    lambda kind, body: f'<say-as interpret-as="{kind}">{body}</say-as>',
    st.sampled_from(["characters", "digits", "cardinal", "date", "telephone"]),
    st.sampled_from(["W" * 64, "W" * 65, "9" * 64, "1/2/2024", "W" * 300]),
)
phoneme = st.builds(
    lambda ph: f'<phoneme alphabet="ipa" ph="{ph}">x</phoneme>', st.sampled_from(["h\u0259\u02c8lo\u028a", "ʃ" * 500])
)
breaks = st.sampled_from(['<break time="10s"/>', '<break strength="x-strong"/>'])
prosody = st.builds(lambda r, t: f'<prosody rate="{r}">{t}</prosody>', st.sampled_from(["x-slow", "20%"]), plain)
pieces = st.lists(st.one_of(plain, say_as, phoneme, breaks, prosody), min_size=1, max_size=6)
ssml = pieces.map(lambda p: "<speak>" + " ".join(p) + "</speak>")
texts = st.one_of(plain, ssml, st.builds(lambda t: f"Read [[{'a' * 900}]] {t}", plain))
rules = st.lists(
    st.builds(
        lambda target, alias: Rule("alias", target, alias=alias, case_sensitive=False, word_boundaries=False),
        st.sampled_from(["W", "w", "1", "x", "o"]),
        st.sampled_from(["double you " * 45, "W W", "1 1 1"]),
    ),
    max_size=3,
)
context = st.one_of(st.none(), st.sampled_from(["-".join(["word"] * 200), "a " * 499, "Fine. And then"]))


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, rules=rules, before=context, after=context, speed=st.sampled_from([0.25, 1.0, 4.0]))
def _check(engine: CountingEngine, plan: object, text: str, rules: list[Rule], before, after, speed) -> None:  # type: ignore[no-untyped-def]
    billed = len(text)
    try:
        spoken = apply_compiled(text, [CompiledRules(rules)], max_chars=spoken_limit(billed, plan)).text  # type: ignore[arg-type]
        segments = segments_for(spoken, language="en", normalization="auto")
    except (ExpansionLimitExceeded, SynthesisError):
        return  # refused before any engine work
    ctx = SegmentContext(before=_tail(before) if before else None, after=_head(after) if after else None)
    context_chars = len(ctx.before or "") + len(ctx.after or "")
    assert context_chars <= 2 * settings.TTS_CONTEXT_SYNTH_MAX_CHARS
    engine.calls.clear()
    params = SynthesisParams(length_scale=1 / speed, seed=7)
    for n, segment in enumerate(segments):
        seg_ctx = SegmentContext(
            before=ctx.before if n == 0 else None, after=ctx.after if n == len(segments) - 1 else None
        )
        for _ in iter_segment_timed(
            engine,  # type: ignore[arg-type]
            segment,
            params,
            silence_ms=0,
            timing=SegmentTiming(),
            in_windows=False,
            context=seg_ctx,
        ):
            pass
    # The rule: engine input <= a * billed + b (a: the dictionary expansion; b: one replacement and context).
    a = settings.TTS_DICTIONARY_MAX_EXPANSION
    b = spoken_limit(0, plan) + 2 * settings.TTS_CONTEXT_SYNTH_MAX_CHARS  # type: ignore[arg-type]
    assert sum(len(s.text) for s in segments) <= a * billed + b
    assert sum(engine.calls) <= IDS_PER_CHAR * (a * billed + b), (text[:200], engine.calls)


def test_no_request_reaches_the_engine_past_the_cost_rule(joe: Voice, tenant_a) -> None:  # type: ignore[no-untyped-def]
    from tts.models import ModelVersion

    version = ModelVersion.objects.get(model_id=joe.model_id, status=ModelVersion.Status.ACTIVE)
    engine = CountingEngine(get_registry().get(spec_for(version)))
    _check(engine, tenant_a.tenant.plan)


def test_a_long_say_as_is_read_as_plain_text() -> None:
    def spoken(n: int) -> str:
        text = f'<speak><say-as interpret-as="characters">{"W" * n}</say-as></speak>'
        return " ".join(s.text for s in segments_for(text, language="en", normalization="auto"))

    assert spoken(64).count("W ") == 63  # letter by letter
    assert " " not in spoken(65).strip()  # past SAY_AS_MAX_CHARS: as it is written
