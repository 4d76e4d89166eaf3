"""A short sample of each voice for the dashboard's voice catalog.

The platform pays for previews, not the tenant: they are neither charged to
a quota nor written to history, and are cached (per model weights and
speaker) so each is synthesized once per cache lifetime. A miss goes through
the pipeline's stages that apply to it: the text is cut by the parse stage's
``segments_for`` and each segment is made by the engine stage's
``synthesize_segment`` on the fair scheduler, in the asking tenant's turn (a
tenant's blends each have a preview: asking for many waits behind the others).
"""

from __future__ import annotations

import hashlib

import numpy as np
from django.conf import settings
from django.core.cache import caches

from tts.audio.encode import encode_all
from tts.audio.formats import OutputFormat, parse_elevenlabs_format
from tts.catalogue import active_model_version, get_registry, spec_for
from tts.inference.engine import EngineError, SynthesisParams
from tts.models import Voice
from tts.synthesis.engine_time.fairness import segment_engine_seconds
from tts.synthesis.engine_time.scheduler import engine_scheduler
from tts.synthesis.stages.engine import synthesize_segment
from tts.synthesis.stages.parse import segments_for

PREVIEW_FORMAT = "mp3_22050_32"
_CACHE_SECONDS = 7 * 24 * 3600


class PreviewUnavailable(Exception):
    """The voice's model has no active version, or its engine could not run."""


_PREVIEW_TEXTS = {
    "en": "Hello, I am {name}. This is how I sound.",
    "ja": "こんにちは、{name}です。よろしくお願いします。",
    "zh": "你好\uff0c我是{name}。这是我的声音。",
    "es": "Hola, soy {name}. Así es como sueno.",
    "fr": "Bonjour, je suis {name}. Voici ma voix.",
    "hi": "नमस्ते, मैं {name} हूँ। मेरी आवाज़ ऐसी है।",
    "it": "Ciao, sono {name}. Questa è la mia voce.",
    "pt": "Olá, eu sou {name}. Esta é a minha voz.",
}


def preview_language(voice: Voice) -> str:
    """The voice's own language where a preview sentence is written for it, else English."""
    code = (voice.language or "en").lower().replace("_", "-").split("-")[0]
    return code if code in _PREVIEW_TEXTS else "en"


def preview_text(voice: Voice) -> str:
    """A short sentence in the voice's own language (English where none is written here)."""
    return _PREVIEW_TEXTS[preview_language(voice)].format(name=voice.name)


def voice_preview(voice: Voice, *, tenant_id: int) -> tuple[bytes, OutputFormat]:
    """MP3 bytes of a short sentence in ``voice``, from the cache when possible; a miss is made in
    ``tenant_id``'s turn on the fair scheduler."""
    version = active_model_version(voice.model_id)
    if version is None:
        raise PreviewUnavailable(f"The model behind voice '{voice.voice_id}' has no active version.")
    fmt = parse_elevenlabs_format(PREVIEW_FORMAT)
    text = preview_text(voice)
    digest = hashlib.sha256(f"{version.sha256}|{voice.speaker_index}|{voice.blend}|{text}".encode()).hexdigest()[:32]
    key = f"tts:voice-preview:{digest}"
    try:
        data = caches[settings.TTS_AUDIO_CACHE_ALIAS].get(key)  # audio: the bounded cache's
    except Exception:  # a cache outage only costs a re-synthesis
        data = None
    if isinstance(data, bytes):
        return data, fmt
    try:
        engine = get_registry().get(spec_for(version))
        params = SynthesisParams(speaker_id=voice.speaker_index, style_blend=voice.style_blend)
        language = preview_language(voice)
        # Each segment carries the language: a multilingual engine reads it in that one.
        segments = segments_for(text, language=language, normalization="auto", drop_blank=True)
        pieces = [
            engine_scheduler.run(
                tenant_id,
                synthesize_segment,
                engine,
                segment,
                params,
                engine_seconds=segment_engine_seconds(engine, segment, 1.0),
            )
            for segment in segments
        ]
    except EngineError as exc:
        raise PreviewUnavailable(str(exc)) from exc
    samples = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    data = encode_all(samples, engine.sample_rate, fmt)
    try:
        caches[settings.TTS_AUDIO_CACHE_ALIAS].set(key, data, _CACHE_SECONDS)
    except Exception:  # a cache outage only costs a re-synthesis
        pass
    return data, fmt
