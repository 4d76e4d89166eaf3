"""infra/lean_insert.py: the history row written by ``insert()`` is the row ``save()`` writes."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from accounts.models import Usage
from infra.lean_insert import insert
from tests.fixtures import TenantCtx
from tts.models import ModelVersion, SynthesisRecord, Voice

pytestmark = pytest.mark.django_db


def _record(ctx: TenantCtx, joe: Voice) -> SynthesisRecord:
    record = SynthesisRecord(
        tenant=ctx.tenant,
        api_key=ctx.api_key,
        voice_id=joe.voice_id,
        voice_name=joe.name,
        model_version=joe_version(joe),
        model_id=joe.model_id,
        text="Grüße — 12 € ✓",
        characters=14,
        output_format="mp3_44100_128",
        content_type="audio/mpeg",
        sample_rate=44100,
        duration_s=1.25,
        latency_ms=7,
        ttfb_ms=3,
        cache_hit=True,
        source=SynthesisRecord.Source.ELEVENLABS,
        status=SynthesisRecord.Status.SUCCESS,
        request_id="req-1",
        settings={"speed": 1.5, "nested": {"list": [1, None, "x"]}},
        alignment=None,
        heartbeat_at=timezone.now(),
        completed_at=timezone.now() + dt.timedelta(seconds=1),
    )
    record.audio.save("a.mp3", ContentFile(b"ID3 audio"), save=False)
    return record


def joe_version(joe: Voice) -> ModelVersion:
    return ModelVersion.objects.get(model_id=joe.model_id, status="active")


def _row(pk: uuid.UUID) -> dict[str, object]:
    row = SynthesisRecord.objects.filter(pk=pk).values().get()
    row.pop("id")
    return row


def test_the_row_is_the_one_save_writes(tenant_a: TenantCtx, joe: Voice) -> None:
    by_orm, by_insert = _record(tenant_a, joe), _record(tenant_a, joe)
    by_insert.created_at = by_orm.created_at
    by_insert.heartbeat_at, by_insert.completed_at = by_orm.heartbeat_at, by_orm.completed_at
    by_insert.audio.name = by_orm.audio.name
    by_orm.save(force_insert=True)
    insert(by_insert)
    assert not by_insert._state.adding and by_insert._state.db == "default"
    assert _row(by_insert.pk) == _row(by_orm.pk)
    stored = SynthesisRecord.objects.get(pk=by_insert.pk)
    assert stored.settings == {"speed": 1.5, "nested": {"list": [1, None, "x"]}}
    assert stored.text == "Grüße — 12 € ✓" and stored.model_version_id == joe_version(joe).pk
    assert stored.audio.read() == b"ID3 audio"


def test_it_sends_the_signals_save_sends(tenant_a: TenantCtx, joe: Voice) -> None:
    seen: list[tuple[str, bool | None]] = []

    def before(sender: type, instance: SynthesisRecord, **kwargs: object) -> None:
        seen.append(("pre", None))

    def after(sender: type, instance: SynthesisRecord, created: bool, **kwargs: object) -> None:
        seen.append(("post", created))

    pre_save.connect(before, sender=SynthesisRecord, dispatch_uid="t-lean-pre")
    post_save.connect(after, sender=SynthesisRecord, dispatch_uid="t-lean-post")
    try:
        insert(_record(tenant_a, joe))
    finally:
        pre_save.disconnect(sender=SynthesisRecord, dispatch_uid="t-lean-pre")
        post_save.disconnect(sender=SynthesisRecord, dispatch_uid="t-lean-post")
    assert seen == [("pre", None), ("post", True)]


def test_a_duplicate_key_fails_as_with_save(tenant_a: TenantCtx, joe: Voice) -> None:
    record = _record(tenant_a, joe)
    insert(record)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert(record)


def test_it_refuses_a_row_without_its_key(tenant_a: TenantCtx) -> None:
    with pytest.raises(ValueError, match="primary key"):
        insert(Usage(tenant=tenant_a.tenant, period_start=dt.date(2026, 1, 1)))
    assert not Usage.objects.filter(tenant=tenant_a.tenant, period_start=dt.date(2026, 1, 1)).exists()
