"""WebSocket progress of long-form jobs: ``/v1/jobs/{job_id}/progress`` for one
job, ``/v1/jobs/progress`` for every job of the tenant (the dashboard).

Messages are JSON with ids and numbers only (never audio):
``{"type": "progress", "job_id", "status", "done_chunks", "total_chunks",
"progress", "audio_seconds", "error_code"}``; while a job runs, ``progress`` moves inside a
chunk too (as its sentences are spoken, at most once a second) and ``eta_seconds`` says the
time left at the pace measured so far. The first one is the job's state at subscription; a
per-job socket closes (1000) after the final state. The tenant-wide socket starts with the
state of the tenant's jobs that are queued or running or ended in the last ``SNAPSHOT_RECENT_S`` seconds (newest
``SNAPSHOT_MAX_JOBS``), each marked ``"snapshot": true``, so a page rendered
just before a job ended (or a socket that reconnects) misses no final state.
Authentication: ``xi-api-key`` or ``Authorization: Bearer`` header, or an
``xi-api-key`` (or ``xi_api_key``) query parameter for browsers, which cannot set headers; with no
key, a dashboard session (the Jobs page) acts for its ``current_tenant_id``
if the user is still a member and the page is one of ours (as the playground's
stream-input socket). Either way another tenant's job answers 4404.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.db.models import Q
from django.utils import timezone

from accounts.authentication import MissingScope, api_key_for_scope, raw_key_from_scope
from accounts.keys import InvalidApiKey
from accounts.models import Scope, Tenant
from accounts.tenancy import websocket_session_tenant
from tts.jobs import job_event, job_get, job_group, tenant_jobs_group
from tts.models import Job

_FINAL = {Job.Status.SUCCEEDED, Job.Status.FAILED, Job.Status.CANCELLED}
# The tenant-wide socket's first messages: the jobs a page may show as unfinished (the page's size).
SNAPSHOT_MAX_JOBS = 25
SNAPSHOT_RECENT_S = 600


def _tenant_snapshot(tenant_id: int) -> list[dict[str, Any]]:
    recent = timezone.now() - timedelta(seconds=SNAPSHOT_RECENT_S)
    jobs = (
        Job.objects.filter(tenant_id=tenant_id)
        .filter(~Q(status__in=_FINAL) | Q(finished_at__gte=recent))
        .defer("plan", "text")
        .order_by("-created_at")[:SNAPSHOT_MAX_JOBS]
    )
    return [{**job_event(job), "snapshot": True} for job in jobs]


def _tenant_for_key(raw: str) -> tuple[Tenant | None, str]:
    try:
        key = api_key_for_scope(raw, Scope.JOBS)
    except (InvalidApiKey, MissingScope) as exc:
        return None, str(exc)
    return key.tenant, ""


class JobProgressConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.subscribed: str | None = None
        self.job_id: uuid.UUID | None = None
        tenant: Tenant | None = None
        reason = "Missing API key: send 'xi-api-key' or 'Authorization: Bearer', or ?xi-api-key=."
        if raw := raw_key_from_scope(self.scope):
            tenant, reason = await database_sync_to_async(_tenant_for_key)(raw)
        else:
            tenant = await database_sync_to_async(websocket_session_tenant)(self.scope)
        await self.accept()
        if tenant is None:
            await self._refuse(4401, "unauthorized", reason)
            return
        job_id = self.scope["url_route"]["kwargs"].get("job_id")
        if job_id is None:
            self.subscribed = tenant_jobs_group(tenant.pk)
            # Subscribe before reading the states, so no update falls between the two.
            await self.channel_layer.group_add(self.subscribed, self.channel_name)
            for event in await database_sync_to_async(_tenant_snapshot)(tenant.pk):
                await self.job_progress(event)
            return
        job = await database_sync_to_async(job_get)(tenant, job_id)
        if job is None:
            await self._refuse(4404, "job_not_found", f"Job '{job_id}' was not found.")
            return
        self.job_id = job.pk
        self.subscribed = job_group(job.pk)
        # Subscribe before reading the state, so no update falls between the two.
        await self.channel_layer.group_add(self.subscribed, self.channel_name)
        job = await database_sync_to_async(Job.objects.defer("plan").get)(pk=job.pk)
        await self.job_progress(job_event(job))

    async def _refuse(self, code: int, status: str, message: str) -> None:
        await self.send_json({"type": "error", "status": status, "message": message})
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        if self.subscribed:
            await self.channel_layer.group_discard(self.subscribed, self.channel_name)
            self.subscribed = None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        pass  # a subscription only listens

    async def job_progress(self, event: dict[str, Any]) -> None:
        await self.send_json({**event, "type": "progress"})
        if self.job_id is not None and event.get("status") in _FINAL:
            await self.close(code=1000)
