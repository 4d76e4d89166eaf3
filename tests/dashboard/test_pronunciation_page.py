"""The dashboard's pronunciation page: upload a PLS file, mark it default, download it, tenant-scoped."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.dashboard.conftest import login
from tests.fixtures import TenantCtx
from tts.models import PronunciationDictionary

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
