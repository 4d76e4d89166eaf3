"""The voice and model catalogue: which voices a tenant may use and which model version
serves each, and how they get there.

Owns the voices (visible, searched, default, blended, reference speakers, their usage),
model versions (import of Piper and Kokoro voices, activation, retirement, stored uploads,
the ElevenLabs model ids they answer),
the engines registry that loads them (``engines``), and the lifecycle that preloads and
hot-reloads models across processes (``lifecycle``).

May import: models, accounts, inference, text, audio, infra and ``tts.errors``. Never
synthesis, pronunciation, jobs, usage or realtime.
"""

from tts.catalogue.blends import MAX_COMPONENTS, VoiceBlendError, voice_blend_create, voice_delete
from tts.catalogue.defaults import default_voice_among, default_voice_for_text, language_voices, openai_voice
from tts.catalogue.elevenlabs_models import ELEVENLABS_MODELS, ModelAlias, model_aliases
from tts.catalogue.engines import REGISTRY_HOOKS, get_registry, spec_for
from tts.catalogue.kokoro_import import KOKORO_MODEL_ID, import_kokoro_voices
from tts.catalogue.lifecycle import get_lifecycle, start_lifecycle
from tts.catalogue.model_import import (
    VoiceImportError,
    activate_model_version,
    import_piper_voice,
    model_version_named,
    retire_model_version,
)
from tts.catalogue.reference_speakers import speaker_voice
from tts.catalogue.storage import (
    StoredUpload,
    kokoro_voices_beside,
    model_storage_dir,
    piper_config_beside,
    store_uploaded_voice,
    stored_kokoro_models,
    stored_model_path,
    stored_voice_models,
)
from tts.catalogue.voice_search import VOICE_CATEGORIES, VOICE_TYPES, VoicePage, VoiceQuery, voices_search
from tts.catalogue.voice_usage import voice_uses
from tts.catalogue.voices import (
    active_model_version,
    active_model_versions,
    active_model_versions_for_tenant,
    voice_and_active_version,
    voice_find,
    voice_get,
    voice_languages,
    voices_for_tenant,
    voices_served_for_tenant,
)

__all__ = [
    "ELEVENLABS_MODELS",
    "KOKORO_MODEL_ID",
    "MAX_COMPONENTS",
    "REGISTRY_HOOKS",
    "VOICE_CATEGORIES",
    "VOICE_TYPES",
    "ModelAlias",
    "StoredUpload",
    "VoiceBlendError",
    "VoiceImportError",
    "VoicePage",
    "VoiceQuery",
    "activate_model_version",
    "active_model_version",
    "active_model_versions",
    "active_model_versions_for_tenant",
    "default_voice_among",
    "default_voice_for_text",
    "get_lifecycle",
    "get_registry",
    "import_kokoro_voices",
    "import_piper_voice",
    "kokoro_voices_beside",
    "language_voices",
    "model_aliases",
    "model_storage_dir",
    "model_version_named",
    "openai_voice",
    "piper_config_beside",
    "retire_model_version",
    "speaker_voice",
    "spec_for",
    "start_lifecycle",
    "store_uploaded_voice",
    "stored_kokoro_models",
    "stored_model_path",
    "stored_voice_models",
    "voice_and_active_version",
    "voice_blend_create",
    "voice_delete",
    "voice_find",
    "voice_get",
    "voice_languages",
    "voice_uses",
    "voices_for_tenant",
    "voices_search",
    "voices_served_for_tenant",
]
