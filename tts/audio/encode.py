"""Incremental encoders: float PCM in, bytes of the output format out, piece by piece.

The pipeline feeds each segment as the engine finishes it and sends whatever
``feed`` returns straight to the client, so every encoder here hands back the
bytes it has ready instead of holding them to the end:

* ``pcm``, ``ulaw``, ``alaw``: numpy only (G.711 in ``tts.audio.g711``); at
  the model's rate every sample comes back from the same ``feed``.
* ``wav``: s16le behind a RIFF header whose sizes are ``0xFFFFFFFF``, since
  the length is unknown while streaming; soundfile (libsndfile) and
  ffmpeg/PyAV read such a file to its end (tested).
* ``mp3`` (libmp3lame, CBR at the format's bitrate), ``opus`` (libopus in Ogg
  with 60 ms pages), ``aac`` (ffmpeg's encoder, ADTS) and ``flac`` (ffmpeg's
  encoder) go through PyAV.
* ``flac`` is the one format that does not stream: its first block
  (STREAMINFO) holds the total sample count, a streamed FLAC must leave it 0
  ("unknown"), and libsndfile (soundfile) refuses such a file ("array is too
  big"). So a FLAC encoder hands back nothing until ``finish``, which returns
  the whole file with its length filled in: every reader opens it. Callers
  that write to a seekable file and patch the header themselves (long-form
  jobs, hours of audio) pass ``seekable_output=True`` and get the bytes as
  they are encoded.

What is held back comes out with the next ``feed`` or with ``finish``: the
resampler's filter delay when rates differ (~40 ms of audio for 22050 ->
24000/44100, ~90 ms for -> 8000) plus the codec's frame and look-ahead. Fed
20 ms at a time, the first decodable audio appears after ~120-160 ms of input
for mp3 and opus (measured; the tests hold it under 250 ms).

Same bytes however the input is cut: the resampler's output does not depend on
the cut (``tts.audio.resample``), PyAV re-frames the samples to the codec's
frame size, and muxers run with ``fflags=bitexact`` (no random Ogg serial, no
version strings), so streaming in pieces yields exactly ``encode_all``'s bytes.
The exception is wav (and flac with ``seekable_output``), whose header holds the
total length: a stream cannot know it, so ``encode_all`` (and
``StreamEncoder.seal`` on the joined stream) rewrite those header fields; the
audio bytes are identical.

Input is float32 mono in [-1, 1]; NaN/inf are zeroed before the resampler (a
NaN inside the filter would poison every later sample) and the resampled
signal is clipped, since resampling can overshoot a full-scale input.

An encoder belongs to one response and one thread. ``close()`` releases it at
any point without raising, so an abandoned stream (client disconnect) is
cleaned up by the same ``finally`` as a finished one.
"""

from __future__ import annotations

import logging
import struct
from fractions import Fraction
from types import TracebackType
from typing import Any, Self, cast

import av
import numpy as np
from av.audio.stream import AudioStream
from av.container import OutputContainer

from tts.audio import g711
from tts.audio.formats import OutputFormat, with_native_rate
from tts.audio.resample import StreamResampler, as_mono_float32

logger = logging.getLogger(__name__)

#: Ogg page length for Opus: short pages get first audio out early (~160 ms of
#: input before the first decodable page) at ~4 kbit/s of page-header overhead.
OPUS_PAGE_MS = 60

_WAV_HEADER_BYTES = 44
_UNKNOWN_SIZE = 0xFFFFFFFF


def _to_int16(x: np.ndarray) -> np.ndarray:
    return np.rint(x * 32767.0).astype(np.int16)


class StreamEncoder:
    """Base class: resamples, guards the life cycle, and leaves coding to subclasses.

    Subclasses implement ``_encode`` (float32 at the output rate, already
    clipped), ``_finish`` (flush what the codec holds) and ``_release``.
    """

    def __init__(self, fmt: OutputFormat, input_rate: int) -> None:
        self.format = with_native_rate(fmt, input_rate)
        self.input_rate = input_rate
        #: Samples handed to the codec so far, at ``format.sample_rate``.
        self.samples_out = 0
        self._resampler = StreamResampler(input_rate, self.format.sample_rate)
        self._state = "open"  # -> "finished" | "closed"
        self._released = False

    @property
    def duration_s(self) -> float:
        return self.samples_out / self.format.sample_rate

    def feed(self, samples: np.ndarray) -> bytes:
        """Encode one piece (float mono at ``input_rate``); the bytes ready now, maybe ``b""``."""
        if self._state != "open":
            raise RuntimeError(f"feed() on a {self._state} encoder")
        x = np.nan_to_num(as_mono_float32(samples), nan=0.0, posinf=1.0, neginf=-1.0)
        return self._encode_resampled(self._resampler.process(x))

    def finish(self) -> bytes:
        """The remaining bytes (filter tail, codec flush, trailer); then the encoder is closed."""
        if self._state != "open":
            raise RuntimeError(f"finish() on a {self._state} encoder")
        try:
            return self._encode_resampled(self._resampler.flush()) + self._finish()
        finally:
            self._state = "finished"
            self._release_quietly()

    def close(self) -> None:
        """Release codec resources; safe at any time, twice, and after errors."""
        if self._state == "open":
            self._state = "closed"
        self._release_quietly()

    def _release_quietly(self) -> None:
        if self._released:
            return
        self._released = True
        try:
            self._release()
        except Exception:
            # Called from cleanup paths (client went away): never mask the real error.
            logger.debug(
                "ignoring error while closing %s encoder",
                self.format.codec,
                exc_info=True,
            )

    def seal(self, data: bytes) -> bytes:
        """The joined stream with exact length fields in its header (wav, flac); else ``data``.

        ``data`` must be everything this encoder returned, in order, after ``finish``.
        """
        return data

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _encode_resampled(self, x: np.ndarray) -> bytes:
        x = np.clip(x, -1.0, 1.0)
        self.samples_out += len(x)
        return self._encode(x)

    def _encode(self, x: np.ndarray) -> bytes:
        raise NotImplementedError

    def _finish(self) -> bytes:
        return b""

    def _release(self) -> None:
        pass


class PcmEncoder(StreamEncoder):
    """Headerless s16le, mu-law or A-law: bytes out as soon as samples come in."""

    def _encode(self, x: np.ndarray) -> bytes:
        pcm = _to_int16(x)
        if self.format.codec == "ulaw":
            return g711.lin2ulaw(pcm)
        if self.format.codec == "alaw":
            return g711.lin2alaw(pcm)
        return pcm.astype("<i2").tobytes()


def wav_header(sample_rate: int, data_bytes: int | None) -> bytes:
    """A 44-byte PCM s16 mono RIFF header; ``data_bytes=None`` for a stream of unknown length."""
    if data_bytes is None or data_bytes + 36 > _UNKNOWN_SIZE:
        riff_size = data_size = _UNKNOWN_SIZE
    else:
        riff_size, data_size = 36 + data_bytes, data_bytes
    fmt_chunk = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
    return struct.pack("<4sI4s", b"RIFF", riff_size, b"WAVE") + fmt_chunk + struct.pack("<4sI", b"data", data_size)


class WavEncoder(PcmEncoder):
    """s16le in RIFF/WAVE; the header leads the first bytes returned."""

    def __init__(self, fmt: OutputFormat, input_rate: int) -> None:
        super().__init__(fmt, input_rate)
        self._header_sent = False

    def _header_once(self) -> bytes:
        if self._header_sent:
            return b""
        self._header_sent = True
        return wav_header(self.format.sample_rate, None)

    def _encode(self, x: np.ndarray) -> bytes:
        return self._header_once() + super()._encode(x)

    def _finish(self) -> bytes:
        return self._header_once()  # an empty response is still a valid file

    def seal(self, data: bytes) -> bytes:
        if len(data) < _WAV_HEADER_BYTES:
            raise ValueError("not a complete wav stream")
        return wav_header(self.format.sample_rate, len(data) - _WAV_HEADER_BYTES) + data[_WAV_HEADER_BYTES:]


class _ByteSink:
    """Write-only file object for PyAV. No ``seek``: muxers then stream instead
    of going back to patch headers, so every written byte can be sent at once."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def write(self, data: Any) -> int:
        self._buf += data
        return len(data)

    def take(self) -> bytes:
        out = bytes(self._buf)
        self._buf.clear()
        return out


# codec -> (muxer, encoder, sample format the encoder takes, muxer options)
_AV_CODECS: dict[str, tuple[str, str, str, dict[str, str]]] = {
    "mp3": ("mp3", "libmp3lame", "fltp", {"id3v2_version": "0"}),
    "opus": ("ogg", "libopus", "flt", {"page_duration": str(OPUS_PAGE_MS * 1000)}),
    "aac": ("adts", "aac", "fltp", {}),
    # Without this ffmpeg puts 8 KiB of PADDING (room for tags) before the audio.
    "flac": ("flac", "flac", "s16", {"metadata_header_padding": "0"}),
}


class AvEncoder(StreamEncoder):
    """mp3, opus, aac and flac through PyAV (ffmpeg), drained after every piece.

    FLAC is held back whole until ``finish`` (sealed), unless ``seekable_output``.
    """

    def __init__(self, fmt: OutputFormat, input_rate: int, *, seekable_output: bool = False) -> None:
        super().__init__(fmt, input_rate)
        self._whole_file = self.format.codec == "flac" and not seekable_output
        self._held = bytearray()
        muxer, codec, sample_fmt, options = _AV_CODECS[self.format.codec]
        rate = self.format.sample_rate
        self._sink = _ByteSink()
        # flush_packets: pass every muxed packet to the sink at once rather
        # than when AVIO's 32 KiB buffer fills (ffmpeg's default varies).
        self._container: OutputContainer = av.open(
            self._sink,
            "w",
            format=muxer,
            options={"fflags": "bitexact", "flush_packets": "1", **options},
        )
        try:
            stream = cast(AudioStream, self._container.add_stream(codec, rate=rate))
            stream.layout = "mono"
            stream.format = sample_fmt
            if self.format.bitrate_kbps:
                stream.bit_rate = self.format.bitrate_kbps * 1000
            self._stream = stream
        except Exception:
            self._container.close()
            raise
        self._time_base = Fraction(1, rate)
        self._pts = 0

    def _encode(self, x: np.ndarray) -> bytes:
        if len(x):
            frame = av.AudioFrame.from_ndarray(x.reshape(1, -1), format="flt", layout="mono")
            frame.sample_rate = self.format.sample_rate
            frame.time_base = self._time_base
            frame.pts = self._pts
            self._pts += len(x)
            self._container.mux(self._stream.encode(frame))
        return self._out(self._sink.take())

    def _finish(self) -> bytes:
        if self._pts == 0:
            # Nothing was fed: still write the container header, so that an
            # empty response is a valid (empty) Ogg/FLAC stream.
            self._container.start_encoding()
        self._container.mux(self._stream.encode(None))
        self._container.close()
        tail = self._sink.take()
        if not self._whole_file:
            return tail
        whole = bytes(self._held) + tail
        self._held.clear()
        return _flac_with_total_samples(whole, self.samples_out)

    def _out(self, data: bytes) -> bytes:
        if self._whole_file:
            self._held += data
            return b""
        return data

    def _release(self) -> None:
        self._held.clear()
        self._container.close()

    def seal(self, data: bytes) -> bytes:
        if self.format.codec != "flac":
            return data
        return _flac_with_total_samples(data, self.samples_out)


def _flac_with_total_samples(data: bytes, total: int) -> bytes:
    """Write ``total`` into STREAMINFO, which a non-seekable stream leaves at 0 ("unknown").

    Layout: "fLaC", a 4-byte block header (type 0 = STREAMINFO), then at byte 18
    64 bits of 20-bit rate | 3-bit channels | 5-bit depth | 36-bit total samples.
    MD5 and min/max frame size stay 0, which the spec also defines as unknown.
    """
    if data[:4] != b"fLaC" or data[4] & 0x7F != 0 or len(data) < 42:
        raise ValueError("not a flac stream starting with STREAMINFO")
    packed = int.from_bytes(data[18:26], "big")
    packed = (packed & ~((1 << 36) - 1)) | (total & ((1 << 36) - 1))
    return data[:18] + packed.to_bytes(8, "big") + data[26:]


def make_encoder(fmt: OutputFormat, input_rate: int, *, seekable_output: bool = False) -> StreamEncoder:
    """An encoder for ``fmt`` fed float32 mono at ``input_rate``.

    Formats that follow the model rate are resolved against ``input_rate``;
    ``encoder.format`` is the resolved format (use its ``sample_rate`` for records).
    ``seekable_output``: the caller writes to a file it can seek and patches
    length fields with ``seal`` afterwards, so FLAC may stream (see the module doc).
    """
    if fmt.codec in ("pcm", "ulaw", "alaw"):
        return PcmEncoder(fmt, input_rate)
    if fmt.codec == "wav":
        return WavEncoder(fmt, input_rate)
    if fmt.codec in _AV_CODECS:
        return AvEncoder(fmt, input_rate, seekable_output=seekable_output)
    raise ValueError(f"no encoder for codec {fmt.codec!r}")


def encode_all(samples: np.ndarray, input_rate: int, fmt: OutputFormat) -> bytes:
    """A whole response in one go: the streamed bytes, sealed (exact wav/flac headers)."""
    with make_encoder(fmt, input_rate) as encoder:
        data = encoder.feed(samples) + encoder.finish()
        return encoder.seal(data)
