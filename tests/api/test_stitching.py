"""Request stitching: ids checked (own, recent, finished), `request-id` on every answer, continuations joined."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

URL = "/v1/text-to-speech/joe?output_format=pcm_22050"
FIRST = "The harbour was quiet that morning,"
SECOND = "and the fishing boats rocked against the old stone wall."


def leading_silence_s(pcm: bytes, threshold: float = 0.02) -> float:
    samples, rate = decode_audio(pcm, "pcm_22050")
    loud = np.nonzero(np.abs(samples) > threshold)[0]
    assert len(loud), "all silence"
    return float(loud[0] / rate)


def _post(ctx: TenantCtx, body: dict[str, object], url: str = URL):  # type: ignore[no-untyped-def]
    return ctx.client().post(url, body, format="json")


def test_a_continuation_starts_without_the_leading_pause(tenant_a: TenantCtx, joe: Voice) -> None:
    first = _post(tenant_a, {"text": FIRST, "seed": 5})
    assert first.status_code == 200
    request_id = first["request-id"]
    fresh = _post(tenant_a, {"text": SECOND, "seed": 5})
    by_text = _post(tenant_a, {"text": SECOND, "seed": 5, "previous_text": FIRST})
    by_id = _post(tenant_a, {"text": SECOND, "seed": 5, "previous_request_ids": [request_id]})
    for response in (fresh, by_text, by_id):
        assert response.status_code == 200, response.content
        samples, rate = decode_audio(response.content, "pcm_22050")
        assert_speech(samples, rate, expected_rate=22050, text=SECOND)
    assert by_text["x-cache"] == "miss"  # the context is part of the cache key
    silence_fresh = leading_silence_s(fresh.content)
    for joined in (by_text, by_id):
        silence = leading_silence_s(joined.content)
        assert silence < silence_fresh - 0.02, (silence, silence_fresh)
    # Read as a continuation, not the same take trimmed: the audio itself differs.
    assert by_text.content != fresh.content


def test_next_text_changes_the_ending(tenant_a: TenantCtx, joe: Voice) -> None:
    plain = _post(tenant_a, {"text": FIRST, "seed": 9})
    followed = _post(tenant_a, {"text": FIRST, "seed": 9, "next_text": SECOND})
    assert plain.status_code == followed.status_code == 200
    assert plain.content != followed.content
    samples, rate = decode_audio(followed.content, "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=FIRST)


@pytest.mark.parametrize("field", ["previous_request_ids", "next_request_ids"])
def test_unknown_foreign_old_or_unfinished_ids_are_refused(
    tenant_a: TenantCtx, tenant_b: TenantCtx, joe: Voice, field: str
) -> None:
    theirs = _post(tenant_b, {"text": FIRST})
    assert theirs.status_code == 200
    old = _post(tenant_a, {"text": FIRST})
    SynthesisRecord.objects.filter(pk=old["history-item-id"]).update(
        created_at=SynthesisRecord.objects.get(pk=old["history-item-id"]).created_at - dt.timedelta(hours=3)
    )
    pending = SynthesisRecord.objects.create(
        tenant=tenant_a.tenant, voice_id="joe", request_id="pending-request-1", characters=3, status="pending"
    )
    for bad in ("no-such-request-id", theirs["request-id"], old["request-id"], pending.request_id):
        before = SynthesisRecord.objects.count()
        response = _post(tenant_a, {"text": SECOND, field: [bad]})
        assert response.status_code == 400, (bad, response.content)
        assert field in response.json()["detail"]["message"]
        assert response["request-id"]  # errors carry it too
        assert SynthesisRecord.objects.count() == before  # refused before anything was written


def test_a_streamed_request_id_is_usable_once_finished(tenant_a: TenantCtx, joe: Voice) -> None:
    stream = _post(tenant_a, {"text": FIRST}, url="/v1/text-to-speech/joe/stream?output_format=pcm_22050")
    assert stream.status_code == 200
    request_id = stream["request-id"]
    early = _post(tenant_a, {"text": SECOND, "previous_request_ids": [request_id]})
    assert early.status_code == 400 and early.json()["detail"]["status"] == "request_not_finished"
    b"".join(stream.streaming_content)  # type: ignore[attr-defined]
    joined = _post(tenant_a, {"text": SECOND, "previous_request_ids": [request_id]})
    assert joined.status_code == 200, joined.content


def test_every_response_carries_a_request_id(tenant_a: TenantCtx, joe: Voice) -> None:
    for response in (
        tenant_a.client().get("/v1/voices"),
        tenant_a.client().get("/v1/nothing-here"),
        tenant_a.client("wrong-key").get("/v1/voices"),
    ):
        assert response["request-id"] and response["request-id"] == response["X-Request-ID"]
