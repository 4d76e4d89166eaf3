"""How far a stream runs ahead of its listener, shared by every windowed engine (no Django).

``StreamLead`` is the :class:`~tts.inference.engine.StreamPace` the streaming
pipeline gives each stream: the generator that makes the audio says how many
seconds each yielded item holds (``produced``), and the stream's reader says
when an item was handed to the connection (``sent``). The lead is the audio
sent minus the playback time since the first byte; a chunk sent after its
playback time (its start already played) is an underrun.

An engine asks :func:`is_ahead`: small windows, spread over the cores, while
the stream is within ``lead_margin_s`` of playback (or late), each holding at
most :func:`window_seconds` of its lead (so they grow as it does); the rest of a
sentence decoded the way a whole-file request decodes it once it is further
ahead than that. The platform sets the margin from ``TTS_STREAM_LEAD_MARGIN_S``
(``set_lead_margin``).

Work-pool priorities for stream and whole-file work (lower runs first): a late
stream's windows, then whole-file requests, then streams comfortably ahead.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

from .engine import StreamPace

#: Pool priorities (``WorkPool.submit``): lower runs first.
LATE, WHOLE, AHEAD = 0, 1, 2

#: Seconds of audio a stream must be ahead of playback before its engine decodes in large windows.
lead_margin_s = 1.0


def set_lead_margin(seconds: float) -> None:
    """Streams further ahead than ``seconds`` decode the rest of a sentence in large windows."""
    global lead_margin_s
    lead_margin_s = max(0.0, float(seconds))


def is_ahead(pace: StreamPace | None, margin_s: float | None = None) -> bool:
    """Whether the stream behind ``pace`` is comfortably ahead of playback (``None``: no pace, never)."""
    if pace is None:
        return False
    return pace.lead_s() >= (lead_margin_s if margin_s is None else margin_s)


#: A window within the margin holds up to this many times the stream's lead in audio: engines decode
#: several times faster than real time even when shared, so it is ready before the lead runs out,
#: and windows grow about geometrically from the first (fewer small windows, less overlap decoded).
GROWTH = 2.0


def window_seconds(lead_s: float) -> float:
    """Seconds of audio the next window of a stream ``lead_s`` ahead of playback may hold (0: the smallest)."""
    return max(0.0, lead_s) * GROWTH


class StreamLead:
    """One stream's lead over playback, from the audio actually handed to its connection.

    ``produced`` is called on the stream's generator thread, ``sent`` from the
    reader (the event loop); both are cheap and thread-safe. ``on_sent`` (if
    given) sees each sent chunk's lead before it and whether it was late.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_sent: Callable[[float, bool], None] | None = None,
    ) -> None:
        self._clock = clock
        self._on_sent = on_sent
        self._lock = threading.Lock()
        self._pending_s = 0.0  # produced, not yet in a yielded item
        self._items: collections.deque[float] = collections.deque()  # yielded, not yet sent
        self.first_at: float | None = None
        self.sent_s = 0.0
        self.underruns = 0
        self.min_lead_s: float | None = None

    def produced(self, seconds: float) -> None:
        """``seconds`` more audio went into the encoder (its bytes go out with the next item)."""
        with self._lock:
            self._pending_s += seconds

    def item(self) -> None:
        """An item holding the audio produced since the last one is about to be yielded."""
        with self._lock:
            self._items.append(self._pending_s)
            self._pending_s = 0.0

    def sent(self) -> None:
        """The oldest yielded item was handed to the connection."""
        now = self._clock()
        with self._lock:
            seconds = self._items.popleft() if self._items else 0.0
            if self.first_at is None:
                self.first_at = now
            lead = self.sent_s - (now - self.first_at)
            late = lead < 0
            if late:
                self.underruns += 1
            self.min_lead_s = lead if self.min_lead_s is None else min(self.min_lead_s, lead)
            self.sent_s += seconds
        if self._on_sent is not None:
            self._on_sent(lead, late)

    def lead_s(self) -> float:
        """Audio sent beyond what playback from the first byte used up (0 before the first byte)."""
        with self._lock:
            if self.first_at is None:
                return 0.0
            return self.sent_s - (self._clock() - self.first_at)
