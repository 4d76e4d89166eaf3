"""The dashboard's pronunciation pages: a tenant's dictionaries listed, added from a PLS file, marked
default, edited (name, description, new rules as a new version), deleted, and downloaded as PLS.

Deleting archives: the dictionary leaves the list and stops applying by default, while its
versions stay for the history items that name them (an operator can restore it in the admin).
Rules change through ``tts.pronunciation.dictionaries`` (each change is a new, immutable version).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.tenancy import TenantRequest, dashboard_context, member_required
from tts.dashboard.forms import PronunciationDictionaryForm
from tts.errors import SynthesisError
from tts.models import PronunciationDictionary
from tts.pronunciation import dictionary_change, dictionary_create, dictionary_get, latest_version, version_get
from tts.text.lexicon import Rule, to_pls
from tts.usage import content_disposition

#: Dictionaries the list shows; rules the edit page shows of the latest version.
LIST_SIZE = 200
RULES_SHOWN = 500


def _dictionary_or_404(request: TenantRequest, dictionary_id: str) -> PronunciationDictionary:
    try:
        made = dictionary_get(request.tenant, dictionary_id)
    except SynthesisError as exc:
        raise Http404(exc.message) from exc
    if made.archived_at is not None:
        raise Http404("That dictionary was deleted.")
    return made


def _list_page(request: TenantRequest, form: PronunciationDictionaryForm, *, status: int = 200) -> HttpResponse:
    rows = [
        (d, latest_version(d))
        for d in PronunciationDictionary.objects.filter(tenant=request.tenant, archived_at__isnull=True)[:LIST_SIZE]
    ]
    context = dashboard_context(request, page="pronunciation", dictionaries=rows, form=form)
    return render(request, "dashboard/pronunciation.html", context, status=status)


@require_http_methods(["GET", "POST"])
@member_required
def pronunciation(request: TenantRequest) -> HttpResponseBase:
    """The list; POST adds a dictionary from a PLS file (``action=upload``) or toggles a default."""
    if request.method != "POST":
        return _list_page(request, PronunciationDictionaryForm())
    if request.POST.get("action") == "default":
        made = _dictionary_or_404(request, request.POST.get("dictionary_id", ""))
        made.is_default = not made.is_default
        made.save(update_fields=["is_default"])
        messages.success(
            request,
            f"“{made.name}” {'now applies' if made.is_default else 'no longer applies'} "
            "to requests that name no dictionary.",
        )
        return redirect("dashboard:pronunciation")
    form = PronunciationDictionaryForm(request.POST, request.FILES)
    if not form.is_valid():
        return _list_page(request, form, status=400)
    try:
        made, version = dictionary_create(
            tenant=request.tenant,
            name=form.cleaned_data["name"],
            rules=form.cleaned_data["file"],
            description=form.cleaned_data["description"],
            created_by=request.user.get_username(),
        )
    except SynthesisError as exc:
        form.add_error("file", exc.message)
        return _list_page(request, form, status=exc.status if 400 <= exc.status < 500 else 400)
    messages.success(request, f"Dictionary “{made.name}” created with {len(version.rules)} rules.")
    return redirect("dashboard:pronunciation")


@require_http_methods(["GET", "POST"])
@member_required
def pronunciation_edit(request: TenantRequest, dictionary_id: str) -> HttpResponse:
    """One dictionary: rename it, describe it, replace its rules (the next version)."""
    made = _dictionary_or_404(request, dictionary_id)
    initial = {"name": made.name, "description": made.description}
    form = PronunciationDictionaryForm(request.POST or None, request.FILES or None, initial=initial, editing=True)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            rules = form.cleaned_data["file"]
            try:
                version = dictionary_change(made, replace=rules) if rules is not None else None
            except SynthesisError as exc:
                form.add_error("file", exc.message)
            else:
                made.name, made.description = form.cleaned_data["name"], form.cleaned_data["description"]
                made.save(update_fields=["name", "description"])
                saved = f" Its rules are version {version.number} now ({len(version.rules)} rules)." if version else ""
                messages.success(request, f"Saved “{made.name}”.{saved}")
                return redirect("dashboard:pronunciation")
        status = 400
    latest = latest_version(made)
    context = dashboard_context(
        request,
        page="pronunciation",
        dictionary=made,
        form=form,
        latest=latest,
        rules=[Rule.from_json(r) for r in latest.rules[:RULES_SHOWN]],
        more_rules=max(0, len(latest.rules) - RULES_SHOWN),
        versions=list(made.versions.only("version_id", "number", "created_at").order_by("-number")[:20]),
    )
    return render(request, "dashboard/pronunciation_edit.html", context, status=status)


@require_POST
@member_required
def pronunciation_delete(request: TenantRequest, dictionary_id: str) -> HttpResponse:
    made = _dictionary_or_404(request, dictionary_id)
    made.archived_at, made.is_default = timezone.now(), False
    made.save(update_fields=["archived_at", "is_default"])
    messages.success(request, f"Deleted the dictionary “{made.name}”; it no longer applies to requests by default.")
    return redirect("dashboard:pronunciation")


@require_GET
@member_required
def pronunciation_download(request: TenantRequest, dictionary_id: str, version_id: str) -> HttpResponse:
    try:
        made = dictionary_get(request.tenant, dictionary_id)
        version = version_get(made, version_id)
    except SynthesisError as exc:
        raise Http404(exc.message) from exc
    response = HttpResponse(to_pls([Rule.from_json(r) for r in version.rules]), content_type="application/pls+xml")
    response["Content-Disposition"] = content_disposition(f"{made.dictionary_id}_{version.number}.pls")
    return response
