"""The audio cache: finished, sealed audio by everything that determines its bytes.

Two levels (``infra/two_level_cache.py``, shared with the alignment cache):
L1 is an LRU in this process bounded by bytes (``TTS_AUDIO_CACHE_L1_BYTES``);
L2 is the django-redis cache with a TTL (``TTS_AUDIO_CACHE_TTL_S``), shared by
every process, used when ``REDIS_URL`` is set. A hit found in L2 is copied into L1.

The key (see ``audio_cache_key``) covers the model version (id, artifact
sha256, engine and options), voice and speaker, the knobs that reach the
engine (speed; the seed and the noise variation only for an engine that
draws noise), the normalized segments, output format and resolved sample
rate, and the tenant. A voice setting the engine ignores (``similarity_boost``,
``style``, ``use_speaker_boost``; ``stability`` and ``seed`` on Kokoro) is not
in it, so requests that make the same audio share an entry. Tenants never
share entries by default: a shared entry would tell one tenant, through
response time, what another synthesized. With
``TTS_AUDIO_CACHE_SHARE_SHARED_VOICES`` entries of shared voices are shared.
Activating another model version changes the key, so old entries are never
reached again and expire with their TTL.

When Redis is unreachable L2 is skipped (one log line per outage) and tried
again after ``TTS_REDIS_RETRY_S``; the cache never fails a request.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from infra.two_level_cache import TwoLevelCache
from tts.audio.encode import StreamEncoder
from tts.audio.formats import OutputFormat, with_native_rate
from tts.catalogue import get_registry
from tts.models import ModelVersion, Voice
from tts.synthesis.request import SynthesisRequest
from tts.text.segment import Segment

#: Bump when the key's recipe or the stored layout changes.
KEY_VERSION = 2
#: A hit is sent in pieces of this size, like a stream of synthesized segments.
PIECE_BYTES = 32 * 1024


@dataclass(frozen=True)
class CachedAudio:
    audio: bytes
    output_format: OutputFormat
    duration_s: float
    #: Storage name of a history file holding these bytes ("" if none): a hit's
    #: history item links to it instead of writing another copy (history.store_record_audio).
    stored_name: str = ""

    def pieces(self) -> Iterator[bytes]:
        for start in range(0, len(self.audio), PIECE_BYTES):
            yield self.audio[start : start + PIECE_BYTES]

    def to_wire(self) -> dict[str, Any]:
        # Plain types only: an entry must survive this class being renamed.
        return {
            "audio": self.audio,
            "format": dataclasses.asdict(self.output_format),
            "duration_s": self.duration_s,
            "stored_name": self.stored_name,
        }

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> CachedAudio:
        return cls(
            audio=data["audio"],
            output_format=OutputFormat(**data["format"]),
            duration_s=data["duration_s"],
            stored_name=str(data.get("stored_name") or ""),
        )


class CachedAudioEncoder(StreamEncoder):
    """Stands in for the encoder on a cache hit: the bytes are already encoded and sealed."""

    def __init__(self, fmt: OutputFormat, duration_s: float) -> None:  # no super(): nothing to encode
        self.format = fmt
        self.input_rate = fmt.sample_rate
        self.samples_out = round(duration_s * fmt.sample_rate)
        self._state = "finished"
        self._released = True

    def seal(self, data: bytes) -> bytes:
        return data


def _stamp(obj: Any) -> int:
    # A recreated database reuses pks while Redis keeps old entries; the
    # creation time tells a new row from an old one with the same pk.
    created = getattr(obj, "created_at", None)
    return int(created.timestamp() * 1_000_000) if created else 0


def engine_noise(req: SynthesisRequest, model_version: ModelVersion) -> tuple[int | None, float] | None:
    """What of the request's noise knobs reaches the engine (``params_for``: the seed and the
    variation ``stability`` asks for); None for an engine that draws no noise (Kokoro), which
    ignores both. At ``stability`` 1.0 no noise is left, so the seed changes nothing either."""
    if get_registry().engine_trait(model_version.engine, "noiseless"):
        return None
    variation = req.noise_variation
    return (req.seed if variation else None), variation


def audio_cache_key(
    req: SynthesisRequest,
    *,
    voice: Voice,
    model_version: ModelVersion,
    segments: list[Segment],
    context: tuple[str | None, str | None] | None = None,
    dictionaries: list[tuple[str, str]] | None = None,
) -> str | None:
    """The cache key of a request, or None when caching is off: what reaches the engine, never
    the request's fields as sent (an ignored voice setting would split entries of the same audio)."""
    if not settings.TTS_AUDIO_CACHE_ENABLED:
        return None
    shared = voice.tenant_id is None and settings.TTS_AUDIO_CACHE_SHARE_SHARED_VOICES
    fmt = with_native_rate(req.output_format, model_version.sample_rate)
    recipe = {
        "model": [model_version.pk, _stamp(model_version), model_version.sha256, model_version.engine],
        "options": model_version.options or {},
        "voice": [voice.voice_id, voice.speaker_index, _stamp(voice)],
        "noise": engine_noise(req, model_version),
        "context": list(context) if context else None,
        "dictionaries": dictionaries or None,
        "speed": req.speed,
        "language": req.language or voice.language,
        "segments": [[s.text, s.rate, s.pause_after_ms, s.language] for s in segments],
        "silence_ms": req.silence_ms,
        "format": [fmt.name, fmt.codec, fmt.sample_rate, fmt.bitrate_kbps],
        "scope": "shared" if shared else [req.tenant.pk, _stamp(req.tenant)],
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True, default=str).encode()).hexdigest()
    return f"{settings.TTS_REDIS_KEY_PREFIX}:audio:v{KEY_VERSION}:{digest}"


class AudioCache(TwoLevelCache[CachedAudio]):
    """Entries bounded by bytes in L1 and by ``TTS_AUDIO_CACHE_MAX_ENTRY_BYTES`` in both levels."""

    def __init__(self) -> None:
        super().__init__(
            "the audio cache",
            size=lambda entry: len(entry.audio),
            l1_capacity=lambda: int(settings.TTS_AUDIO_CACHE_L1_BYTES),
            max_entry=lambda: int(settings.TTS_AUDIO_CACHE_MAX_ENTRY_BYTES),
            to_wire=CachedAudio.to_wire,
            from_wire=CachedAudio.from_wire,
        )


audio_cache = AudioCache()
