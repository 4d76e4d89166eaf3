"""Speech synthesis: voices, model versions, the pipeline, history and the APIs."""

from django.apps import AppConfig


class TtsConfig(AppConfig):
    name = "tts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from infra.lookup_cache import clear_lookup_caches_on_change
        from tts.catalogue import lifecycle as model_lifecycle
        from tts.inference.engine import configure_phoneme_ids_bound
        from tts.jobs import runner as job_runner

        model_lifecycle.connect_worker_signals()
        # The engines' own door reads its bound from the settings, per call (override_settings too).
        configure_phoneme_ids_bound(lambda: int(settings.TTS_ENGINE_MAX_PHONEME_IDS))
        job_runner.connect_worker_signals()
        # Voices, active versions and tenants' default dictionaries are cached per process
        # (infra/lookup_cache.py).
        clear_lookup_caches_on_change(
            self.get_model("Voice"),
            self.get_model("ModelVersion"),
            self.get_model("PronunciationDictionary"),
            self.get_model("PronunciationDictionaryVersion"),
        )
