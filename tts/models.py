"""Model versions, voices, the synthesis history and long-form jobs."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiKey, Tenant


class ModelVersion(models.Model):
    """One set of weights for a model. Clients name the model (``model_id``);
    the one ``active`` version of it serves requests."""

    class Engine(models.TextChoices):
        PIPER_ONNX = "piper-onnx", "Piper (ONNX Runtime)"
        VITS_TORCH = "vits-torch", "VITS (PyTorch)"
        KOKORO_ONNX = "kokoro-onnx", "Kokoro-82M (ONNX Runtime)"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        RETIRED = "retired", "Retired"

    class Device(models.TextChoices):
        AUTO = "auto", "Auto (CUDA when present)"
        CPU = "cpu", "CPU"
        CUDA = "cuda", "CUDA"

    model_id = models.SlugField(max_length=100, help_text="The name clients use, e.g. en_US-joe-medium.")
    version = models.CharField(max_length=40, default="1")
    display_name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    engine = models.CharField(max_length=20, choices=Engine.choices, default=Engine.PIPER_ONNX)
    model_path = models.CharField(max_length=500)
    config_path = models.CharField(max_length=500)
    sha256 = models.CharField(max_length=64)
    sample_rate = models.PositiveIntegerField()
    num_speakers = models.PositiveIntegerField(default=1)
    languages = models.JSONField(default=list, help_text='ISO 639-1 codes, e.g. ["en"].')
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    preload = models.BooleanField(default=False, help_text="Load and warm at start-up in every process.")
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.AUTO)
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model_id", "version"], name="modelversion_id_version_unique"),
            models.UniqueConstraint(
                fields=["model_id"], condition=Q(status="active"), name="modelversion_one_active_per_model"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_id} v{self.version} ({self.status})"


class Voice(models.Model):
    """A speaker of a model. ``tenant`` null = shared with every tenant."""

    voice_id = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    language = models.CharField(max_length=16, default="en")
    labels = models.JSONField(default=dict, blank=True)
    model_id = models.SlugField(max_length=100, db_index=True)
    speaker_index = models.PositiveIntegerField(default=0)
    default_settings = models.JSONField(default=dict, blank=True)
    #: A tenant-made voice mixing the styles of its model's voices (Kokoro):
    #: ``[{"voice_id": "jf_alpha", "speaker_index": 0, "weight": 0.6}, ...]``, weights summing to 1.
    blend = models.JSONField(default=list, blank=True)
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="voices")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name} ({self.voice_id})"

    @property
    def category(self) -> str:
        if self.tenant_id is None:
            return "premade"
        # A voice matched from a recording (tts/matching): the nearest Kokoro style, never a clone.
        return "matched" if (self.labels or {}).get("category") == "matched" else "professional"

    @property
    def style_blend(self) -> tuple[tuple[int, float], ...]:
        """``(speaker index, weight)`` pairs of a blended voice; empty for any other."""
        return tuple((int(c["speaker_index"]), float(c["weight"])) for c in self.blend or ())


class ReferenceSpeaker(models.Model):
    """A speaker name of the reference deployments (CosyVoice's SFT speakers ``中文女``..., the
    articles' ``xiaoyu``, ``female_01``, ``male_01``) and the voice it stands for on ``/api/tts`` and
    ``/tts``. An operator edits the table in the admin; a blank ``voice_id`` means this server has
    no voice for it (Cantonese, Korean): such a request is a 400 that lists the speakers there are."""

    name = models.CharField(max_length=100, unique=True)
    voice_id = models.CharField(max_length=64, blank=True, help_text="blank: no voice here (the request is a 400)")
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} -> {self.voice_id or '(no voice)'}"


class SynthesisRecord(models.Model):
    """One synthesis: the history item, with its audio when logging is on."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SUCCESS = "success", "Success"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class Source(models.TextChoices):
        ELEVENLABS = "elevenlabs", "ElevenLabs API"
        ELEVENLABS_STREAM = "elevenlabs_stream", "ElevenLabs streaming API"
        WEBSOCKET = "websocket", "WebSocket"
        OPENAI = "openai", "OpenAI API"
        JOB = "job", "Long-form job"
        PLAYGROUND = "playground", "Playground"
        COMPAT = "compat", "CosyVoice-compatible API"
        WYOMING = "wyoming", "Wyoming (Home Assistant)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="history")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The public voice id, not a foreign key: history outlives deleted voices.
    voice_id = models.CharField(max_length=64)
    voice_name = models.CharField(max_length=100, blank=True)
    model_version = models.ForeignKey(ModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    model_id = models.CharField(max_length=100, blank=True)
    text = models.TextField(blank=True)
    text_logged = models.BooleanField(default=True)
    characters = models.PositiveIntegerField(default=0)
    output_format = models.CharField(max_length=32)
    content_type = models.CharField(max_length=64, blank=True)
    sample_rate = models.PositiveIntegerField(default=0)
    duration_s = models.FloatField(default=0.0)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    ttfb_ms = models.PositiveIntegerField(null=True, blank=True)
    cache_hit = models.BooleanField(default=False)
    source = models.CharField(max_length=20, choices=Source.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error_code = models.CharField(max_length=64, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    alignment = models.JSONField(null=True, blank=True)
    audio = models.FileField(upload_to="history/%Y/%m/", blank=True, max_length=300)
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    #: While pending: renewed by the process synthesizing it (``tts.synthesis.runs.run``); a pending
    #: record whose heartbeat stopped belongs to a process that died, and is reaped.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: Deleted by its tenant: gone from history (text, audio, timings and settings emptied), kept
    #: as a row so usage, its charts and export still count what was billed (``tts.usage.history``).
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"], name="history_status_heartbeat"),
            models.Index(fields=["tenant", "-created_at"], name="history_tenant_created"),
            # The operator's admin lists every tenant's history newest first: one page, no sort of the table.
            models.Index(fields=["-created_at", "-id"], name="history_created"),
            models.Index(fields=["tenant", "voice_id", "-created_at"], name="history_tenant_voice"),
            models.Index(fields=["tenant", "source", "-created_at"], name="history_tenant_source"),
            models.Index(fields=["tenant", "status", "-created_at"], name="history_tenant_status"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.voice_id} {self.status}"


class Job(models.Model):
    """A long-form synthesis (one long text, or a batch of items) run by a worker.

    The text is cut into chunks at submission (``plan``); a worker claims the
    job with a conditional update, synthesizes chunk after chunk, stores each
    chunk's audio as its own file and counts it in ``done_chunks`` in the same
    conditional update that renews its claim. A job taken over after a crash
    resumes at ``done_chunks``; nothing is synthesized twice or skipped.
    """

    class Kind(models.TextChoices):
        TEXT = "text", "One long text"
        BATCH = "batch", "A batch of items"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="jobs")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TEXT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    voice_id = models.CharField(max_length=64)
    voice_name = models.CharField(max_length=100, blank=True)
    model_version = models.ForeignKey(ModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    model_id = models.CharField(max_length=100, blank=True)
    output_format = models.CharField(max_length=32)
    content_type = models.CharField(max_length=64, blank=True)
    sample_rate = models.PositiveIntegerField(default=0)
    settings = models.JSONField(default=dict, blank=True)
    # What the caller sent (batch items joined by blank lines), unless logging was off.
    text = models.TextField(blank=True)
    text_logged = models.BooleanField(default=True)
    # The chunks to synthesize: [{"item": i, "chars": n, "segments": [...]}, ...].
    plan = models.JSONField(default=list, blank=True)
    item_count = models.PositiveIntegerField(default=1)
    characters = models.PositiveIntegerField(default=0)
    characters_charged = models.PositiveIntegerField(default=0)
    # The quota reservation made at submission (its billing period), refunded in part at the end.
    reserved_period = models.DateField(null=True, blank=True)
    total_chunks = models.PositiveIntegerField(default=0)
    done_chunks = models.PositiveIntegerField(default=0)
    # Characters of all chunks and of the finished ones (spoken text, without the whitespace between).
    planned_chars = models.PositiveIntegerField(default=0)
    done_chars = models.PositiveIntegerField(default=0)
    audio_seconds = models.FloatField(default=0.0)
    cancel_requested = models.BooleanField(default=False)
    claim_token = models.CharField(max_length=36, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # When a message for the job was last handed to a runner (tts.jobs.runner.job_dispatch);
    # the reaper re-sends a job still queued long after it (a message the broker lost).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    audio = models.FileField(upload_to="jobs/", blank=True, max_length=300)
    history_item = models.ForeignKey(
        SynthesisRecord, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    request_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "-created_at"], name="job_tenant_created"),
            models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat"),
        ]

    def __str__(self) -> str:
        return f"job {self.id} {self.status} {self.done_chunks}/{self.total_chunks}"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED)

    @property
    def progress(self) -> float:
        return round(self.done_chunks / self.total_chunks, 4) if self.total_chunks else 0.0


def _dictionary_id() -> str:
    return uuid.uuid4().hex[:20]


class PronunciationDictionary(models.Model):
    """A tenant's pronunciation dictionary (ElevenLabs' shape); its rules live in versions.

    ``is_default``: applied to every request of the tenant that names no
    dictionary (the OpenAI route has no way to name one).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="pronunciation_dictionaries")
    dictionary_id = models.CharField(max_length=32, unique=True, default=_dictionary_id)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="pdict_tenant_created")]
        verbose_name_plural = "pronunciation dictionaries"

    def __str__(self) -> str:
        return f"{self.name} ({self.dictionary_id})"


class PronunciationDictionaryVersion(models.Model):
    """One immutable set of rules; every change to a dictionary makes a new version."""

    dictionary = models.ForeignKey(PronunciationDictionary, on_delete=models.CASCADE, related_name="versions")
    version_id = models.CharField(max_length=32, unique=True, default=_dictionary_id)
    number = models.PositiveIntegerField()
    #: ``tts.text.lexicon.Rule.to_json`` of each rule, in order.
    rules = models.JSONField(default=list)
    #: The size of ``rules`` as JSON (UTF-8): what the tenant's storage bound counts.
    rule_bytes = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["dictionary", "-number"]
        constraints = [models.UniqueConstraint(fields=["dictionary", "number"], name="pdict_version_number")]

    def __str__(self) -> str:
        return f"{self.dictionary.name} v{self.number}"


class PronunciationDictionaryUse(models.Model):
    """A history item that used a dictionary version: such a version is never pruned
    (``tts.pronunciation.dictionaries``); deleting the item (or the version) deletes the row."""

    record = models.ForeignKey(SynthesisRecord, on_delete=models.CASCADE, related_name="+")
    # No database constraint: a version pruned between a request's lookup and its record's
    # insert leaves a row that points at nothing (harmless), not a failed commit.
    version = models.ForeignKey(
        PronunciationDictionaryVersion, on_delete=models.CASCADE, related_name="uses", db_constraint=False
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "record"], name="pdict_use_version_record")]

    def __str__(self) -> str:
        return f"version {self.version_id} used by {self.record_id}"


class VoiceMatch(models.Model):
    """A recording matched to the nearest point of a style-vector model's voice space (Kokoro):
    the search's progress and result. Matching, not cloning: the voice made is a stock voice or a
    blend of up to three. The recording is deleted after ``TTS_MATCH_RECORDING_RETENTION_S``;
    its embedding stays."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="voice_matches")
    #: The id the voice gets when the match succeeds (returned at once, as ElevenLabs does).
    voice_id = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    labels = models.JSONField(default=dict, blank=True)
    language = models.CharField(max_length=16, default="en")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    candidates_total = models.PositiveIntegerField(default=0)
    candidates_done = models.PositiveIntegerField(default=0)
    consent_at = models.DateTimeField()
    #: Where the uploaded files are (under MEDIA_ROOT); blank once deleted.
    recording_path = models.CharField(max_length=255, blank=True)
    recording_files = models.JSONField(default=list, blank=True)
    recording_seconds = models.FloatField(default=0.0)
    recording_deleted_at = models.DateTimeField(null=True, blank=True)
    encoder = models.CharField(max_length=16, blank=True)
    embedding = models.JSONField(default=list, blank=True)
    similarity = models.FloatField(null=True, blank=True)
    nearest_voice_id = models.CharField(max_length=64, blank=True)
    nearest_similarity = models.FloatField(null=True, blank=True)
    result_blend = models.JSONField(default=list, blank=True)
    engine_seconds = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    #: Renewed by the running search after each candidate; a running match whose heartbeat is older
    #: than ``TTS_MATCH_STALE_AFTER_S`` lost its process and is failed by the periodic task.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"], name="tts_match_tenant_created")]

    def __str__(self) -> str:
        return f"{self.voice_id} {self.status}"
