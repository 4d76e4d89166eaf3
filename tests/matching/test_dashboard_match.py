"""The dashboard's "match a voice from a recording" form: consent box, files, progress page."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.fixtures import TenantCtx
from tests.matching.recordings import joe_wav
from tts.matching import voice_match_run
from tts.models import Voice, VoiceMatch


@pytest.fixture
def owner(tenant_a: TenantCtx) -> Client:
    client = Client()
    client.force_login(tenant_a.owner)  # type: ignore[arg-type]
    return client


def test_it_needs_the_consent_box(owner: Client, tenant_a: TenantCtx, joe: Voice) -> None:
    page = owner.get("/voices/match/")
    assert page.status_code == 200 and b'name="consent"' in page.content and b"not cloning" in page.content
    wav = joe_wav(tenant_a, "A short sentence spoken for the dashboard test.")
    refused = owner.post(
        "/voices/match/", {"name": "Mine", "language": "en", "recordings": SimpleUploadedFile("a.wav", wav)}
    )
    assert refused.status_code == 400 and b"consent" in refused.content.lower()
    assert not VoiceMatch.objects.exists()
    bad = owner.post(
        "/voices/match/",
        {"name": "Mine", "language": "en", "consent": "true", "recordings": SimpleUploadedFile("a.txt", b"not audio")},
    )
    assert bad.status_code == 400 and b"a.txt" in bad.content


def test_it_queues_a_match_and_shows_its_progress(
    owner: Client, tenant_a: TenantCtx, joe: Voice, kokoro: Voice, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.TTS_MATCH_MAX_CANDIDATES = 1
    wav = joe_wav(tenant_a, "A short sentence spoken for the dashboard test.")
    response = owner.post(
        "/voices/match/",
        {"name": "Mine", "language": "en", "consent": "true", "recordings": SimpleUploadedFile("a.wav", wav)},
    )
    assert response.status_code == 302
    match = VoiceMatch.objects.get(tenant=tenant_a.tenant)
    assert response["Location"] == f"/voices/match/{match.voice_id}/"
    assert b"Queued" in owner.get(response["Location"]).content
    voice_match_run(match.pk)
    done = owner.get(response["Location"]).content.decode()
    assert "Matched (not cloned)" in done and match.voice_id in done
    assert match.voice_id in owner.get("/voices/").content.decode()
