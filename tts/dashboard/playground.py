"""The playground page and its recent generations (JSON, refreshed after each run).

The playground streams over the stream-input WebSocket (``static/js/playground.js``);
what it speaks lands in the history with source ``playground``, and downloads
in other formats go through the history's download route.
"""

from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.quota import characters_per_request_limit, usage_for_period
from accounts.tenancy import TenantRequest, dashboard_context, member_required
from tts.catalogue import active_model_versions, default_voice_among, language_voices, voices_served_for_tenant
from tts.errors import SynthesisError
from tts.models import PronunciationDictionary, SynthesisRecord
from tts.pronunciation import billed_characters, dictionaries_for
from tts.usage import DOWNLOAD_FORMATS, filename_for, history_for_tenant

# The playground asks the stream-input WebSocket for raw s16le that Web Audio can play as it arrives.
PLAYGROUND_FORMAT = "pcm_22050"
PLAYGROUND_SAMPLE_RATE = 22050
PLAYGROUND_MAX_CHARS = 5000
RECENT_COUNT = 5
SPEEDS = (0.75, 0.9, 1.0, 1.1, 1.25, 1.5)


def _recent(request: TenantRequest) -> list[dict[str, object]]:
    rows = history_for_tenant(request.tenant, source=SynthesisRecord.Source.PLAYGROUND).only(
        "id", "voice_id", "voice_name", "text", "characters", "duration_s", "status", "created_at", "audio"
    )[:RECENT_COUNT]
    history = reverse("dashboard:history")
    return [
        {
            "id": str(r.pk),
            "voice": r.voice_name or r.voice_id,
            "text": r.text[:80] + ("…" if len(r.text) > 80 else ""),
            "characters": r.characters,
            "duration_s": round(r.duration_s, 1),
            "status": r.status,
            "created_at": r.created_at.isoformat(),
            "history_url": f"{history}?source=playground#item-{r.pk}",
            "download_url": reverse("dashboard:history-download", args=[r.pk]) if r.audio else None,
            # The one naming rule of downloads; the page adds the extension of the format it offers.
            "file_stem": filename_for(r, "wav").removesuffix(".wav"),
        }
        for r in rows
    ]


def _limit(request: TenantRequest) -> tuple[int, int | None]:
    """Characters one run may speak, and what the month has left (None: no monthly limit)."""
    plan = request.tenant.plan
    per_request = min(characters_per_request_limit(plan), PLAYGROUND_MAX_CHARS)
    if not plan.monthly_character_limit:
        return per_request, None
    left = max(0, plan.monthly_character_limit - usage_for_period(request.tenant).characters)
    return min(per_request, left), left


PLAYGROUND_SAMPLE_TEXT = (
    "Welcome to the playground. The first sentence plays while the rest is still being synthesized."
)


@require_GET
@member_required
def playground(request: TenantRequest) -> HttpResponse:
    voices = list(voices_served_for_tenant(request.tenant))
    # The models the tenant can speak with: those serving one of its voices. The voice list offers every
    # voice, grouped by its model; choosing a voice chooses its model (static/js/playground.js).
    models = list(active_model_versions().filter(model_id__in={v.model_id for v in voices}))
    voice_groups = [(m, [v for v in voices if v.model_id == m.model_id]) for m in models]
    max_chars, month_left = _limit(request)
    # The voice for the sample text's language (English: the default voice); the page switches to the
    # voice of another language's text as it is typed, until a voice is chosen by hand.
    served = {v.voice_id: v for v in voices}
    default_voice = default_voice_among(voices, PLAYGROUND_SAMPLE_TEXT)
    context = dashboard_context(
        request,
        page="playground",
        voices=voices,
        sample_text=PLAYGROUND_SAMPLE_TEXT,
        default_voice=default_voice or (voices[0] if voices else None),
        language_voices=language_voices(served),
        models=models,
        voice_groups=[(m, group) for m, group in voice_groups if group],
        output_format=PLAYGROUND_FORMAT,
        sample_rate=PLAYGROUND_SAMPLE_RATE,
        max_chars=max_chars,
        month_left=month_left,
        formats=DOWNLOAD_FORMATS,
        speeds=SPEEDS,
        recent=_recent(request),
        api_base=request.build_absolute_uri("/").rstrip("/"),
        # Only then can the bill differ from the count, so only then does the page ask for it.
        has_default_dictionary=PronunciationDictionary.objects.filter(
            tenant=request.tenant, is_default=True, archived_at__isnull=True
        ).exists(),
    )
    return render(request, "dashboard/playground.html", context)


@require_GET
@member_required
def playground_recent(request: TenantRequest) -> JsonResponse:
    max_chars, month_left = _limit(request)
    response = JsonResponse({"items": _recent(request), "max_chars": max_chars, "month_left": month_left})
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@member_required
def playground_billed(request: TenantRequest) -> JsonResponse:
    """What Play would bill for ``text``: the tenant's default dictionaries applied, and the longer of
    the text and its spoken form billed (``billed_characters``, the pipeline's rule). The counter shows
    it beside the characters typed. Left out: the charge for normalization that expands a text past
    its free margin (``TTS_BILLING_FREE_EXPANSION_CHARS`` of numbers and dates), which the run adds."""
    text = request.POST.get("text", "").strip()
    if len(text) > PLAYGROUND_MAX_CHARS:
        return JsonResponse({"detail": f"At most {PLAYGROUND_MAX_CHARS} characters."}, status=400)
    try:
        dictionaries = dictionaries_for(request.tenant, [])
        spoken = dictionaries.apply(text) if dictionaries is not None else text
    except SynthesisError as exc:
        return JsonResponse({"detail": exc.message}, status=400)
    response = JsonResponse({"characters": len(text), "billed": billed_characters(text, spoken)})
    response["Cache-Control"] = "no-store"
    return response
