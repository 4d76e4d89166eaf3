"""Dashboard routes for speech: overview (usage), playground, history, jobs, voices, pronunciation."""

from __future__ import annotations

from django.urls import path

from tts.dashboard import playground as playground_views
from tts.dashboard import pronunciation as pronunciation_views
from tts.dashboard import usage as usage_views
from tts.dashboard import views
from tts.dashboard import voice_matching as voice_matching_views
from tts.dashboard.playground_dialogue import PlaygroundDialogueStreamApi

urlpatterns = [
    path("", views.overview, name="overview"),
    path("playground/", playground_views.playground, name="playground"),
    path("playground/recent/", playground_views.playground_recent, name="playground-recent"),
    path("playground/billed/", playground_views.playground_billed, name="playground-billed"),
    path(
        "playground/dialogue/stream",
        PlaygroundDialogueStreamApi.as_view(),
        name="playground-dialogue-stream",
    ),
    path("history/", views.history, name="history"),
    path("history/<str:item_id>/audio/", views.history_audio, name="history-audio"),
    path("history/<str:item_id>/download/", views.history_download, name="history-download"),
    path("history/<str:item_id>/captions.vtt", views.history_captions, name="history-captions"),
    path("history/<str:item_id>/delete/", views.history_delete, name="history-delete"),
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/new/", views.job_new, name="job-new"),
    path("jobs/<str:job_id>/audio/", views.job_audio, name="job-audio"),
    path("jobs/<str:job_id>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("jobs/<str:job_id>/summary/", views.job_summary, name="job-summary"),
    path("voices/", views.voices, name="voices"),
    path("usage/", usage_views.usage, name="usage"),
    path("usage.csv", usage_views.usage_csv, name="usage-csv"),
    path("voices/blend/", views.voice_blend_new, name="voice-blend"),
    path("voices/match/", voice_matching_views.voice_match_new, name="voice-match-new"),
    path("voices/match/<str:voice_id>/", voice_matching_views.voice_match_status, name="voice-match"),
    path("pronunciation/", pronunciation_views.pronunciation, name="pronunciation"),
    path("pronunciation/<str:dictionary_id>/", pronunciation_views.pronunciation_edit, name="pronunciation-edit"),
    path(
        "pronunciation/<str:dictionary_id>/delete/",
        pronunciation_views.pronunciation_delete,
        name="pronunciation-delete",
    ),
    path(
        "pronunciation/<str:dictionary_id>/<str:version_id>.pls",
        pronunciation_views.pronunciation_download,
        name="pronunciation-download",
    ),
    path("voices/<str:voice_id>/preview.mp3", views.voice_preview_audio, name="voice-preview"),
    path("voices/<str:voice_id>/delete/", views.voice_delete_view, name="voice-delete"),
]
