"""The stream-input WebSocket protocol's inputs: query options, the chunk
schedule and protocol errors (the text buffer that decides when to speak is
the utterance driver's: ``tts.synthesis.live.text_buffer``).

Kept apart from the consumer (tts/api/websocket/consumers.py) so that the rules of the
protocol can be read, and tested, without a socket.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from infra.logging import current_request_id
from tts.audio.formats import ELEVENLABS_DEFAULT, OutputFormat
from tts.errors import SynthesisError
from tts.synthesis import DEFAULT_CHUNK_SCHEDULE, TextBuffer, output_format_for

# Close codes. A server may only send 1000 or an application code (3000-4999;
# autobahn, under daphne, refuses the rest), so RFC 6455's 1008/1009/1011 are
# sent as 4008/4009/4011: same last digits, easy to map back.
CLOSE_POLICY = 4008  # auth, quota, protocol order, inactivity: the connection cannot go on
CLOSE_TOO_BIG = 4009
CLOSE_INTERNAL = 4011

#: Largest text frame accepted; an LLM's pieces are a few characters to a few hundred.
MAX_MESSAGE_CHARS = 64 * 1024

CHUNK_MIN, CHUNK_MAX = 50, 500
DEFAULT_INACTIVITY_S = 20
MAX_INACTIVITY_S = 180


class ProtocolError(Exception):
    """What the client did wrong: sent as ``{"message", "error", "code", "param"}``.

    ``close_code`` is None when the offending message is just ignored and the
    connection goes on.
    """

    def __init__(self, message: str, *, code: str, field: str | None = None, close_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.close_code = close_code

    def as_message(self) -> dict[str, Any]:
        # request_id: the connection's (set by the websocket middleware), to quote in a bug report.
        return {
            "message": self.message,
            "error": self.code,
            "code": self.close_code,
            "param": self.field,
            "request_id": current_request_id.get(),
        }


@dataclass(frozen=True)
class StreamOptions:
    output_format: OutputFormat
    model_id: str | None = None
    language_code: str | None = None
    inactivity_timeout: int = DEFAULT_INACTIVITY_S
    enable_logging: bool = True
    auto_mode: bool = False
    apply_text_normalization: str = "auto"
    binary_audio: bool = False
    alignment: bool = True
    #: ElevenLabs' ``sync_alignment``: alignment times run from the start of the utterance (the
    #: context) instead of restarting at zero in each audio message (docs/websocket.md).
    sync_alignment: bool = False


def _bool(query: dict[str, str], name: str, default: bool) -> bool:
    value = query.get(name)
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ProtocolError(
        f"{name}: expected true or false, got {value!r}.", code="invalid_query", field=name, close_code=CLOSE_POLICY
    )


def parse_options(query_string: bytes | str) -> StreamOptions:
    """The connection's options from its query string; ``ProtocolError`` naming the bad one."""
    if isinstance(query_string, bytes):
        query_string = query_string.decode("latin1")
    query = {k: v[-1] for k, v in parse_qs(query_string, keep_blank_values=True).items()}
    name = query.get("output_format") or ELEVENLABS_DEFAULT
    try:
        fmt = output_format_for(name)
    except SynthesisError as exc:
        raise ProtocolError(exc.message, code=exc.code, field=exc.field, close_code=CLOSE_POLICY) from None
    raw_timeout = query.get("inactivity_timeout") or str(DEFAULT_INACTIVITY_S)
    try:
        timeout = int(raw_timeout)
    except ValueError:
        timeout = -1
    if not 1 <= timeout <= MAX_INACTIVITY_S:
        raise ProtocolError(
            f"inactivity_timeout: expected whole seconds from 1 to {MAX_INACTIVITY_S}, got {raw_timeout!r}.",
            code="invalid_query",
            field="inactivity_timeout",
            close_code=CLOSE_POLICY,
        )
    normalization = query.get("apply_text_normalization") or "auto"
    if normalization not in ("auto", "on", "off"):
        raise ProtocolError(
            f"apply_text_normalization: expected auto, on or off, got {normalization!r}.",
            code="invalid_query",
            field="apply_text_normalization",
            close_code=CLOSE_POLICY,
        )
    return StreamOptions(
        output_format=fmt,
        model_id=query.get("model_id") or None,
        language_code=query.get("language_code") or None,
        inactivity_timeout=timeout,
        enable_logging=_bool(query, "enable_logging", True),
        auto_mode=_bool(query, "auto_mode", False),
        apply_text_normalization=normalization,
        binary_audio=_bool(query, "binary_audio", False),
        sync_alignment=_bool(query, "sync_alignment", False),
    )


def parse_chunk_schedule(value: Any) -> tuple[int, ...]:
    """``generation_config.chunk_length_schedule``: characters to buffer before each generation."""
    if value is None:
        return DEFAULT_CHUNK_SCHEDULE
    field = "generation_config.chunk_length_schedule"
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(n, int) and not isinstance(n, bool) and CHUNK_MIN <= n <= CHUNK_MAX for n in value)
    ):
        raise ProtocolError(
            f"{field}: expected a non-empty list of whole numbers from {CHUNK_MIN} to {CHUNK_MAX}.",
            code="invalid_generation_config",
            field=field,
            close_code=CLOSE_POLICY,
        )
    return tuple(value)


__all__ = [
    "CLOSE_INTERNAL",
    "CLOSE_POLICY",
    "CLOSE_TOO_BIG",
    "DEFAULT_CHUNK_SCHEDULE",
    "MAX_MESSAGE_CHARS",
    "ProtocolError",
    "StreamOptions",
    "TextBuffer",
    "parse_chunk_schedule",
    "parse_options",
]
