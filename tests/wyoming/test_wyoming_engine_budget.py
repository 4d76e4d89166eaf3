"""Wyoming under the engine-time budget (#32 item 1): a synthesis that passes it stops with an ``error``
event, billed for the audio delivered (``tts/synthesis/engine_time/budget.py``; docs/limits.md)."""

from __future__ import annotations

import pytest
from wyoming.error import Error
from wyoming.tts import Synthesize

from accounts.models import Usage
from tests.wyoming.conftest import WyomingServer, make_wyoming_tenant
from tests.wyoming.test_wyoming_server import errors, pcm_of, talk
from tts.models import SynthesisRecord, Voice

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_synthesis_stops_at_the_engine_time_budget(wyoming_server: WyomingServer, joe: Voice) -> None:
    ctx = make_wyoming_tenant()
    ctx.tenant.plan.max_engine_seconds_per_request = 1.0  # about 12.5 s of joe's speech
    ctx.tenant.plan.save(update_fields=["max_engine_seconds_per_request"])
    # Five sentences: 0.9 engine-seconds estimated (a low estimate), about 1.8 spent in full.
    text = " ".join(["The harbour was quiet that morning, and the boats rocked against the wall."] * 5)
    events = talk(wyoming_server.port, [Synthesize(text=text).event()], lambda e: Error.is_type(e.type))
    (error,) = errors(events)
    assert error.code == "engine_time_exceeded" and "more than 1 engine-seconds" in error.text
    samples, rate = pcm_of(events)
    assert 5.0 < len(samples) / rate < 16.0  # about 12.5 s of speech fit, not all 25
    record = SynthesisRecord.objects.get(tenant=ctx.tenant)
    assert record.status == "failed" and record.error_code == "engine_time_exceeded"
    assert 0 < Usage.objects.get(tenant=ctx.tenant).characters == record.characters < len(text)
