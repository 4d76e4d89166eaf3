"""Operator admin for tenants, plans, members, API keys and usage."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.cache import add_never_cache_headers

from .keys import api_key_create, api_key_revoke
from .models import ApiKey, Membership, Plan, Tenant, Usage
from .secret_handoff import forget, hand_over, received


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "monthly_character_limit",
        "requests_per_minute",
        "max_concurrent_streams",
        "max_characters_per_request",
        "max_engine_seconds_per_request",
        "max_engine_seconds_per_job",
        "history_retention_days",
    )


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ("user",)


class UsageInline(admin.TabularInline):
    model = Usage
    extra = 0
    readonly_fields = ("period_start", "characters", "requests")
    can_delete = False
    ordering = ("-period_start",)
    max_num = 0


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "plan", "is_active", "created_at")
    list_filter = ("is_active", "plan")
    list_select_related = ("plan",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline, UsageInline]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "display_prefix", "tenant", "created_at", "last_used_at", "expires_at", "revoked_at")
    list_filter = ("revoked_at",)
    list_select_related = ("tenant",)
    search_fields = ("name", "prefix", "tenant__slug")
    raw_id_fields = ("tenant", "created_by")
    readonly_fields = ("prefix", "secret_hash", "created_at", "last_used_at", "revoked_at")
    fields = (
        "tenant",
        "name",
        "scopes",
        "expires_at",
        "prefix",
        "secret_hash",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    actions = ["revoke"]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # New keys go through the service so only the hash is stored; the
        # secret is shown once, on the page the add form redirects to.
        issued = api_key_create(
            tenant=obj.tenant,
            name=obj.name,
            scopes=obj.scopes,
            expires_at=obj.expires_at,
            created_by=request.user if isinstance(request.user, User) else None,
        )
        obj.pk = issued.api_key.pk
        obj.prefix = issued.api_key.prefix
        obj.secret_hash = issued.api_key.secret_hash
        request._new_api_key = issued.raw_key  # type: ignore[attr-defined]

    def get_urls(self) -> list[URLPattern]:
        created = path(
            "<int:key_id>/created/",
            self.admin_site.admin_view(self.created_view),
            name="accounts_apikey_created",
        )
        return [created, *super().get_urls()]

    def response_add(self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None) -> HttpResponse:
        raw_key = getattr(request, "_new_api_key", None)
        if raw_key is None:
            return super().response_add(request, obj, post_url_continue)
        # Post/redirect/get: the secret goes to the next page view in a cookie only this server can
        # read (never into the session or any table), and a reload of that page creates nothing.
        target = reverse("admin:accounts_apikey_created", args=[obj.pk])
        response = HttpResponseRedirect(target)
        hand_over(response, request, key_id=obj.pk, secret=raw_key, path=target)
        return response

    def created_view(self, request: HttpRequest, key_id: int) -> HttpResponse:
        """The page that shows a new key's secret, once; later views say it is gone."""
        key = self.get_object(request, str(key_id))
        if key is None or not self.has_view_permission(request, key):
            raise Http404("No such API key.")
        context = {
            **self.admin_site.each_context(request),
            "title": f"New API key “{key.name}”",
            "api_key": key,
            "raw_key": received(request, key_id=key.pk),
            "change_url": reverse("admin:accounts_apikey_change", args=[key.pk]),
            "list_url": reverse("admin:accounts_apikey_changelist"),
            "opts": self.opts,
        }
        response = TemplateResponse(request, "admin/accounts/apikey/created.html", context)
        forget(response, path=request.path)
        add_never_cache_headers(response)
        return response

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


@admin.register(Usage)
class UsageAdmin(admin.ModelAdmin):
    list_display = ("tenant", "period_start", "characters", "requests")
    list_select_related = ("tenant",)
    raw_id_fields = ("tenant",)
    readonly_fields = ("tenant", "period_start", "characters", "requests")
    list_filter = ("period_start",)
