"""Long-form jobs: a text (or a dialogue's turns) too long for one request, synthesized chunk by chunk by Celery
workers (or a web process's job thread) and assembled into one file.

Owns submitting, cancelling and reading jobs (``actions``), planning their chunks (``chunks``:
a dialogue's cut at its turns), running them (``runner``), the per-tenant worker slots
(``slots``), the chunk files and the assembled audio (``audio``), and the progress events the
job WebSocket sends (``events``).

May import: synthesis, the catalogue, models, accounts, inference, text, audio and infra.
Never usage or realtime.
"""

from tts.jobs.actions import (
    JobRequest,
    job_cancel,
    job_get,
    job_submit,
    jobs_for_tenant,
    synthesis_seconds_per_character,
)
from tts.jobs.audio import chunks_delete
from tts.jobs.events import job_event, job_group, tenant_jobs_group
from tts.jobs.records import characters_done
from tts.jobs.runner import RetryLater, job_run, jobs_reap_stale

__all__ = [
    "JobRequest",
    "RetryLater",
    "characters_done",
    "chunks_delete",
    "job_cancel",
    "job_event",
    "job_get",
    "job_group",
    "job_run",
    "job_submit",
    "jobs_for_tenant",
    "jobs_reap_stale",
    "synthesis_seconds_per_character",
    "tenant_jobs_group",
]
