"""Log records for operators: a request id on every line, JSON when ``LOG_FORMAT=json``.

The request id comes from a context variable the request-id middleware sets,
so lines logged deep in the pipeline (or in the thread that streams a
response) carry the id of the request they belong to. Nothing here logs
request text; ``loggable_text`` is how code that wants to mention it asks.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
from typing import Any

from django.conf import settings

current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

# Attributes every LogRecord has; anything else was passed with ``extra=`` and goes into the JSON.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys() | {"message", "asctime", "request_id", "taskName"}
)


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id`` (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, extras, exception."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", current_request_id.get()),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


def loggable_text(text: str) -> str:
    """The text itself only when ``TTS_LOG_REQUEST_TEXT`` is on; otherwise just its length."""
    if getattr(settings, "TTS_LOG_REQUEST_TEXT", False):
        return text
    return f"<{len(text)} characters>"
