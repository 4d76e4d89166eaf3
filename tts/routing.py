"""WebSocket routes (Channels): ElevenLabs' stream-input and multi-stream-input, job progress, and a refusal
for the rest."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.urls import path, re_path

from tts.api.websocket.consumers import StreamInputConsumer
from tts.api.websocket.jobs import JobProgressConsumer
from tts.api.websocket.multi_context import MultiStreamInputConsumer

CLOSE_NOT_FOUND = 4404


class UnknownRouteConsumer(AsyncJsonWebsocketConsumer):
    """Any other path: one error message and close 4404, instead of a router exception (a 500)."""

    async def connect(self) -> None:
        await self.accept()
        where = self.scope.get("path", "")
        await self.send_json(
            {"message": f"No WebSocket route at '{where}'.", "error": "not_found", "code": CLOSE_NOT_FOUND}
        )
        await self.close(code=CLOSE_NOT_FOUND)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        return None  # closed already; nothing sent after the close is read


websocket_urlpatterns: list[Any] = [
    path("v1/text-to-speech/<str:voice_id>/stream-input", StreamInputConsumer.as_asgi(), name="tts-stream-input"),
    path(
        "v1/text-to-speech/<str:voice_id>/multi-stream-input",
        MultiStreamInputConsumer.as_asgi(),
        name="tts-multi-stream-input",
    ),
    path("v1/jobs/progress", JobProgressConsumer.as_asgi(), name="jobs-progress"),
    path("v1/jobs/<str:job_id>/progress", JobProgressConsumer.as_asgi(), name="job-progress"),
    # Last: whatever the routes above do not match.
    re_path(r"", UnknownRouteConsumer.as_asgi(), name="ws-unknown"),
]
