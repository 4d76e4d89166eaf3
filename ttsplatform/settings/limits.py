"""The bounds on what a tenant may ask (docs/limits.md): body sizes, the audio cache, rate limits,
admission, work per billed character, records and shutdown, WebSocket and stream bounds,
pronunciation dictionaries."""

from __future__ import annotations

from infra.env import env_bool, env_float, env_float_map, env_int, env_str
from ttsplatform.settings.deploy import CACHES

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
# The django cache alias audio (and voice previews) go to: "audio" when AUDIO_CACHE_REDIS_URL gives
# the cache a Redis of its own (settings/deploy.py), else the default one.
TTS_AUDIO_CACHE_ALIAS = "audio" if "audio" in CACHES else "default"
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
# Engine time: engine-seconds per second of audio per engine (tts/synthesis/engine_time/cost.py has the
# measured defaults; "kokoro-onnx=0.9,piper-onnx=0.1" overrides some), and the engine-seconds one
# request (a stream-input WebSocket: one connection) may spend when its plan sets none.
TTS_ENGINE_COST_FACTORS = env_float_map("TTS_ENGINE_COST_FACTORS", {}, minimum=0.001)
TTS_MAX_ENGINE_SECONDS_PER_REQUEST = env_float("TTS_MAX_ENGINE_SECONDS_PER_REQUEST", 120.0, minimum=0.1)
# The engine-seconds one long-form job may spend when its plan sets none: checked before it is
# queued (413 engine_time_exceeded), charged as it runs (it stops there, billed for what it made).
# Measured (bench/bench_job_budget.py, docs/benchmarks.md): 500,000 characters (the default plan's
# job_max_characters) of English prose take about 20,800 on Kokoro and 2,200 on Piper; Chinese on
# Kokoro 0.14 a character, so up to about 260,000 characters fit. As the per-request budget does,
# it binds for the dearest language and for slowed speech, not for plain text on a fast voice.
TTS_MAX_ENGINE_SECONDS_PER_JOB = env_float("TTS_MAX_ENGINE_SECONDS_PER_JOB", 36_000.0, minimum=0.1)
# The engine-time estimate's pace per phoneme, for a text whose characters could reach the budget
# (measured: 0.08-0.09 s of audio a phoneme in every language; docs/benchmarks.md).
TTS_AUDIO_SECONDS_PER_PHONEME_MIN = env_float("TTS_AUDIO_SECONDS_PER_PHONEME_MIN", 0.05, minimum=0.0)
# A prepared text (numbers read as words) up to this many times the characters sent bills nothing
# more (plus TTS_BILLING_FREE_EXPANSION_CHARS); past it, its characters less those, divided by
# this (tts/synthesis/stages/prepared_billing.py).
TTS_BILLING_FREE_EXPANSION = env_float("TTS_BILLING_FREE_EXPANSION", 2.5, minimum=1.0)
TTS_BILLING_FREE_EXPANSION_CHARS = env_int("TTS_BILLING_FREE_EXPANSION_CHARS", 200, minimum=0)
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

# --- text-to-dialogue (docs/dialogue.md) ---------------------------------------------------
# Distinct voices one dialogue may use (ElevenLabs' 10), and the turns (``inputs``) it may hold.
TTS_DIALOGUE_MAX_VOICES = env_int("TTS_DIALOGUE_MAX_VOICES", 10, minimum=1)
TTS_DIALOGUE_MAX_INPUTS = env_int("TTS_DIALOGUE_MAX_INPUTS", 100, minimum=1)
# One turn's text, checked where the body is read (a 400 naming inputs.<i>.text), on the dialogue
# routes and dialogue jobs alike; all the turns together are bounded by the plan (a 413).
TTS_DIALOGUE_MAX_TURN_CHARS = env_int("TTS_DIALOGUE_MAX_TURN_CHARS", 10_000, minimum=1)
# Silence after each turn but the last, on top of the sentence silence (TTS_SENTENCE_SILENCE_MS).
TTS_DIALOGUE_PAUSE_MS = env_int("TTS_DIALOGUE_PAUSE_MS", 300, minimum=0, maximum=5000)
