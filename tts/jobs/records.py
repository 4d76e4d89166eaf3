"""A job's books: the synthesis run that bills its chunks (``job_synthesis_run``), the history
record it leaves and that record's fields, and how many of its characters are spent so far
(``characters_done``, ``reservation_of``). Running the chunks is ``tts.jobs.runner``."""

from __future__ import annotations

import time

from django.utils import timezone

from accounts.quota import Reservation
from tts.audio.formats import UnknownFormatError, parse_elevenlabs_format
from tts.catalogue import spec_for
from tts.models import Job, SynthesisRecord, Voice
from tts.synthesis import (
    SynthesisAdmission,
    SynthesisRequest,
    SynthesisRun,
)
from tts.text.segment import Segment

_SEGMENT_FIELDS = {f for f in Segment.__dataclass_fields__}


def chunk_segments(chunk: dict) -> list[Segment]:
    """The segments of one planned chunk (``Job.plan``), as the pipeline cut them."""
    return [Segment(**{k: v for k, v in seg.items() if k in _SEGMENT_FIELDS}) for seg in chunk["segments"]]


def job_synthesis_run(job: Job, *, token: str = "") -> SynthesisRun:
    """The owner of a job's synthesis, for one claim: its reservation, history item and admission.

    Jobs are limited at submission (rate, running jobs) and take no concurrency slot;
    each claim takes an engine ticket (``admission.admit_engine``) before its chunks.
    """
    settings_ = job.settings or {}
    try:
        output_format = parse_elevenlabs_format(job.output_format)
    except UnknownFormatError:  # the job fails for it; its record keeps the name it was given
        output_format = parse_elevenlabs_format("mp3_44100_128")
    request = SynthesisRequest(
        tenant=job.tenant,
        voice_id=job.voice_id,
        text=job.text,
        output_format=output_format,
        source=SynthesisRecord.Source.JOB,
        api_key=job.api_key,
        model_id=job.model_id,
        speed=float(settings_.get("speed") or 1.0),
        language=settings_.get("language"),
        enable_logging=job.text_logged,
        request_id=job.request_id,
        settings=settings_,
        seed=settings_.get("seed"),
    )
    voice = Voice.objects.filter(voice_id=job.voice_id).first() or Voice(voice_id=job.voice_id, name=job.voice_name)
    turn_voices = dialogue_voices(job, voice)
    segments = [seg for chunk in job.plan or [] for seg in chunk_segments(chunk)]
    started_at = job.started_at or job.created_at or timezone.now()
    assert job.model_version is not None or job.history_item_id is not None
    return SynthesisRun(
        request=request,
        voice=voice,
        model_version=job.model_version,  # type: ignore[arg-type]
        spec=spec_for(job.model_version) if job.model_version is not None else None,  # type: ignore[arg-type]
        segments=segments,
        characters=job.characters,
        reservation=reservation_of(job),
        record=job_history_record(job),
        started=time.monotonic() - (timezone.now() - started_at).total_seconds(),
        admission=SynthesisAdmission(limited=False),
        whole=False,
        turn_voices=turn_voices,
    )


def dialogue_voices(job: Job, first: Voice) -> tuple[Voice, ...]:
    """A dialogue job's voice of each turn (``settings.dialogue_inputs``, in order; each segment's
    ``turn`` picks one: ``SynthesisRun.voice_for``); ``()`` for a job of one voice. A voice deleted
    since the job was submitted is spoken by the first turn's."""
    inputs = (job.settings or {}).get("dialogue_inputs") or []
    if not inputs:
        return ()
    ids = [str(item.get("voice_id", "")) for item in inputs]
    found = {v.voice_id: v for v in Voice.objects.filter(voice_id__in=set(ids))}
    return tuple(found.get(voice_id, first) for voice_id in ids)


def job_history_record(job: Job) -> SynthesisRecord:
    """The job's history item: made pending with its reservation at submission (or now, for older jobs)."""
    if job.history_item_id is not None:
        return SynthesisRecord.objects.get(pk=job.history_item_id)
    record = SynthesisRecord.objects.create(**job_record_fields(job))
    Job.objects.filter(pk=job.pk).update(history_item=record)
    job.history_item = record
    return record


def job_record_fields(job: Job) -> dict[str, object]:
    """The fields of a job's pending history item (one per job: jobs show in history and usage)."""
    return {
        "tenant_id": job.tenant_id,
        "api_key_id": job.api_key_id,
        "voice_id": job.voice_id,
        "voice_name": job.voice_name,
        "model_version_id": job.model_version_id,
        "model_id": job.model_id,
        "text": job.text,
        "text_logged": job.text_logged,
        "characters": job.characters,
        "output_format": job.output_format,
        "content_type": job.content_type,
        "sample_rate": job.sample_rate,
        "source": SynthesisRecord.Source.JOB,
        "status": SynthesisRecord.Status.PENDING,
        "request_id": job.request_id,
        "settings": {**(job.settings or {}), "job_id": str(job.pk)},
    }


def segments_done(job: Job) -> int:
    return sum(len(chunk["segments"]) for chunk in (job.plan or [])[: job.done_chunks])


def reservation_of(job: Job) -> Reservation:
    assert job.reserved_period is not None
    return Reservation(tenant_id=job.tenant_id, period_start=job.reserved_period, characters=job.characters)


def characters_done(job: Job) -> int:
    """Characters of the finished chunks, scaled to what the caller sent (whitespace counts)."""
    if job.status == Job.Status.SUCCEEDED:
        return job.characters
    return min(job.characters, round(job.characters * job.done_chars / (job.planned_chars or 1)))
