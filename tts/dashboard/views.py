"""Dashboard pages: the overview, the history, long-form jobs and the voice catalog
(the playground is ``tts.dashboard.playground``, the usage page ``tts.dashboard.usage``, pronunciation
dictionaries ``tts.dashboard.pronunciation``).

Everything is scoped to the session's current tenant (``accounts.tenancy``);
an id that belongs to another tenant answers 404, like one that does not exist.
Reads and writes go through the capability packages' entry points (``tts.synthesis``,
``tts.catalogue``, ``tts.jobs``, ``tts.usage``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.db.models import BooleanField, ExpressionWrapper, F, Q
from django.db.models.functions import Substr
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET, require_POST

from accounts.quota import characters_per_request_limit, next_period_start, usage_for_period
from accounts.tenancy import TenantRequest, dashboard_context, member_required
from infra.pagination import keyset_page
from tts.audio.formats import parse_elevenlabs_format
from tts.catalogue import (
    VoiceBlendError,
    default_voice_among,
    voice_blend_create,
    voice_delete,
    voice_get,
    voice_languages,
    voices_for_tenant,
    voices_served_for_tenant,
)
from tts.dashboard.forms import HistoryFilterForm, JobSubmitForm, VoiceBlendForm
from tts.errors import SynthesisError
from tts.jobs import JobRequest, job_cancel, job_get, job_submit, jobs_for_tenant, synthesis_seconds_per_character
from tts.models import Job, SynthesisRecord, Voice
from tts.synthesis import PreviewUnavailable, voice_preview
from tts.usage import (
    DOWNLOAD_FORMATS,
    ExportError,
    HistoryItemPending,
    captions_vtt,
    characters_per_day,
    content_disposition,
    export_audio,
    filename_for,
    history_for_tenant,
    history_item_delete,
    history_item_get,
    playable_audio,
    stored_audio_is_raw,
)

logger = logging.getLogger(__name__)

HISTORY_PAGE_SIZE = 25
JOBS_PAGE_SIZE = 25

# Columns the list shows; big JSON columns stay in the database.
_LIST_FIELDS = (
    "id",
    "voice_id",
    "voice_name",
    "model_id",
    "text",
    "text_logged",
    "characters",
    "output_format",
    "content_type",
    "duration_s",
    "latency_ms",
    "ttfb_ms",
    "source",
    "status",
    "error_code",
    "audio",
    "created_at",
)


def _item_or_404(request: TenantRequest, item_id: str) -> SynthesisRecord:
    record = history_item_get(request.tenant, item_id)
    if record is None:
        raise Http404("No such history item.")
    return record


@require_GET
@member_required
def overview(request: TenantRequest) -> HttpResponse:
    tenant = request.tenant
    plan = tenant.plan
    usage = usage_for_period(tenant)
    limit = plan.monthly_character_limit
    daily = characters_per_day(tenant, days=30)
    chart = {"labels": [d.day.isoformat() for d in daily], "characters": [d.characters for d in daily]}
    context = dashboard_context(
        request,
        page="overview",
        plan=plan,
        usage=usage,
        limit=limit,
        remaining=max(0, limit - usage.characters),
        percent=min(100.0, round(100 * usage.characters / limit, 1)) if limit else 0.0,
        resets_on=next_period_start(),
        max_chars_per_request=characters_per_request_limit(plan),
        chart=chart,
        last_30_days_total=sum(d.characters for d in daily),
    )
    return render(request, "dashboard/overview.html", context)


def spoken_part(record: SynthesisRecord) -> str | None:
    """For a stopped item, the part of its text that was spoken and billed; None when all of it was.

    A stopped run bills only the characters of the segments it spoke, in text order, so the
    first ``characters`` of the text are what the listener heard."""
    if record.status != SynthesisRecord.Status.CANCELLED or not record.text_logged:
        return None
    if record.characters >= len(record.text):
        return None
    return record.text[: record.characters]


@require_GET
@member_required
def history(request: TenantRequest) -> HttpResponse:
    tenant = request.tenant
    voices = list(voices_for_tenant(tenant))
    form = HistoryFilterForm(request.GET or None, voices=voices)
    items: Sequence[SynthesisRecord] = []
    next_cursor: str | None = None
    status = 200
    if request.GET and not form.is_valid():
        status = 400
    else:
        data: dict[str, Any] = form.cleaned_data if request.GET else {}
        after, before = form.date_range() if request.GET else (None, None)
        qs = history_for_tenant(
            tenant,
            voice_id=data.get("voice") or None,
            source=data.get("source") or None,
            status=data.get("status") or None,
            date_after=after,
            date_before=before,
            text_contains=(data.get("q") or "").strip() or None,
        ).only(*_LIST_FIELDS)
        # Whether captions exist, without loading the (large) alignment itself.
        qs = qs.annotate(has_captions=ExpressionWrapper(Q(alignment__isnull=False), output_field=BooleanField()))
        cursor_id = data.get("before")
        cursor = history_item_get(tenant, str(cursor_id)) if cursor_id else None
        if cursor_id and cursor is None:
            raise Http404("No such history item to page from.")
        page = keyset_page(qs, after=cursor, size=HISTORY_PAGE_SIZE)
        items, next_cursor = page.items, page.last_id
        for item in items:
            item.raw_audio = stored_audio_is_raw(item)  # type: ignore[attr-defined]
            item.spoken_text = spoken_part(item)  # type: ignore[attr-defined]
    query = request.GET.copy()
    query.pop("before", None)
    filtered = any(v for k, v in request.GET.items() if k != "before")
    context = dashboard_context(
        request,
        page="history",
        form=form,
        items=items,
        next_cursor=next_cursor,
        filter_query=query.urlencode(),
        filtered=filtered,
        paged=bool(request.GET.get("before")),
        download_formats=DOWNLOAD_FORMATS,
    )
    return render(request, "dashboard/history.html", context, status=status)


@require_GET
@member_required
def history_audio(request: TenantRequest, item_id: str) -> HttpResponseBase:
    """The stored file as it was delivered, for the inline player."""
    record = _item_or_404(request, item_id)
    if not record.audio:
        raise Http404("This item has no stored audio.")
    try:
        playable = playable_audio(record)
    except ExportError as exc:
        raise Http404(str(exc)) from exc
    if playable is not None:
        data, fmt = playable
        wav = HttpResponse(data, content_type=fmt.content_type)
        patch_cache_control(wav, private=True, max_age=3600)
        return wav
    response = FileResponse(record.audio.open("rb"), content_type=record.content_type or "application/octet-stream")
    patch_cache_control(response, private=True, max_age=3600)
    return response


@require_GET
@member_required
def history_download(request: TenantRequest, item_id: str) -> HttpResponse:
    """The item's audio; by default as delivered, except raw PCM/G.711, which comes as WAV players open."""
    record = _item_or_404(request, item_id)
    format_name = request.GET.get("format") or ""
    try:
        playable = playable_audio(record) if not format_name else None
        data, fmt = playable or export_audio(record, format_name or record.output_format)
    except ExportError as exc:
        status = 404 if exc.field == "item" else 400
        return HttpResponse(str(exc), status=status, content_type="text/plain; charset=utf-8")
    response = HttpResponse(data, content_type=fmt.content_type)
    response["Content-Disposition"] = content_disposition(filename_for(record, fmt.extension))
    return response


@require_GET
@member_required
def history_captions(request: TenantRequest, item_id: str) -> HttpResponse:
    record = _item_or_404(request, item_id)
    vtt = captions_vtt(record.alignment)
    if vtt is None:
        raise Http404("This item has no timestamps to caption.")
    return HttpResponse(vtt, content_type="text/vtt; charset=utf-8")


@require_POST
@member_required
def history_delete(request: TenantRequest, item_id: str) -> HttpResponse:
    record = _item_or_404(request, item_id)
    try:
        history_item_delete(record)
    except HistoryItemPending as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Deleted the history item and its audio. Usage still counts what it was billed.")
    target = request.POST.get("next") or ""
    return redirect(target if target.startswith("/history/") else "dashboard:history")


def _blendable(voices: list[Voice]) -> list[Voice]:
    return [v for v in voices if v.labels.get("engine") == "kokoro" and not v.blend]


def _voices_page(request: TenantRequest, form: VoiceBlendForm | None = None, *, status: int = 200) -> HttpResponse:
    language = (request.GET.get("language") or "").strip()[:16] or None
    every = list(voices_served_for_tenant(request.tenant))
    blendable = _blendable(every)
    context = dashboard_context(
        request,
        page="voices",
        voices=list(voices_served_for_tenant(request.tenant, language=language)) if language else every,
        languages=voice_languages(request.tenant),
        language=language or "",
        blendable=blendable,
        blend_form=form or VoiceBlendForm(voices=blendable),
        first_invalid=_first_invalid(form),
        created=(request.GET.get("created") or "")[:64],
    )
    return render(request, "dashboard/voices.html", context, status=status)


def _first_invalid(form: VoiceBlendForm | None) -> str:
    """The name of the blend form's field to focus after a refused submit: the first one in error,
    else (an error of the whole mix) the first weight; "" when the form has no errors."""
    if form is None or not form.errors:
        return ""
    names = ["name", *(field.name for _voice, field in form.weight_fields())]
    return next((name for name in names if name in form.errors), names[1] if len(names) > 1 else "name")


@require_GET
@member_required
def voices(request: TenantRequest) -> HttpResponse:
    return _voices_page(request)


@require_POST
@member_required
def voice_blend_new(request: TenantRequest) -> HttpResponse:
    """The voices page's "make a voice" form; what is wrong with it shows next to it (status 400)."""
    form = VoiceBlendForm(request.POST, voices=_blendable(list(voices_served_for_tenant(request.tenant))))
    if not form.is_valid():
        return _voices_page(request, form, status=400)
    try:
        voice = voice_blend_create(tenant=request.tenant, name=form.cleaned_data["name"], blend=form.blend())
    except VoiceBlendError as exc:
        # The service speaks the API's dialect ("blend: ..."); here the form is the field.
        message = exc.message.split(": ", 1)[-1]
        form.add_error("name" if exc.field == "name" else None, message[:1].upper() + message[1:])
        return _voices_page(request, form, status=exc.status if 400 <= exc.status < 500 else 400)
    messages.success(
        request, f"Made the voice {voice.name} ({voice.voice_id}): play its preview on its card, marked New."
    )
    # Back where the new voice is (the list is long), marked as new.
    query = urlencode({"created": voice.voice_id})
    return redirect(f"{reverse('dashboard:voices')}?{query}#voice-{voice.voice_id}")


@require_POST
@member_required
def voice_delete_view(request: TenantRequest, voice_id: str) -> HttpResponse:
    if not voice_delete(tenant=request.tenant, voice_id=voice_id):
        raise Http404("No such voice of this tenant.")
    messages.success(request, "Deleted the voice.")
    return redirect("dashboard:voices")


@require_GET
@member_required
def voice_preview_audio(request: TenantRequest, voice_id: str) -> HttpResponse:
    voice = voice_get(request.tenant, voice_id)
    if voice is None:
        raise Http404("No such voice.")
    try:
        data, fmt = voice_preview(voice, tenant_id=request.tenant.pk)
    except PreviewUnavailable as exc:
        logger.warning("no preview for voice %s: %s", voice.voice_id, exc)
        return HttpResponse(str(exc), status=503, content_type="text/plain; charset=utf-8")
    response = HttpResponse(data, content_type=fmt.content_type)
    patch_cache_control(response, private=True, max_age=86400)
    return response


# --- long-form jobs ------------------------------------------------------------

# Columns the jobs list shows; the plan and the (possibly huge) text stay in the database.
_JOB_LIST_FIELDS = (
    "id",
    "kind",
    "status",
    "voice_id",
    "voice_name",
    "output_format",
    "text_logged",
    "item_count",
    "characters",
    "total_chunks",
    "done_chunks",
    "audio_seconds",
    "cancel_requested",
    "error_code",
    "error_message",
    "audio",
    "created_at",
    "started_at",
    "finished_at",
    "characters_charged",
)
JOB_PREVIEW_CHARS = 160


def _job_or_404(request: TenantRequest, job_id: str) -> Job:
    job = job_get(request.tenant, job_id)
    if job is None:
        raise Http404("No such job.")
    return job


def _jobs_page(request: TenantRequest, form: JobSubmitForm, *, status: int = 200) -> HttpResponse:
    qs = (
        jobs_for_tenant(request.tenant)
        .only(*_JOB_LIST_FIELDS)
        .annotate(
            text_preview=Substr("text", 1, JOB_PREVIEW_CHARS + 1),
            refunded=F("characters") - F("characters_charged"),
        )
    )
    cursor_id = request.GET.get("before")
    cursor = job_get(request.tenant, cursor_id) if cursor_id else None
    if cursor_id and cursor is None:
        raise Http404("No such job to page from.")
    page = keyset_page(qs, after=cursor, size=JOBS_PAGE_SIZE)
    starting = any(j.done_chunks == 0 and j.status in (Job.Status.QUEUED, Job.Status.RUNNING) for j in page.items)
    max_chars, month_left = _job_limits(request)
    context = dashboard_context(
        request,
        page="jobs",
        form=form,
        job_max_chars=max_chars,
        month_left=month_left,
        resets_on=next_period_start(),
        jobs=page.items,
        next_cursor=page.last_id,
        paged=bool(cursor_id),
        preview_chars=JOB_PREVIEW_CHARS,
        # Read only for a job that has not finished its first chunk (the only one that needs it).
        seconds_per_character=synthesis_seconds_per_character(request.tenant) if starting else None,
    )
    return render(request, "dashboard/jobs.html", context, status=status)


def _job_limits(request: TenantRequest) -> tuple[int, int | None]:
    """Characters a new job may have now: the plan's per-job limit, or what the month has left if less
    (None: no monthly limit). Cached on the request: the form and the page both ask."""
    cached = getattr(request, "_job_limits", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    plan = request.tenant.plan
    month_left = None
    if plan.monthly_character_limit:
        month_left = max(0, plan.monthly_character_limit - usage_for_period(request.tenant).characters)
    limits = (
        min(plan.job_max_characters, month_left if month_left is not None else plan.job_max_characters),
        month_left,
    )
    request._job_limits = limits  # type: ignore[attr-defined]
    return limits


#: The session key under which the jobs page remembers the last voice and format submitted.
JOB_CHOICE_SESSION = "job_choice"


def _job_form(request: TenantRequest, data: Any = None) -> JobSubmitForm:
    voices = list(voices_served_for_tenant(request.tenant))
    # Preselected: the voice and format of the last job submitted here, else the voice for the
    # (empty, so English) text's language, not the first by name.
    default = default_voice_among(voices, "")
    initial = {"voice": default.voice_id} if default is not None else {}
    chosen = request.session.get(JOB_CHOICE_SESSION)
    if isinstance(chosen, dict):
        if any(v.voice_id == chosen.get("voice") for v in voices):
            initial["voice"] = chosen["voice"]
        if chosen.get("output_format") in DOWNLOAD_FORMATS:
            initial["output_format"] = chosen["output_format"]
    return JobSubmitForm(
        data,
        initial=initial or None,
        voices=voices,
        formats=DOWNLOAD_FORMATS,
        # The plan's per-job limit; the month's remainder is the quota's to refuse, with its own message.
        max_chars=request.tenant.plan.job_max_characters,
    )


@require_GET
@member_required
def jobs(request: TenantRequest) -> HttpResponse:
    return _jobs_page(request, _job_form(request))


@require_POST
@member_required
def job_new(request: TenantRequest) -> HttpResponse:
    form = _job_form(request, request.POST)
    if not form.is_valid():
        return _jobs_page(request, form, status=400)
    data = form.cleaned_data
    try:
        job = job_submit(
            JobRequest(
                tenant=request.tenant,
                voice_id=data["voice"],
                output_format=parse_elevenlabs_format(data["output_format"]),
                text=data["text"],
                request_id=getattr(request, "request_id", ""),
            )
        )
    except SynthesisError as exc:
        # Quota, plan limits, text with nothing to speak: said next to the form.
        form.add_error("text" if exc.field in ("text", None) else None, exc.message)
        return _jobs_page(request, form, status=exc.status if 400 <= exc.status < 500 else 400)
    request.session[JOB_CHOICE_SESSION] = {"voice": data["voice"], "output_format": data["output_format"]}
    messages.success(request, f"Submitted a job of {job.characters:,} characters. Its progress shows below.")
    return redirect("dashboard:jobs")


@require_GET
@member_required
def job_audio(request: TenantRequest, job_id: str) -> HttpResponseBase:
    """The finished job's file (a zip for a batch), as ``/v1/jobs/{id}/audio`` sends it."""
    job = _job_or_404(request, job_id)
    if job.status != Job.Status.SUCCEEDED or not job.audio:
        raise Http404("This job has no audio (not finished, failed, or past the plan's retention).")
    extension = (job.audio.name or "").rsplit(".", 1)[-1]
    response = FileResponse(job.audio.open("rb"), content_type=job.content_type)
    response["Content-Disposition"] = content_disposition(filename_for(job, extension))
    patch_cache_control(response, private=True, max_age=3600)
    return response


@require_GET
@member_required
def job_summary(request: TenantRequest, job_id: str) -> JsonResponse:
    """Where a job stands and what it was charged and refunded (the jobs page asks when one ends)."""
    job = _job_or_404(request, job_id)
    refunded = job.characters - job.characters_charged if job.is_finished else 0
    response = JsonResponse(
        {
            "job_id": str(job.pk),
            "status": job.status,
            "characters": job.characters,
            "characters_charged": job.characters_charged if job.is_finished else None,
            "refunded": refunded,
        }
    )
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@member_required
def job_cancel_view(request: TenantRequest, job_id: str) -> HttpResponse:
    job = _job_or_404(request, job_id)
    if job.is_finished:
        messages.info(request, f"That job already {job.get_status_display().lower()}; there is nothing to cancel.")
    else:
        job = job_cancel(job)
        if job.status == Job.Status.CANCELLED:
            refunded = job.characters - job.characters_charged
            messages.success(
                request,
                f"Cancelled the job; {refunded:,} characters were refunded "
                f"({job.characters_charged:,} charged for what was spoken).",
            )
        else:
            messages.success(
                request,
                "Cancelling: the job stops after the sentence it is speaking; what it has not finished is "
                "refunded then, and the refund shows on the job.",
            )
    return redirect("dashboard:jobs")
