"""Context fields and the engine's own door (#24 items 1 and 2): a 400 naming the context field, the
context synthesized bounded in characters, and an engine call over its phoneme-id bound a 422."""

from __future__ import annotations

import pytest
from django.test import override_settings

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tests.limits.test_bad_input import nothing_written
from tts.inference.engine import InputTooLong, check_phoneme_ids
from tts.models import SynthesisRecord, Voice
from tts.synthesis.stages.stitching import _head, _tail

pytestmark = pytest.mark.django_db

TTS = "/v1/text-to-speech/joe?output_format=pcm_16000"


@override_settings(TTS_CONTEXT_MAX_CHARS=50)
@pytest.mark.parametrize("field", ["previous_text", "next_text"])
def test_a_context_over_its_limit_is_a_400_naming_the_field(tenant_a: TenantCtx, joe: Voice, field: str) -> None:
    response = tenant_a.client().post(TTS, {"text": "Short line.", field: "a" * 51}, format="json")
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert detail["param"] == field
    assert "50 characters" in detail["message"]
    nothing_written(tenant_a)


@override_settings(TTS_CONTEXT_SYNTH_MAX_CHARS=40)
def test_six_glued_words_are_bounded_in_characters() -> None:
    glued = "-".join(["word"] * 2000)  # one "word" of 9,999 characters: the process-killing shape
    assert len(_tail(f"x {glued} y")) <= 40
    assert len(_head(f"x {glued} y")) <= 40
    assert _tail("one two three four five six seven") == "two three four five six seven"
    assert _head("one two three. four") == "one two three."


def test_the_engine_door_refuses_over_the_bound() -> None:
    with override_settings(TTS_ENGINE_MAX_PHONEME_IDS=10):
        check_phoneme_ids(list(range(10)))
        with pytest.raises(InputTooLong) as refused:
            check_phoneme_ids(list(range(11)))
    assert not refused.value.retryable


@override_settings(TTS_ENGINE_MAX_PHONEME_IDS=20)
def test_a_segment_over_the_engine_door_is_a_422_and_bills_nothing(tenant_a: TenantCtx, joe: Voice) -> None:
    response = tenant_a.client().post(TTS, {"text": "The harbour was quiet that morning."}, format="json")
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert detail["status"] == "input_too_long"
    assert detail["param"] == "text"
    record = SynthesisRecord.objects.get(tenant=tenant_a.tenant)
    assert record.status == SynthesisRecord.Status.FAILED
    assert record.error_code == "input_too_long"
    usage = Usage.objects.filter(tenant=tenant_a.tenant).first()
    assert usage is None or usage.characters == 0  # refunded: nothing was spoken
