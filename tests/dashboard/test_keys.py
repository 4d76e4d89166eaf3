"""API keys page: create (secret shown once), list, revoke; owners and admins only."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from accounts.keys import InvalidApiKey, api_key_authenticate
from accounts.models import ApiKey, Membership
from tests.fixtures import TenantCtx, make_tenant


def test_it_creates_a_key_and_shows_the_secret_once(tenant_a: TenantCtx, owner_a: Client, joe: object) -> None:
    expires = (timezone.now() + dt.timedelta(days=10)).date()
    posted = owner_a.post(
        "/keys/new/", {"name": "web app", "scopes": ["tts", "history:read"], "expires_on": expires.isoformat()}
    )
    # Post/redirect/get: the POST answers with a redirect, the list shows the secret once.
    assert posted.status_code == 302 and posted["Location"] == "/keys/"
    response = owner_a.get("/keys/")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    secret = html.split('id="new-key-secret" class="secret" type="text" readonly value="', 1)[1].split('"', 1)[0]
    key = ApiKey.objects.get(tenant=tenant_a.tenant, name="web app")
    assert api_key_authenticate(secret).pk == key.pk
    assert key.scopes == ["tts", "history:read"]
    assert key.expires_at == dt.datetime.combine(expires, dt.time.min, tzinfo=dt.UTC)
    assert key.created_by_id == tenant_a.owner.pk  # type: ignore[attr-defined]
    # The key works against the API, within its scopes.
    spoken = tenant_a.client(secret).post(
        "/v1/text-to-speech/joe?output_format=pcm_16000", {"text": "Hi."}, format="json"
    )
    assert spoken.status_code == 200 and len(spoken.content) > 1000
    assert tenant_a.client(secret).get("/v1/voices").status_code == 403
    listing = owner_a.get("/keys/").content.decode()
    assert secret not in listing
    assert f"tts_{key.prefix}…" in listing and "history:read" in listing


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "", "scopes": ["tts"]}, "Name: This field is required."),
        ({"name": "no scopes"}, "Scopes: Choose at least one scope."),
        ({"name": "bad scope", "scopes": ["root"]}, "Scopes: Select a valid choice."),
        (
            {"name": "past", "scopes": ["tts"], "expires_on": "2001-01-01"},
            "Expiry: The expiry date must be in the future.",
        ),
    ],
)
def test_it_names_the_field_in_errors(tenant_a: TenantCtx, owner_a: Client, data: dict, message: str) -> None:
    before = ApiKey.objects.count()
    response = owner_a.post("/keys/new/", data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert ApiKey.objects.count() == before


def test_it_revokes_a_key_and_the_api_refuses_it(tenant_a: TenantCtx, owner_a: Client) -> None:
    response = owner_a.post(f"/keys/{tenant_a.api_key.pk}/revoke/")
    assert response.status_code == 302
    tenant_a.api_key.refresh_from_db()
    assert tenant_a.api_key.revoked_at is not None
    with pytest.raises(InvalidApiKey):
        api_key_authenticate(tenant_a.key)
    refused = tenant_a.client().get("/v1/voices")
    assert refused.status_code == 401
    assert "revoked" in refused.content.decode()
    assert "revoked" in owner_a.get("/keys/").content.decode()
    assert owner_a.get(f"/keys/{tenant_a.api_key.pk}/revoke/").status_code == 405


def test_it_keeps_members_out_of_key_management(tenant_a: TenantCtx, member_a: Client) -> None:
    assert member_a.get("/keys/").status_code == 403
    assert member_a.post("/keys/new/", {"name": "x", "scopes": ["tts"]}).status_code == 403
    assert member_a.post(f"/keys/{tenant_a.api_key.pk}/revoke/").status_code == 403
    tenant_a.api_key.refresh_from_db()
    assert tenant_a.api_key.revoked_at is None
    assert b"API keys" not in member_a.get("/").content  # no nav link either


def test_it_lets_admins_manage_keys(tenant_a: TenantCtx, django_user_model: type) -> None:
    admin = django_user_model.objects.create_user(username="alpha-admin", password="pw-alpha-admin")
    Membership.objects.create(user=admin, tenant=tenant_a.tenant, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    assert client.get("/keys/").status_code == 200
    assert client.post("/keys/new/", {"name": "by admin", "scopes": ["tts"]}).status_code == 302
    assert 'id="new-key-secret"' in client.get("/keys/").content.decode()


def test_a_reload_after_creating_a_key_shows_nothing_new_and_creates_nothing(
    tenant_a: TenantCtx, owner_a: Client
) -> None:
    before = ApiKey.objects.count()
    owner_a.post("/keys/new/", {"name": "once", "scopes": ["tts"]})
    first = owner_a.get("/keys/").content.decode()
    assert 'id="new-key-secret"' in first
    reloaded = owner_a.get("/keys/").content.decode()
    assert 'id="new-key-secret"' not in reloaded and "tts_" in reloaded
    assert ApiKey.objects.count() == before + 1


def test_revoked_keys_hide_behind_a_toggle(tenant_a: TenantCtx, owner_a: Client) -> None:
    owner_a.post("/keys/new/", {"name": "still here", "scopes": ["tts"]})
    owner_a.post(f"/keys/{tenant_a.api_key.pk}/revoke/")
    listing = owner_a.get("/keys/").content.decode()
    assert f'data-key-prefix="{tenant_a.api_key.prefix}"' not in listing
    assert "still here" in listing and "Show revoked keys (1)" in listing
    shown = owner_a.get("/keys/?revoked=1").content.decode()
    assert f'data-key-prefix="{tenant_a.api_key.prefix}"' in shown and "Hide revoked keys (1)" in shown


def test_it_renames_a_key_and_the_key_still_works(tenant_a: TenantCtx, owner_a: Client, joe: object) -> None:
    response = owner_a.post(f"/keys/{tenant_a.api_key.pk}/rename/", {"name": "  billing service  "})
    assert response.status_code == 302
    tenant_a.api_key.refresh_from_db()
    assert tenant_a.api_key.name == "billing service"
    assert api_key_authenticate(tenant_a.key).pk == tenant_a.api_key.pk
    assert "Renamed the key" in owner_a.get("/keys/").content.decode()
    blank = owner_a.post(f"/keys/{tenant_a.api_key.pk}/rename/", {"name": "   "}, follow=True)
    assert "keeps its name" in blank.content.decode()
    tenant_a.api_key.refresh_from_db()
    assert tenant_a.api_key.name == "billing service"


def test_it_renames_only_its_own_tenants_keys(tenant_a: TenantCtx, owner_a: Client) -> None:
    other = make_tenant("beta")
    assert owner_a.post(f"/keys/{other.api_key.pk}/rename/", {"name": "mine now"}).status_code == 404
    other.api_key.refresh_from_db()
    assert other.api_key.name == "beta key"


def _sessions_text() -> str:
    from django.contrib.sessions.models import Session

    rows = list(Session.objects.all())
    assert rows  # the owner's session is a row: what it holds is what is checked
    return " ".join(f"{s.session_data} {s.get_decoded()}" for s in rows)


def test_the_new_secret_is_never_in_the_session_table(tenant_a: TenantCtx, owner_a: Client) -> None:
    from accounts.secret_handoff import COOKIE

    posted = owner_a.post("/keys/new/", {"name": "no trace", "scopes": ["tts"]})
    handed = posted.cookies[COOKIE]
    assert handed["httponly"] and handed["path"] == "/keys/" and handed["samesite"] == "Strict"
    held = _sessions_text()  # between the POST and the page that shows it
    html = owner_a.get("/keys/").content.decode()
    secret = html.split('id="new-key-secret" class="secret" type="text" readonly value="', 1)[1].split('"', 1)[0]
    assert api_key_authenticate(secret).name == "no trace"
    body = secret.split("_", 2)[2]  # tts_<prefix>_<body>: the body itself may hold "_"
    assert body not in held and body not in _sessions_text()
    assert body not in handed.value  # the cookie is encrypted: no secret in the browser's store either
    # Shown once: the cookie is deleted, and sent again it shows nothing (the session's nonce is used up).
    assert owner_a.cookies[COOKIE].value == ""
    owner_a.cookies[COOKIE] = handed.value
    assert 'id="new-key-secret"' not in owner_a.get("/keys/").content.decode()


def test_a_handed_secret_is_worthless_in_another_session_or_tenant(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client
) -> None:
    from accounts.secret_handoff import COOKIE

    handed = owner_a.post("/keys/new/", {"name": "elsewhere", "scopes": ["tts"]}).cookies[COOKIE].value
    other = Client()
    other.force_login(tenant_a.owner)  # type: ignore[arg-type]
    other.cookies[COOKIE] = handed
    assert 'id="new-key-secret"' not in other.get("/keys/").content.decode()
    beta = Client()
    beta.force_login(tenant_b.owner)  # type: ignore[arg-type]
    beta.cookies[COOKIE] = handed
    assert "elsewhere" not in beta.get("/keys/").content.decode()
    assert 'id="new-key-secret"' in owner_a.get("/keys/").content.decode()  # the right session still sees it once
