"""Dashboard pages for a tenant's account: log in and out, switch tenant,
the usage overview, and API keys (owners and admins only).

Views hold no business logic: writes go through ``accounts.keys``, reads
through ``accounts.selectors`` and ``accounts.quota``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from .forms import ApiKeyCreateForm, ApiKeyRenameForm, TenantSwitchForm
from .keys import api_key_create, api_key_rename, api_key_revoke
from .models import Scope
from .secret_handoff import COOKIE, forget, hand_over, received_key
from .selectors import api_key_get, api_keys_for_tenant
from .tenancy import TenantRequest, dashboard_context, managers_only, member_required, switch_tenant


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    """POST only (Django's default): a link or an image tag cannot log anyone out."""


@require_POST
@member_required
def tenant_switch(request: TenantRequest) -> HttpResponse:
    form = TenantSwitchForm(request.POST)
    membership = switch_tenant(request, form.cleaned_data["tenant_id"]) if form.is_valid() else None
    if membership is None:
        # Not a member (or a guessed id): the same answer as for a tenant that does not exist.
        raise Http404("No such tenant.")
    messages.success(request, f"Now working in {membership.tenant.name}.")
    target = request.POST.get("next") or "/"
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/"
    return redirect(target)


def _keys_page(request: TenantRequest, form: ApiKeyCreateForm, *, status: int = 200, **extra: object) -> HttpResponse:
    all_keys = list(api_keys_for_tenant(request.tenant))
    show_revoked = request.GET.get("revoked") == "1"
    revoked_count = sum(1 for k in all_keys if k.revoked_at is not None)
    keys = all_keys if show_revoked else [k for k in all_keys if k.revoked_at is None]
    labels = dict(Scope.choices)
    context = dashboard_context(
        request,
        page="keys",
        keys=keys,
        form=form,
        scope_labels=labels,
        show_revoked=show_revoked,
        revoked_count=revoked_count,
        **extra,
    )
    return render(request, "dashboard/keys.html", context, status=status)


@require_GET
@member_required
@managers_only
def api_keys(request: TenantRequest) -> HttpResponse:
    # A secret made by the POST before this redirect is shown on this one page view, then forgotten:
    # a reload (or the back button) shows nothing new and creates nothing. It never was on the
    # server: it came in an encrypted one-view cookie (accounts/secret_handoff.py).
    handed = received_key(request)
    key = api_key_get(request.tenant, handed[0]) if handed is not None else None
    if key is not None and handed is not None:
        response = _keys_page(request, ApiKeyCreateForm(), new_key=key, new_secret=handed[1])
    else:
        response = _keys_page(request, ApiKeyCreateForm())
    if COOKIE in request.COOKIES:
        forget(response, path=request.path)
    add_never_cache_headers(response)
    return response


@require_POST
@member_required
@managers_only
def api_key_new(request: TenantRequest) -> HttpResponse:
    form = ApiKeyCreateForm(request.POST)
    if not form.is_valid():
        return _keys_page(request, form, status=400)
    issued = api_key_create(
        tenant=request.tenant,
        name=form.cleaned_data["name"],
        scopes=form.cleaned_data["scopes"],
        expires_at=form.expires_at(),
        created_by=request.user,  # type: ignore[arg-type]
    )
    # Post/redirect/get: the secret goes to the next view of the list in a cookie only this server can
    # read, good for that one view (never into the session or any table).
    target = reverse("dashboard:keys")
    response = redirect(target)
    hand_over(response, request, key_id=issued.api_key.pk, secret=issued.raw_key, path=target)
    return response


@require_POST
@member_required
@managers_only
def api_key_rename_view(request: TenantRequest, key_id: int) -> HttpResponse:
    key = api_key_get(request.tenant, key_id)
    if key is None:
        raise Http404("No such API key.")
    form = ApiKeyRenameForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(str(e) for e in form.errors.get("name", []))
        messages.error(request, f"The key '{key.name}' keeps its name: {errors}")
        return redirect("dashboard:keys")
    old = key.name
    api_key_rename(api_key=key, name=form.cleaned_data["name"])
    messages.success(request, f"Renamed the key '{old}' to '{key.name}'.")
    return redirect("dashboard:keys")


@require_POST
@member_required
@managers_only
def api_key_revoke_view(request: TenantRequest, key_id: int) -> HttpResponse:
    key = api_key_get(request.tenant, key_id)
    if key is None:
        raise Http404("No such API key.")
    api_key_revoke(api_key=key)
    messages.success(request, f"Revoked the key '{key.name}' ({key.display_prefix}…). It no longer works.")
    return redirect("dashboard:keys")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A page that says what happened, instead of Django's bare 403."""
    return render(request, "dashboard/csrf_failure.html", {"reason": reason}, status=403)
