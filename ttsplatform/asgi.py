"""ASGI entry point: HTTP through Django, WebSockets through Channels (served by daphne)."""

from __future__ import annotations

import os

from ttsplatform.handler import get_http_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ttsplatform.settings")
django_asgi_app = get_http_application()

from infra.malloc_tuning import tune_malloc_from_settings  # noqa: E402

# Before the request, engine and lifecycle threads allocate: few malloc arenas (docs/operations.md).
tune_malloc_from_settings()

from ttsplatform.body_limit import BodyLimitASGI, install_daphne_bound  # noqa: E402
from ttsplatform.send_bound import install_daphne_send_bound  # noqa: E402
from ttsplatform.ws_flood import install_daphne_message_bound  # noqa: E402

# daphne imports this module before it listens: from here on its requests refuse
# oversized bodies while they arrive, and a slow reader pauses its stream (docs/limits.md).
install_daphne_bound()
install_daphne_message_bound()
install_daphne_send_bound()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from infra.request_id import WebSocketRequestIdMiddleware  # noqa: E402
from tts.catalogue import start_lifecycle  # noqa: E402
from tts.routing import websocket_urlpatterns  # noqa: E402
from tts.synthesis import start_reaper  # noqa: E402
from ttsplatform.shutdown import install_graceful_shutdown  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": BodyLimitASGI(django_asgi_app),
        # Sessions too, for the dashboard's playground; API keys are checked by the consumer.
        # A request id per connection: logs, the handshake's X-Request-ID, history.
        "websocket": WebSocketRequestIdMiddleware(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Only server processes import this module: warm models and follow activations here
# (manage.py commands and tests do not; Celery workers start theirs from signals).
start_lifecycle()
# Records a crashed process left pending are failed and refunded (then by beat, or here without one).
start_reaper()
# SIGTERM drains running syntheses (TTS_SHUTDOWN_DRAIN_S), then cancels the rest with refunds.
install_graceful_shutdown()

from infra.gc_tuning import freeze_startup_objects  # noqa: E402

# What start-up made stays: later full collections skip it (the lifecycle freezes again once warm).
freeze_startup_objects()
