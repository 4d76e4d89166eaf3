"""The dashboard's "match a voice from a recording" form and its progress page (docs/matching.md).

The same service as ``POST /v1/voices/add`` (``tts.matching.voice_match_submit``): the consent
checkbox is the API's ``consent`` field, and the files' 400s show beside the form. The progress page
follows the match while it is queued or running (``static/js/voice_match.js``)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from accounts.tenancy import TenantRequest, dashboard_context, member_required
from tts.errors import SynthesisError
from tts.matching import MATCH_TEXTS, voice_match_get, voice_match_submit
from tts.models import VoiceMatch


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        return [single(d, initial) for d in data] if isinstance(data, list | tuple) else [single(data, initial)]


class VoiceMatchForm(forms.Form):
    name = forms.CharField(label="Name", max_length=100)
    language = forms.ChoiceField(label="Language of the recording", choices=[(c, c) for c in MATCH_TEXTS])
    recordings = MultipleFileField(label="Recordings (WAV, MP3, FLAC, OGG or M4A)", widget=MultipleFileInput())
    consent = forms.BooleanField(
        label="I have the right to use this voice, and the person speaking agreed to it being matched.",
        error_messages={"required": "Tick the consent box: a voice is matched only with the speaker's agreement."},
    )


def _page(request: TenantRequest, form: VoiceMatchForm, *, status: int = 200) -> HttpResponse:
    # A refused submit opens focused on the first field to fix (the consent box, say), under the errors.
    first_invalid = next((name for name in form.fields if name in form.errors), "")
    context = dashboard_context(request, page="voices", form=form, first_invalid=first_invalid)
    return render(request, "dashboard/voice_match.html", context, status=status)


@require_http_methods(["GET", "POST"])
@member_required
def voice_match_new(request: TenantRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request, VoiceMatchForm(initial={"language": "en"}))
    form = VoiceMatchForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, form, status=400)
    files = request.FILES.getlist("recordings")
    try:
        match = voice_match_submit(
            tenant=request.tenant,
            name=form.cleaned_data["name"],
            files=[(f.name or "file", f, int(f.size or 0)) for f in files],
            consent=form.cleaned_data["consent"],
            labels={"language": form.cleaned_data["language"]},
        )
    except SynthesisError as exc:
        message = exc.message.split(": ", 1)[-1]
        form.add_error(exc.field if exc.field in form.fields else None, message[:1].upper() + message[1:])
        return _page(request, form, status=exc.status if 400 <= exc.status < 500 else 400)
    return redirect("dashboard:voice-match", voice_id=match.voice_id)


@require_GET
@member_required
def voice_match_status(request: TenantRequest, voice_id: str) -> HttpResponse:
    match = voice_match_get(request.tenant, voice_id)
    if match is None:
        raise Http404("No such voice match.")
    finished = match.status in (VoiceMatch.Status.SUCCEEDED, VoiceMatch.Status.FAILED)
    context = dashboard_context(
        request, page="voices", match=match, percent=round(100 * match.progress), finished=finished
    )
    return render(request, "dashboard/voice_match_status.html", context)
