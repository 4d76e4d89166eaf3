"""GET/DELETE /v1/history...: cursor pagination, filters, audio, download, query counts."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

from django.utils import timezone

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice


def make_records(ctx: TenantCtx, n: int, **fields: object) -> list[SynthesisRecord]:
    now = timezone.now()
    records = [
        SynthesisRecord(
            tenant=ctx.tenant,
            voice_id=str(fields.get("voice_id", "joe")),
            text=f"item {i}",
            characters=6,
            output_format="mp3_44100_128",
            source=str(fields.get("source", "elevenlabs")),
            status="success",
            created_at=now - dt.timedelta(seconds=i),
        )
        for i in range(n)
    ]
    return SynthesisRecord.objects.bulk_create(records)


def test_it_pages_with_a_cursor(tenant_a: TenantCtx, django_assert_max_num_queries) -> None:
    make_records(tenant_a, 25)
    client = tenant_a.client()
    seen: list[str] = []
    cursor = None
    while True:
        url = "/v1/history?page_size=10" + (f"&start_after_history_item_id={cursor}" if cursor else "")
        with django_assert_max_num_queries(6):
            page = client.get(url).json()
        seen += [item["history_item_id"] for item in page["history"]]
        if not page["has_more"]:
            break
        cursor = page["last_history_item_id"]
    assert len(seen) == len(set(seen)) == 25
    texts = [SynthesisRecord.objects.get(pk=i).text for i in seen]
    assert texts == [f"item {i}" for i in range(25)]


def test_it_filters_by_voice_source_and_date(tenant_a: TenantCtx) -> None:
    make_records(tenant_a, 3, voice_id="joe")
    make_records(tenant_a, 2, voice_id="other", source="openai")
    client = tenant_a.client()
    assert len(client.get("/v1/history?voice_id=other").json()["history"]) == 2
    assert len(client.get("/v1/history?source=openai").json()["history"]) == 2
    future = int((timezone.now() + dt.timedelta(hours=1)).timestamp())
    assert client.get(f"/v1/history?date_after_unix={future}").json()["history"] == []
    response = client.get("/v1/history?page_size=0")
    assert response.status_code == 400 and response.json()["detail"]["param"] == "page_size"


def test_it_returns_deletes_and_downloads_real_audio(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    ids = []
    for text in ("First item here.", "Second item here."):
        response = client.post("/v1/text-to-speech/joe?output_format=mp3_22050_32", {"text": text}, format="json")
        ids.append(response["history-item-id"])

    item = client.get(f"/v1/history/{ids[0]}").json()
    assert item["text"] == "First item here." and item["state"] == "created" and item["has_audio"]
    assert item["character_count_change_to"] == len("First item here.")

    audio = client.get(f"/v1/history/{ids[0]}/audio")
    assert audio.status_code == 200 and audio["Content-Type"] == "audio/mpeg"
    samples, rate = decode_audio(b"".join(audio.streaming_content), "mp3_22050_32")
    assert_speech(samples, rate, expected_rate=22050, text="First item here.")

    archive = client.post("/v1/history/download", {"history_item_ids": ids}, format="json")
    assert archive["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(b"".join(archive.streaming_content))) as zf:
        assert sorted(zf.namelist()) == sorted(f"{i}.mp3" for i in ids)

    assert client.delete(f"/v1/history/{ids[0]}").json() == {"status": "ok"}
    assert client.get(f"/v1/history/{ids[0]}").status_code == 404
    assert client.get(f"/v1/history/{ids[0]}/audio").status_code == 404
    assert client.delete(f"/v1/history/{ids[0]}").status_code == 404
    assert [i["history_item_id"] for i in client.get("/v1/history").json()["history"]] == [ids[1]]
    # The row stays for usage, emptied of what was said and made.
    gone = SynthesisRecord.objects.get(pk=ids[0])
    assert gone.deleted_at is not None and gone.text == "" and not gone.audio and gone.alignment is None
    assert gone.characters == len("First item here.")


def test_a_pending_item_is_not_deleted_until_it_ends(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    response = client.post("/v1/text-to-speech/joe?output_format=pcm_16000", {"text": "Soon done."}, format="json")
    SynthesisRecord.objects.filter(pk=response["history-item-id"]).update(status="pending")
    refused = client.delete(f"/v1/history/{response['history-item-id']}")
    assert refused.status_code == 409
    assert refused.json()["detail"]["status"] == "history_item_pending"
    assert SynthesisRecord.objects.get(pk=response["history-item-id"]).deleted_at is None


def test_it_has_no_audio_when_logging_was_off(tenant_a: TenantCtx, joe: Voice) -> None:
    client = tenant_a.client()
    response = client.post("/v1/text-to-speech/joe?enable_logging=false", {"text": "Private."}, format="json")
    item_id = response["history-item-id"]
    assert client.get(f"/v1/history/{item_id}").json()["text"] is None
    assert client.get(f"/v1/history/{item_id}/audio").status_code == 404


def test_it_answers_404_for_malformed_ids(tenant_a: TenantCtx) -> None:
    assert tenant_a.client().get("/v1/history/not-a-uuid").status_code == 404
