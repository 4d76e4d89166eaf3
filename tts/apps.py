"""Speech synthesis: voices, model versions, the pipeline, history and the APIs."""

from django.apps import AppConfig


class TtsConfig(AppConfig):
    name = "tts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from ttsplatform.lookup_cache import clear_lookup_caches

        from .services.model_lifecycle import connect_worker_signals

        connect_worker_signals()
        # Voices and active versions are cached per process (ttsplatform/lookup_cache.py).
        for model in ("Voice", "ModelVersion"):
            sender = self.get_model(model)
            post_save.connect(clear_lookup_caches, sender=sender, dispatch_uid=f"lookup-cache-save-{model}")
            post_delete.connect(clear_lookup_caches, sender=sender, dispatch_uid=f"lookup-cache-delete-{model}")
