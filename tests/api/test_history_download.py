"""POST /v1/history/download: the zip is streamed (never built whole), the same id twice is one
file, the total is bounded (413 naming the setting), and it works through daphne (ASGI)."""

from __future__ import annotations

import io
import os
import zipfile

import httpx
import pytest
from django.core.files.base import ContentFile
from django.test import override_settings

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice
from tts.usage.export import history_archive_chunks

URL = "/v1/history/download"


def stored_items(ctx: TenantCtx, sizes: list[int]) -> list[SynthesisRecord]:
    records = []
    for i, size in enumerate(sizes):
        record = SynthesisRecord.objects.create(
            tenant=ctx.tenant,
            voice_id="joe",
            text=f"item {i}",
            characters=6,
            output_format="mp3_44100_128",
            source="elevenlabs",
            status="success",
        )
        record.audio.save(f"{record.pk}.mp3", ContentFile(os.urandom(size)), save=True)
        records.append(record)
    return records


@pytest.mark.django_db
def test_the_archive_is_written_in_pieces(tenant_a: TenantCtx) -> None:
    records = stored_items(tenant_a, [700_000, 500_000, 10])
    pieces = list(history_archive_chunks(records))
    # At most one 64 KiB read (plus headers) at a time, never the whole archive.
    assert len(pieces) > 15
    assert max(len(p) for p in pieces) <= 64 * 1024 + 1024
    with zipfile.ZipFile(io.BytesIO(b"".join(pieces))) as zf:
        assert zf.testzip() is None
        for record in records:
            with record.audio.open("rb") as fh:
                assert zf.read(f"{record.pk}.mp3") == fh.read()


@pytest.mark.django_db
def test_the_same_id_twice_is_one_file(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    ids = []
    for text in ("First item here.", "Second item here."):
        response = client.post("/v1/text-to-speech/joe?output_format=mp3_22050_32", {"text": text}, format="json")
        ids.append(response["history-item-id"])
    response = client.post(URL, {"history_item_ids": [ids[0], ids[1], ids[0], ids[1]] * 25}, format="json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response.streaming
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        assert sorted(zf.namelist()) == sorted(f"{i}.mp3" for i in ids)
        samples, rate = decode_audio(zf.read(f"{ids[0]}.mp3"), "mp3_22050_32")
        assert_speech(samples, rate, expected_rate=22050, text="First item here.")
    # One id sent twice is that one file, not a zip.
    single = client.post(URL, {"history_item_ids": [ids[1], ids[1]]}, format="json")
    assert single["Content-Type"] == "audio/mpeg"


@pytest.mark.django_db
@override_settings(TTS_HISTORY_DOWNLOAD_MAX_BYTES=1_000_000)
def test_a_download_past_the_bound_is_refused(tenant_a: TenantCtx) -> None:
    records = stored_items(tenant_a, [600_000, 600_000])
    response = tenant_a.client().post(URL, {"history_item_ids": [str(r.pk) for r in records]}, format="json")
    assert response.status_code == 413
    detail = response.json()["detail"]
    assert detail["status"] == "download_too_large"
    assert detail["param"] == "history_item_ids"
    assert "TTS_HISTORY_DOWNLOAD_MAX_BYTES" in detail["message"]


@pytest.mark.django_db
def test_another_tenants_id_is_404(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    mine = stored_items(tenant_a, [100])[0]
    theirs = stored_items(tenant_b, [100])[0]
    response = tenant_a.client().post(URL, {"history_item_ids": [str(mine.pk), str(theirs.pk)]}, format="json")
    assert response.status_code == 404
    assert response.json()["detail"]["param"] == "history_item_id"


@pytest.mark.django_db(transaction=True)
@pytest.mark.server
def test_it_streams_through_daphne(live_server_url: str, tenant_a: TenantCtx) -> None:
    records = stored_items(tenant_a, [300_000, 200_000])
    with httpx.stream(
        "POST",
        live_server_url + URL,
        json={"history_item_ids": [str(r.pk) for r in records]},
        headers={"xi-api-key": tenant_a.key},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        assert response.headers.get("transfer-encoding") == "chunked"
        body = b"".join(response.iter_bytes())
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        assert sorted(zf.namelist()) == sorted(f"{r.pk}.mp3" for r in records)
        assert len(zf.read(f"{records[0].pk}.mp3")) == 300_000
