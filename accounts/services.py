"""Writes for tenants and members (keys live in accounts/keys.py, quota in accounts/quota.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.utils.text import slugify

from .models import Membership, Plan, Tenant

DEFAULT_PLAN = "free"


def plan_get_default() -> Plan:
    plan, _ = Plan.objects.get_or_create(name=DEFAULT_PLAN)
    return plan


def tenant_create(*, name: str, slug: str | None = None, plan: Plan | None = None) -> Tenant:
    slug = slug or slugify(name)
    if not slug:
        raise ValueError("a tenant needs a name with letters or digits")
    return Tenant.objects.create(name=name, slug=slug, plan=plan or plan_get_default())


def membership_add(*, tenant: Tenant, user: User, role: str = Membership.Role.MEMBER) -> Membership:
    membership, created = Membership.objects.get_or_create(tenant=tenant, user=user, defaults={"role": role})
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return membership
