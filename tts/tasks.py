"""Celery tasks: long-form jobs, the stale-job reaper, retention and usage roll-up.

Tasks take ids and call services; the services' conditional updates make a
redelivered or duplicated task harmless. ``acks_late`` (settings) keeps a
job's message until it finished, and the broker's visibility timeout is
longer than the task time limit, so a message is only redelivered when its
worker is really gone; the reaper gets there sooner.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError

from tts.jobs import RetryLater, job_run, jobs_reap_stale
from tts.matching import recordings_purge, voice_match_run, voice_matches_reap_stale
from tts.synthesis import records_reap_stale
from tts.usage import purge_expired_history as purge_history
from tts.usage import rollup_usage as rollup

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="tts.tasks.run_job", max_retries=5, ignore_result=True)
def run_job(self, job_id: str) -> str:  # type: ignore[no-untyped-def]
    """Run or resume one job. Retries only for what a retry can fix: a retryable engine
    error (the job went back to the queue) or a database that is briefly unreachable."""
    try:
        return job_run(job_id, worker=self.request.hostname or "")
    except RetryLater as exc:
        raise self.retry(exc=exc, countdown=10) from exc
    except OperationalError as exc:
        raise self.retry(exc=exc, countdown=30) from exc


@shared_task(name="tts.tasks.reap_stale_jobs", ignore_result=True, time_limit=300, soft_time_limit=270)
def reap_stale_jobs() -> dict[str, int]:
    return jobs_reap_stale()


@shared_task(name="tts.tasks.reap_stale_records", ignore_result=True, time_limit=300, soft_time_limit=270)
def reap_stale_records() -> int:
    return records_reap_stale()


@shared_task(name="tts.tasks.purge_expired_history", ignore_result=True, time_limit=3600, soft_time_limit=3570)
def purge_expired_history() -> dict[str, int]:
    return purge_history()


@shared_task(name="tts.tasks.rollup_usage", ignore_result=True, time_limit=600, soft_time_limit=570)
def rollup_usage(days: int = 2) -> int:
    return rollup(days=days)


@shared_task(name="tts.tasks.run_voice_match", ignore_result=True, time_limit=3600, soft_time_limit=3570)
def run_voice_match(match_id: str) -> str:
    """Run one voice match (docs/matching.md); a redelivered message finds it claimed and does nothing."""
    return voice_match_run(match_id)


@shared_task(name="tts.tasks.purge_match_recordings", ignore_result=True, time_limit=300, soft_time_limit=270)
def purge_match_recordings() -> int:
    """Fail the matches a dead process left (TTS_MATCH_STALE_AFTER_S), then delete matched recordings
    past TTS_MATCH_RECORDING_RETENTION_S (theirs too); the embeddings stay."""
    voice_matches_reap_stale()
    return recordings_purge()
