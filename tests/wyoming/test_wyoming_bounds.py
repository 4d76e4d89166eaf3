"""What a bad Wyoming client meets: a server with small bounds, raw sockets for what the
``wyoming`` library would never send, and the library's client where it can."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import httpx
import numpy as np
import pytest
from django.test import override_settings
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize

from tests.audio_checks import assert_speech
from tests.fixtures import TenantCtx
from tests.wyoming.conftest import WyomingServer
from tts.models import SynthesisRecord, Voice
from tts.wyoming.framing import SendTimeout, write_event

pytestmark = pytest.mark.django_db(transaction=True)


def raw_exchange(port: int, data: bytes, *, timeout: float = 10, source: str = "127.0.0.1") -> tuple[list[dict], bool]:
    """Send ``data`` (from the loopback address ``source``); the events that come back (headers with
    their data merged) and whether the server closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as sock:
        sock.sendall(data)
        buffer = b""
        closed = False
        try:
            while True:
                piece = sock.recv(65536)
                if not piece:
                    closed = True
                    break
                buffer += piece
        except TimeoutError:
            pass
        except ConnectionResetError:  # an aborted connection (RST) may reach recv before its data: closed
            closed = True
    events = []
    while b"\n" in buffer:
        line, buffer = buffer.split(b"\n", 1)
        header = json.loads(line)
        length = header.get("data_length") or 0
        if length:
            header["data"] = {**header.get("data", {}), **json.loads(buffer[:length])}
            buffer = buffer[length:]
        buffer = buffer[header.get("payload_length") or 0 :]
        events.append(header)
    return events, closed


def error_codes(events: list[dict]) -> list[str]:
    return [e["data"]["code"] for e in events if e["type"] == "error"]


def test_an_oversized_header_is_refused_and_closed(
    strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx
) -> None:
    line = json.dumps({"type": "describe", "data": {"pad": "x" * 8000}}).encode() + b"\n"
    events, closed = raw_exchange(strict_wyoming_server.port, line)
    assert error_codes(events) == ["event_too_large"] and closed


def test_lengths_over_the_bounds_are_refused_before_they_are_read(
    strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx
) -> None:
    for header in ({"type": "describe", "data_length": 10_000_000}, {"type": "describe", "payload_length": 5000}):
        events, closed = raw_exchange(strict_wyoming_server.port, json.dumps(header).encode() + b"\n")
        assert error_codes(events) == ["event_too_large"] and closed, header


def test_a_payload_length_that_lies_ends_the_connection(
    strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx
) -> None:
    # Promises 500 bytes, sends 10: refused once TTS_WYOMING_EVENT_TIMEOUT_S (1 s here) passed.
    started = time.monotonic()
    events, closed = raw_exchange(
        strict_wyoming_server.port, json.dumps({"type": "ping", "payload_length": 500}).encode() + b"\n" + b"0" * 10
    )
    assert error_codes(events) == ["incomplete_event"] and closed
    assert time.monotonic() - started < 5
    # Promises 2 bytes, sends 40: the rest is no event header.
    events, closed = raw_exchange(
        strict_wyoming_server.port,
        json.dumps({"type": "ping", "payload_length": 2}).encode() + b"\n" + b"\x00\xff" * 20 + b"\n",
    )
    assert "invalid_event" in error_codes(events) and closed


def test_garbage_is_refused(strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx) -> None:
    for line in (b"GET / HTTP/1.1\r\n", b"[1, 2]\n", b'{"type": 5}\n'):
        events, closed = raw_exchange(strict_wyoming_server.port, line)
        assert error_codes(events) == ["invalid_event"] and closed, line


def test_an_idle_connection_times_out(strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx) -> None:
    started = time.monotonic()
    events, closed = raw_exchange(strict_wyoming_server.port, b"")
    assert error_codes(events) == ["input_timeout_exceeded"] and closed
    assert 1.0 < time.monotonic() - started < 6


def test_connections_past_the_bounds_are_turned_away(
    strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx
) -> None:
    """Two connections an address (TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS), three a listener
    (TTS_WYOMING_MAX_CONNECTIONS); loopback's other addresses are other clients."""
    port = strict_wyoming_server.port

    def connect(source: str) -> socket.socket:
        return socket.create_connection(("127.0.0.1", port), source_address=(source, 0))

    held = [connect("127.0.0.1") for _ in range(2)]
    try:
        time.sleep(0.3)
        events, closed = raw_exchange(port, b"")
        assert error_codes(events) == ["too_many_connections"] and closed
        assert "TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS" in events[0]["data"]["text"]
        held.append(connect("127.0.0.2"))  # another address: its own two places
        time.sleep(0.3)
        events, closed = raw_exchange(port, b"", source="127.0.0.3")  # the listener's three are taken
        assert error_codes(events) == ["too_many_connections"] and closed
        assert "(TTS_WYOMING_MAX_CONNECTIONS)" in events[0]["data"]["text"]
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)

    async def describe() -> Event | None:
        async with AsyncTcpClient("127.0.0.1", port, read_timeout=10) as client:
            await client.write_event(Describe().event())
            return await client.read_event()

    answer = asyncio.run(describe())  # places are given back when connections close
    assert answer is not None and Info.is_type(answer.type)


def test_a_client_outside_the_allowed_networks_hears_nothing(
    strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx
) -> None:
    """The table's second port admits only 192.0.2.0/24: a loopback client is closed without a word."""
    events, closed = raw_exchange(strict_wyoming_server.closed_port, json.dumps({"type": "describe"}).encode() + b"\n")
    assert events == [] and closed
    assert "not in its allowed networks" in strict_wyoming_server.log()


def test_a_reader_that_never_reads_is_cut_off() -> None:
    """The slow reader's bound, in-process: a write the client leaves unread ends in SendTimeout."""

    async def scenario() -> bool:
        accepted: asyncio.Future[asyncio.StreamWriter] = asyncio.get_running_loop().create_future()

        async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.set_result(writer)

        server = await asyncio.start_server(on_client, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(("127.0.0.1", port))
        writer = await accepted
        try:
            with override_settings(TTS_STREAM_SEND_TIMEOUT_S=1):
                for _ in range(200):
                    await write_event(writer, Event(type="audio-chunk", payload=b"\0" * 65536))
        except SendTimeout:
            return True
        finally:
            client.close()
            server.close()
        return False

    started = time.monotonic()
    assert asyncio.run(scenario())
    assert time.monotonic() - started < 10


def test_an_error_event_names_the_code(strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx) -> None:
    events, _ = raw_exchange(strict_wyoming_server.port, json.dumps({"type": "mystery"}).encode() + b"\n", timeout=3)
    error = Error(text=events[0]["data"]["text"], code=events[0]["data"]["code"])
    assert error.code == "unknown_event" and "mystery" in error.text


def test_a_configured_rate_is_resampled_and_counted_in_the_metrics(
    strict_wyoming_server: WyomingServer, wyoming_tenant: TenantCtx, joe: Voice
) -> None:
    text = "A kitchen timer went off."

    async def synthesize() -> list[Event]:
        events = []
        async with AsyncTcpClient("127.0.0.1", strict_wyoming_server.port, read_timeout=60) as client:
            await client.write_event(Synthesize(text=text).event())
            while (event := await client.read_event()) is not None:
                events.append(event)
                if AudioStop.is_type(event.type) or Error.is_type(event.type):
                    break
        return events

    events = asyncio.run(synthesize())
    start = next(AudioStart.from_event(e) for e in events if AudioStart.is_type(e.type))
    assert start.rate == 16000  # joe speaks at 22050 Hz: resampled
    pcm = b"".join(AudioChunk.from_event(e).audio for e in events if AudioChunk.is_type(e.type))
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    assert_speech(samples, 16000, text=text)
    record = SynthesisRecord.objects.get(tenant=wyoming_tenant.tenant)
    assert record.sample_rate == 16000 and record.output_format == "pcm_16000"
    metrics = httpx.get(f"http://127.0.0.1:{strict_wyoming_server.metrics_port}/metrics", timeout=10).text
    assert 'tts_syntheses_total{source="wyoming",status="success"} 1.0' in metrics
