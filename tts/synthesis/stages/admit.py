"""Stage 3 of the pipeline, admit: the tenant's and key's rate limits, before any text work
(and, for a request with dictionaries to apply, its concurrency place, before that work).
The bounds themselves are ``tts.synthesis.engine_time.admission``."""

from __future__ import annotations

from accounts.ratelimit import LimitExceeded
from tts.errors import SynthesisError
from tts.synthesis.engine_time.admission import synthesis_admit
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.values import Admitted, Resolved


def admit(resolved: Resolved) -> Admitted:
    """The rate limits, before any text work; for a request with dictionaries to apply, the
    tenant's concurrency place too, before that work."""
    req = resolved.request
    try:
        admission = synthesis_admit(tenant=req.tenant, api_key=req.api_key, source=req.source)
        if resolved.dictionaries is not None:
            admission.hold_slot(tenant=req.tenant)
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc
    return Admitted(resolved, admission)


def admit_piece(run: SynthesisRun) -> None:
    """Stage 3 for one more piece of a live utterance: the utterance counted as one request (its
    rate limits) when it opened; an idle one takes its concurrency place and an engine ticket again
    (``SynthesisRun.resume``), refused like a new request if the tenant is at its cap."""
    run.resume()
