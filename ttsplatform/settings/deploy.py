"""How a deployment is wired: the database, Redis (cache, channel layer), Celery and beat,
the Wyoming server's listeners, per-process lookup caches and malloc tuning."""

from __future__ import annotations

import dj_database_url

from infra.env import env_float, env_int, env_list, env_str
from ttsplatform.settings.core import VAR_DIR

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
if REDIS_URL:
    # Imported whole here, on the main thread, before any thread starts: redis-py's package imports
    # itself in a circle (redis -> redis.asyncio -> redis.connection), and a thread importing it while
    # the main thread does (the engine ledger's publisher beside django-redis, in a Celery worker's
    # start) left a half-made module: "KeyError: 'redis'", a worker that never started.
    import redis  # noqa: F401
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
    # The audio cache (entries up to 8 MB, kept a day) may have a Redis of its own, bounded with
    # maxmemory and allkeys-lru: a full cache then evicts old audio and never takes the broker's
    # queue, the rate windows or the stream slots with it (deploy/compose.yaml does this).
    AUDIO_CACHE_REDIS_URL = env_str("AUDIO_CACHE_REDIS_URL", "")
    if AUDIO_CACHE_REDIS_URL:
        CACHES["audio"] = {**CACHES["default"], "LOCATION": AUDIO_CACHE_REDIS_URL}
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
    "purge-match-recordings": {"task": "tts.tasks.purge_match_recordings", "schedule": 60.0},
}

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
# Silence after each sentence of a Wyoming synthesis: none, as wyoming-piper (whose sentence ends are
# the voice's own pause); TTS_SENTENCE_SILENCE_MS is the other routes'.
TTS_WYOMING_SENTENCE_SILENCE_MS = env_int("TTS_WYOMING_SENTENCE_SILENCE_MS", 0, minimum=0, maximum=5000)
# Bounds on a client (docs/limits.md): open connections per listener and per client address,
# an event's JSON header line and its data block, its binary payload, the time its data and payload
# may take once its header arrived, the time with no event and no audio sent, events per second of
# a connection and of all an address's connections (bursts of twice as many), events and bytes read
# ahead while a synthesis runs. A slow reader: TTS_STREAM_SEND_TIMEOUT_S.
TTS_WYOMING_MAX_CONNECTIONS = env_int("TTS_WYOMING_MAX_CONNECTIONS", 64, minimum=1)
TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS = env_int("TTS_WYOMING_MAX_CONNECTIONS_PER_ADDRESS", 16, minimum=1)
TTS_WYOMING_MAX_EVENT_BYTES = env_int("TTS_WYOMING_MAX_EVENT_BYTES", 64 * 1024, minimum=1024)
TTS_WYOMING_MAX_PAYLOAD_BYTES = env_int("TTS_WYOMING_MAX_PAYLOAD_BYTES", 64 * 1024, minimum=0)
TTS_WYOMING_EVENT_TIMEOUT_S = env_float("TTS_WYOMING_EVENT_TIMEOUT_S", 10.0, minimum=0.1)
TTS_WYOMING_IDLE_TIMEOUT_S = env_float("TTS_WYOMING_IDLE_TIMEOUT_S", 60.0, minimum=0.1)
TTS_WYOMING_MAX_EVENTS_PER_S = env_int("TTS_WYOMING_MAX_EVENTS_PER_S", 100, minimum=1)
TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS = env_int("TTS_WYOMING_MAX_EVENTS_PER_S_PER_ADDRESS", 200, minimum=1)
TTS_WYOMING_MAX_PENDING_EVENTS = env_int("TTS_WYOMING_MAX_PENDING_EVENTS", 64, minimum=1)
TTS_WYOMING_MAX_PENDING_BYTES = env_int("TTS_WYOMING_MAX_PENDING_BYTES", 256 * 1024, minimum=4096)
# A tenant's describe answer is built once and kept this long (0: built for every describe); a
# voice change made in this process drops it at once.
TTS_WYOMING_DESCRIBE_CACHE_S = env_float("TTS_WYOMING_DESCRIBE_CACHE_S", 2.0, minimum=0.0)
# Prometheus metrics of the Wyoming process on this port of TTS_WYOMING_HOST (0: none).
TTS_WYOMING_METRICS_PORT = env_int("TTS_WYOMING_METRICS_PORT", 0, minimum=0, maximum=65535)
# API keys, voices and active model versions are kept in each process this long
# (infra/lookup_cache.py); changes made elsewhere are seen within it. 0 = off.
TTS_LOOKUP_CACHE_S = env_float("TTS_LOOKUP_CACHE_S", 2.0, minimum=0.0)
# glibc malloc in server processes (infra/malloc_tuning.py): at most this many arenas (0: glibc's
# default of 8 per core, which a threaded process fills and keeps), and blocks from this size up always
# mapped and given back when freed (0: glibc's dynamic threshold, which rises past an engine call's
# activations and then keeps them in the heap: a 12 s Kokoro sentence peaked at +0.2 to +2.2 GB with it,
# +216 MB every time with 256 KiB; bench/bench_engine_peak.py, docs/deploy.md).
TTS_MALLOC_ARENA_MAX = env_int("TTS_MALLOC_ARENA_MAX", 2, minimum=0)
TTS_MALLOC_MMAP_THRESHOLD = env_int("TTS_MALLOC_MMAP_THRESHOLD", 256 * 1024, minimum=0)
# Seconds between two malloc_trim(0) calls, which give the heap's free pages back (0: never).
TTS_MALLOC_TRIM_S = env_float("TTS_MALLOC_TRIM_S", 10.0, minimum=0.0)
