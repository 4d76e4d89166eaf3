"""The core of the project: paths, debug and secret key, installed apps, middleware, templates,
static and media files, REST framework and OpenAPI, logging."""

from __future__ import annotations

from pathlib import Path

from infra.env import env_bool, env_choice, env_int, env_list, env_str
from ttsplatform.dev_settings import read_dev_settings

BASE_DIR = Path(__file__).resolve().parent.parent.parent
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
    # Staff-only operations last, text-to-speech first, and request examples the server accepts.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "tts.api.openapi.present_schema"],
}

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
