"""What a synthesis is asked, what it answers, and how it refuses: the request,
result and error types every entry point and service shares.

A leaf of ``tts.services``: it imports no other service module, so anything
may import it without making a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accounts.models import ApiKey, Tenant
from accounts.quota import QuotaExceeded, seconds_until_next_period
from accounts.ratelimit import LimitExceeded
from tts.audio.formats import OutputFormat
from tts.models import SynthesisRecord


class SynthesisCancelled(BaseException):
    """Raised inside the pipeline's generator to stop a synthesis nobody waits for any more.

    A ``BaseException`` on purpose: the pipeline treats ``Exception`` as a
    failure, while this must leave the record *cancelled* (the status its
    ``finally`` starts from) with the unspent characters refunded. A live
    utterance raises it when cancelled; the pipeline raises it when engine work
    of a gone client was dropped.
    """


class SynthesisError(Exception):
    """A request the pipeline refuses or could not complete.

    Carries what both API dialects (and the WebSocket protocol) need: HTTP
    ``status``, a short ``code``, the request ``field`` at fault (if any) and
    ``retry_after`` seconds for 429/503.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int,
        field: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.field = field
        self.retry_after = retry_after

    @classmethod
    def from_quota(cls, exc: QuotaExceeded) -> SynthesisError:
        """The one translation of a quota refusal: 429, retry when the period resets."""
        return cls(str(exc), code="quota_exceeded", status=429, retry_after=seconds_until_next_period())

    @classmethod
    def from_limit(cls, exc: LimitExceeded) -> SynthesisError:
        """A rate limit, concurrency cap or busy engine, as it refused."""
        return cls(exc.message, code=exc.code, status=exc.status, retry_after=exc.retry_after)


@dataclass
class SynthesisRequest:
    tenant: Tenant
    voice_id: str
    text: str
    output_format: OutputFormat
    source: str
    api_key: ApiKey | None = None
    model_id: str | None = None
    speed: float = 1.0
    language: str | None = None
    enable_logging: bool = True
    normalization: str = "auto"
    request_id: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    text_field: str = "text"
    voice_field: str = "voice_id"
    model_field: str = "model_id"
    #: The caller asked for character timestamps: the history item keeps them (captions).
    timestamps: bool = False
    #: A cancelled run keeps what it delivered as the history item's audio (the playground's Stop:
    #: billed for what was spoken, and downloadable). API streams keep only a finished file.
    keep_cancelled_audio: bool = False
    #: Noise seed: the same seed, text, voice and settings give the same bytes (``None``: fresh noise).
    seed: int | None = None
    #: Request stitching (``tts.services.stitching``): the text around this one, or earlier/later requests' ids.
    previous_text: str | None = None
    next_text: str | None = None
    previous_request_ids: list[str] = field(default_factory=list)
    next_request_ids: list[str] = field(default_factory=list)
    #: ``[{"pronunciation_dictionary_id", "version_id"?}]``, at most 3; none: the tenant's default dictionaries.
    pronunciation_dictionary_locators: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SynthesisResult:
    audio: bytes
    record: SynthesisRecord
    output_format: OutputFormat
    #: ``{"alignment": ..., "normalized_alignment": ...}`` (``None`` on a cache hit whose timings were evicted).
    alignment: dict[str, Any] | None = None
