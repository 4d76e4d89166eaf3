"""The audio cache: finished, sealed audio by everything that determines its bytes.

Two levels: L1 is an LRU in this process bounded by bytes
(``TTS_AUDIO_CACHE_L1_BYTES``); L2 is the django-redis cache with a TTL
(``TTS_AUDIO_CACHE_TTL_S``), shared by every process, used when ``REDIS_URL``
is set. A hit found in L2 is copied into L1.

The key (see ``audio_cache_key``) covers the model version (id, artifact
sha256, engine and options), voice and speaker, voice settings and speed,
the normalized segments, output format and resolved sample rate, and the
tenant. Tenants never share entries by default: a shared entry would tell one
tenant, through response time, what another synthesized. With
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
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import caches

from accounts.ratelimit import RedisCircuit
from tts.audio.encode import StreamEncoder
from tts.audio.formats import OutputFormat, with_native_rate
from tts.models import ModelVersion, Voice
from tts.text.segment import Segment

if TYPE_CHECKING:
    from .synthesis import SynthesisRequest

logger = logging.getLogger(__name__)

#: Bump when the key's recipe or the stored layout changes.
KEY_VERSION = 1
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


def audio_cache_key(
    req: SynthesisRequest, *, voice: Voice, model_version: ModelVersion, segments: list[Segment]
) -> str | None:
    """The cache key of a request, or None when caching is off."""
    if not settings.TTS_AUDIO_CACHE_ENABLED:
        return None
    shared = voice.tenant_id is None and settings.TTS_AUDIO_CACHE_SHARE_SHARED_VOICES
    fmt = with_native_rate(req.output_format, model_version.sample_rate)
    recipe = {
        "model": [model_version.pk, _stamp(model_version), model_version.sha256, model_version.engine],
        "options": model_version.options or {},
        "voice": [voice.voice_id, voice.speaker_index, _stamp(voice)],
        "settings": req.settings,
        "speed": req.speed,
        "language": req.language or voice.language,
        "segments": [[s.text, s.rate, s.pause_after_ms] for s in segments],
        "silence_ms": settings.TTS_SENTENCE_SILENCE_MS,
        "format": [fmt.name, fmt.codec, fmt.sample_rate, fmt.bitrate_kbps],
        "scope": "shared" if shared else [req.tenant.pk, _stamp(req.tenant)],
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True, default=str).encode()).hexdigest()
    return f"{settings.TTS_REDIS_KEY_PREFIX}:audio:v{KEY_VERSION}:{digest}"


class AudioCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._l1: OrderedDict[str, CachedAudio] = OrderedDict()
        self._l1_bytes = 0
        self._circuit = RedisCircuit("the audio cache", "serving from this process's memory only")

    # --- L1 ---------------------------------------------------------------

    def _l1_get(self, key: str) -> CachedAudio | None:
        with self._lock:
            entry = self._l1.get(key)
            if entry is not None:
                self._l1.move_to_end(key)
            return entry

    def _l1_put(self, key: str, entry: CachedAudio) -> None:
        capacity = settings.TTS_AUDIO_CACHE_L1_BYTES
        size = len(entry.audio)
        # One entry may not push out a large part of the cache.
        if size > capacity // 4:
            return
        with self._lock:
            old = self._l1.pop(key, None)
            if old is not None:
                self._l1_bytes -= len(old.audio)
            self._l1[key] = entry
            self._l1_bytes += size
            while self._l1_bytes > capacity and self._l1:
                _, evicted = self._l1.popitem(last=False)
                self._l1_bytes -= len(evicted.audio)

    def clear_local(self) -> None:
        with self._lock:
            self._l1.clear()
            self._l1_bytes = 0

    # --- L2 ---------------------------------------------------------------

    def _l2_enabled(self) -> bool:
        return bool(settings.REDIS_URL) and self._circuit.available()

    def _l2_get(self, key: str) -> CachedAudio | None:
        if not self._l2_enabled():
            return None
        try:
            data = caches[settings.TTS_AUDIO_CACHE_ALIAS].get(key)
            self._circuit.succeeded()
        except Exception as exc:
            self._circuit.failed(exc)
            return None
        if not isinstance(data, dict):
            return None
        try:
            return CachedAudio.from_wire(data)
        except (KeyError, TypeError):
            return None  # an entry of an older layout: a miss

    def _l2_put(self, key: str, entry: CachedAudio) -> None:
        if not self._l2_enabled():
            return
        try:
            caches[settings.TTS_AUDIO_CACHE_ALIAS].set(key, entry.to_wire(), timeout=settings.TTS_AUDIO_CACHE_TTL_S)
            self._circuit.succeeded()
        except Exception as exc:
            self._circuit.failed(exc)

    # --- both -------------------------------------------------------------

    def get(self, key: str | None) -> CachedAudio | None:
        """The entry for ``key`` from L1, else L2 (copied into L1); None on a miss. Never raises."""
        if key is None:
            return None
        entry = self._l1_get(key)
        if entry is None:
            entry = self._l2_get(key)
            if entry is not None:
                self._l1_put(key, entry)
        return entry

    def put(self, key: str | None, entry: CachedAudio) -> None:
        """Store in both levels; entries over ``TTS_AUDIO_CACHE_MAX_ENTRY_BYTES`` are skipped. Never raises."""
        if key is None or not entry.audio or len(entry.audio) > settings.TTS_AUDIO_CACHE_MAX_ENTRY_BYTES:
            return
        try:
            self._l1_put(key, entry)
        except Exception:
            logger.exception("could not store in the in-process audio cache")
        self._l2_put(key, entry)


audio_cache = AudioCache()
