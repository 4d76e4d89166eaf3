"""The dashboard's pronunciation page: upload a PLS file, mark it default, download it, tenant-scoped."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.dashboard.conftest import login
from tests.fixtures import TenantCtx
from tts.models import PronunciationDictionary
from tts.pronunciation.dictionaries import latest_version

PLS = b"""<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>UN</grapheme><alias>United Nations</alias></lexeme>
</lexicon>"""


def test_upload_default_and_download(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    client: Client = login(tenant_a)
    response = client.post(
        "/pronunciation/",
        {"action": "upload", "name": "acronyms", "file": SimpleUploadedFile("a.pls", PLS, "application/pls+xml")},
        follow=True,
    )
    assert response.status_code == 200 and "created with 1 rules" in response.content.decode()
    made = PronunciationDictionary.objects.get(tenant=tenant_a.tenant)
    version = made.versions.get()
    html = client.get("/pronunciation/").content.decode()
    assert made.dictionary_id in html and "Make default" in html

    client.post("/pronunciation/", {"action": "default", "dictionary_id": made.dictionary_id})
    made.refresh_from_db()
    assert made.is_default

    pls = client.get(f"/pronunciation/{made.dictionary_id}/{version.version_id}.pls")
    assert pls.status_code == 200 and b"<alias>United Nations</alias>" in pls.content

    bad = client.post(
        "/pronunciation/",
        {"action": "upload", "name": "x", "file": SimpleUploadedFile("x.pls", b"<html/>")},
        follow=True,
    )
    assert "not a PLS document" in bad.content.decode()
    other: Client = login(tenant_b)
    assert other.get(f"/pronunciation/{made.dictionary_id}/{version.version_id}.pls").status_code == 404
    assert made.dictionary_id not in other.get("/pronunciation/").content.decode()


def test_edit_renames_makes_a_new_version_and_delete_archives(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    client: Client = login(tenant_a)
    client.post("/pronunciation/", {"action": "upload", "name": "acronyms", "file": SimpleUploadedFile("a.pls", PLS)})
    made = PronunciationDictionary.objects.get(tenant=tenant_a.tenant)
    edit = f"/pronunciation/{made.dictionary_id}/"
    page = client.get(edit).content.decode()
    assert 'value="acronyms"' in page and "United Nations" in page
    # A new name only: the rules stay at version 1.
    assert client.post(edit, {"name": "Acronyms", "description": "UN and co."}).status_code == 302
    made.refresh_from_db()
    assert (made.name, made.description, made.versions.count()) == ("Acronyms", "UN and co.", 1)
    # A new PLS: its rules are version 2; a broken one is said beside the field and changes nothing.
    other = PLS.replace(b"United Nations", b"the United Nations")
    saved = client.post(edit, {"name": "Acronyms", "file": SimpleUploadedFile("b.pls", other)}, follow=True)
    assert "Its rules are version 2 now (1 rules)" in saved.content.decode()
    assert latest_version(made).rules[0]["alias"] == "the United Nations"
    bad = client.post(edit, {"name": "Acronyms", "file": SimpleUploadedFile("c.pls", b"<html/>")})
    assert bad.status_code == 400 and "c.pls: not a PLS document" in bad.content.decode()
    assert client.post(edit, {"name": "  "}).status_code == 400
    assert made.versions.count() == 2
    # Another tenant can neither edit nor delete it.
    outsider: Client = login(tenant_b)
    assert outsider.get(edit).status_code == 404
    assert outsider.post(f"{edit}delete/").status_code == 404
    # Deleting archives it: gone from the list and from the defaults, its versions kept for history.
    client.post("/pronunciation/", {"action": "default", "dictionary_id": made.dictionary_id})
    assert client.post(f"{edit}delete/").status_code == 302
    made.refresh_from_db()
    assert made.archived_at is not None and not made.is_default and made.versions.count() == 2
    assert made.dictionary_id not in client.get("/pronunciation/").content.decode()
    assert client.get(edit).status_code == 404
