"""A text that preparing makes much longer is billed for what the engine speaks (#32 item 2).

``1/`` and 1,000 sevens is 6,000 characters of "seven seven ..." (6.4x plain prose's CPU per billed
character on joe, ``bench/bench_costs.py``): billed for the prepared characters less 200, over 2.5.
A sentence full of numbers, and prose, bill as sent."""

from __future__ import annotations

import pytest

from accounts.models import Usage
from tests.fixtures import TenantCtx
from tts.audio.formats import parse_elevenlabs_format
from tts.models import SynthesisRecord, Voice
from tts.synthesis.live.streaming import LiveUtterance
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages.parse import segments_for
from tts.synthesis.stages.pipeline import synthesis_prepare

pytestmark = pytest.mark.django_db(transaction=True)


def prepared(text: str) -> int:
    return sum(len(seg.text) for seg in segments_for(text, language="en", normalization="auto"))


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("1/" + "7" * 1000, True),
        (" ".join(["1234"] * 200), True),
        ("Dr. Smith paid $3.50 on 1/2/2024.", False),
        ("The harbour was quiet that morning, and the boats rocked against the wall. " * 20, False),
    ],
    ids=["sevens", "numbers", "a-sentence-of-numbers", "prose"],
)
def test_it_bills_the_prepared_text_past_its_free_expansion(
    tenant_a: TenantCtx, joe: Voice, text: str, expanded: bool
) -> None:
    run = synthesis_prepare(
        SynthesisRequest(
            tenant=tenant_a.tenant,
            voice_id="joe",
            text=text,
            output_format=parse_elevenlabs_format("pcm_16000"),
            source="api",
        )
    )
    expected = -(-(prepared(text) - 200) // 2.5) if expanded else len(text)
    assert run.characters == run.record.characters == expected
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == expected  # reserved before any work
    run.cancel()  # nothing went out: all of it refunded
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 0
    assert SynthesisRecord.objects.get(pk=run.record.pk).status == "cancelled"


def test_a_live_utterance_in_pieces_bills_as_the_whole_text(tenant_a: TenantCtx, joe: Voice) -> None:
    """One free expansion per utterance, not per piece: cut into pieces, ``1/`` and 100 sevens bills
    by the request's rule over all its pieces, as the whole text would (it billed 102 in 20-character
    pieces, each within its own free expansion; the whole text bills 161)."""
    text = "1/" + "7" * 100
    pieces = [text[i : i + 20] for i in range(0, len(text), 20)]
    whole = -(-(prepared(text) - 200) // 2.5)
    utterance_bill = -(-(sum(prepared(piece) for piece in pieces) - 200) // 2.5)
    assert all(prepared(piece) < 200 for piece in pieces)  # each piece alone bills as sent
    assert abs(utterance_bill - whole) <= 0.02 * whole  # pieces are read on their own: a digit's word may differ
    run = synthesis_prepare(
        SynthesisRequest(
            tenant=tenant_a.tenant,
            voice_id="joe",
            text=pieces[0],
            output_format=parse_elevenlabs_format("pcm_16000"),
            source="websocket",
        )
    )
    utterance = LiveUtterance(run)
    try:
        for piece in pieces[1:]:
            assert utterance.add_text(piece)
        # Reserved on arrival, before any audio: the utterance's bill is the whole text's.
        assert run.characters == Usage.objects.get(tenant=tenant_a.tenant).characters == utterance_bill > len(text)
    finally:
        utterance.cancel()
    assert utterance.stream.finished.wait(30)
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 0  # nothing spoken: all of it refunded
