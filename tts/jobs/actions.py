"""Long-form jobs: submit (validate, plan chunks, reserve quota), cancel, read,
and hand a job to whatever runs it (a Celery worker, or a server thread).

Running a job and handing it to a runner live in tts/jobs/runner.py
(which imports nothing from here); progress events in ``tts.jobs.events``; the plan of chunks
(a text's, a dialogue's cut at its turns) in ``tts.jobs.chunks``.

Without a broker (``TTS_JOB_RUNNER=thread``, the default with no REDIS_URL)
jobs run one at a time in a thread of the server process, and a housekeeping
thread stands in for beat's reaper; it starts with the first job this process
dispatches and then also picks up jobs a restart left queued.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from accounts.models import ApiKey, Tenant
from accounts.quota import QuotaExceeded, reserve_characters, usage_for_period
from accounts.ratelimit import LimitExceeded, check_request_rate
from tts.audio.formats import OutputFormat
from tts.errors import SynthesisError
from tts.jobs.chunks import plan_chunks, plan_dialogue_chunks
from tts.jobs.records import characters_done, job_record_fields
from tts.jobs.runner import job_dispatch, job_finish
from tts.models import Job, SynthesisRecord
from tts.pronunciation import record_dictionary_uses
from tts.synthesis import (
    DialogueTurn,
    PreparedJob,
    SynthesisRequest,
    dialogue_job_prepare,
    dialogue_job_resolve,
    dialogue_text,
    job_prepare,
    job_resolve,
    text_characters_valid,
)

__all__ = ["JobRequest", "characters_done", "job_cancel", "job_get", "job_submit", "jobs_for_tenant"]

logger = logging.getLogger(__name__)


@dataclass
class JobRequest:
    """What a caller asks for: ``text`` (one long text), ``items`` (a batch) or ``inputs`` (a
    dialogue's turns, each in its own voice: docs/dialogue.md), exactly one of them."""

    tenant: Tenant
    voice_id: str
    output_format: OutputFormat
    text: str | None = None
    items: list[str] | None = None
    inputs: list[DialogueTurn] | None = None
    api_key: ApiKey | None = None
    model_id: str | None = None
    speed: float = 1.0
    language: str | None = None
    normalization: str = "auto"
    enable_logging: bool = True
    request_id: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    #: Noise seed, as a request's: each segment gets its own (``segment_params``).
    seed: int | None = None
    #: ``[{"pronunciation_dictionary_id", "version_id"?}]``, at most 3; none: the tenant's default dictionaries.
    pronunciation_dictionary_locators: list[dict[str, Any]] = field(default_factory=list)


def _texts(req: JobRequest) -> list[tuple[str, str]]:
    """(field name, text) per item, validated."""
    if (req.text is None) == (req.items is None):
        raise SynthesisError(
            "Send one of 'text' (one long text), 'items' (a list of texts) or 'inputs' (a dialogue's turns).",
            code="invalid_request",
            status=400,
            field="text",
        )
    if req.text is not None:
        pairs = [("text", req.text)]
    else:
        items = req.items or []
        if not items:
            raise SynthesisError("'items' must hold at least one text.", code="empty_text", status=400, field="items")
        if len(items) > settings.TTS_JOB_MAX_ITEMS:
            raise SynthesisError(
                f"'items' has {len(items)} entries; a job takes at most {settings.TTS_JOB_MAX_ITEMS}.",
                code="too_many_items",
                status=413,
                field="items",
            )
        pairs = [(f"items[{i}]", text) for i, text in enumerate(items)]
    for name, text in pairs:
        if not text.strip():
            raise SynthesisError(
                f"'{name}' must contain some text to speak.", code="empty_text", status=400, field=name
            )
        text_characters_valid(text, field=name)
    total = sum(len(text) for _, text in pairs)
    limit = req.tenant.plan.job_max_characters
    if total > limit:
        name = "text" if req.text is not None else "items"
        raise SynthesisError(
            f"'{name}' holds {total} characters; a job on this plan takes at most {limit}.",
            code="max_character_limit_exceeded",
            status=413,
            field=name,
        )
    return pairs


def job_submit(req: JobRequest) -> Job:
    """Validate, count against the rate limits, prepare as a request is prepared (dictionaries, the
    prepared text's bill, the engine budget), reserve the quota for every billed character, plan, and queue.
    A dialogue (``inputs``) is checked, prepared and billed as the dialogue routes do, planned at its turns."""
    if req.inputs is not None:
        if req.text is not None or req.items is not None:
            raise SynthesisError(
                "Send one of 'text' (one long text), 'items' (a list of texts) or 'inputs' (a dialogue's turns).",
                code="invalid_request",
                status=400,
                field="inputs",
            )
        return _dialogue_submit(req)
    pairs = _texts(req)
    probe = _probe(req, text="", text_field="text" if req.text is not None else "items")
    voice, model_version, dictionaries = job_resolve(probe)
    # Cheap checks first (the rate limit, and whether the quota could take it at all); the
    # text work (normalizing and planning up to the plan's job_max_characters) only for a job
    # that may run. The reservation itself stays in the transaction that creates the job.
    _admit(req, sent=sum(len(text) for _, text in pairs))
    prepared = job_prepare(probe, pairs, voice, model_version, dictionaries)
    plan: list[dict[str, Any]] = []
    for item, text in enumerate(prepared.texts):
        plan.extend(plan_chunks(item, text.segments, settings.TTS_JOB_CHUNK_CHARS))
    return _create(
        req,
        prepared,
        plan,
        kind=Job.Kind.TEXT if req.text is not None else Job.Kind.BATCH,
        text="\n\n".join(text for _, text in pairs),
        item_count=len(pairs),
        content_type="application/zip" if req.items is not None else req.output_format.content_type,
    )


def _dialogue_submit(req: JobRequest) -> Job:
    """A dialogue job: its turns resolved with the dialogue routes' bounds (the job's total
    characters instead of a request's), prepared and billed as those routes do, and planned in chunks
    cut at its turns (``plan_dialogue_chunks``). One job, one history item, one bill."""
    turns = list(req.inputs or [])
    probe = _probe(req, text=dialogue_text(turns), text_field="inputs", turns=turns)
    resolved = dialogue_job_resolve(probe)
    _admit(req, sent=sum(len(turn.text) for turn in resolved.turns))
    prepared = dialogue_job_prepare(resolved)
    plan = plan_dialogue_chunks(prepared.texts[0].segments, settings.TTS_JOB_CHUNK_CHARS)
    return _create(
        req,
        prepared,
        plan,
        kind=Job.Kind.TEXT,
        text=resolved.text,
        item_count=1,
        content_type=req.output_format.content_type,
        extra={"dialogue_inputs": [{"voice_id": turn.voice.voice_id} for turn in resolved.turns]},
    )


def _probe(req: JobRequest, *, text: str, text_field: str, turns: list[DialogueTurn] | None = None) -> SynthesisRequest:
    """The pipeline's request for a job's stages (its texts are prepared separately, or as ``turns``)."""
    return SynthesisRequest(
        tenant=req.tenant,
        voice_id=turns[0].voice_id if turns else req.voice_id,
        text=text,
        output_format=req.output_format,
        source="job",
        model_id=req.model_id,
        speed=req.speed,
        language=req.language,
        normalization=req.normalization,
        settings=req.settings,
        seed=req.seed,
        pronunciation_dictionary_locators=req.pronunciation_dictionary_locators,
        text_field=text_field,
        voice_field="inputs[0].voice_id" if turns else "voice_id",
        turns=turns,
    )


def _admit(req: JobRequest, *, sent: int) -> None:
    """The rate limits, and whether the month's quota could take ``sent`` characters at all."""
    try:
        check_request_rate(tenant=req.tenant, api_key=req.api_key)
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc
    limit = req.tenant.plan.monthly_character_limit
    used = usage_for_period(req.tenant).characters
    if used + sent > limit:
        raise SynthesisError.from_quota(QuotaExceeded(requested=sent, used=used, limit=limit))


def _create(
    req: JobRequest,
    prepared: PreparedJob,
    plan: list[dict[str, Any]],
    *,
    kind: str,
    text: str,
    item_count: int,
    content_type: str,
    extra: dict[str, Any] | None = None,
) -> Job:
    """The job, its pending history item and the characters they spend, in one transaction; queued on commit."""
    voice, model_version, dictionaries = prepared.voice, prepared.model_version, prepared.dictionaries
    characters = prepared.characters
    job_settings: dict[str, Any] = {
        **req.settings,
        "speed": req.speed,
        "language": req.language,
        "normalization": req.normalization,
        **(extra or {}),
    }
    if req.seed is not None:
        job_settings["seed"] = req.seed
    if dictionaries is not None:
        job_settings["pronunciation_dictionary_locators"] = dictionaries.as_json()
    try:
        with transaction.atomic():
            reservation = reserve_characters(tenant=req.tenant, characters=characters)
            job = Job.objects.create(
                tenant=req.tenant,
                api_key=req.api_key,
                kind=kind,
                voice_id=voice.voice_id,
                voice_name=voice.name,
                model_version=model_version,
                model_id=model_version.model_id,
                output_format=req.output_format.name,
                content_type=content_type,
                sample_rate=req.output_format.sample_rate,
                settings=job_settings,
                text=text if req.enable_logging else "",
                text_logged=req.enable_logging,
                plan=plan,
                item_count=item_count,
                characters=characters,
                reserved_period=reservation.period_start,
                total_chunks=len(plan),
                planned_chars=sum(chunk["chars"] for chunk in plan),
                request_id=req.request_id,
            )
            job.history_item = SynthesisRecord.objects.create(**job_record_fields(job))
            record_dictionary_uses(job.history_item, dictionaries)
            job.save(update_fields=["history_item"])
            transaction.on_commit(lambda: job_dispatch(job.pk))
    except QuotaExceeded as exc:
        raise SynthesisError.from_quota(exc) from exc
    return job


# --- cancel and read ---------------------------------------------------------


def job_cancel(job: Job) -> Job:
    """Ask a job to stop. A queued job stops now; a running one at its next chunk."""
    Job.objects.filter(pk=job.pk, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).update(cancel_requested=True)
    job.refresh_from_db()
    if job.status == Job.Status.QUEUED:
        job_finish(job, token="", status=Job.Status.CANCELLED, error_code="cancelled")
        job.refresh_from_db()
    return job


def jobs_for_tenant(tenant: Tenant) -> QuerySet[Job]:
    return Job.objects.filter(tenant=tenant).defer("plan").order_by("-created_at", "-id")


def job_get(tenant: Tenant, job_id: str) -> Job | None:
    try:
        pk = uuid.UUID(str(job_id))
    except ValueError:
        return None  # a malformed id is simply not found
    return Job.objects.filter(tenant=tenant, pk=pk).first()


#: Finished jobs (or history items) of a tenant that the speed estimate reads.
SPEED_SAMPLE = 10


def synthesis_seconds_per_character(tenant: Tenant) -> float | None:
    """How long this tenant's syntheses took per character lately: its last finished jobs (start to
    end), else its last REST requests synthesized (not cache hits); None when it has neither. The jobs
    page moves a job's bar by it while the first chunk runs, before the job has a pace of its own."""
    jobs = list(
        Job.objects.filter(tenant=tenant, status=Job.Status.SUCCEEDED, started_at__isnull=False)
        .exclude(finished_at__isnull=True)
        .order_by("-created_at")
        .values_list("started_at", "finished_at", "characters")[:SPEED_SAMPLE]
    )
    seconds = sum((end - start).total_seconds() for start, end, _ in jobs if start and end)
    characters = sum(chars for _, _, chars in jobs)
    if not jobs:
        rows = list(
            SynthesisRecord.objects.filter(
                tenant=tenant,
                status=SynthesisRecord.Status.SUCCESS,
                source__in=[SynthesisRecord.Source.ELEVENLABS, SynthesisRecord.Source.OPENAI],
                cache_hit=False,
                latency_ms__isnull=False,
            )
            .order_by("-created_at")
            .values_list("latency_ms", "characters")[:SPEED_SAMPLE]
        )
        seconds = sum(ms or 0 for ms, _ in rows) / 1000
        characters = sum(chars for _, chars in rows)
    return seconds / characters if characters > 0 and seconds > 0 else None
