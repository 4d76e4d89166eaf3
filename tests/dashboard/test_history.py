"""History page: keyset pages with bounded queries, filters, audio, download, captions, delete."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client
from django.utils import timezone

from tests.audio_checks import assert_speech, decode_audio
from tests.dashboard.conftest import make_records
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

TEXT = "The lighthouse keeper climbed the stairs. The lamp was already burning."


def _ids(html: str) -> list[str]:
    return re.findall(r'data-item-id="([0-9a-f-]{36})"', html)


def test_it_pages_through_history_with_a_bounded_number_of_queries(
    tenant_a: TenantCtx, owner_a: Client, django_assert_max_num_queries
) -> None:
    make_records(tenant_a, 60)
    seen: list[str] = []
    url = "/history/"
    for _ in range(5):
        # session, user, membership, switcher, voices, cursor, page: the same on every page, whatever the size.
        with django_assert_max_num_queries(8):
            response = owner_a.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        seen += _ids(html)
        match = re.search(r'href="\?before=([0-9a-f-]{36})" rel="next"', html)
        if not match:
            break
        url = f"/history/?before={match.group(1)}"
    assert len(seen) == len(set(seen)) == 60
    texts = list(SynthesisRecord.objects.filter(pk__in=seen).values_list("pk", "text"))
    order = {str(pk): text for pk, text in texts}
    assert [order[i] for i in seen] == [f"alpha item {i}" for i in range(60)]


def test_it_filters_by_voice_source_status_and_date(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    make_records(tenant_a, 3)
    make_records(tenant_a, 2, source="openai", status="failed")
    make_records(tenant_a, 1, start=timezone.now() - dt.timedelta(days=5))
    assert len(_ids(owner_a.get("/history/?source=openai").content.decode())) == 2
    assert len(_ids(owner_a.get("/history/?status=failed").content.decode())) == 2
    assert len(_ids(owner_a.get("/history/?voice=joe").content.decode())) == 6
    # A voice that no longer exists can still be filtered on.
    assert len(_ids(owner_a.get("/history/?voice=retired-voice").content.decode())) == 0
    old = (timezone.now() - dt.timedelta(days=5)).date().isoformat()
    assert len(_ids(owner_a.get(f"/history/?date_from={old}&date_to={old}").content.decode())) == 1
    empty = owner_a.get("/history/?source=job").content.decode()
    assert "Nothing matches these filters" in empty
    bad = owner_a.get("/history/?source=nonsense&voice=no+way&date_from=2026-02-02&date_to=2026-01-01")
    assert bad.status_code == 400
    html = bad.content.decode()
    assert (
        "Source: Select a valid choice." in html and "To: &#x27;To&#x27; must be on or after &#x27;From&#x27;." in html
    )


def test_it_says_when_there_is_no_history(tenant_a: TenantCtx, owner_a: Client) -> None:
    html = owner_a.get("/history/").content.decode()
    assert 'id="history-empty"' in html and "No history yet" in html


@pytest.fixture
def spoken(tenant_a: TenantCtx, joe: Voice) -> SynthesisRecord:
    response = tenant_a.client().post(
        "/v1/text-to-speech/joe?output_format=mp3_44100_128", {"text": TEXT}, format="json"
    )
    assert response.status_code == 200
    return SynthesisRecord.objects.get(pk=response["history-item-id"])


def test_it_plays_and_downloads_real_audio_in_a_chosen_format(owner_a: Client, spoken: SynthesisRecord) -> None:
    html = owner_a.get("/history/").content.decode()
    assert f'<audio controls preload="none" src="/history/{spoken.pk}/audio/"' in html
    inline = owner_a.get(f"/history/{spoken.pk}/audio/")
    assert inline["Content-Type"] == "audio/mpeg"
    samples, rate = decode_audio(b"".join(inline.streaming_content), "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=TEXT)
    for fmt, expected_rate in (("wav_22050", 22050), ("flac_22050", 22050), ("opus_48000_64", 48000)):
        response = owner_a.get(f"/history/{spoken.pk}/download/?format={fmt}")
        assert response.status_code == 200, response.content
        assert response["Content-Disposition"].startswith("attachment;")
        samples, rate = decode_audio(response.content, fmt)
        assert_speech(samples, rate, expected_rate=expected_rate, text=TEXT)
    original = owner_a.get(f"/history/{spoken.pk}/download/")
    assert original.content == spoken.audio.open("rb").read()
    refused = owner_a.get(f"/history/{spoken.pk}/download/?format=ulaw_9999")
    assert refused.status_code == 400 and b"format:" in refused.content


def test_it_plays_raw_pcm_items_as_wav(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    response = tenant_a.client().post("/v1/text-to-speech/joe?output_format=pcm_16000", {"text": TEXT}, format="json")
    item = response["history-item-id"]
    inline = owner_a.get(f"/history/{item}/audio/")
    assert inline["Content-Type"] == "audio/wav"
    samples, rate = decode_audio(inline.content, "wav_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)
    mp3 = owner_a.get(f"/history/{item}/download/?format=mp3_44100_128")
    samples, rate = decode_audio(mp3.content, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=TEXT)


def test_it_converts_items_made_through_the_openai_api(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    body = {"model": "tts-1", "input": TEXT, "voice": "joe", "response_format": "mp3"}
    response = tenant_a.client().post("/v1/audio/speech", body, format="json")
    assert response.status_code == 200, response.content
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant, source="openai")
    wav = owner_a.get(f"/history/{record.pk}/download/?format=wav_22050")
    assert wav.status_code == 200, wav.content
    samples, rate = decode_audio(wav.content, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)


def test_it_serves_captions_when_timestamps_exist(owner_a: Client, spoken: SynthesisRecord) -> None:
    assert owner_a.get(f"/history/{spoken.pk}/captions.vtt").status_code == 404
    assert "Captions (.vtt)" not in owner_a.get("/history/").content.decode()
    chars = list("Hello there world.")
    spoken.alignment = {
        "characters": chars,
        "character_start_times_seconds": [i * 0.1 for i in range(len(chars))],
        "character_end_times_seconds": [(i + 1) * 0.1 for i in range(len(chars))],
    }
    spoken.save(update_fields=["alignment"])
    response = owner_a.get(f"/history/{spoken.pk}/captions.vtt")
    assert response["Content-Type"].startswith("text/vtt")
    assert response.content.decode() == "WEBVTT\n\n00:00:00.000 --> 00:00:01.800\nHello there world.\n"
    assert "Captions (.vtt)" in owner_a.get("/history/").content.decode()


def test_it_deletes_an_item_and_its_file(owner_a: Client, spoken: SynthesisRecord) -> None:
    path = spoken.audio.path
    assert owner_a.get(f"/history/{spoken.pk}/delete/").status_code == 405
    response = owner_a.post(f"/history/{spoken.pk}/delete/", {"next": "/history/?status=success"})
    assert response.status_code == 302 and response["Location"] == "/history/?status=success"
    gone = SynthesisRecord.objects.get(pk=spoken.pk)  # kept, emptied, for usage
    assert gone.deleted_at is not None and gone.text == "" and not gone.audio
    assert str(spoken.pk) not in owner_a.get("/history/").content.decode()
    assert owner_a.get(f"/history/{spoken.pk}/download/").status_code == 404
    import os

    assert not os.path.exists(path)


def test_raw_pcm_items_download_as_wav_by_default_with_a_readable_name(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice
) -> None:
    response = tenant_a.client().post("/v1/text-to-speech/joe?output_format=pcm_16000", {"text": TEXT}, format="json")
    item = SynthesisRecord.objects.get(pk=response["history-item-id"])
    html = owner_a.get("/history/").content.decode()
    assert '<option value="" selected>WAV (plays anywhere)</option>' in html
    default = owner_a.get(f"/history/{item.pk}/download/?format=")
    assert default["Content-Type"] == "audio/wav"
    stamp = item.created_at.strftime("%Y-%m-%d_%H%M%S")
    assert default["Content-Disposition"] == (
        f'attachment; filename="joe_{stamp}_the-lighthouse-keeper-climbed-the-stairs.wav"'
    )
    samples, rate = decode_audio(default.content, "wav_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)
    raw = owner_a.get(f"/history/{item.pk}/download/?format=pcm_16000")
    assert raw.content == item.audio.open("rb").read() and raw["Content-Disposition"].endswith('.pcm"')


def test_it_searches_the_text(tenant_a: TenantCtx, owner_a: Client) -> None:
    make_records(tenant_a, 3)
    SynthesisRecord.objects.create(
        tenant=tenant_a.tenant,
        voice_id="joe",
        text="A unique Lighthouse sentence",
        output_format="mp3_44100_128",
        source="openai",
        status="success",
    )
    html = owner_a.get("/history/?q=lighthouse").content.decode()
    assert html.count("data-item-id=") == 1 and "A unique Lighthouse sentence" in html
    assert 'value="lighthouse"' in html
    assert "Nothing matches" in owner_a.get("/history/?q=absent-words").content.decode()


def _record(ctx: TenantCtx, text: str, **fields: object) -> SynthesisRecord:
    return SynthesisRecord.objects.create(
        tenant=ctx.tenant,
        voice_id="joe",
        voice_name="Joe",
        text=text,
        output_format="mp3_44100_128",
        source="websocket",
        **fields,  # type: ignore[misc]
    )


def test_it_shows_only_the_spoken_part_of_a_stopped_item(tenant_a: TenantCtx, owner_a: Client) -> None:
    whole = "Spoken first sentence. " + "Never spoken after the stop. " * 90
    _record(tenant_a, whole, characters=23, status=SynthesisRecord.Status.CANCELLED)

    html = owner_a.get("/history/").content.decode()

    assert '<p class="text spoken">Spoken first sentence. </p>' in html
    assert f"Stopped after 23 of {len(whole)} characters" in html
    # The rest is there only behind the "Whole text" disclosure, not as the item's text.
    shown, _, hidden = html.partition('<details class="unspoken">')
    assert "Never spoken" not in shown and "Never spoken" in hidden


def test_it_shows_the_whole_text_of_a_finished_item(tenant_a: TenantCtx, owner_a: Client) -> None:
    _record(tenant_a, TEXT, characters=len(TEXT), status=SynthesisRecord.Status.SUCCESS)

    html = owner_a.get("/history/").content.decode()

    assert f'<p class="text">{TEXT}</p>' in html and "Stopped after" not in html
