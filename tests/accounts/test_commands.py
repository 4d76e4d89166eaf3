"""manage.py createtenant and createapikey."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from accounts.keys import api_key_authenticate
from accounts.models import Membership, Plan, Tenant


@pytest.mark.django_db
def test_it_creates_a_tenant_with_an_owner_and_a_key(capsys: pytest.CaptureFixture[str]) -> None:
    Plan.objects.create(name="pro", monthly_character_limit=1_000_000)
    call_command("createtenant", "Acme Corp", "--plan", "pro", "--owner", "alice")
    tenant = Tenant.objects.get(slug="acme-corp")
    assert tenant.plan.name == "pro"
    assert Membership.objects.get(tenant=tenant).role == "owner"
    capsys.readouterr()
    call_command("createapikey", "acme-corp", "--name", "ci", "--scopes", "tts,voices:read", "--expires-days", "7")
    raw = capsys.readouterr().out.strip()
    key = api_key_authenticate(raw)
    assert key.tenant == tenant and key.scopes == ["tts", "voices:read"] and key.expires_at is not None


@pytest.mark.django_db
def test_it_refuses_unknown_plans_tenants_and_scopes() -> None:
    with pytest.raises(CommandError, match="No plan"):
        call_command("createtenant", "Acme", "--plan", "gold")
    with pytest.raises(CommandError, match="No tenant"):
        call_command("createapikey", "nobody")
    call_command("createtenant", "Acme")
    with pytest.raises(CommandError, match="already exists"):
        call_command("createtenant", "Acme", "--slug", "acme")
    with pytest.raises(CommandError, match="unknown scopes: fly"):
        call_command("createapikey", "acme", "--scopes", "tts,fly")
    assert Tenant.objects.count() == 1
