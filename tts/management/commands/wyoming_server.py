"""manage.py wyoming_server: the Wyoming TTS server for Home Assistant (docs/wyoming.md).

Each listener is bound to one API key; the keys are checked before anything
listens, so a wrong one fails at start, not at the first request. The process
warms and follows the active models like a web server (``TTS_MODEL_LIFECYCLE``),
reaps records a crashed process left pending, and serves its own Prometheus
metrics on ``TTS_WYOMING_METRICS_PORT`` when set.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.authentication import MissingScope, api_key_for_scope
from accounts.keys import InvalidApiKey
from accounts.models import Scope
from tts.wyoming.listeners import Listener, ListenerConfigError, listeners_from_settings
from tts.wyoming.server import serve


class Command(BaseCommand):
    help = "Serve text to speech over the Wyoming protocol (Home Assistant), one API key per listener."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", help="address to listen on (TTS_WYOMING_HOST, default 127.0.0.1)")
        parser.add_argument("--port", type=int, help="port of the one listener (TTS_WYOMING_PORT, default 10200)")
        parser.add_argument("--api-key-file", help="file holding the listener's API key (else TTS_WYOMING_API_KEY)")
        parser.add_argument("--listeners", help="JSON table of port -> key (TTS_WYOMING_LISTENERS_FILE)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            listeners = listeners_from_settings(
                host=options["host"],
                port=options["port"],
                api_key_file=options["api_key_file"],
                listeners_file=options["listeners"],
            )
        except ListenerConfigError as exc:
            raise CommandError(str(exc)) from None
        tenants = {}
        for listener in listeners:
            try:
                key = api_key_for_scope(listener.api_key, Scope.TTS)
            except (InvalidApiKey, MissingScope) as exc:
                raise CommandError(f"Wyoming port {listener.port}: {exc}") from None
            tenants[listener.port] = key.tenant.name
        self._start_background()

        def ready(opened: list[Listener]) -> None:
            for listener in opened:
                self.stdout.write(
                    f"Wyoming (Home Assistant): tcp://{listener.host}:{listener.port} speaks for "
                    f"{tenants[listener.port]} with key {listener.key_prefix}…",
                )
            self.stdout.flush()

        asyncio.run(serve(listeners, on_ready=ready))

    def _start_background(self) -> None:
        from infra.malloc_tuning import tune_malloc_from_settings
        from tts.catalogue import start_lifecycle
        from tts.synthesis import start_reaper

        tune_malloc_from_settings()
        start_lifecycle()  # warm the active models, follow activations, unload idle ones
        start_reaper()
        if settings.TTS_WYOMING_METRICS_PORT:
            from prometheus_client import start_http_server

            start_http_server(settings.TTS_WYOMING_METRICS_PORT, addr=settings.TTS_WYOMING_HOST)
