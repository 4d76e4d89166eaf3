"""The search: which point of Kokoro's voice space sounds nearest to a recording.

Kokoro's voices are style vectors, and a weighted mix of them is a voice too (the blends of
``tts.catalogue.blends``). The search speaks one short sentence in the recording's language with
each candidate, embeds that speech with the same speaker encoder as the recording, and keeps the
candidate whose embedding is nearest (cosine similarity). It is bounded in two steps:

1. single stock voices, at most ``TTS_MATCH_MAX_CANDIDATES`` (the recording's language first);
2. blends of the best ``TTS_MATCH_BLEND_TOP_K`` of them: every pair at 50/50, 70/30 and 30/70,
   and the best three in equal parts (at most 3 voices, as the brief of #43 says).

Every sentence is made on the fair engine scheduler in the tenant's turn, so the engine time is
the tenant's, and the search stops early when the plan's per-job engine-seconds budget is spent.
This is matching, not cloning: the result is a stock voice or a blend the engine already speaks.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db.models import Exists, OuterRef

from tts.catalogue import active_model_version, get_registry, spec_for
from tts.inference.engine import SynthesisParams
from tts.matching.encoders import SpeakerEncoder, similarity
from tts.models import ModelVersion, Voice
from tts.synthesis import engine_scheduler, segment_engine_seconds, segments_for, synthesize_segment

#: A sentence per language, about three seconds of speech: enough for both encoders.
MATCH_TEXTS = {
    "en": "The quick brown fox jumps over the lazy dog.",
    "ja": "今日はとても良い天気ですね。散歩に行きましょう。",
    "zh": "今天天气很好\uff0c我们一起去公园散步吧。",
    "es": "Hoy hace muy buen tiempo, así que vamos a dar un paseo por el parque.",
    "fr": "Il fait très beau aujourd'hui, alors allons nous promener dans le parc.",
    "hi": "आज मौसम बहुत अच्छा है, चलो पार्क में टहलने चलते हैं।",
    "it": "Oggi il tempo è molto bello, quindi andiamo a fare una passeggiata nel parco.",
    "pt": "Hoje o tempo está muito bom, então vamos dar um passeio no parque.",
}
PAIR_WEIGHTS = ((0.5, 0.5), (0.7, 0.3), (0.3, 0.7))


class SearchUnavailable(Exception):
    """No style-vector model serves voices here (Kokoro is not imported or not active)."""


@dataclass
class Candidate:
    """A point of the voice space: one stock voice, or a blend of up to three."""

    parts: tuple[tuple[Voice, float], ...]
    score: float | None = None

    @property
    def main(self) -> Voice:
        return max(self.parts, key=lambda p: p[1])[0]

    @property
    def params(self) -> SynthesisParams:
        if len(self.parts) == 1:
            return SynthesisParams(speaker_id=self.parts[0][0].speaker_index)
        blend = tuple((v.speaker_index, w) for v, w in self.parts)
        return SynthesisParams(speaker_id=self.main.speaker_index, style_blend=blend)

    def blend_json(self) -> list[dict[str, object]]:
        if len(self.parts) == 1:
            return []
        return [
            {"voice_id": v.voice_id, "speaker_index": v.speaker_index, "weight": round(w, 6)} for v, w in self.parts
        ]

    def spelled(self) -> str:
        return "+".join(f"{v.voice_id}({w:g})" for v, w in self.parts)


@dataclass
class SearchResult:
    best: Candidate
    nearest: Candidate  # the best single stock voice
    evaluated: list[Candidate] = field(default_factory=list)
    engine_seconds: float = 0.0
    stopped_by_budget: bool = False


def match_language(language: str) -> str:
    code = (language or "en").lower().replace("_", "-").split("-")[0]
    return code if code in MATCH_TEXTS else "en"


def stock_candidates(language: str, limit: int) -> list[Voice]:
    """Shared, unblended voices of active Kokoro versions, the recording's language first."""
    active = ModelVersion.objects.filter(
        model_id=OuterRef("model_id"), status=ModelVersion.Status.ACTIVE, engine=ModelVersion.Engine.KOKORO_ONNX
    )
    voices = list(Voice.objects.filter(tenant__isnull=True, is_active=True, blend=[]).filter(Exists(active)))
    code = match_language(language)
    voices.sort(key=lambda v: (not v.language.lower().startswith(code), v.voice_id))
    return voices[:limit]


def blend_candidates(ranked: list[Candidate], top_k: int) -> list[Candidate]:
    """Blends of the best ``top_k`` single voices: pairs at three weights, the best three equally."""
    top = [c.parts[0][0] for c in ranked[:top_k]]
    found = [Candidate(((a, wa), (b, wb))) for a, b in itertools.combinations(top, 2) for wa, wb in PAIR_WEIGHTS]
    if len(top) >= 3:
        found.append(Candidate(tuple((v, 1 / 3) for v in top[:3])))
    return found


class Searcher:
    """One search, for one tenant and one target embedding; ``progress(done, total)`` after each candidate."""

    def __init__(
        self,
        *,
        tenant_id: int,
        encoder: SpeakerEncoder,
        target: np.ndarray,
        language: str,
        budget_s: float,
        progress: Callable[[int, int], None] = lambda done, total: None,
    ) -> None:
        self.tenant_id = tenant_id
        self.encoder = encoder
        self.target = target
        self.language = match_language(language)
        self.budget_s = budget_s
        self.progress = progress
        self.engine_seconds = 0.0
        self.done = 0
        self.total = 0

    def speak(self, candidate: Candidate) -> tuple[np.ndarray, int]:
        """The candidate's sentence: float PCM and its rate, made in the tenant's turn."""
        voice = candidate.main
        version = active_model_version(voice.model_id)
        if version is None:
            raise SearchUnavailable(f"the model of '{voice.voice_id}' has no active version any more.")
        engine = get_registry().get(spec_for(version))
        text = MATCH_TEXTS[self.language]
        pieces = []
        for segment in segments_for(text, language=self.language, normalization="auto", drop_blank=True):
            started = time.perf_counter()
            pieces.append(
                engine_scheduler.run(
                    self.tenant_id,
                    synthesize_segment,
                    engine,
                    segment,
                    candidate.params,
                    engine_seconds=segment_engine_seconds(engine, segment, 1.0),
                )
            )
            self.engine_seconds += time.perf_counter() - started
        return np.concatenate(pieces), int(engine.sample_rate)

    def score(self, candidate: Candidate) -> float:
        samples, rate = self.speak(candidate)
        candidate.score = similarity(self.encoder.embed(samples, rate), self.target)
        self.done += 1
        self.progress(self.done, self.total)
        return candidate.score

    def run(self, voices: list[Voice], top_k: int) -> SearchResult:
        if not voices:
            raise SearchUnavailable("no Kokoro voice is served here: import Kokoro first (docs/kokoro.md).")
        singles = [Candidate(((v, 1.0),)) for v in voices]
        blends_max = len(list(itertools.combinations(range(min(top_k, len(voices))), 2))) * len(PAIR_WEIGHTS)
        self.total = len(singles) + blends_max + (1 if min(top_k, len(voices)) >= 3 else 0)
        evaluated: list[Candidate] = []
        stopped = False
        for candidate in singles:
            if evaluated and self.engine_seconds >= self.budget_s:
                stopped = True
                break
            self.score(candidate)
            evaluated.append(candidate)
        ranked = sorted(evaluated, key=lambda c: -(c.score or 0.0))
        nearest = ranked[0]
        if not stopped and top_k >= 2:
            for candidate in blend_candidates(ranked, top_k):
                if self.engine_seconds >= self.budget_s:
                    stopped = True
                    break
                self.score(candidate)
                evaluated.append(candidate)
        best = max(evaluated, key=lambda c: c.score or 0.0)
        return SearchResult(best, nearest, evaluated, self.engine_seconds, stopped)


def search_settings() -> tuple[int, int]:
    return int(settings.TTS_MATCH_MAX_CANDIDATES), int(settings.TTS_MATCH_BLEND_TOP_K)
