"""The work behind one request is bounded: a floor on the combined slow-down, and a
limit on the audio of one request, refused up front or stopped with a refund."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Usage
from tests.audio_checks import decode_audio
from tests.fixtures import TenantCtx
from tts.audio.formats import parse_elevenlabs_format
from tts.errors import SynthesisError
from tts.models import SynthesisRecord, Voice
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.deliver import synthesis_iter_bytes
from tts.synthesis.stages.estimate import effective_speed
from tts.synthesis.stages.pipeline import synthesis_create, synthesis_prepare
from tts.text.segment import Segment

pytestmark = pytest.mark.django_db(transaction=True)

SENTENCE = "The harbour was quiet that morning, and the boats rocked against the wall."


def req(ctx: TenantCtx, text: str, *, speed: float = 1.0) -> SynthesisRequest:
    return SynthesisRequest(
        tenant=ctx.tenant,
        voice_id="joe",
        text=text,
        output_format=parse_elevenlabs_format("pcm_16000"),
        source="openai",
        speed=speed,
        enable_logging=False,
    )


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def test_the_combined_slow_down_has_a_floor(settings: Any) -> None:
    assert settings.TTS_MIN_SPEED == 0.5
    assert effective_speed(0.25, Segment("x", rate=0.25)) == 0.5
    assert effective_speed(1.0, Segment("x", rate=0.8)) == pytest.approx(0.8)
    assert effective_speed(4.0, Segment("x", rate=3.0)) == settings.TTS_MAX_SPEED


def test_openai_speed_times_ssml_rate_is_slowed_no_further_than_the_floor(tenant_a: TenantCtx, joe: Voice) -> None:
    normal = synthesis_create(req(tenant_a, SENTENCE))
    slow_text = f'<speak><prosody rate="25%">{SENTENCE}</prosody></speak>'
    slowest = synthesis_create(req(tenant_a, slow_text, speed=0.25))
    n, _ = decode_audio(normal.audio, "pcm_16000")
    s, _ = decode_audio(slowest.audio, "pcm_16000")
    # 16x without the floor; at most 2x (the floor is 0.5), give or take the pauses.
    assert 1.5 < len(s) / len(n) < 2.4


def test_a_request_sure_to_exceed_the_audio_limit_is_refused_up_front(
    tenant_a: TenantCtx, joe: Voice, settings: Any
) -> None:
    settings.TTS_MAX_AUDIO_SECONDS = 5
    with pytest.raises(SynthesisError) as err:
        synthesis_prepare(req(tenant_a, " ".join([SENTENCE] * 6)))
    assert err.value.status == 413 and err.value.code == "audio_limit_exceeded" and err.value.field == "text"
    assert "5 s" in err.value.message
    assert spent(tenant_a) == 0 and not SynthesisRecord.objects.exists()


def test_a_request_longer_than_predicted_is_stopped_and_refunded(
    tenant_a: TenantCtx, joe: Voice, settings: Any
) -> None:
    settings.TTS_MAX_AUDIO_SECONDS = 6
    settings.TTS_AUDIO_SECONDS_PER_CHAR_MIN = 0.0  # the estimate lets it in
    text = " ".join([SENTENCE] * 5)  # about 20 s of speech
    run = synthesis_prepare(req(tenant_a, text))
    with pytest.raises(SynthesisError) as err:
        for _ in synthesis_iter_bytes(run):
            pass
    assert err.value.code == "audio_limit_exceeded"
    record = SynthesisRecord.objects.get(pk=run.record.pk)
    assert record.status == "failed" and record.error_code == "audio_limit_exceeded"
    # Billed: the segments that went out before the stop, never the rest.
    assert 0 < record.characters < len(text) and spent(tenant_a) == record.characters
    assert record.duration_s <= 6 + 5  # it stopped within the segment that crossed the limit
