"""The job-progress WebSocket: who may subscribe, and what a subscriber gets first."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from tests.fixtures import TenantCtx
from tts.jobs.events import job_publish
from tts.models import Job, Voice
from tts.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


def make_job(ctx: TenantCtx, status: str = "running") -> Job:
    return Job.objects.create(
        tenant=ctx.tenant, voice_id="joe", output_format="pcm_16000", status=status, total_chunks=4, done_chunks=1
    )


async def subscribe(path: str, key: str | None, publish: tuple[Job, ...] = ()) -> tuple[list[dict], int]:
    """Connect, publish ``publish`` one by one, collect messages until the server closes."""
    from channels.db import database_sync_to_async

    headers = [(b"xi-api-key", key.encode())] if key else []
    ws = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path, headers=headers)
    connected, _ = await ws.connect()
    assert connected
    messages = [await ws.receive_json_from(timeout=5)]
    for job in publish:
        await database_sync_to_async(job_publish)(job)
        messages.append(await ws.receive_json_from(timeout=5))
    closed = await ws.receive_output(timeout=5)
    assert closed["type"] == "websocket.close"
    await ws.disconnect()
    return messages, closed.get("code", 1000)


def test_it_sends_the_state_then_each_update_then_closes(tenant_a: TenantCtx, joe: Voice) -> None:
    job = make_job(tenant_a)
    update = Job.objects.get(pk=job.pk)
    update.done_chunks, update.audio_seconds = 2, 6.0
    final = Job.objects.get(pk=job.pk)
    final.status, final.done_chunks, final.audio_seconds = "succeeded", 4, 12.5
    messages, code = async_to_sync(subscribe)(f"/v1/jobs/{job.pk}/progress", tenant_a.key, (update, final))
    assert messages[0]["done_chunks"] == 1 and messages[0]["status"] == "running"  # the row, at subscription
    assert messages[1] == {
        "type": "progress", "job_id": str(job.pk), "status": "running", "done_chunks": 2, "total_chunks": 4,
        "progress": 0.5, "audio_seconds": 6.0, "error_code": None,
    }  # fmt: skip
    assert messages[2]["status"] == "succeeded" and messages[2]["progress"] == 1.0
    assert code == 1000


def test_it_refuses_without_a_valid_key(tenant_a: TenantCtx, joe: Voice) -> None:
    job = make_job(tenant_a)
    for key in (None, "tts_nothing_here"):
        messages, code = async_to_sync(subscribe)(f"/v1/jobs/{job.pk}/progress", key)
        assert messages[0]["type"] == "error" and messages[0]["status"] == "unauthorized"
        assert code == 4401


def test_it_hides_other_tenants_jobs(tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice) -> None:
    job = make_job(tenant_a)
    messages, code = async_to_sync(subscribe)(f"/v1/jobs/{job.pk}/progress", tenant_b.key)
    assert messages[0]["status"] == "job_not_found" and code == 4404
    assert "audio" not in str(messages)
