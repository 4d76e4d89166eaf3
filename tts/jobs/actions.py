"""Long-form jobs: submit (validate, plan chunks, reserve quota), cancel, read,
and hand a job to whatever runs it (a Celery worker, or a server thread).

Running a job and handing it to a runner live in tts/jobs/runner.py
(which imports nothing from here); progress events in ``tts.jobs.events``.

Without a broker (``TTS_JOB_RUNNER=thread``, the default with no REDIS_URL)
jobs run one at a time in a thread of the server process, and a housekeeping
thread stands in for beat's reaper; it starts with the first job this process
dispatches and then also picks up jobs a restart left queued.
"""

from __future__ import annotations

import dataclasses
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
from tts.jobs.records import characters_done, job_record_fields
from tts.jobs.runner import job_dispatch, job_finish
from tts.models import Job, SynthesisRecord
from tts.pronunciation import record_dictionary_uses
from tts.synthesis import SynthesisRequest, job_prepare, job_resolve, text_characters_valid
from tts.text.segment import Segment

__all__ = ["JobRequest", "characters_done", "job_cancel", "job_get", "job_submit", "jobs_for_tenant"]

logger = logging.getLogger(__name__)


@dataclass
class JobRequest:
    """What a caller asks for: ``text`` (one long text) or ``items`` (a batch), not both."""

    tenant: Tenant
    voice_id: str
    output_format: OutputFormat
    text: str | None = None
    items: list[str] | None = None
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
            "Send either 'text' (one long text) or 'items' (a list of texts), not both.",
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


def plan_chunks(item: int, segments: list[Segment], chunk_chars: int) -> list[dict[str, Any]]:
    """Consecutive segments grouped into chunks of about ``chunk_chars`` characters."""
    chunks: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for seg in segments:
        if current and size + len(seg.text) > chunk_chars:
            chunks.append({"item": item, "chars": size, "segments": current})
            current, size = [], 0
        current.append(dataclasses.asdict(seg))
        size += len(seg.text)
    if current:
        chunks.append({"item": item, "chars": size, "segments": current})
    return chunks


def job_submit(req: JobRequest) -> Job:
    """Validate, count against the rate limits, prepare as a request is prepared (dictionaries, the
    prepared text's bill, the engine budget), reserve the quota for every billed character, plan, and queue."""
    pairs = _texts(req)
    probe = SynthesisRequest(
        tenant=req.tenant,
        voice_id=req.voice_id,
        text="",
        output_format=req.output_format,
        source="job",
        model_id=req.model_id,
        speed=req.speed,
        language=req.language,
        normalization=req.normalization,
        seed=req.seed,
        pronunciation_dictionary_locators=req.pronunciation_dictionary_locators,
        text_field="text" if req.text is not None else "items",
    )
    voice, model_version, dictionaries = job_resolve(probe)
    # Cheap checks first (the rate limit, and whether the quota could take it at all); the
    # text work (normalizing and planning up to the plan's job_max_characters) only for a job
    # that may run. The reservation itself stays in the transaction that creates the job.
    try:
        check_request_rate(tenant=req.tenant, api_key=req.api_key)
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc
    sent = sum(len(text) for _, text in pairs)
    limit = req.tenant.plan.monthly_character_limit
    used = usage_for_period(req.tenant).characters
    if used + sent > limit:
        raise SynthesisError.from_quota(QuotaExceeded(requested=sent, used=used, limit=limit))
    prepared = job_prepare(probe, pairs, voice, model_version, dictionaries)
    plan: list[dict[str, Any]] = []
    for item, text in enumerate(prepared.texts):
        plan.extend(plan_chunks(item, text.segments, settings.TTS_JOB_CHUNK_CHARS))
    characters = prepared.characters
    job_settings: dict[str, Any] = {
        **req.settings,
        "speed": req.speed,
        "language": req.language,
        "normalization": req.normalization,
    }
    if req.seed is not None:
        job_settings["seed"] = req.seed
    if dictionaries is not None:
        job_settings["pronunciation_dictionary_locators"] = dictionaries.as_json()
    try:
        # One transaction: the job, its pending history item and the characters they spend.
        with transaction.atomic():
            reservation = reserve_characters(tenant=req.tenant, characters=characters)
            job = Job.objects.create(
                tenant=req.tenant,
                api_key=req.api_key,
                kind=Job.Kind.TEXT if req.text is not None else Job.Kind.BATCH,
                voice_id=voice.voice_id,
                voice_name=voice.name,
                model_version=model_version,
                model_id=model_version.model_id,
                output_format=req.output_format.name,
                content_type="application/zip" if req.items is not None else req.output_format.content_type,
                sample_rate=req.output_format.sample_rate,
                settings=job_settings,
                text="\n\n".join(text for _, text in pairs) if req.enable_logging else "",
                text_logged=req.enable_logging,
                plan=plan,
                item_count=len(pairs),
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
