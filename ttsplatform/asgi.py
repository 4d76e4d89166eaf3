"""ASGI entry point: HTTP through Django, WebSockets through Channels (served by daphne)."""

from __future__ import annotations

import os

from ttsplatform.handler import get_http_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ttsplatform.settings")
django_asgi_app = get_http_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from tts.routing import websocket_urlpatterns  # noqa: E402
from tts.services.model_lifecycle import start_lifecycle  # noqa: E402
from ttsplatform.request_id import WebSocketRequestIdMiddleware  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # Sessions too, for the dashboard's playground; API keys are checked by the consumer.
        # A request id per connection: logs, the handshake's X-Request-ID, history.
        "websocket": WebSocketRequestIdMiddleware(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Only server processes import this module: warm models and follow activations here
# (manage.py commands and tests do not; Celery workers start theirs from signals).
start_lifecycle()
