"""Content negotiation that never refuses a request over its Accept header.

Audio endpoints answer audio whatever the client says it accepts (the OpenAI
SDK sends ``Accept: application/octet-stream``); errors and JSON bodies are
always JSON.
"""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class JsonAlwaysNegotiation(BaseContentNegotiation):
    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        for parser in parsers:
            if not request.content_type or request.content_type.startswith(parser.media_type):
                return parser
        return None

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type
