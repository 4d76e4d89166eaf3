"""Request stitching: ``previous_text``/``next_text`` and ``previous_request_ids``/``next_request_ids``.

A request that continues another is read as its continuation: the end of the
text before it (and the start of the text after it) are synthesized in the
same utterance as its first (last) sentence and cut away at the phoneme
boundaries (``timestamps.synthesize_in_context``), so it starts without the
leading pause and with a continuation's intonation.

Request ids must be the tenant's own, of the last two hours (as ElevenLabs),
and finished (a streamed request's id is usable once its stream ended);
anything else is a 400 naming the field. When ids are given they replace the
corresponding ``*_text`` (ElevenLabs' precedence). A request whose text was not
logged still counts as context, without words: only the leading pause goes.
"""

from __future__ import annotations

import datetime as dt
import re

from django.conf import settings
from django.utils import timezone

from tts.errors import SynthesisError
from tts.models import SynthesisRecord
from tts.synthesis.alignment.timestamps import SegmentContext
from tts.synthesis.request import SynthesisRequest

#: How far back a request id may point.
STITCH_WINDOW = dt.timedelta(hours=2)
#: At most this many request ids per side.
MAX_REQUEST_IDS = 3
#: Words of context read around the request (enough for the model to carry the phrase).
CONTEXT_WORDS = 6
#: A side's context is also no longer than the request's own text, but may always be this long:
#: the engine work it adds stays within a small factor of what is billed (bench/bench_costs.py).
CONTEXT_MIN_CHARS = 20

_SENTENCE_END = re.compile(r"[.!?…。\uff01\uff1f]['\")\]]*\s*$")


def _records_text(req: SynthesisRequest, ids: list[str], field: str) -> str:
    if len(ids) > MAX_REQUEST_IDS:
        raise SynthesisError(
            f"{field}: at most {MAX_REQUEST_IDS} request ids.", code="invalid_request_ids", status=400, field=field
        )
    cutoff = timezone.now() - STITCH_WINDOW
    texts = []
    for request_id in ids:
        record = (
            SynthesisRecord.objects.filter(
                tenant=req.tenant, request_id=request_id, created_at__gte=cutoff, deleted_at__isnull=True
            )
            .order_by("-created_at")
            .only("status", "text")
            .first()
        )
        if record is None:
            raise SynthesisError(
                f"{field}: '{request_id}' is not a request of this account from the last two hours.",
                code="invalid_request_ids",
                status=400,
                field=field,
            )
        if record.status != SynthesisRecord.Status.SUCCESS:
            raise SynthesisError(
                f"{field}: request '{request_id}' has not finished successfully (status {record.status}).",
                code="request_not_finished",
                status=400,
                field=field,
            )
        texts.append(record.text)
    return " ".join(t for t in texts if t)


def context_max_chars() -> int:
    """The most characters of context synthesized on either side (``TTS_CONTEXT_SYNTH_MAX_CHARS``)."""
    return int(settings.TTS_CONTEXT_SYNTH_MAX_CHARS)


def _bounded_tail(words: str, limit: int) -> str:
    """The end of ``words`` in at most ``limit`` characters, starting at a word where one starts in reach."""
    if len(words) <= limit:
        return words
    cut = words[-limit:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < len(cut) - 1 else cut


def _bounded_head(words: str, limit: int) -> str:
    """The start of ``words`` in at most ``limit`` characters, ending at a word end where one is in reach."""
    if len(words) <= limit:
        return words
    cut = words[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > 0 else cut


def _tail(text: str, limit: int | None = None) -> str:
    """The last words of ``text`` after its last sentence end; "" when it ends a sentence.

    Six words of any length could be any length (12,000 characters glued by dashes took the
    process down): what is kept is also at most ``TTS_CONTEXT_SYNTH_MAX_CHARS`` characters.
    """
    text = text.strip()
    if not text or _SENTENCE_END.search(text):
        return ""
    last_end = max((m.end() for m in re.finditer(r"[.!?…](?=\s)", text)), default=0)
    return _bounded_tail(" ".join(text[last_end:].split()[-CONTEXT_WORDS:]), limit or context_max_chars())


def _head(text: str, limit: int | None = None) -> str:
    """The first words of ``text``, up to its first sentence end, in at most ``TTS_CONTEXT_SYNTH_MAX_CHARS``."""
    words: list[str] = []
    for word in text.split(maxsplit=CONTEXT_WORDS)[:CONTEXT_WORDS]:
        words.append(word)
        if re.search(r"[.!?…]['\")\]]*$", word):
            break
    return _bounded_head(" ".join(words), limit or context_max_chars())


def check_context_field(value: str | None, field: str) -> None:
    """A ``previous_text``/``next_text`` (or any context field) longer than ``TTS_CONTEXT_MAX_CHARS``: a 400."""
    limit = int(settings.TTS_CONTEXT_MAX_CHARS)
    if value is not None and len(value) > limit:
        raise SynthesisError(
            f"{field}: at most {limit} characters ({len(value)} given).",
            code="context_too_long",
            status=400,
            field=field,
        )


def context_characters(context: SegmentContext | None) -> int:
    """Characters of context synthesized beside a request (counted in its audio estimate)."""
    if context is None:
        return 0
    return len(context.before or "") + len(context.after or "")


def stitching_context(req: SynthesisRequest) -> SegmentContext | None:
    """The context a request is read in, or ``None`` (a fresh request). Raises a 400 for bad ids."""
    before: str | None = None
    after: str | None = None
    check_context_field(req.previous_text, "previous_text")
    check_context_field(req.next_text, "next_text")
    # Context is not billed: each side is at most as long as the text itself (or CONTEXT_MIN_CHARS).
    limit = min(context_max_chars(), max(CONTEXT_MIN_CHARS, len(req.text)))
    if req.previous_request_ids:
        before = _tail(_records_text(req, req.previous_request_ids, "previous_request_ids"), limit)
    elif req.previous_text:
        before = _tail(req.previous_text, limit)
    if req.next_request_ids:
        after = _head(_records_text(req, req.next_request_ids, "next_request_ids"), limit) or None
    elif req.next_text:
        after = _head(req.next_text, limit) or None
    if before is None and after is None:
        return None
    return SegmentContext(before=before, after=after)
