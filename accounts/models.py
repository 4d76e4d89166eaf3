"""Tenants and what they own: members, API keys, plans and the usage ledger."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone


class Plan(models.Model):
    """Limits a tenant runs under. Changing a plan applies to every tenant on it."""

    name = models.CharField(max_length=64, unique=True)
    monthly_character_limit = models.PositiveBigIntegerField(default=100_000)
    requests_per_minute = models.PositiveIntegerField(default=120)
    max_concurrent_streams = models.PositiveIntegerField(default=4)
    max_characters_per_request = models.PositiveIntegerField(default=5_000)
    job_max_characters = models.PositiveIntegerField(default=500_000)
    # Jobs of one tenant running at the same time; the rest wait, oldest first (tts/jobs/slots.py).
    max_running_jobs = models.PositiveIntegerField(default=2)
    history_retention_days = models.PositiveIntegerField(default=30)
    # Engine-seconds one request (a stream-input WebSocket: its connection) may spend; empty:
    # TTS_MAX_ENGINE_SECONDS_PER_REQUEST (tts/synthesis/engine_time/budget.py, docs/limits.md).
    max_engine_seconds_per_request = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.1)])
    # Engine-seconds one long-form job may spend, checked before it is queued and charged as it runs;
    # empty: TTS_MAX_ENGINE_SECONDS_PER_JOB (tts/synthesis/stages/job.py, docs/limits.md).
    max_engine_seconds_per_job = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0.1)])

    def __str__(self) -> str:
        return self.name


class Tenant(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64, unique=True)
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="tenants")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="membership_user_tenant_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"

    @property
    def can_manage_keys(self) -> bool:
        return self.role in (self.Role.OWNER, self.Role.ADMIN)


class Scope(models.TextChoices):
    """What a key may do. A key holds a list of these."""

    TTS = "tts", "Synthesize speech"
    VOICES_READ = "voices:read", "List voices and models"
    HISTORY_READ = "history:read", "Read history and its audio"
    HISTORY_WRITE = "history:write", "Delete history items"
    USER_READ = "user:read", "Read subscription and usage"
    JOBS = "jobs", "Submit and read long-form jobs"
    MODELS_ADMIN = "models:admin", "Reload and activate models (staff only)"


#: Scopes only a staff user's key may hold (``api_key_create`` checks the creator; the views check again).
STAFF_SCOPES: list[str] = [Scope.MODELS_ADMIN.value]
#: What a tenant's key may hold, and what a new key gets by default.
ALL_SCOPES: list[str] = [s.value for s in Scope if s.value not in STAFF_SCOPES]


def default_scopes() -> list[str]:
    return list(ALL_SCOPES)


class ApiKey(models.Model):
    """An API key: only a prefix (to find the row) and a keyed hash of the whole key are stored."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=default_scopes)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"], name="apikey_tenant_created")]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.display_prefix}…)"

    @property
    def display_prefix(self) -> str:
        return f"tts_{self.prefix}"

    def is_usable(self, now: dt.datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class Usage(models.Model):
    """Characters and requests of one tenant in one billing period (a calendar month, UTC).

    Only ever changed by conditional ``UPDATE ... SET x = x + n`` statements
    (see accounts/quota.py), never by read-modify-write.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="usage")
    period_start = models.DateField()
    characters = models.BigIntegerField(default=0)
    requests = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "period_start"], name="usage_tenant_period_unique")]

    def __str__(self) -> str:
        return f"{self.tenant} {self.period_start:%Y-%m}: {self.characters} chars"


class DailyUsage(models.Model):
    """Characters, requests and audio of one tenant on one UTC day, rolled up by a beat task.

    Rebuilt from the history (``tts.SynthesisRecord``) for recent days, so
    running the roll-up twice gives the same rows; the dashboard chart and
    ``/v1/usage/character-stats`` read these instead of scanning the history.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="daily_usage")
    day = models.DateField()
    characters = models.BigIntegerField(default=0)
    requests = models.BigIntegerField(default=0)
    audio_seconds = models.FloatField(default=0.0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="dailyusage_tenant_day_unique")]

    def __str__(self) -> str:
        return f"{self.tenant} {self.day}: {self.characters} chars"
