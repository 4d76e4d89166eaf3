"""A browser reads ``POST /api/tts`` with ``streaming: true`` the way the WebUI guide's ``fetch`` does."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import make_joe, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)

# Four sentences: each goes out as it is synthesized, so the reads see pieces even when the page
# starts reading late (two short sentences once arrived whole before the first read, under load).
TEXT = (
    "Hello from the browser. The harbour is quiet, and the boats are home. "
    "Gulls circle over the pier while the fishermen mend their nets. "
    "By evening the lamps along the water are lit, one after another."
)

# The guide's client: fetch, then res.body.getReader() until done, the chunks joined into one WAV.
# The speaker is joe by its voice id (the article's xiaoyu is a Chinese voice: its request as printed
# is tests/integration/test_reference_endpoints.py's), so four English sentences stream quickly.
FETCH = """
async ([text, key]) => {
  const res = await fetch('/api/tts', {
    method: 'POST',
    headers: {'Content-Type': 'application/json', 'xi-api-key': key},
    body: JSON.stringify({text, speaker: 'joe', streaming: true}),
  });
  const reader = res.body.getReader();
  const chunks = [];
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  const blob = new Blob(chunks);
  const bytes = new Uint8Array(await blob.arrayBuffer());
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  const ctx = new (window.OfflineAudioContext || window.AudioContext)(1, 16000, 16000);
  const decoded = await ctx.decodeAudioData(bytes.buffer.slice(0));
  return {status: res.status, type: res.headers.get('content-type'), chunks: chunks.length,
          b64: btoa(binary), rate: decoded.sampleRate, seconds: decoded.duration};
}
"""


def test_a_browser_fetch_reads_the_chunked_wav(live_server_url: str, chromium: Any) -> None:
    make_joe()
    ctx = make_tenant("browser-cosy")
    page = chromium.new_page()
    try:
        page.goto(f"{live_server_url}/healthz")  # same origin as the API
        got = page.evaluate(FETCH, [TEXT, ctx.key])
    finally:
        page.close()
    assert got["status"] == 200 and got["type"] == "audio/wav"
    assert got["chunks"] > 1  # it arrived in pieces
    samples, rate = decode_audio(base64.b64decode(got["b64"]), "wav_16000")
    assert_speech(samples, rate, expected_rate=16000, text=TEXT)
    assert got["seconds"] == pytest.approx(len(samples) / rate, abs=0.1)  # the browser decoded it too
