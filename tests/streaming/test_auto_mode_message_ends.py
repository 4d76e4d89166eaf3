"""auto_mode on ElevenLabs' WebSockets: a message that ends a sentence is spoken at once, space or not.

pipecat's ``ElevenLabsTTSService`` sends each sentence as one message with no trailing space
("... with that." then "Your table ..."): the first sentence waited for the turn's flush, and a
Kokoro voice's first audio came after both sentences were synthesized (issue 44,
docs/benchmarks.md, "Voice-agent frameworks").
"""

from __future__ import annotations

from tts.synthesis.live.text_buffer import TextBuffer, strict_sentence_ends


def test_it_speaks_a_sentence_that_ends_its_message() -> None:
    buffer = TextBuffer(auto_mode=True)
    assert buffer.add("Sure, I can help with that.") == ["Sure, I can help with that."]
    assert buffer.add("Is there anything else?") == ["Is there anything else?"]
    assert buffer.pending == ""


def test_it_waits_where_the_mark_may_not_end_the_sentence() -> None:
    buffer = TextBuffer(auto_mode=True)
    for token in ("It costs 3.", "Dr.", "the U.S."):
        assert buffer.add(token) == []
    assert buffer.pending == "It costs 3.Dr.the U.S."


def test_it_changes_nothing_without_auto_mode_or_on_wyoming() -> None:
    assert TextBuffer().add("Sure, I can help with that.") == []  # the chunk schedule decides
    wyoming = TextBuffer(auto_mode=True, sentence_ends=strict_sentence_ends)
    assert wyoming.add("Sure, I can help with that.") == []  # LLM tokens: "3." may go on
