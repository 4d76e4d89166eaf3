"""In-sentence streaming: with the PyTorch engine a long sentence's first audio
goes out before the whole sentence is decoded (windowed decoding)."""

from __future__ import annotations

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, make_joe
from tts.audio.formats import parse_elevenlabs_format
from tts.models import SynthesisRecord
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.deliver import synthesis_iter_bytes
from tts.synthesis.stages.pipeline import synthesis_prepare

pytest.importorskip("torch")

SENTENCE = (
    "The harbour was quiet that morning while the fishing boats rocked gently against the old stone wall "
    "and the gulls argued over scraps near the market as a courier walked slowly along the water with a "
    "letter for the lighthouse keeper who had not heard from anybody in many long and lonely years"
)


def test_it_streams_inside_one_long_sentence(tenant_a: TenantCtx) -> None:
    make_joe(engine="vits-torch")
    fmt = parse_elevenlabs_format("pcm_22050")
    prep = synthesis_prepare(
        SynthesisRequest(tenant=tenant_a.tenant, voice_id="joe", text=SENTENCE, output_format=fmt, source="elevenlabs")
    )
    assert len(prep.segments) == 1
    chunks = synthesis_iter_bytes(prep)
    first = next(chunks)
    # Out before the sentence is done: nothing is recorded yet, and it is a small part of the audio.
    assert SynthesisRecord.objects.get(pk=prep.record.pk).status == "pending"
    rest = b"".join(chunks)
    assert len(first) < 0.3 * (len(first) + len(rest))
    samples, rate = decode_audio(first + rest, fmt)
    assert_speech(samples, rate, expected_rate=22050, text=SENTENCE)
    record = SynthesisRecord.objects.get(pk=prep.record.pk)
    assert record.status == "success" and record.duration_s == pytest.approx(len(samples) / rate, abs=0.05)
