"""Speech synthesis: voices, model versions, the pipeline, history and the APIs."""

from django.apps import AppConfig


class TtsConfig(AppConfig):
    name = "tts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .services.model_lifecycle import connect_worker_signals

        connect_worker_signals()
