"""What a cache hit writes: its history item gets its own audio file that shares the
miss's bytes on disk (a hard link, no copy), and a whole-file hit is one INSERT and one
quota UPDATE, in one transaction."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Usage
from accounts.ratelimit import acquire_stream_slot
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.limits.conftest import EngineCalls
from tts.models import SynthesisRecord, Voice
from tts.synthesis.cache.audio import audio_cache

TEXT = "The ferry left at dawn. Nobody waved from the pier."
URL = "/v1/text-to-speech/joe?output_format=wav_22050"


def post(ctx: TenantCtx, url: str = URL) -> Any:
    return ctx.client().post(url, {"text": TEXT}, format="json")


def record_of(response: Any) -> SynthesisRecord:
    return SynthesisRecord.objects.get(pk=response["history-item-id"])


def stored(record: SynthesisRecord) -> bytes:
    with default_storage.open(record.audio.name, "rb") as fh:
        return fh.read()


def inode(record: SynthesisRecord) -> int:
    return os.stat(default_storage.path(record.audio.name)).st_ino


def test_it_links_a_hits_audio_to_the_file_of_its_miss(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    miss = record_of(post(tenant_a))
    response = post(tenant_a)
    assert response["x-cache"] == "hit"
    hit = record_of(response)
    assert hit.audio.name != miss.audio.name  # each item owns its name...
    assert inode(hit) == inode(miss)  # ...for the same bytes on disk
    assert os.stat(default_storage.path(hit.audio.name)).st_nlink == 2
    assert stored(hit) == response.content
    samples, rate = decode_audio(stored(hit), "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)


def test_it_keeps_a_hits_audio_when_the_miss_is_deleted_and_links_again_after(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    first = post(tenant_a)
    miss = record_of(first)
    hit = record_of(post(tenant_a))
    assert tenant_a.client().delete(f"/v1/history/{miss.pk}").status_code == 200
    assert not default_storage.exists(miss.audio.name)
    assert stored(hit) == first.content  # the link outlives the deleted name

    # The entry's file is gone: the next hit writes its own copy and the entry points to it...
    rewritten = record_of(post(tenant_a))
    assert stored(rewritten) == first.content
    assert inode(rewritten) != inode(hit)
    # ...so the one after links to that.
    relinked = record_of(post(tenant_a))
    assert inode(relinked) == inode(rewritten)
    assert stored(relinked) == first.content
    assert SynthesisRecord.objects.filter(tenant=tenant_a.tenant, cache_hit=True, status="success").count() == 3


def test_it_links_a_streamed_hit_too(tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls) -> None:
    miss = record_of(post(tenant_a, "/v1/text-to-speech/joe?output_format=pcm_16000"))
    stream: Any = tenant_a.client().post(
        "/v1/text-to-speech/joe/stream?output_format=pcm_16000", {"text": TEXT}, format="json"
    )
    body = b"".join(stream.streaming_content)
    hit = SynthesisRecord.objects.get(pk=stream["history-item-id"])
    assert hit.cache_hit and hit.status == "success"
    assert inode(hit) == inode(miss)
    assert stored(hit) == body


@pytest.mark.redis
def test_it_links_to_the_file_named_by_an_entry_from_redis(
    tenant_a: TenantCtx, joe: Voice, engine_calls: EngineCalls
) -> None:
    miss = record_of(post(tenant_a))
    audio_cache.clear_local()  # what another process sees: only the Redis entry
    response = post(tenant_a)
    assert response["x-cache"] == "hit"
    assert inode(record_of(response)) == inode(miss)


def test_it_writes_no_file_for_a_hit_without_logging(tenant_a: TenantCtx, joe: Voice) -> None:
    post(tenant_a)
    response = post(tenant_a, URL + "&enable_logging=false")
    assert response["x-cache"] == "hit"
    record = record_of(response)
    assert not record.audio and record.text == "" and record.status == "success"


def test_it_writes_a_whole_file_hit_once_with_its_quota(tenant_a: TenantCtx, joe: Voice) -> None:
    post(tenant_a)
    with CaptureQueriesContext(connection) as queries:
        response = post(tenant_a)
    assert response["x-cache"] == "hit"
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(("INSERT", "UPDATE", "DELETE"))]
    assert len(writes) == 2, writes
    insert, update = writes
    assert insert.startswith('INSERT INTO "tts_synthesisrecord"')
    assert update.startswith('UPDATE "accounts_usage"')
    record = record_of(response)
    assert (record.status, record.cache_hit, record.characters) == ("success", True, len(TEXT))
    assert record.completed_at is not None and record.latency_ms is not None and record.duration_s > 1
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 2 * len(TEXT)


def test_it_writes_nothing_for_a_hit_refused_by_the_quota(tenant_a: TenantCtx, joe: Voice) -> None:
    first = post(tenant_a)
    tenant_a.tenant.plan.monthly_character_limit = len(TEXT) + 10
    tenant_a.tenant.plan.save()
    folder = os.path.dirname(default_storage.path(record_of(first).audio.name))
    files = set(os.listdir(folder))
    refused = post(tenant_a)
    assert refused.status_code == 429
    assert refused.json()["detail"]["status"] == "quota_exceeded"
    assert list(SynthesisRecord.objects.filter(tenant=tenant_a.tenant)) == [record_of(first)]
    assert set(os.listdir(folder)) == files  # no orphaned link


def test_it_answers_a_whole_file_hit_while_the_concurrency_cap_is_full(tenant_a: TenantCtx, joe: Voice) -> None:
    post(tenant_a)
    tenant_a.tenant.plan.max_concurrent_streams = 1
    tenant_a.tenant.plan.save()
    slot = acquire_stream_slot(tenant=tenant_a.tenant)
    try:
        # Answered at once from the cache: it holds no place another request could wait for.
        assert post(tenant_a).status_code == 200
        # A streamed hit is sent over time: it needs a place like any stream.
        stream = post(tenant_a, "/v1/text-to-speech/joe/stream?output_format=wav_22050")
        assert stream.status_code == 429
        assert stream.json()["detail"]["status"] == "too_many_concurrent_requests"
        # And so does a miss.
        miss = tenant_a.client().post(URL, {"text": "Something never said before."}, format="json")
        assert miss.status_code == 429
    finally:
        slot.release()
