"""Dashboard test helpers: logged-in Django test clients and history rows made in bulk."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import Membership
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord


def login(ctx: TenantCtx, *, enforce_csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=enforce_csrf)
    client.force_login(ctx.owner)  # type: ignore[arg-type]
    return client


def make_records(
    ctx: TenantCtx, n: int, *, start: dt.datetime | None = None, **fields: object
) -> list[SynthesisRecord]:
    """``n`` history rows one second apart, newest first, without running the engine."""
    now = start or timezone.now()
    defaults: dict[str, object] = {
        "voice_id": "joe",
        "voice_name": "Joe",
        "characters": 6,
        "output_format": "mp3_44100_128",
        "content_type": "audio/mpeg",
        "source": "elevenlabs",
        "status": "success",
    }
    defaults.update(fields)
    records = [
        SynthesisRecord(
            tenant=ctx.tenant, text=f"{ctx.tenant.slug} item {i}", created_at=now - dt.timedelta(seconds=i), **defaults
        )  # type: ignore[misc]
        for i in range(n)
    ]
    return SynthesisRecord.objects.bulk_create(records)


@pytest.fixture
def owner_a(tenant_a: TenantCtx) -> Client:
    return login(tenant_a)


@pytest.fixture
def member_a(tenant_a: TenantCtx, django_user_model: type) -> Client:
    """A plain member (not owner/admin) of tenant A."""
    user = django_user_model.objects.create_user(username="alpha-member", password="pw-alpha-member")
    Membership.objects.create(user=user, tenant=tenant_a.tenant, role=Membership.Role.MEMBER)
    client = Client()
    client.force_login(user)
    return client
