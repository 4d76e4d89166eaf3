"""Creating, finding and revoking API keys.

A key looks like ``tts_<12 hex prefix>_<43 url-safe secret>``. The row stores
the prefix and an HMAC-SHA256 of the whole key under ``API_KEY_HASH_SECRET``;
lookups go by prefix and compare hashes in constant time. The row (with its
tenant and plan) is kept in the process for ``TTS_LOOKUP_CACHE_S``
(``infra/lookup_cache.py``); the secret is checked on every request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from infra.lookup_cache import LookupCache, clear_lookup_caches, lookup_cache

from .models import ALL_SCOPES, STAFF_SCOPES, ApiKey, Tenant

KEY_PREFIX = "tts_"
_PREFIX_LEN = 12
_LAST_USED_GRANULARITY = dt.timedelta(seconds=60)
#: Keys by prefix, with tenant and plan; the secret is still checked on every request.
_keys_by_prefix: LookupCache[str, ApiKey] = lookup_cache("API keys")


class InvalidApiKey(Exception):
    """The key is unknown, malformed, revoked or expired. ``code`` says which."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def hash_key(raw_key: str) -> str:
    secret = settings.API_KEY_HASH_SECRET.encode()
    return hmac.new(secret, raw_key.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    raw_key: str  # shown to the user once, never stored


def api_key_create(
    *,
    tenant: Tenant,
    name: str,
    scopes: list[str] | None = None,
    expires_at: dt.datetime | None = None,
    created_by: AbstractBaseUser | None = None,
) -> IssuedKey:
    scopes = list(ALL_SCOPES if scopes is None else scopes)
    staff = bool(created_by is not None and getattr(created_by, "is_staff", False))
    allowed = ALL_SCOPES + STAFF_SCOPES if staff else ALL_SCOPES
    unknown = sorted(set(scopes) - set(allowed))
    if unknown:
        raise ValueError(f"unknown scopes: {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    prefix = secrets.token_hex(_PREFIX_LEN // 2)
    raw_key = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        prefix=prefix,
        secret_hash=hash_key(raw_key),
        scopes=scopes,
        expires_at=expires_at,
        created_by=created_by,  # type: ignore[misc]
    )
    return IssuedKey(api_key=key, raw_key=raw_key)


def api_key_revoke(*, api_key: ApiKey) -> None:
    ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    clear_lookup_caches()  # refused at once here; other processes within TTS_LOOKUP_CACHE_S


def api_key_rename(*, api_key: ApiKey, name: str) -> None:
    """A new label; the secret, prefix and everything that authenticates stay as they were."""
    ApiKey.objects.filter(pk=api_key.pk).update(name=name)
    api_key.name = name


def api_key_still_valid(key_id: int) -> InvalidApiKey | None:
    """Why an authenticated key may no longer be used (revoked, expired, tenant disabled), or None.

    Read from the database, not the lookup cache: open WebSockets call it every few
    seconds so that a key revoked in any process closes them promptly.
    """
    key = ApiKey.objects.select_related("tenant").filter(pk=key_id).first()
    if key is None or key.revoked_at is not None:
        return InvalidApiKey("This API key has been revoked.", "api_key_revoked")
    if key.expires_at is not None and key.expires_at <= timezone.now():
        return InvalidApiKey("This API key has expired.", "api_key_expired")
    if not key.tenant.is_active:
        return InvalidApiKey("The account this API key belongs to is disabled.", "account_disabled")
    return None


def api_key_authenticate(raw_key: str) -> ApiKey:
    """Return the usable key for ``raw_key`` or raise ``InvalidApiKey``."""
    raw_key = raw_key.strip()
    if not raw_key.startswith(KEY_PREFIX) or raw_key.count("_") < 2:
        raise InvalidApiKey("Malformed API key: expected 'tts_<prefix>_<secret>'.", "invalid_api_key")
    prefix = raw_key[len(KEY_PREFIX) :].split("_", 1)[0]
    if len(prefix) != _PREFIX_LEN:
        raise InvalidApiKey("Malformed API key: expected 'tts_<prefix>_<secret>'.", "invalid_api_key")
    key = _keys_by_prefix.get(
        prefix, lambda: ApiKey.objects.select_related("tenant__plan").filter(prefix=prefix).first()
    )
    # Hash even when no row matched, so timing does not tell which prefixes exist.
    candidate = hash_key(raw_key)
    if key is None or not hmac.compare_digest(candidate, key.secret_hash):
        raise InvalidApiKey("Invalid API key.", "invalid_api_key")
    now = timezone.now()
    if key.revoked_at is not None:
        raise InvalidApiKey("This API key has been revoked.", "api_key_revoked")
    if key.expires_at is not None and key.expires_at <= now:
        raise InvalidApiKey("This API key has expired.", "api_key_expired")
    if not key.tenant.is_active:
        raise InvalidApiKey("The account this API key belongs to is disabled.", "account_disabled")
    if key.last_used_at is None or now - key.last_used_at > _LAST_USED_GRANULARITY:
        # At most one write a minute per key, not one per request.
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key
