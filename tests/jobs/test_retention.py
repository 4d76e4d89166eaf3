"""The retention purge (beat task): exactly the history items and jobs older
than their plan's retention lose their text and audio; nothing else does."""

from __future__ import annotations

import datetime as dt

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from tests.fixtures import TenantCtx
from tts.models import Job, SynthesisRecord
from tts.tasks import purge_expired_history


def make_record(ctx: TenantCtx, age_days: float) -> SynthesisRecord:
    record = SynthesisRecord.objects.create(
        tenant=ctx.tenant, voice_id="joe", text=f"said {age_days} days ago", characters=20,
        output_format="mp3_44100_128", source="elevenlabs", status="success",
        created_at=timezone.now() - dt.timedelta(days=age_days),
    )  # fmt: skip
    record.audio.save(f"{record.pk}.mp3", ContentFile(b"ID3 fake audio"), save=True)
    return record


def make_job(ctx: TenantCtx, age_days: float, status: str = "succeeded") -> Job:
    job = Job.objects.create(
        tenant=ctx.tenant, voice_id="joe", output_format="mp3_44100_128", status=status, text="a job's text",
        plan=[{"item": 0, "chars": 12, "segments": []}], total_chunks=1,
        created_at=timezone.now() - dt.timedelta(days=age_days),
    )  # fmt: skip
    job.audio.save(f"{job.pk}.mp3", ContentFile(b"ID3 fake job audio"), save=True)
    return job


def test_it_purges_exactly_the_expired_items(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    tenant_a.tenant.plan.history_retention_days = 7
    tenant_a.tenant.plan.save()
    tenant_b.tenant.plan.history_retention_days = 30
    tenant_b.tenant.plan.save()
    records = {(ctx.tenant.slug, age): make_record(ctx, age) for ctx in (tenant_a, tenant_b) for age in (3, 10, 40)}
    jobs = {
        ("alpha", 3): make_job(tenant_a, 3),
        ("alpha", 10): make_job(tenant_a, 10),
        ("beta", 10): make_job(tenant_b, 10, status="failed"),
        ("beta", 40): make_job(tenant_b, 40, status="cancelled"),
    }
    running_old = make_job(tenant_a, 10, status="running")  # still in use: never purged
    expired = {("alpha", 10), ("alpha", 40), ("beta", 40)}
    files = {key: r.audio.name for key, r in records.items()} | {("job", *key): j.audio.name for key, j in jobs.items()}

    assert purge_expired_history() == {"history": 3, "jobs": 2}

    for key, record in records.items():
        record.refresh_from_db()
        gone = key in expired
        assert (record.text == "", not record.audio) == (gone, gone), key
        assert default_storage.exists(files[key]) != gone, key
        assert record.characters == 20  # the row stays for usage statistics
    for key, job in jobs.items():
        job.refresh_from_db()
        gone = key in expired
        assert (job.text == "", job.plan == [], job.purged_at is not None) == (gone, gone, gone), key
        assert default_storage.exists(files[("job", *key)]) != gone, key
    running_old.refresh_from_db()
    assert running_old.text and running_old.audio and running_old.purged_at is None
    assert purge_expired_history() == {"history": 0, "jobs": 0}  # a second run finds nothing left
