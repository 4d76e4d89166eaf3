"""Content negotiation that never refuses a request over its Accept header.

Audio endpoints answer audio whatever the client says it accepts (the OpenAI
SDK sends ``Accept: application/octet-stream``); errors and JSON bodies are
always JSON.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request


class JsonAlwaysNegotiation(BaseContentNegotiation):
    def select_parser(self, request: Request, parsers: list[Any]) -> Any:
        for parser in parsers:
            if request.content_type.startswith(parser.media_type) or not request.content_type:
                return parser
        return None

    def select_renderer(self, request: Request, renderers: list[Any], format_suffix: str | None = None) -> Any:
        renderer = renderers[0]
        return renderer, renderer.media_type
