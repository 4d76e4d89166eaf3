"""Matches a dead process left running or queued are failed by the periodic task
(``tts.tasks.purge_match_recordings``) once their heartbeat, or their wait to start, is older than
``TTS_MATCH_STALE_AFTER_S``; their recordings go as the retention says, and a late message for one
does nothing. Live ones are left alone."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from tests.fixtures import TenantCtx
from tts.matching import recording_dir, voice_match_run, wav_bytes
from tts.models import Voice, VoiceMatch
from tts.tasks import purge_match_recordings

STALE_AFTER = 600


@pytest.fixture(autouse=True)
def stale_after(settings) -> None:  # type: ignore[no-untyped-def]
    settings.TTS_MATCH_STALE_AFTER_S = STALE_AFTER
    settings.TTS_MATCH_RECORDING_RETENTION_S = 0


def left(ctx: TenantCtx, status: str, *, created: datetime, **times: datetime | None) -> VoiceMatch:
    """A match row as a process left it, with its recording on disk."""
    match = VoiceMatch(
        tenant=ctx.tenant,
        voice_id=f"match-{secrets.token_hex(6)}",
        name="Left behind",
        status=status,
        consent_at=created,
        created_at=created,
        **times,
    )
    folder = recording_dir(match.pk)
    folder.mkdir(parents=True)
    (folder / "recording-00.wav").write_bytes(wav_bytes(np.zeros(1600, np.float32), 16000))
    match.recording_path = str(folder.relative_to(Path(django_settings.MEDIA_ROOT)))
    match.recording_files = ["recording-00.wav"]
    match.save()
    return match


def test_the_periodic_task_fails_matches_a_dead_process_left(tenant_a: TenantCtx) -> None:
    now = timezone.now()
    ago = lambda s: now - timedelta(seconds=s)  # noqa: E731
    Status = VoiceMatch.Status
    dead_running = left(tenant_a, Status.RUNNING, created=ago(2000), started_at=ago(1900), heartbeat_at=ago(601))
    # Claimed before heartbeats were written: its start stands in.
    old_running = left(tenant_a, Status.RUNNING, created=ago(2000), started_at=ago(700), heartbeat_at=None)
    never_started = left(tenant_a, Status.QUEUED, created=ago(601))
    live_running = left(tenant_a, Status.RUNNING, created=ago(2000), started_at=ago(1900), heartbeat_at=ago(30))
    live_queued = left(tenant_a, Status.QUEUED, created=ago(30))

    purge_match_recordings()

    for match, words in (
        (dead_running, "no sign of life"),
        (old_running, "no sign of life"),
        (never_started, "not started"),
    ):
        match.refresh_from_db()
        assert match.status == Status.FAILED and match.finished_at is not None, match
        assert words in match.error and f"{STALE_AFTER} s" in match.error, match.error
        # Retention 0: the recording went with it.
        assert match.recording_deleted_at is not None and not recording_dir(match.pk).exists()
        state = tenant_a.client().get(f"/v1/voices/{match.voice_id}/match").json()
        assert state["status"] == "failed" and state["error"] == match.error and state["recording_deleted"] is True
    for match, status in ((live_running, Status.RUNNING), (live_queued, Status.QUEUED)):
        match.refresh_from_db()
        assert match.status == status and match.error == "" and recording_dir(match.pk).exists()

    # The queued match's message, delivered late, finds it failed and does nothing.
    assert voice_match_run(never_started.pk) == "skipped"


def test_a_search_failed_as_stale_while_it_ran_saves_no_voice(
    tenant_a: TenantCtx, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that was only slow, not dead, finishes after the reaper failed its match: no voice."""
    from tts.matching import actions
    from tts.matching.search import Candidate, SearchResult

    stock = Voice(voice_id="af_test", model_id="kokoro-test", speaker_index=0)
    match = left(tenant_a, VoiceMatch.Status.QUEUED, created=timezone.now())

    class Encoder:
        name = "dvector"

        def embed(self, samples: np.ndarray, rate: int) -> np.ndarray:
            return np.ones(256, np.float32)

    class ReapedMeanwhile:
        def __init__(self, **kwargs: object) -> None:
            pass

        def run(self, voices: list[Voice], top_k: int) -> SearchResult:
            later = timezone.now() + timedelta(seconds=STALE_AFTER + 1)
            assert voices == [stock] and actions.voice_matches_reap_stale(now=later) == 1
            best = Candidate(((stock, 1.0),), score=0.5)
            return SearchResult(best, best, [best], 0.1)

    monkeypatch.setattr(actions, "speaker_encoder", lambda name: Encoder())
    monkeypatch.setattr(actions, "stock_candidates", lambda language, limit: [stock])
    monkeypatch.setattr(actions, "Searcher", ReapedMeanwhile)
    assert voice_match_run(match.pk) == "failed"
    match.refresh_from_db()
    assert "no sign of life" in match.error and match.similarity is None
    assert not Voice.objects.filter(voice_id=match.voice_id).exists()
    assert not recording_dir(match.pk).exists()
