"""Infrastructure the apps share and that knows none of them: typed environment
helpers, structured logging, request ids, per-process lookup caches and the
HTTP metrics. Below every app in the layers contract (pyproject.toml): nothing
here imports ``accounts``, ``tts`` or ``ttsplatform``."""
