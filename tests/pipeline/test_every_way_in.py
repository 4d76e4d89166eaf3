"""Every way in, one table (#40): the same text, voice, dictionary and speed bill the same characters,
apply the same dictionary and are refused the same way over the engine-time budget, with nothing
written, whichever door they come in by.

The ways in (``WAYS``): the REST routes (whole file, with timestamps, HTTP stream, stream with
timestamps), OpenAI's ``/v1/audio/speech`` (audio and SSE), the reference articles' ``/api/tts``
(whole and streamed) and ``/tts``, the stream-input and multi-context WebSockets, Wyoming
(``synthesize``, and ``synthesize-start``/``-chunk``/``-stop``) and jobs.

What each row must show is worked out here from the rules (``expected``), never from another way
in: the dictionary applied with ``tts.pronunciation``'s functions and checked against its rule by
hand, the text prepared by ``tts.text``, the bill by ``billed_for_prepared`` and
``billed_characters``. The text is one sentence with a word the dictionary lengthens and an amount
normalization spells out, after a greeting: the live ways (both WebSockets, Wyoming's stream) send
the greeting and the sentence as two pieces, so the sentence goes through the live utterance's own
calls of the stages, not only through the pipeline that opens the utterance.

OpenAI, the reference routes and Wyoming cannot name a dictionary: for them the same one is the
tenant's default (``dictionaries_for``: none named, the defaults apply). The reference routes and
Wyoming have no speed field: they speak at 1.0, the speed the other ways send. The reference routes
answer errors as FastAPI does (``{"detail": message}``, a 413 as a 400): their refusal carries no
code, so for them the message shows it is the same refusal.

Every way runs in this process (Django's test client, Channels' ``WebsocketCommunicator``,
``job_run``, and for Wyoming the server's own listener, ``tts.wyoming.server.listen``, on the row's
event loop and this test's database, spoken to over TCP), so
``test_a_way_that_skips_a_stage_fails_its_row`` can patch one way's binding of a stage and see that
way's row fail and the others pass. The Wyoming server as its own process (``manage.py
wyoming_server``) is tested in ``tests/wyoming/``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import importlib
import inspect
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

import numpy as np
import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped, SynthesizeVoice

from accounts.models import Usage
from accounts.ratelimit import reset_local_limits
from infra.lookup_cache import clear_lookup_caches
from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.api.websocket.protocol import CLOSE_TOO_BIG
from tts.jobs.runner import job_run
from tts.models import Job, PronunciationDictionary, PronunciationDictionaryUse, SynthesisRecord, Voice
from tts.pronunciation import billed_characters, dictionaries_for, dictionary_create
from tts.routing import websocket_urlpatterns
from tts.synthesis import SynthesisRequest
from tts.synthesis.stages import resolve as resolve_stage
from tts.synthesis.stages.prepared_billing import billed_for_prepared
from tts.text.prepare import prepare_text
from tts.wyoming.listeners import Listener, parse_networks
from tts.wyoming.server import listen

pytestmark = pytest.mark.django_db(transaction=True)

WORD, ALIAS = "NASA", "National Aeronautics and Space Administration"
RULE = {"type": "alias", "string_to_replace": WORD, "alias": ALIAS}
GREETING, SENTENCE = "Hello there. ", f"The {WORD} fee is $12.50."
TEXT = GREETING + SENTENCE
#: How the live ways send ``TEXT``: the greeting opens the utterance, the sentence is a later piece.
PIECES = (GREETING, SENTENCE)
SPEED = 1.0
LOCATORS = "pronunciation_dictionary_locators"
#: Engine-seconds a request (and a job) may take on the over-budget plan: less than the greeting alone.
TINY_BUDGET = 0.001
REFUSAL = "engine_time_exceeded"


@dataclass(frozen=True)
class Spoken:
    samples: np.ndarray
    rate: int


@dataclass(frozen=True)
class Refused:
    #: The HTTP status, the WebSocket's close code; None for Wyoming (an ``error`` event).
    status: int | None
    #: The error code, where the dialect carries one.
    code: str | None
    message: str


Answer = Spoken | Refused


@dataclass
class Table:
    """What every way in is given: one tenant (its key for Wyoming too), its dictionary, jobs dispatched."""

    ctx: TenantCtx
    dictionary_id: str
    version_id: str
    dispatched: list[str]

    @property
    def locators(self) -> list[dict[str, str]]:
        return [{"pronunciation_dictionary_id": self.dictionary_id}]

    @property
    def applied(self) -> list[dict[str, str]]:
        """What a record's settings say it applied."""
        return [{"pronunciation_dictionary_id": self.dictionary_id, "version_id": self.version_id}]


@dataclass(frozen=True)
class WayIn:
    name: str
    speak: Callable[[Table], Answer]
    #: The sample rate of the audio it answers.
    rate: int
    #: The status its dialect gives the refusal (HTTP status, WebSocket close code, None for Wyoming).
    refused_as: int | None
    names_dictionary: bool = True
    carries_code: bool = True


@dataclass(frozen=True)
class Expected:
    billed: int
    prepared: str


def expected(table: Table) -> Expected:
    """What every way in bills and speaks for ``TEXT``, from the rules."""
    applied = dictionaries_for(table.ctx.tenant, table.locators)
    assert applied is not None
    spoken = applied.apply(TEXT)
    assert spoken == TEXT.replace(WORD, ALIAS)  # the alias rule, by hand
    segments = prepare_text(
        spoken, language="en", normalization="auto", max_segment_chars=django_settings.TTS_SEGMENT_MAX_CHARS
    )
    prepared = " ".join(seg.text for seg in segments)
    assert "twelve dollars and fifty cents" in prepared  # normalization reads the amount
    billed = billed_for_prepared(billed_characters(TEXT, spoken), segments)
    assert billed >= len(spoken) > len(TEXT)  # the rewrite is billed
    return Expected(billed, prepared)


@dataclass(frozen=True)
class Written:
    records: frozenset[uuid.UUID]
    jobs: frozenset[uuid.UUID]
    characters: int
    requests: int


def written(ctx: TenantCtx) -> Written:
    usage = Usage.objects.filter(tenant=ctx.tenant)
    return Written(
        frozenset(SynthesisRecord.objects.filter(tenant=ctx.tenant).values_list("pk", flat=True)),
        frozenset(Job.objects.filter(tenant=ctx.tenant).values_list("pk", flat=True)),
        sum(u.characters for u in usage),
        sum(u.requests for u in usage),
    )


def settled(pk: uuid.UUID, timeout: float = 10.0) -> SynthesisRecord:
    """The record once its run has written its end (a live way's last audio may come first)."""
    deadline = time.monotonic() + timeout
    while True:
        record = SynthesisRecord.objects.get(pk=pk)
        if record.status != SynthesisRecord.Status.PENDING or time.monotonic() > deadline:
            return record
        time.sleep(0.05)


@contextlib.contextmanager
def over_budget(ctx: TenantCtx) -> Iterator[None]:
    """The tenant's plan with a budget ``TEXT`` passes, for requests and jobs alike."""
    plan = ctx.tenant.plan
    plan.max_engine_seconds_per_request = plan.max_engine_seconds_per_job = TINY_BUDGET
    plan.save(update_fields=["max_engine_seconds_per_request", "max_engine_seconds_per_job"])
    clear_lookup_caches()
    try:
        yield
    finally:
        plan.max_engine_seconds_per_request = plan.max_engine_seconds_per_job = None
        plan.save(update_fields=["max_engine_seconds_per_request", "max_engine_seconds_per_job"])
        clear_lookup_caches()


def check_way_in(way: WayIn, table: Table) -> None:
    """``way``'s row of the table; an AssertionError naming the way and what differs.

    1. It speaks ``TEXT`` and bills what the rules bill, on its record and on the quota;
    2. its record names the dictionary (the bill shows it was applied) and the audio is speech as
       long as the prepared text;
    3. over the engine-time budget it is refused with the pipeline's code, in its dialect, and
       writes no record, no job and no quota.
    """
    want = expected(table)
    # Named where the way can name it, else the tenant's default: the same dictionary either way.
    PronunciationDictionary.objects.filter(dictionary_id=table.dictionary_id).update(
        is_default=not way.names_dictionary
    )
    clear_lookup_caches()

    before = written(table.ctx)
    answer = way.speak(table)
    assert isinstance(answer, Spoken), f"{way.name} refused the text: {answer}"
    after = written(table.ctx)
    new = after.records - before.records
    assert len(new) == 1, f"{way.name} wrote {len(new)} history records"
    record = settled(next(iter(new)))
    assert record.status == SynthesisRecord.Status.SUCCESS, f"{way.name}: record {record.status}"
    assert record.text == TEXT and record.voice_id == "joe", f"{way.name} recorded {record.text!r}"
    assert record.characters == want.billed, (
        f"{way.name} billed {record.characters} characters on its record; the rules bill {want.billed}"
    )
    charged = written(table.ctx).characters - before.characters
    assert charged == want.billed, f"{way.name} billed {charged} characters of quota; the rules bill {want.billed}"
    assert record.settings.get(LOCATORS) == table.applied, f"{way.name} applied {record.settings.get(LOCATORS)}"
    assert PronunciationDictionaryUse.objects.filter(record=record).exists(), f"{way.name}: dictionary use"
    assert_speech(answer.samples, answer.rate, expected_rate=way.rate, text=want.prepared)

    with over_budget(table.ctx):
        before = written(table.ctx)
        answer = way.speak(table)
        after = written(table.ctx)
    assert isinstance(answer, Refused), f"{way.name} spoke a text over the engine-time budget"
    assert answer.status == way.refused_as, f"{way.name} refused with status {answer.status}"
    if way.carries_code:
        assert answer.code == REFUSAL, f"{way.name} refused with {answer.code}: {answer.message}"
    assert "engine-seconds" in answer.message, f"{way.name} refused: {answer.message}"
    assert after == before, f"{way.name} wrote on a refusal: {before} -> {after}"


# --- HTTP ------------------------------------------------------------------------------------------


def post(table: Table, path: str, body: dict[str, Any]) -> Any:
    return table.ctx.client().post(path, body, format="json")


def body_of(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else bytes(response.content)


def refused(response: Any) -> Refused:
    """An HTTP error in any dialect: ElevenLabs' ``detail`` object, OpenAI's ``error``, FastAPI's ``detail`` text."""
    data = json.loads(body_of(response))
    if "error" in data:
        return Refused(response.status_code, data["error"].get("code"), data["error"].get("message", ""))
    detail = data.get("detail")
    if isinstance(detail, dict):
        return Refused(response.status_code, detail.get("status"), detail.get("message", ""))
    return Refused(response.status_code, None, str(detail))


def spoken(audio: bytes, fmt: str) -> Spoken:
    return Spoken(*decode_audio(audio, fmt))


def elevenlabs(table: Table) -> dict[str, Any]:
    return {"text": TEXT, "voice_settings": {"speed": SPEED}, LOCATORS: table.locators}


def rest(suffix: str, read: Callable[[bytes], bytes]) -> Callable[[Table], Answer]:
    def speak(table: Table) -> Answer:
        response = post(table, f"/v1/text-to-speech/joe{suffix}?output_format=pcm_16000", elevenlabs(table))
        return refused(response) if response.status_code != 200 else spoken(read(body_of(response)), "pcm_16000")

    return speak


def timestamped(body: bytes) -> bytes:
    """The audio of ``/with-timestamps`` (one object) or ``/stream/with-timestamps`` (one per line)."""
    return b"".join(base64.b64decode(json.loads(line)["audio_base64"]) for line in body.splitlines() if line.strip())


def openai(stream_format: str) -> Callable[[Table], Answer]:
    def speak(table: Table) -> Answer:
        body = {"model": "tts-1", "voice": "joe", "input": TEXT, "response_format": "pcm", "speed": SPEED}
        response = post(table, "/v1/audio/speech", {**body, "stream_format": stream_format})
        if response.status_code != 200:
            return refused(response)
        audio = body_of(response)
        if stream_format == "sse":
            events = [json.loads(line[6:]) for line in audio.decode().splitlines() if line.startswith("data: ")]
            audio = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
        return spoken(audio, "pcm")

    return speak


def api_tts(streaming: bool) -> Callable[[Table], Answer]:
    def speak(table: Table) -> Answer:
        response = post(table, "/api/tts", {"text": TEXT, "speaker": "joe", "streaming": streaming})
        return refused(response) if response.status_code != 200 else spoken(body_of(response), "wav_16000")

    return speak


def lite_tts(table: Table) -> Answer:
    response = post(table, "/tts", {"text": TEXT, "speaker": "joe"})
    if response.status_code != 200:
        return refused(response)
    data = json.loads(body_of(response))
    assert data["status"] == "success", data
    return spoken(base64.b64decode(data["audio"]), "wav")


def job(table: Table) -> Answer:
    body = {"voice_id": "joe", "output_format": "pcm_16000", **elevenlabs(table)}
    response = post(table, "/v1/jobs", body)
    if response.status_code != 202:
        return refused(response)
    job_id = response.json()["job_id"]
    assert table.dispatched[-1] == job_id
    assert job_run(job_id) == "succeeded"
    with Job.objects.get(pk=job_id).audio.open("rb") as audio:
        return spoken(audio.read(), "pcm_16000")


# --- WebSockets ------------------------------------------------------------------------------------


async def converse(path: str, key: str, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bytes, int]:
    """Send ``messages``, then read until the server closes: its messages, the audio, the close code."""
    ws = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path, headers=[(b"xi-api-key", key.encode())])
    connected, _ = await ws.connect(timeout=10)
    assert connected
    received: list[dict[str, Any]] = []
    audio = bytearray()
    try:
        for message in messages:
            await ws.send_json_to(message)
        while True:
            out = await ws.receive_output(timeout=60)
            if out["type"] == "websocket.close":
                return received, bytes(audio), int(out.get("code", 1000))
            received.append(json.loads(out["text"]))
            if received[-1].get("audio"):
                audio += base64.b64decode(received[-1]["audio"])
    finally:
        await ws.disconnect()


def websocket(route: str, messages: Callable[[Table], list[dict[str, Any]]]) -> Callable[[Table], Answer]:
    def speak(table: Table) -> Answer:
        path = f"/v1/text-to-speech/joe/{route}?output_format=pcm_16000"
        received, audio, close = async_to_sync(converse)(path, table.ctx.key, messages(table))
        errors = [m for m in received if m.get("error")]
        if errors:
            return Refused(close, errors[0]["error"], errors[0]["message"])
        assert close == 1000 and received[-1].get("isFinal"), received[-1:]
        return spoken(audio, "pcm_16000")

    return speak


def stream_input(table: Table) -> list[dict[str, Any]]:
    opening = {"text": " ", "voice_settings": {"speed": SPEED}, LOCATORS: table.locators}
    return [opening, *({"text": piece, "flush": True} for piece in PIECES), {"text": ""}]


def multi_context(table: Table) -> list[dict[str, Any]]:
    opening = {"text": " ", "context_id": "turn", "voice_settings": {"speed": SPEED}, LOCATORS: table.locators}
    pieces = [{"text": piece, "context_id": "turn", "flush": True} for piece in PIECES]
    return [opening, *pieces, {"context_id": "turn", "close_context": True}, {"close_socket": True}]


# --- Wyoming ---------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def wyoming_listener(key: str) -> AsyncIterator[int]:
    """A listener of the Wyoming server bound to ``key``, on a free loopback port of the running loop:
    its port. On the way out it stops accepting and waits for its connections to end."""
    listener = Listener("127.0.0.1", 0, key, parse_networks(["127.0.0.0/8"], where="the test's listener"))
    connections: set[asyncio.Task[None]] = set()
    servers = await listen([listener], connections)
    try:
        yield listener.port
    finally:
        for server in servers:
            server.close()
        if connections:
            await asyncio.wait(list(connections), timeout=30)
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)


async def exchange(key: str, events: list[Event], last: Callable[[Event], bool]) -> list[Event]:
    received: list[Event] = []
    async with wyoming_listener(key) as port, AsyncTcpClient("127.0.0.1", port, read_timeout=60) as client:
        for event in events:
            await client.write_event(event)
        while (event := await client.read_event()) is not None:
            received.append(event)
            if last(event) or Error.is_type(event.type):
                break
    return received


def wyoming(events: list[Event], last: Callable[[Event], bool]) -> Callable[[Table], Answer]:
    def speak(table: Table) -> Answer:
        received = async_to_sync(exchange)(table.ctx.key, events, last)
        errors = [Error.from_event(e) for e in received if Error.is_type(e.type)]
        if errors:
            return Refused(None, errors[0].code, errors[0].text)
        start = next(AudioStart.from_event(e) for e in received if AudioStart.is_type(e.type))
        pcm = b"".join(AudioChunk.from_event(e).audio for e in received if AudioChunk.is_type(e.type))
        return Spoken(np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0, start.rate)

    return speak


JOE = SynthesizeVoice(name="joe")

WAYS = [
    WayIn("rest", rest("", bytes), 16000, 413),
    WayIn("rest-with-timestamps", rest("/with-timestamps", timestamped), 16000, 413),
    WayIn("rest-stream", rest("/stream", bytes), 16000, 413),
    WayIn("rest-stream-with-timestamps", rest("/stream/with-timestamps", timestamped), 16000, 413),
    WayIn("openai", openai("audio"), 24000, 413, names_dictionary=False),
    WayIn("openai-sse", openai("sse"), 24000, 413, names_dictionary=False),
    WayIn("reference-api-tts", api_tts(False), 16000, 400, names_dictionary=False, carries_code=False),
    WayIn("reference-api-tts-streaming", api_tts(True), 16000, 400, names_dictionary=False, carries_code=False),
    WayIn("reference-tts", lite_tts, 22050, 400, names_dictionary=False, carries_code=False),
    WayIn("stream-input", websocket("stream-input", stream_input), 16000, CLOSE_TOO_BIG),
    WayIn("multi-context", websocket("multi-stream-input", multi_context), 16000, CLOSE_TOO_BIG),
    WayIn(
        "wyoming-synthesize",
        wyoming([Synthesize(text=TEXT, voice=JOE).event()], lambda e: AudioStop.is_type(e.type)),
        22050,
        None,
        names_dictionary=False,
    ),
    WayIn(
        "wyoming-stream",
        wyoming(
            [
                SynthesizeStart(voice=JOE).event(),
                *(SynthesizeChunk(text=p).event() for p in PIECES),
                SynthesizeStop().event(),
            ],
            lambda e: SynthesizeStopped.is_type(e.type),
        ),
        22050,
        None,
        names_dictionary=False,
    ),
    WayIn("job", job, 16000, 413),
]
WAY = {way.name: way for way in WAYS}


@pytest.fixture
def table(tenant_a: TenantCtx, joe: Voice, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Table:
    """One tenant with the dictionary; jobs dispatched to this test, which runs them."""
    settings.TTS_AUDIO_CACHE_ENABLED = False  # every way makes its audio: nothing answered from a cache
    reset_local_limits()
    ctx = tenant_a
    dictionary, version = dictionary_create(tenant=ctx.tenant, name="acronyms", rules=[RULE])
    dispatched: list[str] = []
    monkeypatch.setattr("tts.jobs.actions.job_dispatch", lambda job_id: dispatched.append(str(job_id)))
    return Table(ctx, dictionary.dictionary_id, version.version_id, dispatched)


@pytest.mark.parametrize("way", WAYS, ids=[way.name for way in WAYS])
def test_every_way_in_bills_applies_and_refuses_alike(way: WayIn, table: Table) -> None:
    check_way_in(way, table)


# --- a way that skips a stage ----------------------------------------------------------------------


@dataclass(frozen=True)
class Skip:
    """One way's own binding of its prepare step: the first of ``names`` that ``caller`` (in ``module``)
    calls, and the ways whose rows it feeds (``breaks``) and does not (``keeps``)."""

    module: str
    caller: str
    names: tuple[str, ...]
    breaks: tuple[str, ...]
    keeps: tuple[str, ...]


SKIPS = {
    "job": Skip(
        "tts.synthesis.stages.job",
        "job_prepare",
        ("prepare_text", "prepare_job_text"),
        ("job",),
        ("rest-stream", "stream-input"),
    ),
    # A live utterance's later pieces: both WebSockets' and Wyoming's stream (the sentence is one).
    "live": Skip(
        "tts.synthesis.live.streaming",
        "LiveUtterance.add_text",
        ("prepare_piece", "prepare_text"),
        ("stream-input", "multi-context", "wyoming-stream"),
        ("rest-stream", "wyoming-synthesize", "job"),
    ),
    # Wyoming's ``synthesize`` (the driver's ``say``, a text known in full), and the first piece of every
    # live utterance (its dictionaries are the utterance's): the driver binds the pipeline once for both.
    "wyoming": Skip(
        "tts.synthesis.live.driver",
        "UtteranceDriver.say",
        ("synthesis_prepare",),
        ("wyoming-synthesize", "wyoming-stream", "stream-input", "multi-context"),
        ("rest-stream", "job"),
    ),
    "rest-stream": Skip(
        "tts.api.streaming",
        "TextToSpeechStreamApi.post",
        ("synthesis_prepare",),
        ("rest-stream",),
        ("rest", "stream-input", "job"),
    ),
}


def names_called(code: CodeType) -> set[str]:
    """The global names ``code`` (and the comprehensions and closures inside it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= names_called(const)
    return names


def stage_binding(skip: Skip) -> tuple[ModuleType, str]:
    module = importlib.import_module(skip.module)
    caller: Any = module
    for part in skip.caller.split("."):
        caller = getattr(caller, part, None)
    assert caller is not None, f"{skip.module} has no {skip.caller}: name the way's caller of its prepare step"
    called = names_called(caller.__code__)
    name = next((n for n in skip.names if n in called and callable(getattr(module, n, None))), None)
    assert name is not None, f"{skip.module}.{skip.caller} calls none of {skip.names}: name its prepare step here"
    return module, name


def is_resolved(value: object) -> bool:
    """A stage's value that carries the dictionaries that apply (``Resolved``, whatever it is named)."""
    return not isinstance(value, type) and dataclasses.is_dataclass(value) and hasattr(value, "dictionaries")


class NoDictionaries(threading.local):
    """Set while a skipping binding resolves its request on this thread: the resolve stage then finds
    no dictionaries, neither named nor the tenant's defaults (the ways that name none use those)."""

    on = False


def resolving_none(monkeypatch: pytest.MonkeyPatch) -> NoDictionaries:
    """The resolve stage's lookup of the dictionaries, made to find none while the switch is on."""
    switch = NoDictionaries()
    lookup = resolve_stage.dictionaries_for

    def dictionaries_for(*args: Any, **kwargs: Any) -> Any:
        return None if switch.on else lookup(*args, **kwargs)

    monkeypatch.setattr(resolve_stage, "dictionaries_for", dictionaries_for)
    return switch


def ignoring_dictionaries(real: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """``real`` made to skip the dictionaries: its ``dictionaries`` None, its resolved value's
    ``dictionaries`` None, or its request resolved with none (neither named nor the tenant's defaults)."""
    signature = inspect.signature(real)
    annotations = {name: str(p.annotation) for name, p in signature.parameters.items()}
    if not any(n == "dictionaries" or "Resolved" in a or "SynthesisRequest" in a for n, a in annotations.items()):
        pytest.fail(
            f"{real.__qualname__}{signature} takes no dictionaries, resolved value or request: update this test"
        )
    no_dictionaries = resolving_none(monkeypatch)

    def skipping(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        resolves = False
        for name, value in bound.arguments.items():
            if name == "dictionaries":
                bound.arguments[name] = None
            elif isinstance(value, SynthesisRequest):
                resolves = True
            elif is_resolved(value):
                bound.arguments[name] = dataclasses.replace(value, dictionaries=None)
        no_dictionaries.on = resolves
        try:
            return real(*bound.args, **bound.kwargs)
        finally:
            no_dictionaries.on = False

    return skipping


@pytest.mark.parametrize("skipped", list(SKIPS))
def test_a_way_that_skips_a_stage_fails_its_row(skipped: str, table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """A way whose own binding of its prepare step ignores the dictionaries fails its row of the table
    (at the bill), and the ways that do not go through that binding still pass theirs."""
    skip = SKIPS[skipped]
    module, name = stage_binding(skip)
    monkeypatch.setattr(module, name, ignoring_dictionaries(getattr(module, name), monkeypatch))
    for way in skip.breaks:
        with pytest.raises(AssertionError, match="billed"):
            check_way_in(WAY[way], table)
    for way in skip.keeps:
        check_way_in(WAY[way], table)
