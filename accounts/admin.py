"""Operator admin for tenants, plans, members, API keys and usage."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from .keys import api_key_create, api_key_revoke
from .models import ApiKey, Membership, Plan, Tenant, Usage


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "monthly_character_limit",
        "requests_per_minute",
        "max_concurrent_streams",
        "max_characters_per_request",
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
        # secret is shown this once.
        issued = api_key_create(
            tenant=obj.tenant, name=obj.name, scopes=obj.scopes, expires_at=obj.expires_at,
            created_by=request.user if isinstance(request.user, User) else None,
        )
        obj.pk = issued.api_key.pk
        obj.prefix = issued.api_key.prefix
        obj.secret_hash = issued.api_key.secret_hash
        # Shown in this response only: a message would travel in the messages cookie
        # (signed, not encrypted) or sit in the session store.
        request._new_api_key = issued.raw_key  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None) -> HttpResponse:
        raw_key = getattr(request, "_new_api_key", None)
        if raw_key is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "api_key": obj,
            "raw_key": raw_key,
            "change_url": reverse("admin:accounts_apikey_change", args=[obj.pk]),
            "list_url": reverse("admin:accounts_apikey_changelist"),
            "opts": self.opts,
        }
        response = TemplateResponse(request, "admin/accounts/apikey/created.html", context)
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
