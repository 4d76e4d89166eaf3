"""One pipecat turn against this platform, through pipecat's own TTS classes, unchanged.

Runs in the agents' virtualenv (tests/agents/install.sh), not the platform's:

    var/agents/py/bin/python tests/agents/clients/pipecat_client.py \
        --service ws|http|openai --url http://127.0.0.1:8000 --key tts_... --voice joe --text "Hello."

The service sits in a minimal pipeline (as pipecat's own ``pipecat.tests.utils.run_test``
builds one) and gets what an LLM in a voice agent sends it: ``LLMFullResponseStartFrame``,
the reply word by word as ``LLMTextFrame``s, ``LLMFullResponseEndFrame``. ``ws`` is
``ElevenLabsTTSService`` (multi-stream-input: flush and close_context at the end of the
turn), ``http`` is ``ElevenLabsHttpTTSService`` (``/stream/with-timestamps``), ``openai`` is
``OpenAITTSService`` (``/v1/audio/speech``). Prints one JSON line: audio bytes, sample rate,
seconds, the words pipecat timed (seconds from the first audio), the time to first audio
(from the first LLM text), whether the turn ended with ``TTSStoppedFrame`` (on the WebSocket
class: the server's ``isFinal``), and every error. ``--out`` keeps the raw 16-bit PCM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from loguru import logger
from pipecat.frames.frames import (
    EndFrame,
    ErrorFrame,
    Frame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    StartFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.tts_service import TTSService
from pipecat.workers.runner import WorkerRunner


class Collector(FrameProcessor):
    """The end of the pipeline: keeps the audio, the timed words, the errors."""

    def __init__(self) -> None:
        super().__init__()
        self.audio = bytearray()
        self.sample_rate = 0
        self.first_audio_at: float | None = None
        self.words: list[tuple[str, int]] = []  # (word, pts in ns)
        self.errors: list[str] = []
        self.stopped = asyncio.Event()
        self.started = asyncio.Event()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, StartFrame):
            self.started.set()
        elif isinstance(frame, TTSAudioRawFrame):
            if self.first_audio_at is None:
                self.first_audio_at = time.perf_counter()
            self.audio += frame.audio
            self.sample_rate = frame.sample_rate
        elif isinstance(frame, TTSTextFrame) and frame.pts is not None:
            self.words.append((frame.text, frame.pts))
        elif isinstance(frame, TTSStoppedFrame):
            self.stopped.set()
        elif isinstance(frame, ErrorFrame):
            self.errors.append(str(frame.error))
        await self.push_frame(frame, direction)


def make_service(args: argparse.Namespace, session: aiohttp.ClientSession) -> TTSService:
    # pipecat's default stop_frame_timeout_s is 3 s: a context whose first audio takes longer is
    # dropped. Voices that start slowly (Kokoro, long first sentences) need more (docs/agents.md).
    extra: dict[str, Any] = {"stop_frame_timeout_s": args.stop_frame_timeout}
    if args.service == "ws":
        from pipecat.services.elevenlabs.tts import ElevenLabsTTSService

        ws_url = args.url.replace("http://", "ws://").replace("https://", "wss://")
        return ElevenLabsTTSService(
            api_key=args.key,
            url=ws_url,
            settings=ElevenLabsTTSService.Settings(voice=args.voice, model=args.model),
            **extra,
        )
    if args.service == "http":
        from pipecat.services.elevenlabs.tts import ElevenLabsHttpTTSService

        return ElevenLabsHttpTTSService(
            api_key=args.key,
            base_url=args.url,
            aiohttp_session=session,
            settings=ElevenLabsHttpTTSService.Settings(voice=args.voice, model=args.model),
            **extra,
        )
    from pipecat.services.openai.tts import OpenAITTSService

    return OpenAITTSService(
        api_key=args.key,
        base_url=f"{args.url}/v1",
        settings=OpenAITTSService.Settings(voice=args.voice, model="tts-1"),
        **extra,
    )


async def run(args: argparse.Namespace) -> tuple[dict[str, Any], bytes]:
    logged: list[str] = []
    logger.remove()
    logger.add(lambda m: logged.append(str(m).rstrip()), level="WARNING")
    sample_rate = 24000 if args.service == "openai" else args.sample_rate
    async with aiohttp.ClientSession() as session:
        service = make_service(args, session)
        collector = Collector()
        worker = PipelineWorker(
            Pipeline([service, collector]),
            cancel_on_idle_timeout=False,
            params=PipelineParams(audio_out_sample_rate=sample_rate),
        )
        runner = WorkerRunner(handle_sigint=False)
        sent_at = 0.0

        async def drive() -> None:
            nonlocal sent_at
            await asyncio.wait_for(collector.started.wait(), timeout=30)
            await worker.queue_frame(LLMFullResponseStartFrame())
            sent_at = time.perf_counter()
            for word in args.text.split(" "):
                await worker.queue_frame(LLMTextFrame(word + " "))
            await worker.queue_frame(LLMFullResponseEndFrame())
            try:
                await asyncio.wait_for(collector.stopped.wait(), timeout=args.timeout)
            except TimeoutError:
                collector.errors.append(f"no TTSStoppedFrame within {args.timeout} s")
            await worker.queue_frame(EndFrame())

        await runner.add_workers(worker)
        await asyncio.wait_for(asyncio.gather(runner.run(), drive()), timeout=args.timeout + 30)
    first = collector.first_audio_at
    base = collector.words[0][1] if collector.words else 0
    rate = collector.sample_rate or sample_rate
    return {
        "client": f"pipecat-{args.service}",
        "audio_bytes": len(collector.audio),
        "sample_rate": rate,
        "seconds": len(collector.audio) / 2 / rate,
        "words": [[w, (pts - base) / 1e9] for w, pts in collector.words],
        "ttfa_s": (first - sent_at) if first is not None else None,
        "final": collector.stopped.is_set(),
        "errors": collector.errors + [line for line in logged if "ERROR" in line],
    }, bytes(collector.audio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--service", choices=("ws", "http", "openai"), required=True)
    parser.add_argument("--url", required=True, help="the platform, http://host:port")
    parser.add_argument("--key", required=True)
    parser.add_argument("--voice", default="joe")
    parser.add_argument("--model", default="eleven_flash_v2_5")
    parser.add_argument("--text", required=True)
    parser.add_argument("--sample-rate", type=int, default=16000)
    parser.add_argument("--stop-frame-timeout", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--out", help="write the raw 16-bit PCM here")
    args = parser.parse_args()
    result, audio = asyncio.run(run(args))
    if args.out:
        Path(args.out).write_bytes(audio)
    print(json.dumps(result))
    sys.exit(0 if not result["errors"] else 1)


if __name__ == "__main__":
    main()
