"""Django settings: one module, everything from environment variables.

With nothing set, the platform runs on one laptop: SQLite, a local-memory
cache, an in-memory channel layer and in-process inference. ``DATABASE_URL``
and ``REDIS_URL`` scale it out. See docs/operations.md for every variable.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url

from infra.client_address import parse_trusted_proxies
from infra.env import env_bool, env_choice, env_float, env_int, env_list, env_map, env_str

from .dev_settings import read_dev_settings

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

# What `make run` left in var/dev-settings (DEBUG and a generated secret), so that
# manage.py works in a plain shell afterwards; ignored when SECRET_KEY is set or
# DEBUG is off, and absent on a machine that never ran `make run`.
_DEV = read_dev_settings(VAR_DIR)
DEBUG = env_bool("DEBUG", _DEV.get("DEBUG") == "true")
# Only a development server may run on a known key; production must set one.
SECRET_KEY = env_str(
    "SECRET_KEY", _DEV.get("SECRET_KEY") or ("django-insecure-dev-only-key-do-not-use-in-production" if DEBUG else None)
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "axes",
    "accounts",
    "tts",
]

MIDDLEWARE = [
    "tts.api.health.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves static/ (the dashboard's CSS, JS and vendored chart library) from daphne itself.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "infra.request_id.RequestIdMiddleware",
    "infra.metrics.RequestMetricsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # 413 for an oversized Content-Length before any view reads it (docs/limits.md; daphne and the
    # ASGI wrapper refused it before the body arrived). After authentication: a large body on the
    # admin's upload route needs a staff user; nothing above reads a body.
    "ttsplatform.body_limit.BodyLimitMiddleware",
    # Staff sessions' admin pages get the grant that lets daphne take their large uploads.
    "ttsplatform.upload_grant.UploadGrantMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Failed-login throttling; last, as django-axes asks.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "ttsplatform.urls"
ASGI_APPLICATION = "ttsplatform.asgi.application"
# Idle request threads a web process keeps for the next requests, each with its persistent database
# connection (ttsplatform/handler.py); busier moments start more threads, which end when not kept.
WEB_IDLE_REQUEST_THREADS = env_int("WEB_IDLE_REQUEST_THREADS", 32, minimum=0)
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- data stores ----------------------------------------------------------

DATABASE_URL = env_str("DATABASE_URL", "")
# Every SQLite database (the default one and a sqlite:// DATABASE_URL): IMMEDIATE takes the write lock
# up front, so concurrent quota reservations queue instead of failing with "database is locked"; WAL
# with synchronous=NORMAL commits without an fsync (a cache hit's two writes cost about 35 us instead
# of an fsync each, 10-20 ms on this machine's disk), durable up to the last checkpoint on power loss.
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
# SQLite connections persist in their request thread (opening one costs 1-1.5 ms of CPU: WAL's
# shared memory, the schema); PostgreSQL's default stays 0 (a connection per request, or DB_POOL_SIZE).
SQLITE_CONN_MAX_AGE_S = 600
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))}
    # A psycopg connection pool per process (PostgreSQL only): saves the connect on every
    # request, and shares a few connections between a process' request threads.
    DB_POOL_SIZE = env_int("DB_POOL_SIZE", 0, minimum=0)
    if DB_POOL_SIZE and DATABASES["default"]["ENGINE"].endswith("postgresql"):
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": DB_POOL_SIZE}
    if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        DATABASES["default"]["OPTIONS"] = {**SQLITE_OPTIONS, **DATABASES["default"].get("OPTIONS", {})}
        DATABASES["default"]["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", SQLITE_CONN_MAX_AGE_S)
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # a bare machine has no data dir yet
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "db.sqlite3"),
            "OPTIONS": dict(SQLITE_OPTIONS),
            "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", SQLITE_CONN_MAX_AGE_S),
            # A file, not memory, so server processes started by tests see the test data.
            "TEST": {"NAME": str(VAR_DIR / "test.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", "")
# Longer than channels_redis' 5 s blocking receive (see CHANNEL_LAYERS).
CHANNEL_LAYER_SOCKET_TIMEOUT_S = 15
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {
                "SOCKET_CONNECT_TIMEOUT": 1,
                "SOCKET_TIMEOUT": 1,
            },
        }
    }
    # Every consumer waits on its channel with BZPOPMIN for 5 s (channels_redis' brpop_timeout); redis-py 8
    # reads with a 5 s socket timeout by default, so an idle consumer's wait raced that timeout and a
    # WebSocket quiet for 5 s on the layer was dropped. The read timeout must outlast the blocking pop.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT_S}]},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tts"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Celery ---------------------------------------------------------------

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 6 * 3600)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 600}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers log through LOGGING below (JSON with LOG_FORMAT=json), not Celery's own format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Beat (``celery -A ttsplatform beat``): reap jobs whose worker died, purge
# history past each plan's retention, roll usage up per day.
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "tts.tasks.reap_stale_jobs", "schedule": 60.0},
    "reap-stale-records": {"task": "tts.tasks.reap_stale_records", "schedule": 60.0},
    "purge-expired-history": {"task": "tts.tasks.purge_expired_history", "schedule": 3600.0},
    "rollup-usage": {"task": "tts.tasks.rollup_usage", "schedule": 600.0},
}

# --- auth, i18n, static, media ---------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    # Refuses a username or an address with too many failed logins before the password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Failed logins (dashboard and admin) per username and per client address (django-axes, docs/limits.md).
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOGIN_LOCKOUT_MINUTES = env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = LOGIN_LOCKOUT_MINUTES / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
# The client's address as ops access and the logs see it (TRUSTED_PROXIES, infra/client_address.py).
AXES_CLIENT_IP_CALLABLE = "infra.client_address.client_address"
AXES_VERBOSE = False
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
CSRF_FAILURE_VIEW = "accounts.views.csrf_failure"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# Without collectstatic (make run, tests) WhiteNoise finds files where they live.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
AWS_STORAGE_BUCKET_NAME = env_str("AUDIO_S3_BUCKET", "")
if AWS_STORAGE_BUCKET_NAME:
    STORAGES["default"] = {"BACKEND": "storages.backends.s3.S3Storage"}
    AWS_S3_ENDPOINT_URL = env_str("AUDIO_S3_ENDPOINT_URL", "") or None
    AWS_S3_REGION_NAME = env_str("AUDIO_S3_REGION", "") or None
    AWS_DEFAULT_ACL = None
    AWS_QUERYSTRING_AUTH = True

# --- security (production) -------------------------------------------------

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# --- REST framework -------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.authentication.HasApiKey"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["tts.api.parsers.BoundedJSONParser"],
    "EXCEPTION_HANDLER": "tts.api.errors.exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "tts.api.negotiation.JsonAlwaysNegotiation",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# OpenAPI at /api/schema/ (docs page /api/docs/); kept valid by tests/ops/test_openapi.py.
SPECTACULAR_SETTINGS = {
    "TITLE": "Text-to-speech platform API",
    "DESCRIPTION": "ElevenLabs- and OpenAI-compatible text-to-speech. Authenticate with `xi-api-key` "
    "or `Authorization: Bearer`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI served from static files (drf-spectacular-sidecar), not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- the platform ---------------------------------------------------------

# Secret used to hash API keys (HMAC-SHA256); rotating it invalidates all keys.
API_KEY_HASH_SECRET = env_str("API_KEY_HASH_SECRET", SECRET_KEY)

# Intra-op threads per synthesis. 1 measured best on small machines (streaming
# and job benchmarks): concurrent requests then run in parallel, one per core.
TTS_ENGINE_THREADS = env_int("TTS_ENGINE_THREADS", 1, minimum=1, maximum=64)
# How many nice levels below the web process's other threads the ONNX engine's workers run (Linux):
# request threads, the event loop and the threads that pass audio on come first (docs/operations.md).
TTS_ENGINE_NICE = env_int("TTS_ENGINE_NICE", 10, minimum=0, maximum=19)
TTS_MAX_CHARS_PER_REQUEST = env_int("TTS_MAX_CHARS_PER_REQUEST", 5000, minimum=1)
TTS_SEGMENT_MAX_CHARS = env_int("TTS_SEGMENT_MAX_CHARS", 400, minimum=20)
# Request stitching (docs/limits.md): previous_text/next_text longer than this are a 400 naming the field;
# the context actually synthesized beside a request is at most TTS_CONTEXT_SYNTH_MAX_CHARS characters a side
# (and twice that in phonemes), and is counted in the audio estimate.
TTS_CONTEXT_MAX_CHARS = env_int("TTS_CONTEXT_MAX_CHARS", 1000, minimum=1)
TTS_CONTEXT_SYNTH_MAX_CHARS = env_int("TTS_CONTEXT_SYNTH_MAX_CHARS", 100, minimum=10)
# The engine's own door: no engine call takes more phoneme ids than this, whatever produced them (an
# EngineError, a 422). Derived from the segment limit: 3 ids a character of one segment and its context.
TTS_PHONEME_IDS_MIN = env_int("TTS_PHONEME_IDS_MIN", 400, minimum=16)
TTS_ENGINE_MAX_PHONEME_IDS = env_int(
    "TTS_ENGINE_MAX_PHONEME_IDS",
    max(TTS_PHONEME_IDS_MIN, 3 * (TTS_SEGMENT_MAX_CHARS + 2 * TTS_CONTEXT_SYNTH_MAX_CHARS)),
    minimum=TTS_PHONEME_IDS_MIN,
)
TTS_DEFAULT_VOICE_ID = env_str("TTS_DEFAULT_VOICE_ID", "joe")
# Where `manage.py fetch_kokoro_voices` (make run, make test) leaves kokoro-js's checked voice files.
TTS_KOKORO_VOICES_DIR = Path(env_str("TTS_KOKORO_VOICES_DIR", str(VAR_DIR / "npm")))
# The voice a text in each language gets when the caller names none (the playground, the jobs page,
# the reference endpoints without a speaker): language code -> voice id. English is TTS_DEFAULT_VOICE_ID.
TTS_DEFAULT_VOICES = env_map(
    "TTS_DEFAULT_VOICES",
    {
        "en": TTS_DEFAULT_VOICE_ID,
        "zh": "zf_xiaoxiao",
        "ja": "jf_alpha",
        "es": "ef_dora",
        "fr": "ff_siwis",
        "hi": "hf_alpha",
        "it": "if_sara",
        "pt": "pf_dora",
    },
)
# OpenAI's voice names -> this server's voices (a voice whose id is the name itself wins; a mapped voice
# that is not installed falls back to TTS_DEFAULT_VOICE_ID). docs/api.md lists the defaults.
TTS_OPENAI_VOICES = env_map(
    "TTS_OPENAI_VOICES",
    {
        "alloy": "af_alloy",
        "ash": "am_adam",
        "ballad": "bm_george",
        "coral": "af_heart",
        "echo": "am_echo",
        "fable": "bm_fable",
        "nova": "af_nova",
        "onyx": "am_onyx",
        "sage": "af_sarah",
        "shimmer": "af_bella",
        "verse": "am_michael",
        "marin": "af_kore",
        "cedar": "am_puck",
    },
)
TTS_DEFAULT_ENGINE = env_choice("TTS_DEFAULT_ENGINE", "piper-onnx", ("piper-onnx", "vits-torch"))
TTS_STORE_AUDIO = env_bool("TTS_STORE_AUDIO", True)
TTS_SENTENCE_SILENCE_MS = env_int("TTS_SENTENCE_SILENCE_MS", 200, minimum=0, maximum=5000)
# Engines by name: dotted paths loaded on first use (see tts/inference/registry.py).
TTS_ENGINES = {
    "piper-onnx": "tts.inference.piper_onnx.PiperOnnxEngine",
    "vits-torch": "tts.inference.vits_torch.VitsTorchEngine",
    "kokoro-onnx": "tts.inference.kokoro_onnx.KokoroOnnxEngine",
}
# Long-form jobs (tts/services/jobs.py): Celery workers when there is a broker,
# else a background thread of the server process, so `make run` needs no broker.
TTS_JOB_RUNNER = env_choice("TTS_JOB_RUNNER", "celery" if REDIS_URL else "thread", ("celery", "thread"))
# Characters per chunk: the unit a job checkpoints (one stored file) and resumes from.
TTS_JOB_CHUNK_CHARS = env_int("TTS_JOB_CHUNK_CHARS", 2000, minimum=50)
TTS_JOB_MAX_ITEMS = env_int("TTS_JOB_MAX_ITEMS", 5000, minimum=1)
# A running job whose worker has not reported for this long is taken over (or failed).
TTS_JOB_STALE_AFTER_S = env_int("TTS_JOB_STALE_AFTER_S", 300, minimum=1)
TTS_JOB_MAX_ATTEMPTS = env_int("TTS_JOB_MAX_ATTEMPTS", 3, minimum=1)
# A queued job that could start but was not claimed this long after its message was
# sent (the broker lost it) is sent again by the reaper; at most this many per pass
# (and when a worker starts).
TTS_JOB_REDISPATCH_AFTER_S = env_int("TTS_JOB_REDISPATCH_AFTER_S", 300, minimum=1)
TTS_JOB_REDISPATCH_MAX = env_int("TTS_JOB_REDISPATCH_MAX", 500, minimum=0)

# --- operations: model lifecycle, metrics ----------------------------------

# Start-up warm-up, cross-process hot reload and idle unload (tts/services/model_lifecycle.py);
# runs in server and worker processes only.
TTS_MODEL_LIFECYCLE = env_bool("TTS_MODEL_LIFECYCLE", True)
TTS_MODEL_POLL_SECONDS = env_int("TTS_MODEL_POLL_SECONDS", 2, minimum=1, maximum=300)
# Versions unused this long are unloaded (preloaded ones never); 0 keeps everything loaded.
TTS_MODEL_IDLE_UNLOAD_SECONDS = env_int("TTS_MODEL_IDLE_UNLOAD_SECONDS", 3600, minimum=0)
# When set, /metrics wants "Authorization: Bearer <token>" (infra/ops_access.py), and so
# does /readyz with READYZ_NEEDS_TOKEN. OPS_ALLOWED_NETWORKS (addresses/CIDRs) let those peers in
# without it. Both unset: open.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
READYZ_NEEDS_TOKEN = env_bool("READYZ_NEEDS_TOKEN", False)
OPS_ALLOWED_NETWORKS = env_list("OPS_ALLOWED_NETWORKS", [])
# Which X-Forwarded-For hops are trusted for the client's address (ops access, the login throttle,
# logs: infra/client_address.py): empty = none (the socket's peer is the client), a hop count, or the
# proxies' networks. LOGIN_TRUSTED_PROXIES is its old name (a hop count).
TRUSTED_PROXIES = env_str("TRUSTED_PROXIES", env_str("LOGIN_TRUSTED_PROXIES", ""))
parse_trusted_proxies(TRUSTED_PROXIES)  # fails loudly at start-up, naming the variable

# --- audio cache, rate limits, admission (docs/limits.md) ------------------

# Request bodies past these sizes get 413 before they are read (ttsplatform/body_limit.py);
# job routes take long texts. 0 = no bound.
TTS_MAX_BODY_BYTES = env_int("TTS_MAX_BODY_BYTES", 1024 * 1024, minimum=0)
TTS_JOB_MAX_BODY_BYTES = env_int("TTS_JOB_MAX_BODY_BYTES", 4 * 1024 * 1024, minimum=0)
# A voice's files (.onnx + .onnx.json, a Kokoro voices file) uploaded in the admin, by a staff
# session only (ttsplatform/upload_grant.py); anyone else gets TTS_MAX_BODY_BYTES there too. Larger
# models go in through the model storage folder (the form's "stored model") or import_piper_voice.
TTS_MODEL_UPLOAD_MAX_BYTES = env_int("TTS_MODEL_UPLOAD_MAX_BYTES", 256 * 1024 * 1024, minimum=0)
# How long a staff session's upload grant lasts (renewed by the admin pages it views after half of it).
TTS_MODEL_UPLOAD_GRANT_S = env_int("TTS_MODEL_UPLOAD_GRANT_S", 3600, minimum=60, maximum=86400)
# Django's own bound on a body read whole (2.5 MB by default, an HTML 400) would cut under
# ours on the job routes: ours are the bound (0 = none: Django's check off too).
DATA_UPLOAD_MAX_MEMORY_SIZE = max(TTS_MAX_BODY_BYTES, TTS_JOB_MAX_BODY_BYTES) or None
# POST /v1/history/download: the most bytes of stored audio one zip may hold (413 past it). 0 = no bound.
TTS_HISTORY_DOWNLOAD_MAX_BYTES = env_int("TTS_HISTORY_DOWNLOAD_MAX_BYTES", 256 * 1024 * 1024, minimum=0)
# JSON bodies nested deeper than this get 400 (tts/api/parsers.py).
TTS_MAX_JSON_DEPTH = env_int("TTS_MAX_JSON_DEPTH", 32, minimum=2, maximum=500)

# Prefix of every Redis key the cache and the limits write (one per deployment sharing a Redis).
TTS_REDIS_KEY_PREFIX = env_str("TTS_REDIS_KEY_PREFIX", "tts")
# After a Redis error, skip Redis this long before trying again (no restart needed).
TTS_REDIS_RETRY_S = env_int("TTS_REDIS_RETRY_S", 5, minimum=1)
TTS_AUDIO_CACHE_ENABLED = env_bool("TTS_AUDIO_CACHE_ENABLED", True)
TTS_AUDIO_CACHE_ALIAS = "default"
TTS_AUDIO_CACHE_L1_BYTES = env_int("TTS_AUDIO_CACHE_L1_BYTES", 64 * 1024 * 1024, minimum=0)
TTS_AUDIO_CACHE_TTL_S = env_int("TTS_AUDIO_CACHE_TTL_S", 24 * 3600, minimum=1)
TTS_AUDIO_CACHE_MAX_ENTRY_BYTES = env_int("TTS_AUDIO_CACHE_MAX_ENTRY_BYTES", 8 * 1024 * 1024, minimum=0)
# In-process bound of the cached entries' alignments (their JSON text, bytes; 0 = none kept here).
TTS_ALIGNMENT_CACHE_L1_BYTES = env_int("TTS_ALIGNMENT_CACHE_L1_BYTES", 8 * 1024 * 1024, minimum=0)
# Off: tenants never share entries (timing would tell one what another synthesized).
TTS_AUDIO_CACHE_SHARE_SHARED_VOICES = env_bool("TTS_AUDIO_CACHE_SHARE_SHARED_VOICES", False)
TTS_RATE_LIMIT_WINDOW_S = env_int("TTS_RATE_LIMIT_WINDOW_S", 60, minimum=1)
# One API key may use this share of its tenant's requests per minute.
TTS_RATE_LIMIT_KEY_PERCENT = env_int("TTS_RATE_LIMIT_KEY_PERCENT", 100, minimum=1, maximum=100)
# A concurrency slot whose process died is freed after this long (live holders renew it every third).
TTS_STREAM_SLOT_LEASE_S = env_int("TTS_STREAM_SLOT_LEASE_S", 60, minimum=3)
# Engine work in flight per process beyond which new work gets 503; 0 = no bound.
TTS_ENGINE_MAX_QUEUE = env_int("TTS_ENGINE_MAX_QUEUE", 32, minimum=0)
# Engines (loaded model versions) one process holds at most; loading another drops the
# least recently used (in-flight requests finish on it). 0 = no bound.
TTS_ENGINE_MAX_LOADED = env_int("TTS_ENGINE_MAX_LOADED", 0, minimum=0)
# Work behind one billed character is bounded: the combined slow-down (API speed times SSML
# rate) stops at TTS_MIN_SPEED, and one request makes at most TTS_MAX_AUDIO_SECONDS of audio
# (refused up front when a low estimate at TTS_AUDIO_SECONDS_PER_CHAR_MIN already exceeds it).
TTS_MIN_SPEED = env_float("TTS_MIN_SPEED", 0.5, minimum=0.05)
TTS_MAX_SPEED = env_float("TTS_MAX_SPEED", 4.0, minimum=1.0)
TTS_MAX_AUDIO_SECONDS = env_int("TTS_MAX_AUDIO_SECONDS", 1800, minimum=1)
TTS_AUDIO_SECONDS_PER_CHAR_MIN = env_float("TTS_AUDIO_SECONDS_PER_CHAR_MIN", 0.03, minimum=0.0)
# A pending history record's process renews its heartbeat this often; one whose heartbeat is
# older than TTS_RECORD_STALE_AFTER_S belongs to a dead process and is failed with a full refund.
TTS_RECORD_HEARTBEAT_S = env_int("TTS_RECORD_HEARTBEAT_S", 30, minimum=1)
TTS_RECORD_STALE_AFTER_S = env_int("TTS_RECORD_STALE_AFTER_S", 180, minimum=2)
# On SIGTERM a server refuses new syntheses and lets running ones finish for this long, then
# cancels the rest with refunds. Keep it below the orchestrator's grace period (Kubernetes: 30 s).
TTS_SHUTDOWN_DRAIN_S = env_int("TTS_SHUTDOWN_DRAIN_S", 20, minimum=0)
# A stream-input connection holds at most this much text received and not yet spoken
# (buffered, or reserved and queued); past it: a buffer_full error and close 4009.
TTS_WS_MAX_BUFFER_CHARS = env_int("TTS_WS_MAX_BUFFER_CHARS", 20_000, minimum=100)
# Messages a stream-input connection may send per second (bursts of twice as many); past it the
# socket is closed (too_many_messages, 4008): tiny frames in a flood cost the shared event loop.
TTS_WS_MAX_MESSAGES_PER_S = env_int("TTS_WS_MAX_MESSAGES_PER_S", 100, minimum=1)
# A connection whose client reads slower than the server writes (or not at all) holds at most
# this many bytes queued in the server (ttsplatform/send_bound.py): past it the stream pauses,
# synthesis with it, until half went out; 0 = no bound. A connection paused this long is
# aborted, its run cancelled with the unspoken characters refunded.
TTS_STREAM_MAX_UNSENT_BYTES = env_int("TTS_STREAM_MAX_UNSENT_BYTES", 1024 * 1024, minimum=0)
# A stream's windowed engine decodes small windows (first audio early, spread over the cores) while
# the audio sent is less than this many seconds ahead of real-time playback, and the rest of a
# sentence in a whole-file request's large windows once further ahead (tts/inference/pacing.py).
TTS_STREAM_LEAD_MARGIN_MS = env_int("TTS_STREAM_LEAD_MARGIN_MS", 1000, minimum=0)
TTS_STREAM_SEND_TIMEOUT_S = env_int("TTS_STREAM_SEND_TIMEOUT_S", 60, minimum=1)
# Open WebSockets re-check their key (revoked, expired, tenant suspended) this often.
TTS_WS_AUTH_RECHECK_S = env_int("TTS_WS_AUTH_RECHECK_S", 10, minimum=1)

# --- pronunciation dictionaries (docs/limits.md, "Pronunciation dictionaries") ------------
# One version's rules, and the longest string, alias and phoneme a rule may hold (rules API and PLS).
TTS_DICTIONARY_MAX_RULES = env_int("TTS_DICTIONARY_MAX_RULES", 5000, minimum=1)
TTS_DICTIONARY_MAX_STRING_CHARS = env_int("TTS_DICTIONARY_MAX_STRING_CHARS", 100, minimum=1)
TTS_DICTIONARY_MAX_ALIAS_CHARS = env_int("TTS_DICTIONARY_MAX_ALIAS_CHARS", 500, minimum=1)
TTS_DICTIONARY_MAX_PHONEME_CHARS = env_int("TTS_DICTIONARY_MAX_PHONEME_CHARS", 500, minimum=1)
# A PLS upload (API and dashboard), read whole; the body bound (TTS_MAX_BODY_BYTES) applies first.
TTS_DICTIONARY_MAX_FILE_BYTES = env_int("TTS_DICTIONARY_MAX_FILE_BYTES", 1024 * 1024, minimum=1024)
# The text once dictionaries are applied: at most this many times the text plus one replacement,
# and never past the plan's characters per request (413, checked while applying).
TTS_DICTIONARY_MAX_EXPANSION = env_int("TTS_DICTIONARY_MAX_EXPANSION", 10, minimum=1)
# Per tenant: dictionaries, stored versions of one dictionary, bytes of rules of all stored versions.
TTS_DICTIONARY_MAX_PER_TENANT = env_int("TTS_DICTIONARY_MAX_PER_TENANT", 100, minimum=1)
TTS_DICTIONARY_MAX_VERSIONS = env_int("TTS_DICTIONARY_MAX_VERSIONS", 200, minimum=2)
TTS_DICTIONARY_MAX_TENANT_BYTES = env_int("TTS_DICTIONARY_MAX_TENANT_BYTES", 16 * 1024 * 1024, minimum=1024)
# After a change, versions older than the newest this many are deleted unless a history item used them.
TTS_DICTIONARY_KEEP_VERSIONS = env_int("TTS_DICTIONARY_KEEP_VERSIONS", 10, minimum=1)
# Dictionary writes (create, add, remove, set rules; API and dashboard) per tenant per minute.
TTS_DICTIONARY_WRITES_PER_MINUTE = env_int("TTS_DICTIONARY_WRITES_PER_MINUTE", 30, minimum=1)
# Compiled rules kept per process (estimated bytes; one version at most a quarter of it; 0 = none kept).
TTS_DICTIONARY_CACHE_BYTES = env_int("TTS_DICTIONARY_CACHE_BYTES", 64 * 1024 * 1024, minimum=0)

# --- Wyoming (Home Assistant), `manage.py wyoming_server` (docs/wyoming.md) ---------------
# One listener bound to one API key (TTS_WYOMING_API_KEY, or TTS_WYOMING_API_KEY_FILE), or a
# table of port -> key (TTS_WYOMING_LISTENERS_FILE, JSON). Only clients in the allowed networks
# are served: the protocol carries no credentials.
TTS_WYOMING_HOST = env_str("TTS_WYOMING_HOST", "127.0.0.1")
TTS_WYOMING_PORT = env_int("TTS_WYOMING_PORT", 10200, minimum=1, maximum=65535)
TTS_WYOMING_API_KEY = env_str("TTS_WYOMING_API_KEY", "")
TTS_WYOMING_LISTENERS_FILE = env_str("TTS_WYOMING_LISTENERS_FILE", "")
TTS_WYOMING_ALLOWED_NETWORKS = env_list("TTS_WYOMING_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
# The voice when a client names none (empty: TTS_DEFAULT_VOICE_ID); audio at the voice's rate, or this one.
TTS_WYOMING_VOICE = env_str("TTS_WYOMING_VOICE", "")
TTS_WYOMING_SAMPLE_RATE = env_int("TTS_WYOMING_SAMPLE_RATE", 0, minimum=0, maximum=192_000)
TTS_WYOMING_SAMPLES_PER_CHUNK = env_int("TTS_WYOMING_SAMPLES_PER_CHUNK", 1024, minimum=64, maximum=65_536)
# Bounds on a client (docs/limits.md): open connections per listener, an event's JSON header line
# and its data block, its binary payload, the time its data and payload may take once its header
# arrived, the time with no event and no audio sent, events per second (bursts of twice as many),
# events read ahead while a synthesis runs. A slow reader: TTS_STREAM_SEND_TIMEOUT_S.
TTS_WYOMING_MAX_CONNECTIONS = env_int("TTS_WYOMING_MAX_CONNECTIONS", 64, minimum=1)
TTS_WYOMING_MAX_EVENT_BYTES = env_int("TTS_WYOMING_MAX_EVENT_BYTES", 64 * 1024, minimum=1024)
TTS_WYOMING_MAX_PAYLOAD_BYTES = env_int("TTS_WYOMING_MAX_PAYLOAD_BYTES", 64 * 1024, minimum=0)
TTS_WYOMING_EVENT_TIMEOUT_S = env_float("TTS_WYOMING_EVENT_TIMEOUT_S", 10.0, minimum=0.1)
TTS_WYOMING_IDLE_TIMEOUT_S = env_float("TTS_WYOMING_IDLE_TIMEOUT_S", 60.0, minimum=0.1)
TTS_WYOMING_MAX_EVENTS_PER_S = env_int("TTS_WYOMING_MAX_EVENTS_PER_S", 100, minimum=1)
TTS_WYOMING_MAX_PENDING_EVENTS = env_int("TTS_WYOMING_MAX_PENDING_EVENTS", 64, minimum=1)
# Prometheus metrics of the Wyoming process on this port of TTS_WYOMING_HOST (0: none).
TTS_WYOMING_METRICS_PORT = env_int("TTS_WYOMING_METRICS_PORT", 0, minimum=0, maximum=65535)
# API keys, voices and active model versions are kept in each process this long
# (infra/lookup_cache.py); changes made elsewhere are seen within it. 0 = off.
TTS_LOOKUP_CACHE_S = env_float("TTS_LOOKUP_CACHE_S", 2.0, minimum=0.0)
# glibc malloc in server processes (infra/malloc_tuning.py): at most this many arenas (0: glibc's
# default of 8 per core, which a threaded process fills and keeps), and blocks from this size up always
# mapped and given back when freed (0: glibc's dynamic threshold).
TTS_MALLOC_ARENA_MAX = env_int("TTS_MALLOC_ARENA_MAX", 2, minimum=0)
TTS_MALLOC_MMAP_THRESHOLD = env_int("TTS_MALLOC_MMAP_THRESHOLD", 0, minimum=0)
# Seconds between two malloc_trim(0) calls, which give the heap's free pages back (0: never).
TTS_MALLOC_TRIM_S = env_float("TTS_MALLOC_TRIM_S", 10.0, minimum=0.0)

# --- logging --------------------------------------------------------------

LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOG_FORMAT = env_choice("LOG_FORMAT", "plain", ("plain", "json"))
# Request text stays out of logs unless an operator debugging a voice asks for it.
TTS_LOG_REQUEST_TEXT = env_bool("TTS_LOG_REQUEST_TEXT", False)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "infra.logging.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "infra.logging.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.server": {"level": "WARNING"}, "daphne": {"level": "WARNING"}},
}
