"""Characters no request may send: the one check every door calls, with one error code.

A lone surrogate (a JSON ``"\\ud800"`` escape without its pair, or its UTF-8
bytes on a raw socket) is not text: it has no UTF-8 encoding, so it cannot
reach espeak-ng, a log line or the database, whose driver raised
``UnicodeEncodeError`` at the history insert. NUL (U+0000) cannot be stored in
a PostgreSQL text or JSON column. Both are refused where a request comes in,
before any work, as ``invalid_characters`` (400) naming the field:

* REST bodies, every string in them (``tts.api.parsers``): ElevenLabs,
  OpenAI, jobs, ``/tts`` and ``/api/tts``;
* every message of both WebSockets (``tts.api.websocket.consumers``);
* every Wyoming event that carries data (``tts.wyoming.handler``);
* and, behind them, the pipeline's own text checks (``validate_text``,
  ``jobs._texts``), for any caller that skipped a door.

Other control and invisible characters (zero-width, bidi marks, C0/C1
controls) are text that can be stored: the front end reads each as a space
(``tts.text.normalize.clean_text``).
"""

from __future__ import annotations

import re

from .errors import TextError

CODE = "invalid_characters"

_INVALID = re.compile("[\x00\ud800-\udfff]")


def _name(ch: str) -> str:
    return "NUL (U+0000)" if ch == "\x00" else f"a lone surrogate (U+{ord(ch):04X})"


def _error(field: str, what: str) -> TextError:
    # The offending text is never quoted: a lone surrogate would break the error's own encoding.
    return TextError(
        f"{field}: {what}; send Unicode text without NUL or unpaired surrogates.",
        code=CODE,
        status=400,
        field=field,
    )


def check_characters(text: str, *, field: str) -> None:
    """``TextError`` (400 ``invalid_characters`` naming ``field``) if ``text`` holds NUL or a lone surrogate."""
    found = _INVALID.search(text)
    if found is not None:
        raise _error(field, f"contains {_name(found.group())} at character {found.start()}")


def check_json_strings(value: object, *, field: str = "") -> None:
    """``check_characters`` on every string of a parsed JSON value, keys included, without recursion.

    The error names the string's path (``text``, ``voice_settings.style``, ``items[3]``);
    ``field`` is the path of ``value`` itself ("" for a whole body or message).
    """
    stack: list[tuple[object, str]] = [(value, field)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            check_characters(item, field=path or "body")
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _INVALID.search(key):
                    raise _error(path or "body", "a key contains NUL or a lone surrogate")
                stack.append((child, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
