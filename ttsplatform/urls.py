"""URL routes: the ElevenLabs- and OpenAI-compatible APIs, admin, operations."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from tts.api import elevenlabs, openai, resources
from ttsplatform import health

api_v1 = [
    path("v1/text-to-speech/<str:voice_id>", elevenlabs.TextToSpeechApi.as_view(), name="tts-convert"),
    path("v1/voices", resources.VoiceListApi.as_view(), name="voices"),
    path("v1/voices/<str:voice_id>", resources.VoiceDetailApi.as_view(), name="voice-detail"),
    path("v1/models", resources.ModelListApi.as_view(), name="models"),
    path("v1/history", resources.HistoryListApi.as_view(), name="history"),
    path("v1/history/download", resources.HistoryDownloadApi.as_view(), name="history-download"),
    path("v1/history/<str:history_item_id>", resources.HistoryDetailApi.as_view(), name="history-detail"),
    path("v1/history/<str:history_item_id>/audio", resources.HistoryAudioApi.as_view(), name="history-audio"),
    path("v1/user", resources.UserApi.as_view(), name="user"),
    path("v1/user/subscription", resources.SubscriptionApi.as_view(), name="subscription"),
    path("v1/audio/speech", openai.SpeechApi.as_view(), name="openai-speech"),
]

urlpatterns = [
    *api_v1,
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
]
