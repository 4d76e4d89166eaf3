"""WebSocket routes (Channels): ElevenLabs' stream-input and multi-stream-input, job progress."""

from __future__ import annotations

from typing import Any

from django.urls import path

from tts.consumers import MultiStreamInputConsumer, StreamInputConsumer
from tts.job_consumers import JobProgressConsumer

websocket_urlpatterns: list[Any] = [
    path("v1/text-to-speech/<str:voice_id>/stream-input", StreamInputConsumer.as_asgi(), name="tts-stream-input"),
    path(
        "v1/text-to-speech/<str:voice_id>/multi-stream-input",
        MultiStreamInputConsumer.as_asgi(),
        name="tts-multi-stream-input",
    ),
    path("v1/jobs/progress", JobProgressConsumer.as_asgi(), name="jobs-progress"),
    path("v1/jobs/<str:job_id>/progress", JobProgressConsumer.as_asgi(), name="job-progress"),
]
