"""A stream's lead over playback, measured from what was handed to its connection."""

from __future__ import annotations

from tts.inference.pacing import StreamLead, is_ahead


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_lead_counts_what_was_sent_from_the_first_byte_and_late_chunks_are_underruns() -> None:
    clock = Clock()
    seen: list[tuple[float, bool]] = []
    lead = StreamLead(clock=clock, on_sent=lambda s, late: seen.append((s, late)))
    assert lead.lead_s() == 0.0 and not is_ahead(lead, 1.0)  # before the first byte the listener waits
    lead.produced(0.5)
    lead.produced(0.5)
    lead.item()  # one item holding 1 s
    lead.produced(3.0)
    lead.item()  # produced, not yet sent: not counted
    lead.sent()
    assert lead.lead_s() == 1.0
    clock.now += 0.25
    assert lead.lead_s() == 0.75 and not is_ahead(lead, 1.0)
    lead.sent()
    assert lead.lead_s() == 3.75 and is_ahead(lead, 1.0)
    lead.produced(1.0)
    lead.item()
    clock.now += 5.0  # the next chunk goes out after its playback time
    lead.sent()
    assert lead.underruns == 1 and seen[-1][1] and not seen[0][1] and not seen[1][1]
    assert not is_ahead(None)
