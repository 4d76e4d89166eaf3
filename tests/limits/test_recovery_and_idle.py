"""What a dead process or an idle client may not keep: pending records are reaped and
refunded, an idle WebSocket utterance holds no slot or ticket, slot leases are renewed
while their holder lives, and an open socket whose key is revoked is closed."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from typing import Any

import pytest
from django.utils import timezone
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from accounts import ratelimit
from accounts.keys import api_key_create, api_key_revoke
from accounts.models import Usage
from accounts.quota import reserve_characters
from tests.fixtures import TenantCtx
from tts.audio.formats import parse_elevenlabs_format
from tts.models import SynthesisRecord, Voice
from tts.synthesis.engine_time.admission import engine_admission
from tts.synthesis.live.streaming import LiveUtterance
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.runs.recovery import heartbeats, records_reap_stale
from tts.synthesis.stages.parse import segments_for
from tts.synthesis.stages.pipeline import synthesis_prepare

pytestmark = pytest.mark.django_db(transaction=True)


def req(ctx: TenantCtx, text: str, source: str = "elevenlabs_stream") -> SynthesisRequest:
    return SynthesisRequest(
        tenant=ctx.tenant, voice_id="joe", text=text, output_format=parse_elevenlabs_format("pcm_16000"), source=source
    )


def held_slots() -> int:
    return sum(len(tokens) for tokens in ratelimit._local_slots._held.values())


def test_it_fails_and_refunds_the_records_of_a_dead_process(tenant_a: TenantCtx, joe: Voice, settings: Any) -> None:
    settings.REDIS_URL = ""
    dead = synthesis_prepare(req(tenant_a, "A process that dies before it speaks this."))
    alive = synthesis_prepare(req(tenant_a, "A process that is still working on this."))
    dead.admission.release()  # the dead process's places went with it (leases, process memory)
    usage = Usage.objects.get(tenant=tenant_a.tenant)
    assert usage.characters == dead.characters + alive.characters and usage.requests == 2
    old = timezone.now() - dt.timedelta(seconds=settings.TTS_RECORD_STALE_AFTER_S + 5)
    SynthesisRecord.objects.filter(pk__in=[dead.record.pk, alive.record.pk]).update(heartbeat_at=old)
    heartbeats._runs.discard(dead)  # it beats no more
    assert heartbeats.beat() >= 1  # the live one renews its heartbeat
    assert records_reap_stale() == 1
    assert records_reap_stale() == 0  # once
    record = SynthesisRecord.objects.get(pk=dead.record.pk)
    assert record.status == "failed" and record.error_code == "abandoned" and record.characters == 0
    assert SynthesisRecord.objects.get(pk=alive.record.pk).status == "pending"
    usage.refresh_from_db()
    assert usage.characters == alive.characters and usage.requests == 1
    alive.cancel()
    usage.refresh_from_db()
    assert usage.characters == 0 and held_slots() == 0 and engine_admission.in_flight == 0


def test_the_reaper_refunds_every_piece_of_a_dead_processs_stream(
    tenant_a: TenantCtx, joe: Voice, settings: Any
) -> None:
    # A WebSocket utterance's later pieces reserve characters on arrival; the row must hold them too, or a
    # host killed mid-stream leaves them billed with no row (seen in make deploy-check's two-host kill).
    settings.REDIS_URL = ""
    dead = synthesis_prepare(req(tenant_a, "The first piece of a stream.", source="websocket"))
    more = "And a second piece that arrived later. "
    reservation = reserve_characters(tenant=tenant_a.tenant, characters=len(more), count_request=False)
    assert dead.add_piece(more, segments_for(more, language="en", normalization="auto"), reservation)
    usage = Usage.objects.get(tenant=tenant_a.tenant)
    assert usage.characters == dead.characters == SynthesisRecord.objects.get(pk=dead.record.pk).characters
    dead.admission.release()
    heartbeats._runs.discard(dead)
    old = timezone.now() - dt.timedelta(seconds=settings.TTS_RECORD_STALE_AFTER_S + 5)
    SynthesisRecord.objects.filter(pk=dead.record.pk).update(heartbeat_at=old)
    assert records_reap_stale() == 1
    usage.refresh_from_db()
    assert usage.characters == 0 and SynthesisRecord.objects.get(pk=dead.record.pk).characters == 0


def test_an_idle_utterance_holds_no_slot_or_ticket(tenant_a: TenantCtx, joe: Voice, settings: Any) -> None:
    settings.REDIS_URL = ""
    run = synthesis_prepare(req(tenant_a, "The first thing I say.", source="websocket"))
    assert held_slots() == 1 and engine_admission.in_flight == 1
    utterance = LiveUtterance(run)

    async def until_idle() -> list[Any]:
        out = []
        iterator = utterance.stream.__aiter__()
        out.append(await iterator.__anext__())
        # The first piece is spoken; the utterance now waits for its client.
        for _ in range(100):
            if not run.admission.held:
                break
            await asyncio.sleep(0.05)
        return out

    chunks = asyncio.run(until_idle())
    assert chunks and held_slots() == 0 and engine_admission.in_flight == 0
    assert utterance.add_text(" And then a second thing.")
    assert held_slots() == 1 and engine_admission.in_flight == 1  # taken again for the new text
    utterance.end()

    async def rest() -> list[Any]:
        return [item async for item in utterance.stream]

    asyncio.run(rest())
    assert utterance.stream.finished.wait(60)
    record = SynthesisRecord.objects.get(pk=run.record.pk)
    assert record.status == "success" and record.text.endswith("second thing.")
    assert held_slots() == 0 and engine_admission.in_flight == 0


@pytest.mark.redis
def test_it_renews_the_leases_of_live_slots_and_frees_dead_ones(tenant_a: TenantCtx, settings: Any) -> None:
    settings.TTS_STREAM_SLOT_LEASE_S = 3
    tenant = tenant_a.tenant
    tenant.plan.max_concurrent_streams = 1
    live = ratelimit.acquire_stream_slot(tenant=tenant)
    assert live.in_redis
    time.sleep(2)
    assert ratelimit._lease_renewer.renew_now() == 1
    time.sleep(2)  # past the first lease: still held, because it was renewed
    with pytest.raises(ratelimit.LimitExceeded):
        ratelimit.acquire_stream_slot(tenant=tenant)
    # A holder that died: nobody renews its lease, and the slot comes back after it.
    ratelimit._lease_renewer.discard(live)
    live.released = True  # (its process is gone: no release either)
    time.sleep(3.5)
    again = ratelimit.acquire_stream_slot(tenant=tenant)
    again.release()


def test_a_revoked_key_closes_its_open_socket(daphne_factory: Any, tenant_a: TenantCtx, joe: Voice) -> None:
    server = daphne_factory({"TTS_WS_AUTH_RECHECK_S": "1"})
    issued = api_key_create(tenant=tenant_a.tenant, name="short-lived")
    url = server.url.replace("http://", "ws://") + "/v1/text-to-speech/joe/stream-input?output_format=pcm_16000"
    with connect(url) as ws:
        ws.send(json.dumps({"text": " ", "xi_api_key": issued.raw_key}))
        ws.send(json.dumps({"text": "Hello there. ", "flush": True}))
        assert json.loads(ws.recv(timeout=60))["audio"]
        api_key_revoke(api_key=issued.api_key)
        started = time.monotonic()
        messages = []
        try:
            while True:
                messages.append(json.loads(ws.recv(timeout=30)))
        except ConnectionClosed:
            pass
        assert time.monotonic() - started < 30
        assert ws.close_code == 4008
    assert any(m.get("error") == "api_key_revoked" for m in messages)


def test_a_socket_cannot_pile_up_unspoken_text(live_server_url: str, tenant_a: TenantCtx, joe: Voice) -> None:
    url = live_server_url.replace("http://", "ws://") + (
        "/v1/text-to-speech/joe/stream-input?output_format=pcm_16000&auto_mode=true"
    )
    words = "word " * 3_000  # 15,000 characters without a sentence end: auto mode keeps them all
    with connect(url) as ws:
        ws.send(json.dumps({"text": " ", "xi_api_key": tenant_a.key}))
        ws.send(json.dumps({"text": words}))
        ws.send(json.dumps({"text": words}))  # past TTS_WS_MAX_BUFFER_CHARS (20,000)
        message = json.loads(ws.recv(timeout=30))
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=30)
        assert ws.close_code == 4009
    assert message["error"] == "buffer_full" and message["param"] == "text" and "20000" in message["message"]
    assert not SynthesisRecord.objects.exists()
    assert not Usage.objects.filter(tenant=tenant_a.tenant, characters__gt=0).exists()
