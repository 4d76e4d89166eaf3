"""The errors every layer raises and every front end turns into its answer:
``SynthesisError`` (a refusal or failure with its status, code and field; the
REST dialects, the WebSocket protocol, Wyoming and the dashboard all render
this one type) and ``SynthesisCancelled`` (the client went away). A leaf: it
imports no service."""

from __future__ import annotations

from accounts.quota import QuotaExceeded, seconds_until_next_period
from accounts.ratelimit import LimitExceeded
from tts.text.errors import TextError


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

    Carries what every front end needs: HTTP ``status``, a short ``code``, the
    request ``field`` at fault (if any) and ``retry_after`` seconds for 429/503.
    Views raise it too (404s, 409s...); ``tts.api.errors`` renders it in the
    caller's dialect.
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

    @classmethod
    def from_text(cls, exc: TextError) -> SynthesisError:
        """Text the front end cannot read (bad characters, SSML, language), as it refused."""
        return cls(str(exc), code=exc.code, status=exc.status, field=exc.field)
