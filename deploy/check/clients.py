"""The real clients `make deploy-check` drives a deployment with, and what it asserts on their audio.

Each call goes through a client a user would use (the official ``openai`` and ``elevenlabs`` SDKs,
``websockets`` for stream-input, ``httpx`` for jobs, logins and probes, the ``wyoming`` library) and
returns or checks decoded audio: right rate, plausible length for its text, not silence. Runs in the
check's own virtualenv (deploy/check/requirements.txt), outside the platform: nothing of the
platform's code is imported.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
import soundfile as sf
import websockets


class CheckFailed(AssertionError):
    """A deployment did not do what the check asked; the message says what and where."""


def ensure(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


@dataclass(frozen=True)
class Audio:
    samples: np.ndarray
    rate: int

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.rate


def decode(data: bytes, fmt: str) -> Audio:
    """``pcm_<rate>``/``pcm`` (s16le; OpenAI's pcm is 24 kHz) or a container soundfile reads (wav, flac, mp3)."""
    match = re.fullmatch(r"pcm(?:_(\d+))?", fmt)
    if match:
        ensure(len(data) % 2 == 0, f"odd byte count {len(data)} for s16le pcm")
        samples = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
        return Audio(samples, int(match.group(1) or 24000))
    samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    return Audio(samples.mean(axis=1), int(rate))


def assert_speech(audio: Audio, *, rate: int, text: str, what: str) -> None:
    """Right rate, 25-250 ms of audio per character (Han and kana count 3), and not silence."""
    ensure(audio.rate == rate, f"{what}: {audio.rate} Hz, expected {rate}")
    weight = sum(3 if ord(ch) > 0x2E80 else 1 for ch in text if not ch.isspace())
    low, high = 0.025 * weight, 0.25 * weight + 1.0
    ensure(low <= audio.seconds <= high, f"{what}: {audio.seconds:.2f} s of audio for {len(text)} characters")
    frame = max(1, audio.rate // 50)
    n = len(audio.samples) // frame
    rms = np.sqrt((audio.samples[: n * frame].astype(np.float64).reshape(n, frame) ** 2).mean(axis=1))
    ensure(
        float(np.percentile(rms, 90)) > 0.01,
        f"{what}: silence (90th percentile frame RMS {np.percentile(rms, 90):.4f})",
    )


def openai_speech(base: str, key: str, text: str, *, voice: str = "alloy", fmt: str = "wav") -> Audio:
    import openai

    client = openai.OpenAI(api_key=key, base_url=f"{base}/v1", max_retries=0, timeout=120)
    response = client.audio.speech.create(model="tts-1", voice=voice, input=text, response_format=fmt)  # type: ignore[arg-type]
    return decode(response.content, fmt)


def elevenlabs_client(base: str, key: str) -> Any:
    from elevenlabs.client import ElevenLabs

    return ElevenLabs(api_key=key, base_url=base, timeout=120)


def elevenlabs_speech(base: str, key: str, text: str, *, voice: str = "joe", fmt: str = "pcm_16000") -> Audio:
    client = elevenlabs_client(base, key)
    data = b"".join(client.text_to_speech.convert(voice_id=voice, text=text, output_format=fmt))
    return decode(data, fmt)


def character_count(base: str, key: str) -> int:
    """The tenant's billed characters this period, as the ElevenLabs SDK reads them."""
    return int(elevenlabs_client(base, key).user.subscription.get().character_count)


def history_characters(base: str, key: str) -> list[int]:
    """Each history item's billed characters, newest first, as the ElevenLabs SDK lists them."""
    items = elevenlabs_client(base, key).history.list(page_size=100).history
    return [int(item.character_count_change_to or 0) - int(item.character_count_change_from or 0) for item in items]


def history_audio(base: str, key: str, item_id: str) -> Audio:
    client = elevenlabs_client(base, key)
    return decode(b"".join(client.history.get_audio(item_id)), "pcm_16000")


def latest_history_id(base: str, key: str, text: str) -> str:
    items = elevenlabs_client(base, key).history.list(page_size=20).history
    for item in items:
        if item.text == text:
            return str(item.history_item_id)
    raise CheckFailed(f"no history item for {text!r}")


@dataclass
class StreamResult:
    audio: bytes
    messages: int
    final: bool
    close_code: int | None
    close_reason: str
    error: str


async def stream_input(
    ws_base: str,
    key: str,
    pieces: list[str],
    *,
    voice: str = "joe",
    fmt: str = "pcm_16000",
    pause: float = 0.0,
    on_first_audio: Any = None,
    limit_s: float = 120.0,
) -> StreamResult:
    """One stream-input utterance: init, the pieces, the end; audio and how the socket ended."""
    url = f"{ws_base}/v1/text-to-speech/{voice}/stream-input?output_format={fmt}&inactivity_timeout=60"
    audio = bytearray()
    messages, final, error = 0, False, ""
    async with websockets.connect(
        url, additional_headers={"xi-api-key": key}, max_size=None, open_timeout=30, close_timeout=5
    ) as ws:
        await ws.send(json.dumps({"text": " "}))
        for piece in pieces:
            await ws.send(json.dumps({"text": piece}))
            if pause:
                await asyncio.sleep(pause)
        await ws.send(json.dumps({"text": ""}))
        deadline = time.monotonic() + limit_s
        try:
            while time.monotonic() < deadline:
                message = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
                messages += 1
                if message.get("audio"):
                    if not audio and on_first_audio is not None:
                        on_first_audio()
                    audio += base64.b64decode(message["audio"])
                if message.get("error") or (message.get("message") and not message.get("audio")):
                    error = str(message)
                if message.get("isFinal"):
                    final = True
        except websockets.ConnectionClosed:
            pass
        await ws.wait_closed()
        code = ws.close_code
        reason = ws.close_reason or ""
    return StreamResult(bytes(audio), messages, final, code, reason, error)


def submit_job(base: str, key: str, text: str, *, voice: str = "joe", fmt: str = "pcm_16000") -> str:
    response = httpx.post(
        f"{base}/v1/jobs",
        headers={"xi-api-key": key},
        timeout=60,
        json={"text": text, "voice_id": voice, "output_format": fmt},
    )
    ensure(response.status_code == 202, f"POST /v1/jobs: {response.status_code} {response.text[:300]}")
    return str(response.json()["job_id"])


def job(base: str, key: str, job_id: str) -> dict[str, Any]:
    response = httpx.get(f"{base}/v1/jobs/{job_id}", headers={"xi-api-key": key}, timeout=30)
    ensure(response.status_code == 200, f"GET /v1/jobs/{job_id}: {response.status_code}")
    return dict(response.json())


def wait_job(bases: list[str], key: str, job_id: str, timeout: float) -> dict[str, Any]:
    """Polls the job (through whichever base answers) until it has ended."""
    deadline = time.monotonic() + timeout
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        for base in bases:
            try:
                state = job(base, key, job_id)
                break
            except (httpx.HTTPError, CheckFailed):
                continue
        if state.get("status") in ("succeeded", "failed", "cancelled"):
            return state
        time.sleep(1.0)
    raise CheckFailed(f"job {job_id} did not end within {timeout:.0f} s (last: {state})")


def job_audio(base: str, key: str, job_id: str, fmt: str = "pcm_16000") -> Audio:
    response = httpx.get(f"{base}/v1/jobs/{job_id}/audio", headers={"xi-api-key": key}, timeout=60)
    ensure(response.status_code == 200, f"GET /v1/jobs/{job_id}/audio: {response.status_code}")
    return decode(response.content, fmt)


async def wyoming_synthesize(host: str, port: int, text: str, voice: str | None = None) -> Audio:
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient
    from wyoming.tts import Synthesize, SynthesizeVoice

    pcm = bytearray()
    rate = 0
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Synthesize(text=text, voice=SynthesizeVoice(name=voice) if voice else None).event())
        while True:
            event = await asyncio.wait_for(client.read_event(), 120)
            ensure(event is not None, "Wyoming: the server closed before audio-stop")
            assert event is not None
            if AudioStart.is_type(event.type):
                rate = AudioStart.from_event(event).rate
            elif AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                ensure(chunk.width == 2 and chunk.channels == 1, f"Wyoming: {chunk.width}-byte, {chunk.channels} ch")
                pcm += chunk.audio
            elif AudioStop.is_type(event.type):
                break
    return decode(bytes(pcm), f"pcm_{rate}")


def login(base: str, path: str, username: str, password: str) -> httpx.Client:
    """A browser's form login (CSRF cookie and token) at ``path`` (with its ``?next=``); the client
    holds the session after it."""
    client = httpx.Client(base_url=base, timeout=30)
    page = client.get(path)
    ensure(page.status_code == 200, f"GET {path}: {page.status_code}")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    ensure(token is not None, f"{path}: no CSRF token in the form")
    assert token is not None
    response = client.post(
        path, data={"csrfmiddlewaretoken": token.group(1), "username": username, "password": password}
    )
    # A good login redirects (to ?next=); a bad one renders the form again with 200.
    ensure(
        response.status_code == 302 and "sessionid" in client.cookies,
        f"POST {path}: {response.status_code}, no session",
    )
    return client
