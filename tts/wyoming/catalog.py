"""A tenant's voices as Wyoming sees them, and the voice a Wyoming request names.

Blocking (ORM): call from a worker thread. Each voice the tenant may speak
with now is one Wyoming voice, named by its ``voice_id`` (what a client sends
back), described by its display name, with its languages (its own, then its
model's: a Kokoro voice reads every language of its model) and, for a model
with several voices, those voices as its speakers: ``{"name": "jf_alpha",
"speaker": "jm_kumo"}`` speaks with ``jm_kumo``.

A request picks a voice by ``name`` (a voice id, or a display name), else by
``language`` (the listener's default voice if it speaks it, else the first
voice of that language), else gets the listener's default voice.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker
from wyoming.tts import SynthesizeVoice

from accounts.models import Tenant
from tts.catalogue import active_model_version, voice_find, voices_served_for_tenant
from tts.errors import SynthesisError
from tts.models import ModelVersion, Voice

PROGRAM_NAME = "tts-platform"

#: Who made the weights, by engine, unless the version says (``options["attribution"]``: {"name", "url"}).
_ENGINE_ATTRIBUTION: dict[str, tuple[str, str]] = {
    ModelVersion.Engine.PIPER_ONNX: ("Piper (rhasspy)", "https://github.com/rhasspy/piper"),
    ModelVersion.Engine.VITS_TORCH: ("Piper (rhasspy)", "https://github.com/rhasspy/piper"),
    ModelVersion.Engine.KOKORO_ONNX: ("Kokoro-82M (hexgrad)", "https://huggingface.co/hexgrad/Kokoro-82M"),
}


def _language_code(code: str) -> str:
    return code.strip().replace("_", "-").lower()


def _attribution(version: ModelVersion | None) -> Attribution:
    given = (version.options or {}).get("attribution") if version is not None else None
    if isinstance(given, dict) and given.get("name"):
        return Attribution(name=str(given["name"]), url=str(given.get("url") or ""))
    name, url = _ENGINE_ATTRIBUTION.get(version.engine if version else "", (PROGRAM_NAME, ""))
    return Attribution(name=name, url=url)


def tenant_info(tenant: Tenant) -> Info:
    """The ``info`` answer to ``describe``: one TTS program with the tenant's voices."""
    voices = list(voices_served_for_tenant(tenant))
    versions: dict[str, ModelVersion | None] = {}
    by_model: dict[str, list[Voice]] = defaultdict(list)
    for voice in voices:
        by_model[voice.model_id].append(voice)
        if voice.model_id not in versions:
            versions[voice.model_id] = active_model_version(voice.model_id)
    wyoming_voices = []
    for voice in voices:
        version = versions[voice.model_id]
        languages = [_language_code(voice.language)]
        for code in version.languages if version is not None else []:
            if _language_code(code) not in languages:
                languages.append(_language_code(code))
        siblings = by_model[voice.model_id]
        speakers = [TtsVoiceSpeaker(name=v.voice_id) for v in siblings] if len(siblings) > 1 else None
        wyoming_voices.append(
            TtsVoice(
                name=voice.voice_id,
                description=voice.name,
                attribution=_attribution(version),
                installed=True,
                version=version.version if version is not None else None,
                languages=languages,
                speakers=speakers,
            )
        )
    program = TtsProgram(
        name=PROGRAM_NAME,
        description=f"Text to speech for {tenant.name}",
        attribution=Attribution(name=PROGRAM_NAME, url=""),
        installed=True,
        version=None,
        voices=wyoming_voices,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])


@dataclass(frozen=True)
class ChosenVoice:
    voice_id: str
    #: The language asked for, as the pipeline's hint (None: the voice's own).
    language: str | None = None


def _not_found(message: str, field: str) -> SynthesisError:
    return SynthesisError(message, code="voice_not_found", status=404, field=field)


def choose_voice(tenant: Tenant, requested: SynthesizeVoice | None, *, default_voice_id: str = "") -> ChosenVoice:
    """The voice a request names (``voice_not_found`` naming the field when there is none)."""
    default_id = default_voice_id or settings.TTS_DEFAULT_VOICE_ID
    if requested is not None and requested.name:
        voice = voice_find(tenant, requested.name)
        if voice is None:
            raise _not_found(f"voice.name: no voice '{requested.name}' for this key.", "voice.name")
        if requested.speaker:
            speaker = voice_find(tenant, requested.speaker)
            if speaker is None or speaker.model_id != voice.model_id:
                raise _not_found(
                    f"voice.speaker: voice '{voice.voice_id}' has no speaker '{requested.speaker}'.", "voice.speaker"
                )
            voice = speaker
        return ChosenVoice(voice.voice_id)
    if requested is not None and requested.language:
        code = _language_code(requested.language)
        primary = code.split("-")[0]
        default = voice_find(tenant, default_id)
        if default is not None and _language_code(default.language).split("-")[0] == primary:
            return ChosenVoice(default.voice_id, primary)
        voice = voices_served_for_tenant(tenant, language=primary).first()
        if voice is None:
            raise _not_found(f"voice.language: no voice speaks '{requested.language}' for this key.", "voice.language")
        return ChosenVoice(voice.voice_id, primary)
    default = voice_find(tenant, default_id)
    if default is None:
        raise _not_found(f"No voice named and the default voice '{default_id}' is not available.", "voice.name")
    return ChosenVoice(default.voice_id)
