"""Who may do what: password rules, login throttling (django-axes), secure cookies and
headers, the API key hash secret, ops access (metrics token, allowed networks, trusted proxies)."""

from __future__ import annotations

from infra.client_address import parse_trusted_proxies
from infra.env import env_bool, env_int, env_list, env_str
from ttsplatform.settings.core import DEBUG, SECRET_KEY

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

# --- security (production) -------------------------------------------------

# Behind a TLS-terminating proxy (an ingress, a load balancer): its X-Forwarded-Proto is believed, and
# the cookies are Secure and HSTS is sent whatever else says (a year unless SECURE_HSTS_SECONDS says).
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG) or BEHIND_TLS_PROXY
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG) or BEHIND_TLS_PROXY
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if BEHIND_TLS_PROXY else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Secret used to hash API keys (HMAC-SHA256); rotating it invalidates all keys.
API_KEY_HASH_SECRET = env_str("API_KEY_HASH_SECRET", SECRET_KEY)

# When set, /metrics wants "Authorization: Bearer <token>" (infra/ops_access.py), and so
# does /readyz with READYZ_NEEDS_TOKEN. OPS_ALLOWED_NETWORKS (addresses/CIDRs) let those peers in
# without it. Both unset: /metrics answers only loopback and private addresses, /readyz anyone.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
READYZ_NEEDS_TOKEN = env_bool("READYZ_NEEDS_TOKEN", False)
OPS_ALLOWED_NETWORKS = env_list("OPS_ALLOWED_NETWORKS", [])
# Which X-Forwarded-For hops are trusted for the client's address (ops access, the login throttle,
# logs: infra/client_address.py): empty = none (the socket's peer is the client), a hop count, or the
# proxies' networks. LOGIN_TRUSTED_PROXIES is its old name (a hop count).
TRUSTED_PROXIES = env_str("TRUSTED_PROXIES", env_str("LOGIN_TRUSTED_PROXIES", ""))
parse_trusted_proxies(TRUSTED_PROXIES)  # fails loudly at start-up, naming the variable
