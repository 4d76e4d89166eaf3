"""One LiveKit Agents synthesis against this platform, through the plugins' TTS classes, unchanged.

Runs in the agents' virtualenv (tests/agents/install.sh), not the platform's:

    var/agents/py/bin/python tests/agents/clients/livekit_client.py \
        --mode stream|synthesize|openai --url http://127.0.0.1:8000 --key tts_... --voice joe --text "Hello."

No LiveKit room is needed: the TTS objects are used as an agent session uses them.
``stream`` is ``livekit.plugins.elevenlabs.TTS.stream()`` (multi-stream-input, with
``sync_alignment=true`` as the plugin sends it: the text pushed word by word, then flush and
end of input, which the plugin turns into flush + close_context), ``synthesize`` is the same
class's ``synthesize()`` (``/stream``), ``openai`` is ``livekit.plugins.openai.TTS``
(``/v1/audio/speech``). Prints one JSON line: audio bytes, sample rate, seconds, the timed
words the plugin exposes (``lk.timed_transcripts``: seconds from the start of the utterance),
the time to first audio, whether the last frame came marked final, and every error.
``--out`` keeps the raw 16-bit PCM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from livekit.agents import APIConnectOptions, tts
from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT


class ErrorLog(logging.Handler):
    """Errors the plugins only log (a bad message from the server, a failed recv loop)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


def make_tts(args: argparse.Namespace, session: aiohttp.ClientSession) -> tts.TTS:
    if args.mode == "openai":
        import openai
        from livekit.plugins import openai as lk_openai

        client = openai.AsyncClient(api_key=args.key, base_url=f"{args.url}/v1")
        return lk_openai.TTS(model="tts-1", voice=args.voice, client=client, response_format="pcm")
    from livekit.plugins import elevenlabs

    return elevenlabs.TTS(
        api_key=args.key,
        base_url=f"{args.url}/v1",
        voice_id=args.voice,
        model=args.model,
        encoding=f"pcm_{args.sample_rate}",  # type: ignore[arg-type]
        http_session=session,
    )


async def run(args: argparse.Namespace) -> tuple[dict[str, Any], bytes]:
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    audio = bytearray()
    sample_rate = 0
    words: list[list[Any]] = []
    failures: list[str] = []
    final = False
    first_audio_at: float | None = None
    async with aiohttp.ClientSession() as session:
        engine = make_tts(args, session)
        options = APIConnectOptions(max_retry=0, timeout=args.timeout)
        started = time.perf_counter()
        try:
            if args.mode == "stream":
                stream: tts.SynthesizeStream | tts.ChunkedStream = engine.stream(conn_options=options)
                assert isinstance(stream, tts.SynthesizeStream)
                for word in args.text.split(" "):
                    stream.push_text(word + " ")
                stream.flush()
                stream.end_input()
            else:
                stream = engine.synthesize(args.text, conn_options=options)
            async with stream:
                async for event in stream:
                    if first_audio_at is None:
                        first_audio_at = time.perf_counter()
                    frame = event.frame
                    audio += bytes(frame.data.cast("B"))
                    sample_rate = frame.sample_rate
                    final = final or event.is_final
                    for timed in frame.userdata.get(USERDATA_TIMED_TRANSCRIPT) or []:
                        if str(timed).strip():
                            words.append([str(timed).strip(), timed.start_time, timed.end_time])
        except Exception as exc:  # the plugin's APIError ("no audio frames were pushed"), timeouts
            failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            await engine.aclose()
    rate = sample_rate or 1
    return {
        "client": f"livekit-{args.mode}",
        "audio_bytes": len(audio),
        "sample_rate": sample_rate,
        "seconds": len(audio) / 2 / rate,
        "words": words,
        "ttfa_s": (first_audio_at - started) if first_audio_at is not None else None,
        "final": final,
        "errors": failures + errors.lines,
    }, bytes(audio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("stream", "synthesize", "openai"), required=True)
    parser.add_argument("--url", required=True, help="the platform, http://host:port")
    parser.add_argument("--key", required=True)
    parser.add_argument("--voice", default="joe")
    parser.add_argument("--model", default="eleven_flash_v2_5")
    parser.add_argument("--text", required=True)
    parser.add_argument("--sample-rate", type=int, default=16000)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--out", help="write the raw 16-bit PCM here")
    args = parser.parse_args()
    result, audio = asyncio.run(run(args))
    if args.out:
        Path(args.out).write_bytes(audio)
    print(json.dumps(result))
    sys.exit(0 if not result["errors"] else 1)


if __name__ == "__main__":
    main()
