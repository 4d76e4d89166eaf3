"""Stage 5 of the pipeline, the cache: the request's key, the entry if there is one, and what
the request must hold before it goes on (a concurrency place; an engine place on a miss).
"""

from __future__ import annotations

import logging

from accounts.ratelimit import LimitExceeded
from tts.errors import SynthesisError
from tts.synthesis.cache import audio_cache, audio_cache_key
from tts.synthesis.stages import Found, Prepared

logger = logging.getLogger(__name__)


def look_up(prepared: Prepared, *, whole: bool) -> Found:
    """The cache lookup, a concurrency slot (not for a whole-file hit), an engine place on a miss.

    ``whole``: the caller wants the whole file at once; a hit then needs no place (it is
    answered before any other request could wait on it)."""
    admitted = prepared.admitted
    resolved = admitted.resolved
    req, admission, context = resolved.request, admitted.admission, prepared.context
    dictionaries = resolved.dictionaries.versions if resolved.dictionaries is not None else None
    try:
        sides = (context.before, context.after) if context is not None else None
        cache_key = audio_cache_key(
            req,
            voice=resolved.voice,
            model_version=resolved.model_version,
            segments=prepared.segments,
            context=sides,
            dictionaries=dictionaries,
        )
        cached = audio_cache.get(cache_key)
        if cached is None or not whole:
            admission.hold_slot(tenant=req.tenant)
        if cached is None:
            admission.admit_engine()
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc
    return Found(prepared, cache_key, cached, whole)
