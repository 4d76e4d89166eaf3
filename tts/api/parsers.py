"""The JSON parser every API view uses: bounded depth, strict types of constants.

DRF's own ``JSONParser`` hands a 100,000-deep array to ``json.load``, whose
recursion ends in ``RecursionError``, a 500. Here the body (already bounded in
size, ttsplatform/body_limit.py) is parsed by the C decoder, a ``RecursionError``
becomes a 400, and the result is walked without recursion to refuse anything
nested deeper than ``TTS_MAX_JSON_DEPTH`` (32): no request of these APIs needs
more than three levels, and deep values cost every later step that walks them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from tts.text.characters import check_json_strings


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists or objects more than ``limit`` levels deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


class BoundedJSONParser(JSONParser):
    """``JSONParser`` that answers 400, never 500, for any body: too deep, malformed, not UTF-8,
    or with characters no request may send."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        raw = stream.read() if stream is not None else b""
        if not raw:
            raise ParseError("The request body is empty.")
        try:
            text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else str(raw)
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise ParseError(f"The body nests deeper than {settings.TTS_MAX_JSON_DEPTH} levels.") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(str(exc)) from None
        if json_depth_exceeds(data, settings.TTS_MAX_JSON_DEPTH):
            raise ParseError(f"The body nests deeper than {settings.TTS_MAX_JSON_DEPTH} levels.")
        check_json_strings(data)  # TextError: a 400 invalid_characters (tts.api.errors)
        return data
