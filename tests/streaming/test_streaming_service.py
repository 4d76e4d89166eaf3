"""tts.synthesis.live.streaming in-process: prefetch bound, close, thread clean-up, the
stream equal to the whole file, and the stream-input text buffer's rules."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from accounts.authentication import raw_key_from_scope
from accounts.models import Usage
from tests.fixtures import TenantCtx
from tts.api.websocket.protocol import ProtocolError, parse_chunk_schedule, parse_options
from tts.audio.formats import parse_elevenlabs_format
from tts.inference.engine import SynthesisParams
from tts.models import SynthesisRecord, Voice
from tts.synthesis.live.streaming import ThreadedStream, stream_synthesis
from tts.synthesis.live.text_buffer import TextBuffer, loose_sentence_ends, strict_sentence_ends
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.stages import engine as synthesis_engine
from tts.synthesis.stages.pipeline import synthesis_create, synthesis_prepare

SENTENCES = [f"This is sentence number {n}, spoken slowly and clearly." for n in range(1, 9)]


def stream_threads(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def test_it_prefetches_one_item_and_no_more() -> None:
    produced: list[int] = []
    closed = threading.Event()

    def items() -> Iterator[int]:
        try:
            for i in range(100):
                produced.append(i)
                yield i
        finally:
            closed.set()

    async def main() -> None:
        stream = ThreadedStream(items, name="tts-test-prefetch")
        assert await stream.__anext__() == 0
        await asyncio.sleep(0.2)  # time enough to run ahead, if it would
        assert len(produced) <= 2
        stream.close()
        assert await asyncio.to_thread(stream.finished.wait, 10)

    asyncio.run(main())
    assert closed.is_set() and len(produced) <= 2
    for thread in stream_threads("tts-test-prefetch"):
        thread.join(timeout=5)
    assert not stream_threads("tts-test-prefetch")


def test_it_abandons_a_stream_that_never_started() -> None:
    abandoned = threading.Event()
    stream: ThreadedStream[int] = ThreadedStream(lambda: iter([1]), abandon=abandoned.set, name="tts-test-abandon")
    stream.close()
    stream.close()  # twice is fine
    assert stream.finished.wait(10) and abandoned.is_set()


def deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    """No sampling noise, so that two syntheses of one text are the same samples."""
    original = synthesis_engine.params_for

    def params(*args: object) -> SynthesisParams:
        p = original(*args)  # type: ignore[arg-type]
        return SynthesisParams(speaker_id=p.speaker_id, length_scale=p.length_scale, noise_scale=0.0, noise_w=0.0)

    monkeypatch.setattr(synthesis_engine, "params_for", params)


def request(ctx: TenantCtx, text: str, fmt: str) -> SynthesisRequest:
    return SynthesisRequest(
        tenant=ctx.tenant,
        voice_id="joe",
        text=text,
        output_format=parse_elevenlabs_format(fmt),
        source="elevenlabs_stream",
        enable_logging=False,  # nothing cached: both runs synthesize
    )


async def collect(stream: ThreadedStream[bytes], limit: int | None = None) -> list[bytes]:
    out = []
    async for chunk in stream:
        out.append(chunk)
        if limit is not None and len(out) >= limit:
            stream.close()
            break
    return out


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fmt", ["mp3_44100_128", "wav_22050"])
def test_it_streams_the_same_bytes_as_the_whole_file(
    tenant_a: TenantCtx, joe: Voice, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    deterministic(monkeypatch)
    text = " ".join(SENTENCES[:2]) + f" Format {fmt}."
    whole = synthesis_create(request(tenant_a, text, fmt)).audio
    prep = synthesis_prepare(request(tenant_a, text, fmt))
    chunks = asyncio.run(collect(stream_synthesis(prep)))
    assert len(chunks) >= 3  # one piece per segment at least
    streamed = b"".join(chunks)
    assert prep.encoder is not None
    assert prep.encoder.seal(streamed) == whole


@pytest.mark.django_db(transaction=True)
def test_it_stops_at_the_next_segment_when_closed(tenant_a: TenantCtx, joe: Voice) -> None:
    text = " ".join(SENTENCES)
    prep = synthesis_prepare(request(tenant_a, text, "pcm_16000"))
    stream = stream_synthesis(prep)
    chunks = asyncio.run(collect(stream, limit=1))
    assert len(chunks) == 1
    assert stream.finished.wait(30)
    record = SynthesisRecord.objects.get(pk=prep.record.pk)
    assert record.status == "cancelled"
    # The first segment, perhaps the one prefetched: never the rest.
    assert 1 <= prep.done_segments <= 2 < len(SENTENCES)
    usage = Usage.objects.get(tenant=tenant_a.tenant)
    assert usage.characters == record.characters < len(text) / 3


@pytest.mark.django_db(transaction=True)
def test_it_cancels_a_stream_closed_before_it_began(tenant_a: TenantCtx, joe: Voice) -> None:
    prep = synthesis_prepare(request(tenant_a, SENTENCES[0], "pcm_16000"))
    stream = stream_synthesis(prep)
    stream.close()
    assert stream.finished.wait(10)
    assert SynthesisRecord.objects.get(pk=prep.record.pk).status == "cancelled"
    assert Usage.objects.get(tenant=tenant_a.tenant).characters == 0


def test_it_buffers_text_by_the_chunk_schedule() -> None:
    buffer = TextBuffer((50, 80))
    assert buffer.add("Hello there, how ") == []
    # 50 reached: cut after the sentence end, the rest waits.
    assert buffer.add("are you today? I hope the weather is kind ") == ["Hello there, how are you today? "]
    assert buffer.pending == "I hope the weather is kind "
    # Next threshold is 80; no sentence end, so the cut is at the last space: no split words.
    pieces = buffer.add("to you and to everyone you know and love in that town by the se")
    assert pieces == ["I hope the weather is kind to you and to everyone you know and love in that town by the "]
    assert buffer.flush() == "se" and buffer.flush() == ""


def test_it_speaks_whole_sentences_in_auto_mode() -> None:
    buffer = TextBuffer(auto_mode=True)
    assert buffer.add("Hi") == []
    assert buffer.add(". How are") == ["Hi. "]
    assert buffer.add(" you? Fine") == ["How are you? "]
    assert buffer.pending == "Fine"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("output_format=mp3_1", "output_format"),
        ("inactivity_timeout=0", "inactivity_timeout"),
        ("inactivity_timeout=soon", "inactivity_timeout"),
        ("enable_logging=maybe", "enable_logging"),
        ("apply_text_normalization=always", "apply_text_normalization"),
    ],
)
def test_it_names_the_bad_query_parameter(query: str, field: str) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_options(query)
    assert err.value.field == field and field in err.value.message and err.value.close_code


def test_it_reads_the_options_and_schedule() -> None:
    options = parse_options(b"output_format=ulaw_8000&inactivity_timeout=180&binary_audio=true&xi-api-key=k")
    assert options.output_format.name == "ulaw_8000" and options.inactivity_timeout == 180
    assert options.binary_audio
    # The key travels in the query for browsers; one function reads it for both consumers.
    assert raw_key_from_scope({"headers": [], "query_string": b"binary_audio=true&xi-api-key=k"}) == "k"
    assert raw_key_from_scope({"headers": [], "query_string": b"xi_api_key=j"}) == "j"
    assert raw_key_from_scope({"headers": [(b"xi-api-key", b"h")], "query_string": b"xi_api_key=j"}) == "h"
    assert parse_options("").output_format.name == "mp3_44100_128"
    assert parse_chunk_schedule([50, 500]) == (50, 500)
    for bad in ([], [49], [True], "120", [120.5]):
        with pytest.raises(ProtocolError):
            parse_chunk_schedule(bad)


def test_it_does_not_block_the_event_loop() -> None:
    """The generator runs on the stream's thread: it can wait for the loop to tick."""
    ticked = threading.Event()

    def waits_for_the_loop() -> Iterator[int]:
        # Were next() run on the event loop, the ticker could never set this.
        assert ticked.wait(10), "the event loop was blocked while the stream worked"
        yield 1

    async def main() -> None:
        async def ticker() -> None:
            for _ in range(3):
                await asyncio.sleep(0)
            ticked.set()

        task = asyncio.create_task(ticker())
        stream = ThreadedStream(waits_for_the_loop, name="tts-test-loop")
        assert await stream.__anext__() == 1
        stream.close()
        await task

    asyncio.run(main())


def test_its_buffer_keeps_no_pile_of_whitespace_and_finds_ends_across_messages() -> None:
    buffer = TextBuffer((50,), auto_mode=True)
    for _ in range(10_000):
        assert buffer.add(" ") == []
    assert buffer.pending == ""
    assert buffer.add("Hello there") == [] and buffer.add(" ") == [] and buffer.add("   ") == []
    assert buffer.pending == "Hello there "
    # A sentence end split over two messages is still found. (A message that itself ends a sentence,
    # "friend.", is spoken at once: test_auto_mode_message_ends.py.)
    assert buffer.add("friend") == [] and buffer.add(".") == []
    assert buffer.add(" And") == ["Hello there friend. "]
    assert buffer.pending == "And"


def test_its_cost_per_message_does_not_grow_with_the_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    from tts.synthesis.live import text_buffer as stream_input

    scanned: list[int] = []
    pattern = stream_input._SENTENCE_END

    class Counting:
        def finditer(self, text: str, pos: int = 0) -> Iterator[object]:
            scanned.append(len(text) - pos)
            return pattern.finditer(text, pos)

    monkeypatch.setattr(stream_input, "_SENTENCE_END", Counting())
    buffer = TextBuffer((50,), auto_mode=True)  # auto mode: nothing is cut without a sentence end
    for _ in range(4_000):
        buffer.add("word ")
    assert len(buffer.pending) == 20_000
    # Each message searches itself and the few characters before it, never the whole buffer.
    assert max(scanned) <= len("word ") + stream_input._END_OVERLAP


@pytest.mark.parametrize(
    ("text", "now"),
    [
        # wyoming-bench's nonce and a clause after ; stay in their sentence (wyoming-piper cuts so).
        ("It should arrive on Thursday. 1f3a9c0e", ""),
        ("Boats rocked; gulls argued. Then it rained", "Boats rocked; gulls argued."),
        ("Dr. Smith came. Four! five? Six", "Dr. Smith came. Four! five?"),
        ('He said "go." Then left', 'He said "go."'),
        ("今天很好。我们走吧！好", "今天很好。我们走吧！"),  # noqa: RUF001
    ],
)
def test_wyomings_buffer_cuts_sentences_where_wyoming_piper_does(text: str, now: str) -> None:
    # As wyoming-bench and Home Assistant send it: a chunk of text; what has ended is spoken at once.
    buffer = TextBuffer(auto_mode=True, sentence_ends=strict_sentence_ends)
    spoken = "".join(buffer.add(text))
    assert spoken.rstrip() == now
    assert spoken + buffer.flush() == text
    assert [piece.rstrip() for piece in TextBuffer(auto_mode=True).add("Boats rocked; gulls argued. 1f3a")] == [
        "Boats rocked; gulls argued."
    ]  # the other routes' buffer: also at ; (ElevenLabs' WebSockets)


def test_wyomings_buffer_speaks_a_sentence_whose_space_came_last_at_once() -> None:
    buffer = TextBuffer(auto_mode=True, sentence_ends=strict_sentence_ends)
    assert buffer.add("The boats rocked") == []
    assert buffer.add(". ") == ["The boats rocked. "]  # nothing after it yet: not kept waiting
    assert buffer.add("Dr. ") == []  # an abbreviation is no end, even so
    assert buffer.add("Smith came; then") == [] and buffer.flush() == "Dr. Smith came; then"


# Messages built to make a careless sentence-end rule backtrack (as tests/text/test_prepare.py's).
ADVERSARIAL = {
    "dots": "." * 20_000 + "x",
    "ellipsis": "\u2026" * 20_000 + "x",
    "questions": "?" * 20_000 + "x",
    "ends": ". A" * 7_000,
    "full-stops": "\u3002" * 20_000 + "x",
}


@pytest.mark.parametrize("rule", [strict_sentence_ends, loose_sentence_ends], ids=["wyoming", "websocket"])
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_sentence_ends_stay_linear_on_adversarial_text(rule: Callable[[str, int], list[int]], name: str) -> None:
    started = time.monotonic()
    ends = rule(ADVERSARIAL[name], 0)
    assert time.monotonic() - started < 2.0
    assert ends == sorted(ends) and all(0 < end <= len(ADVERSARIAL[name]) for end in ends)
