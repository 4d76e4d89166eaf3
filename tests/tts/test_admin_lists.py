"""Admin history and job lists: previous/next pages without counts, exact-id search, audio, and a
100,000-row history that renders with as few queries as 50 rows did."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.db import connection
from django.test import Client
from django.utils import timezone

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, make_tenant
from tts.models import Job, SynthesisRecord, Voice

LIST = "/admin/tts/synthesisrecord/"
JOBS = "/admin/tts/job/"


@pytest.fixture
def admin_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-root")
    client = Client()
    client.force_login(user)
    return client


def records(ctx: TenantCtx, n: int, **fields: object) -> list[SynthesisRecord]:
    now = timezone.now()
    rows = [
        SynthesisRecord(
            **{
                "tenant": ctx.tenant,
                "voice_id": "joe",
                "output_format": "mp3_44100_128",
                "source": "openai",
                "status": "success",
                "text": f"Row {i}.",
                "created_at": now - dt.timedelta(seconds=i),
                **fields,
            }
        )
        for i in range(n)
    ]
    return SynthesisRecord.objects.bulk_create(rows, batch_size=5000)


def shown_ids(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(r.pk) for r in response.context["cl"].result_list]


def test_it_pages_with_previous_and_next_and_no_invented_counts(admin_client: Client, tenant_a: TenantCtx) -> None:
    records(tenant_a, 120)
    first = admin_client.get(LIST)
    page = first.content.decode()
    assert "1000000000" not in page and "10000000" not in page
    assert 'id="page-next"' in page and 'id="page-prev"' not in page
    third = admin_client.get(LIST + "?p=3")
    assert len(shown_ids(third)) == 20
    assert 'id="page-next"' not in third.content.decode() and 'id="page-prev"' in third.content.decode()
    nothing = admin_client.get(LIST + "?q=no-such-thing")
    assert shown_ids(nothing) == [] and 'id="page-next"' not in nothing.content.decode()


def test_it_searches_by_request_id_tenant_voice_key_prefix_and_id(admin_client: Client, tenant_a: TenantCtx) -> None:
    tenant_b = make_tenant("beta")
    records(tenant_a, 5)
    mine = records(tenant_b, 1, request_id="req-abc123", api_key=tenant_b.api_key)[0]
    other_voice = records(tenant_a, 1, voice_id="emma")[0]
    assert shown_ids(admin_client.get(LIST + "?q=req-abc123")) == [str(mine.pk)]
    assert shown_ids(admin_client.get(LIST + "?q=beta")) == [str(mine.pk)]
    assert shown_ids(admin_client.get(LIST + "?q=emma")) == [str(other_voice.pk)]
    assert shown_ids(admin_client.get(LIST + f"?q={tenant_b.api_key.display_prefix}")) == [str(mine.pk)]
    assert shown_ids(admin_client.get(LIST + f"?q={mine.pk}")) == [str(mine.pk)]
    assert shown_ids(admin_client.get(LIST + "?q=alpha+emma")) == [str(other_voice.pk)]
    job = Job.objects.create(
        tenant=tenant_b.tenant, voice_id="joe", output_format="mp3_44100_128", request_id="req-job-1"
    )
    Job.objects.create(tenant=tenant_a.tenant, voice_id="joe", output_format="mp3_44100_128")
    assert shown_ids(admin_client.get(JOBS + "?q=req-job-1")) == [str(job.pk)]
    assert shown_ids(admin_client.get(JOBS + "?q=beta")) == [str(job.pk)]


def test_it_plays_and_downloads_history_audio(admin_client: Client, tenant_a: TenantCtx, joe: Voice) -> None:
    spoken = tenant_a.client().post(
        "/v1/text-to-speech/joe?output_format=pcm_22050", {"text": "Played in the admin."}, format="json"
    )
    assert spoken.status_code == 200
    item = SynthesisRecord.objects.get(pk=spoken.headers["history-item-id"])
    page = admin_client.get(LIST).content.decode()
    audio_url = f"/admin/tts/synthesisrecord/{item.pk}/audio/"
    assert f'<audio controls preload="none" src="{audio_url}"' in page
    assert f'href="{audio_url}?download=1"' in page
    played = admin_client.get(audio_url)
    assert played["Content-Type"] == "audio/wav"  # raw PCM comes as WAV, so that players open it
    data = b"".join(played.streaming_content) if played.streaming else played.content
    samples, rate = decode_audio(data, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text="Played in the admin.")
    download = admin_client.get(audio_url + "?download=1")
    assert 'filename="joe_' in download["Content-Disposition"]
    assert "played-in-the-admin.wav" in download["Content-Disposition"]
    detail = admin_client.get(f"/admin/tts/synthesisrecord/{item.pk}/change/").content.decode()
    assert f'src="{audio_url}"' in detail
    assert admin_client.get(f"/admin/tts/synthesisrecord/{uuid.uuid4()}/audio/").status_code == 404


def test_it_downloads_a_finished_jobs_audio(admin_client: Client, tenant_a: TenantCtx) -> None:
    job = Job.objects.create(
        tenant=tenant_a.tenant,
        voice_id="joe",
        output_format="mp3_44100_128",
        content_type="audio/mpeg",
        status="succeeded",
        text="A finished chapter.",
    )
    job.audio.save("job.mp3", ContentFile(b"ID3fake-mp3-bytes"))
    page = admin_client.get(JOBS).content.decode()
    url = f"/admin/tts/job/{job.pk}/audio/"
    assert f'src="{url}"' in page and f'href="{url}?download=1"' in page
    response = admin_client.get(url + "?download=1")
    assert b"".join(response.streaming_content) == b"ID3fake-mp3-bytes"
    assert "joe_" in response["Content-Disposition"] and "a-finished-chapter.mp3" in response["Content-Disposition"]


@pytest.mark.slow
def test_a_100k_row_history_renders_quickly_with_few_queries(
    admin_client: Client, tenant_a: TenantCtx, django_assert_max_num_queries
) -> None:
    records(tenant_a, 100_000, api_key=tenant_a.api_key)
    for url in (LIST, LIST + "?p=2", LIST + "?status__exact=success&source__exact=openai", LIST + "?q=alpha", JOBS):
        started = time.monotonic()
        with django_assert_max_num_queries(12):
            response = admin_client.get(url)
        elapsed = time.monotonic() - started
        assert response.status_code == 200, url
        assert elapsed < 2.0, (url, elapsed)
    response = admin_client.get(LIST)
    assert len(shown_ids(response)) == 50
    if connection.vendor == "sqlite":
        # The page is read through the (created_at, id) index, not by sorting the whole table.
        sql, params = response.context["cl"].queryset[:51].query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
        assert "USING INDEX history_created" in plan and "TEMP B-TREE" not in plan, plan
