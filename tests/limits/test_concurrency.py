"""Concurrent syntheses per tenant and the global engine admission bound: refusals beyond
the cap are 429/503 with Retry-After, the admitted ones finish, and every place is given back."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import pytest
from django.db import connection

from accounts.models import Usage
from accounts.ratelimit import acquire_stream_slot
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.servers import ServerProc
from tts.audio.formats import parse_elevenlabs_format
from tts.errors import SynthesisError
from tts.models import SynthesisRecord, Voice
from tts.synthesis.engine_time.admission import engine_admission
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.deliver import synthesis_iter_bytes
from tts.synthesis.stages.pipeline import synthesis_prepare

TEXT = "Gulls circled the boats. Nobody on the quay looked up."
URL = "/v1/text-to-speech/joe?output_format=pcm_16000"


def set_cap(ctx: TenantCtx, streams: int) -> None:
    ctx.tenant.plan.max_concurrent_streams = streams
    ctx.tenant.plan.save()


def request(ctx: TenantCtx, text: str = TEXT) -> SynthesisRequest:
    return SynthesisRequest(
        tenant=ctx.tenant,
        api_key=ctx.api_key,
        voice_id="joe",
        text=text,
        output_format=parse_elevenlabs_format("pcm_16000"),
        source="elevenlabs_stream",
    )


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


@pytest.mark.django_db(transaction=True)
def test_it_refuses_streams_beyond_the_cap_while_the_others_finish(tenant_a: TenantCtx, joe: Voice) -> None:
    set_cap(tenant_a, 2)
    workers = 5
    all_prepared = threading.Barrier(workers)
    audio: list[bytes] = []
    refused: list[SynthesisError] = []
    lock = threading.Lock()

    def stream(i: int) -> None:
        try:
            try:
                prep = synthesis_prepare(request(tenant_a, f"{TEXT} Number {i}."))
            except SynthesisError as exc:
                with lock:
                    refused.append(exc)
                all_prepared.wait()
                return
            all_prepared.wait()  # every stream is open before any finishes
            data = b"".join(synthesis_iter_bytes(prep))
            with lock:
                audio.append(data)
        finally:
            connection.close()

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)

    assert len(audio) == 2 and len(refused) == 3
    for exc in refused:
        assert exc.status == 429 and exc.code == "too_many_concurrent_requests"
        assert "2 syntheses or streams at the same time" in exc.message
        assert exc.retry_after and exc.retry_after >= 1
    for data in audio:
        samples, rate = decode_audio(data, "pcm_16000")
        assert_speech(samples, rate, expected_rate=16000)
    assert SynthesisRecord.objects.filter(tenant=tenant_a.tenant, status="success").count() == 2
    assert SynthesisRecord.objects.filter(tenant=tenant_a.tenant).count() == 2
    # The places are free again.
    response = tenant_a.client().post(URL, {"text": TEXT}, format="json")
    assert response.status_code == 200


def test_it_answers_429_while_the_cap_is_held_and_200_after(tenant_a: TenantCtx, joe: Voice) -> None:
    set_cap(tenant_a, 1)
    slot = acquire_stream_slot(tenant=tenant_a.tenant)
    refused = tenant_a.client().post(URL, {"text": TEXT}, format="json")
    assert refused.status_code == 429
    assert refused["Retry-After"] == "1"
    detail = refused.json()["detail"]
    assert detail["status"] == "too_many_concurrent_requests"
    assert "1 syntheses or streams" in detail["message"]
    assert spent(tenant_a) == 0
    slot.release()
    assert tenant_a.client().post(URL, {"text": TEXT}, format="json").status_code == 200


def test_it_gives_the_place_back_when_a_stream_is_abandoned(tenant_a: TenantCtx, joe: Voice) -> None:
    set_cap(tenant_a, 1)
    prep = synthesis_prepare(request(tenant_a, TEXT))
    chunks = synthesis_iter_bytes(prep)
    assert next(chunks)
    chunks.close()  # type: ignore[attr-defined]  # the client went away
    assert SynthesisRecord.objects.get(pk=prep.record.pk).status == "cancelled"
    again = synthesis_prepare(request(tenant_a, TEXT))
    assert b"".join(synthesis_iter_bytes(again))


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_it_counts_streams_of_every_process_against_one_cap(
    daphne_factory: Callable[..., ServerProc], tenant_a: TenantCtx, joe: Voice, limits_prefix: str
) -> None:
    set_cap(tenant_a, 1)
    server = daphne_factory({"TTS_REDIS_KEY_PREFIX": limits_prefix})
    slot = acquire_stream_slot(tenant=tenant_a.tenant)  # a stream held by this process, in Redis
    assert slot.in_redis
    headers = {"xi-api-key": tenant_a.key}
    refused = httpx.post(server.url + URL, json={"text": TEXT}, headers=headers, timeout=60)
    assert refused.status_code == 429
    assert refused.json()["detail"]["status"] == "too_many_concurrent_requests"
    slot.release()
    ok = httpx.post(server.url + URL, json={"text": TEXT}, headers=headers, timeout=60)
    assert ok.status_code == 200
    samples, rate = decode_audio(ok.content, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)


def test_it_refuses_engine_work_past_the_queue_bound_but_serves_hits(
    tenant_a: TenantCtx, joe: Voice, settings: object
) -> None:
    cached_text = "Already said once."
    assert tenant_a.client().post(URL, {"text": cached_text}, format="json")["x-cache"] == "miss"
    settings.TTS_ENGINE_MAX_QUEUE = 1  # type: ignore[attr-defined]
    busy = synthesis_prepare(request(tenant_a, TEXT))  # holds the only place
    assert engine_admission.in_flight == 1
    before = spent(tenant_a)

    refused = tenant_a.client().post(URL, {"text": "Something new to say."}, format="json")
    assert refused.status_code == 503
    assert int(refused["Retry-After"]) >= 1
    detail = refused.json()["detail"]
    assert detail["status"] == "system_busy"
    assert "the bound is 1" in detail["message"]
    assert spent(tenant_a) == before

    hit = tenant_a.client().post(URL, {"text": cached_text}, format="json")
    assert hit.status_code == 200 and hit["x-cache"] == "hit"

    assert b"".join(synthesis_iter_bytes(busy))
    assert engine_admission.in_flight == 0
    assert tenant_a.client().post(URL, {"text": "Something new to say."}, format="json").status_code == 200
