"""Stage 6 of the pipeline, open the run: the pending history record and the characters it
spends, written in one transaction, and the run that owns both from then on.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.quota import QuotaExceeded, Reservation, reserve_characters
from infra.lean_insert import insert
from tts.catalogue import spec_for
from tts.errors import SynthesisError
from tts.models import SynthesisRecord
from tts.pronunciation import record_dictionary_uses
from tts.synthesis.runs.record_audio import discard_record_audio
from tts.synthesis.runs.recovery import heartbeats
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.stages.lookup import answer_from_cache
from tts.synthesis.stages.prepare import PreparedText
from tts.synthesis.stages.values import Found

logger = logging.getLogger(__name__)


def open_run(found: Found, *, started: float) -> SynthesisRun:
    """The pending history record and the characters it spends, in one transaction: the run.

    A whole-file cache hit needs nothing more: it is recorded in its final state right
    here, in the same transaction as its quota. Nothing is held when this raises.
    """
    prepared = found.prepared
    admission = prepared.admitted.admission
    resolved = prepared.admitted.resolved
    req, text, voice, model_version = resolved.request, resolved.text, resolved.voice, resolved.model_version
    dictionaries, spoken, segments, cached = resolved.dictionaries, prepared.spoken, prepared.segments, found.cached
    record = SynthesisRecord(
        tenant=req.tenant,
        api_key=req.api_key,
        voice_id=voice.voice_id,
        voice_name=voice.name,
        model_version=model_version,
        model_id=model_version.model_id,
        text=text if req.enable_logging else "",
        text_logged=req.enable_logging,
        characters=prepared.billed,  # stage 4's bill (``prepare_text``)
        output_format=req.output_format.name,
        content_type=req.output_format.content_type,
        sample_rate=req.output_format.sample_rate,
        source=req.source,
        request_id=req.request_id,
        settings=record_settings(found),
        cache_hit=cached is not None,
        heartbeat_at=timezone.now(),
    )
    run = SynthesisRun(
        request=req,
        voice=voice,
        model_version=model_version,
        spec=spec_for(model_version),
        segments=segments,
        characters=record.characters,
        reservation=Reservation.nothing(req.tenant.pk),  # until the transaction below
        record=record,
        started=started,
        admission=admission,
        cache_key=found.cache_key,
        cached=cached,
        answered=found.whole and cached is not None,
        whole=found.whole,
        context=prepared.context,
        spoken_text=spoken if spoken != text else None,
        dictionaries=dictionaries,
        engine_budget=prepared.engine_budget,
        turn_voices=tuple(turn.voice for turn in resolved.turns),
        turn_spans=prepared.turn_spans,
    )
    try:
        if run.answered and cached is not None:
            answer_from_cache(run, cached)
        # One transaction, one commit: the record and the characters it spends.
        with transaction.atomic():
            insert(record)  # record.save(force_insert=True), its INSERT built once (infra/lean_insert.py)
            record_dictionary_uses(record, dictionaries)
            run.reserved(reserve_characters(tenant=req.tenant, characters=run.characters))
    except QuotaExceeded as exc:
        admission.release()
        discard_record_audio(record)
        raise SynthesisError.from_quota(exc) from exc
    except BaseException:
        admission.release()
        discard_record_audio(record)
        raise
    # From here on the run owns everything: only its finish gives anything back.
    if run.answered:
        run.finish(SynthesisRecord.Status.SUCCESS, written=True)
    else:
        heartbeats.add(run)  # so that a crash of this process is noticed and its record reaped
    return run


def record_settings(found: Found) -> dict[str, Any]:
    """The history item's ``settings``: the request's, the dictionary versions it used, and a
    dialogue's turns (``{"voice_id"}`` each, in order)."""
    resolved = found.prepared.admitted.resolved
    values = dict(resolved.request.settings)
    if resolved.dictionaries is not None:
        values["pronunciation_dictionary_locators"] = resolved.dictionaries.as_json()
    if resolved.turns:
        values["dialogue_inputs"] = [{"voice_id": turn.voice.voice_id} for turn in resolved.turns]
    return values


def open_piece(run: SynthesisRun, prepared: PreparedText) -> bool:
    """Stage 6 for one more piece of a live utterance: the characters it bills, reserved and
    handed to the utterance's run at once (one run, one record, one reservation), so the run's
    finish refunds whatever was never spoken. The utterance counted as one request when it opened.
    False if the run has already ended (the piece's characters are refunded then)."""
    req = run.request
    try:
        reservation = reserve_characters(tenant=req.tenant, characters=prepared.billed, count_request=False)
    except QuotaExceeded as exc:
        raise SynthesisError.from_quota(exc) from exc
    return run.add_piece(prepared.text, prepared.segments, reservation)
