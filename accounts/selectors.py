"""Reads for the dashboard: a user's memberships, the current tenant, API keys.

Every read takes the tenant (or the user) it is scoped to, so a page cannot
reach another tenant's rows by forgetting a filter.
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet

from .models import ApiKey, Membership, Tenant


def memberships_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Membership]:
    """The active tenants a user belongs to, for the switcher."""
    if not user.is_authenticated:
        return Membership.objects.none()
    return (
        Membership.objects.filter(user_id=user.pk, tenant__is_active=True)
        .select_related("tenant__plan")
        .order_by("tenant__name", "tenant_id")
    )


def membership_get(user: AbstractBaseUser | AnonymousUser, tenant_id: object) -> Membership | None:
    try:
        pk = int(str(tenant_id))
    except (TypeError, ValueError):
        return None  # a malformed id is simply not a membership
    return memberships_for_user(user).filter(tenant_id=pk).first()


def api_keys_for_tenant(tenant: Tenant) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(tenant=tenant).select_related("created_by").order_by("-created_at", "-id")


def api_key_get(tenant: Tenant, key_id: object) -> ApiKey | None:
    try:
        pk = int(str(key_id))
    except (TypeError, ValueError):
        return None
    return ApiKey.objects.filter(tenant=tenant, pk=pk).first()
