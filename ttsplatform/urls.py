"""URL routes: the ElevenLabs- and OpenAI-compatible APIs, admin, operations."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts import urls as account_pages
from infra import metrics
from tts import urls as speech_pages
from tts.api import dialogue, elevenlabs, health, not_found, openai, resources, streaming, voice_blends, voice_matching
from tts.api import history as history_api
from tts.api import jobs as job_api
from tts.api import pronunciation as dictionaries_api
from tts.api import reference as reference_api
from tts.api import timestamps as timestamps_api
from tts.api import usage as usage_api
from tts.api import voice_search as voice_search_api

api_v1 = [
    path("v1/text-to-speech/<str:voice_id>", elevenlabs.TextToSpeechApi.as_view(), name="tts-convert"),
    path("v1/text-to-speech/<str:voice_id>/stream", streaming.TextToSpeechStreamApi.as_view(), name="tts-stream"),
    path(
        "v1/text-to-speech/<str:voice_id>/with-timestamps",
        timestamps_api.TextToSpeechWithTimestampsApi.as_view(),
        name="tts-with-timestamps",
    ),
    path(
        "v1/text-to-speech/<str:voice_id>/stream/with-timestamps",
        timestamps_api.TextToSpeechStreamWithTimestampsApi.as_view(),
        name="tts-stream-with-timestamps",
    ),
    path("v1/text-to-dialogue", dialogue.TextToDialogueApi.as_view(), name="dialogue-convert"),
    path("v1/text-to-dialogue/stream", dialogue.TextToDialogueStreamApi.as_view(), name="dialogue-stream"),
    path(
        "v1/text-to-dialogue/with-timestamps",
        dialogue.TextToDialogueWithTimestampsApi.as_view(),
        name="dialogue-with-timestamps",
    ),
    path(
        "v1/text-to-dialogue/stream/with-timestamps",
        dialogue.TextToDialogueStreamWithTimestampsApi.as_view(),
        name="dialogue-stream-with-timestamps",
    ),
    path("v1/voices", resources.VoiceListApi.as_view(), name="voices"),
    path("v1/voices/blend", voice_blends.VoiceBlendApi.as_view(), name="voice-blend"),
    path("v1/voices/add", voice_matching.VoiceAddApi.as_view(), name="voice-add"),
    path("v1/voices/<str:voice_id>/match", voice_matching.VoiceMatchApi.as_view(), name="voice-match"),
    path("v1/voices/<str:voice_id>", resources.VoiceDetailApi.as_view(), name="voice-detail"),
    path("v1/models", resources.ModelListApi.as_view(), name="models"),
    path("v1/history", history_api.HistoryListApi.as_view(), name="history"),
    path("v1/history/download", history_api.HistoryDownloadApi.as_view(), name="history-download"),
    path("v1/history/<str:history_item_id>", history_api.HistoryDetailApi.as_view(), name="history-detail"),
    path("v1/history/<str:history_item_id>/audio", history_api.HistoryAudioApi.as_view(), name="history-audio"),
    path(
        "v1/history/<str:history_item_id>/captions",
        timestamps_api.HistoryCaptionsApi.as_view(),
        name="history-captions",
    ),
    path("v1/user", resources.UserApi.as_view(), name="user"),
    path("v1/user/subscription", resources.SubscriptionApi.as_view(), name="subscription"),
    path(
        "v1/pronunciation-dictionaries/add-from-file",
        dictionaries_api.AddFromFileApi.as_view(),
        name="pronunciation-add-from-file",
    ),
    path(
        "v1/pronunciation-dictionaries/add-from-rules",
        dictionaries_api.AddFromRulesApi.as_view(),
        name="pronunciation-add-from-rules",
    ),
    path("v1/pronunciation-dictionaries", dictionaries_api.DictionaryListApi.as_view(), name="pronunciation-list"),
    path(
        "v1/pronunciation-dictionaries/<str:dictionary_id>",
        dictionaries_api.DictionaryDetailApi.as_view(),
        name="pronunciation-detail",
    ),
    path(
        "v1/pronunciation-dictionaries/<str:dictionary_id>/add-rules",
        dictionaries_api.AddRulesApi.as_view(),
        name="pronunciation-add-rules",
    ),
    path(
        "v1/pronunciation-dictionaries/<str:dictionary_id>/remove-rules",
        dictionaries_api.RemoveRulesApi.as_view(),
        name="pronunciation-remove-rules",
    ),
    path(
        "v1/pronunciation-dictionaries/<str:dictionary_id>/set-rules",
        dictionaries_api.SetRulesApi.as_view(),
        name="pronunciation-set-rules",
    ),
    path(
        "v1/pronunciation-dictionaries/<str:dictionary_id>/<str:version_id>/download",
        dictionaries_api.DownloadApi.as_view(),
        name="pronunciation-download",
    ),
    path("v1/audio/speech", openai.SpeechApi.as_view(), name="openai-speech"),
    path("v1/jobs", job_api.JobsApi.as_view(), name="jobs"),
    path("v1/jobs/<str:job_id>", job_api.JobDetailApi.as_view(), name="job-detail"),
    path("v1/jobs/<str:job_id>/audio", job_api.JobAudioApi.as_view(), name="job-audio"),
    path("v1/jobs/<str:job_id>/cancel", job_api.JobCancelApi.as_view(), name="job-cancel"),
    path("v1/usage/character-stats", usage_api.CharacterStatsApi.as_view(), name="usage-character-stats"),
]

api_v2 = [
    path("v2/voices", voice_search_api.VoiceSearchApi.as_view(), name="voices-search"),
]

urlpatterns = [
    *api_v1,
    *api_v2,
    path("api/tts", reference_api.ApiTtsView.as_view(), name="compat-api-tts"),
    path("tts", reference_api.LiteTtsView.as_view(), name="compat-tts"),
    path("api/admin/reload", reference_api.ReloadView.as_view(), name="compat-admin-reload"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    # Unknown API routes (/v1, /v2, /api): JSON 404 in the caller's dialect (OpenAI under /v1/audio/), never HTML.
    re_path(r"^v1/audio/", not_found.OpenAIUnknownRouteApi.as_view()),
    re_path(r"^(?:v1|v2|api)(?:/|$)", not_found.UnknownRouteApi.as_view()),
    # The tenant dashboard (session login), last so the API and admin routes win.
    path("", include((account_pages.urlpatterns + speech_pages.urlpatterns, "dashboard"))),
]
