"""Every format of both APIs plays in Chromium, as a streamed answer arrives.

Each answer (ElevenLabs ``/stream``, OpenAI's chunked ``/v1/audio/speech``)
goes into the page as bytes. Containers (mp3, Ogg/Opus, ADTS/AAC, FLAC, WAV
with the unknown sizes of a stream) must decode with ``decodeAudioData`` to
the history item's duration, load into an ``<audio>`` element with that
duration (ADTS, which carries no length, within 15 %: the element estimates it
from the bitrate), and play (its clock moves). Raw formats (s16le, mu-law, A-law) have
no header, so no browser decoder takes them: the page does what a client does
with them, builds an ``AudioBuffer`` at the rate the format names and renders
it through Web Audio; its duration and loudness are checked the same way.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import numpy as np
import pytest

from tests.audio_checks import decode_audio
from tests.fixtures import make_joe, make_tenant
from tts.audio.formats import ELEVENLABS_FORMATS, OPENAI_FORMATS, OutputFormat, parse_elevenlabs_format
from tts.audio.formats import parse_openai_format as parse_openai
from tts.models import SynthesisRecord

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TEXT = "Every format plays in the browser."

PLAY_JS = """async ([b64, mime, raw, rate]) => {
  const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
  const out = {};
  if (raw) {
    // What a client does with headerless audio: samples -> AudioBuffer at the named rate.
    const g711 = (code, mu) => {
      if (mu) { code = ~code & 0xff; const t = (((code & 0x0f) << 3) + 0x84) << ((code & 0x70) >> 4);
                return (code & 0x80 ? 0x84 - t : t - 0x84) / 32768; }
      code ^= 0x55; let t = (code & 0x0f) << 4; const seg = (code & 0x70) >> 4;
      t = seg === 0 ? t + 8 : seg === 1 ? t + 0x108 : (t + 0x108) << (seg - 1);
      return (code & 0x80 ? t : -t) / 32768;
    };
    let samples;
    if (raw === "pcm") {
      const view = new DataView(bytes.buffer);
      samples = new Float32Array(bytes.length / 2).map((_, i) => view.getInt16(2 * i, true) / 32768);
    } else {
      samples = Float32Array.from(bytes, b => g711(b, raw === "ulaw"));
    }
    const ctx = new OfflineAudioContext(1, samples.length, rate);
    const buf = ctx.createBuffer(1, samples.length, rate);
    buf.copyToChannel(samples, 0);
    const src = ctx.createBufferSource(); src.buffer = buf; src.connect(ctx.destination); src.start();
    const rendered = (await ctx.startRendering()).getChannelData(0);
    out.decoded = buf.duration;
    out.rms = Math.sqrt(rendered.reduce((a, v) => a + v * v, 0) / rendered.length);
    out.played = out.decoded;
    out.head = Array.from(rendered.slice(0, 4000));
    return out;
  }
  try {
    const buf = await new OfflineAudioContext(1, 1, 48000).decodeAudioData(bytes.buffer.slice(0));
    const data = buf.getChannelData(0);
    out.decoded = buf.duration;
    out.rms = Math.sqrt(data.reduce((a, v) => a + v * v, 0) / data.length);
  } catch (e) { out.error = "decodeAudioData: " + e; return out; }
  const audio = new Audio();
  audio.muted = true;
  audio.src = URL.createObjectURL(new Blob([bytes], {type: mime}));
  try {
    await new Promise((ok, bad) => {
      audio.onloadedmetadata = ok;
      audio.onerror = () => bad("audio element: " + (audio.error && audio.error.message));
      setTimeout(() => bad("no metadata after 30 s"), 30000);
    });
    out.duration = audio.duration;
    await audio.play();
    await new Promise((ok, bad) => {
      const t0 = Date.now();
      const tick = () => audio.currentTime > 0.2 ? ok()
        : Date.now() - t0 > 30000 ? bad("the clock did not move in 30 s") : setTimeout(tick, 50);
      tick();
    });
    out.played = audio.currentTime;
    audio.pause();
  } catch (e) { out.error = String(e); }
  return out;
}"""


def _stream(url: str, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[bytes, str]:
    with httpx.stream("POST", url + path, json=body, headers=headers, timeout=120) as response:
        assert response.status_code == 200, response.read()[:300]
        return b"".join(response.iter_bytes()), response.headers["history-item-id"]


def _play_all(chromium: Any, answers: list[tuple[str, OutputFormat, bytes, str]]) -> None:
    page = chromium.new_page()
    page.goto("about:blank")
    failures: list[str] = []
    try:
        for label, fmt, data, item in answers:
            record = SynthesisRecord.objects.get(pk=item)
            raw = fmt.codec if fmt.is_raw else None
            result = page.evaluate(
                PLAY_JS, [base64.b64encode(data).decode(), fmt.content_type, raw, record.sample_rate]
            )
            problems = [result["error"]] if "error" in result else []
            if not problems:
                if abs(result["decoded"] - record.duration_s) > 0.15:
                    problems.append(f"decoded {result['decoded']:.3f} s, history says {record.duration_s:.3f} s")
                # ADTS has no length field: an <audio> element estimates it from the first frames'
                # bitrate, which varies with the speech (2.18 s for 2.34 s seen); the decoded length
                # above is exact. Every other container's duration must be within 0.15 s.
                slack = max(0.15, 0.15 * record.duration_s) if fmt.codec == "aac" else 0.15
                if not raw and abs(result["duration"] - record.duration_s) > slack:
                    problems.append(f"<audio> duration {result['duration']}, history says {record.duration_s:.3f} s")
                if result["rms"] < 0.01:
                    problems.append(f"silent (RMS {result['rms']:.4f})")
                if result["played"] <= 0.2:
                    problems.append("did not play")
                if raw:  # the page's reading of the raw bytes is the reference decoder's
                    reference, _ = decode_audio(data, fmt)
                    head = np.asarray(result["head"], dtype=np.float32)
                    if not np.allclose(head, reference[: len(head)], atol=1e-3):
                        problems.append("the browser read other samples than the reference decoder")
            failures += [f"{label}: {p}" for p in problems]
    finally:
        page.close()
    assert not failures, "\n".join(failures)


def test_every_elevenlabs_format_plays_in_chromium(chromium: Any, live_server_url: str) -> None:
    make_joe()
    ctx = make_tenant("browser-formats", limit=10_000_000)
    answers = []
    for name in ELEVENLABS_FORMATS:
        data, item = _stream(
            live_server_url,
            f"/v1/text-to-speech/joe/stream?output_format={name}",
            {"xi-api-key": ctx.key},
            {"text": TEXT},
        )
        answers.append((f"elevenlabs {name}", parse_elevenlabs_format(name), data, item))
    _play_all(chromium, answers)


def test_every_openai_format_plays_in_chromium(chromium: Any, live_server_url: str) -> None:
    make_joe()
    ctx = make_tenant("browser-openai", limit=10_000_000)
    answers = []
    for name in OPENAI_FORMATS:
        data, item = _stream(
            live_server_url,
            "/v1/audio/speech",
            {"Authorization": f"Bearer {ctx.key}"},
            {"model": "tts-1", "voice": "alloy", "input": TEXT, "response_format": name},
        )
        answers.append((f"openai {name}", parse_openai(name), data, item))
    _play_all(chromium, answers)
