"""Which voice a caller gets when it names none, or names one of another vendor's.

- ``default_voice_for_text``: the voice for the text's language
  (``TTS_DEFAULT_VOICES``: English is ``TTS_DEFAULT_VOICE_ID``, Chinese
  ``zf_xiaoxiao``, ...), for the playground, the jobs page and the reference
  endpoints called without a speaker;
- ``openai_voice``: OpenAI's voice names (``alloy``, ``echo``, ...) through
  ``TTS_OPENAI_VOICES`` (``alloy`` -> ``af_alloy``); a voice whose id is the
  name itself wins, and a mapped voice that is not installed falls back to
  the default voice.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from accounts.models import Tenant
from tts.catalogue.voices import voice_find_cached, voice_first_cached
from tts.models import Voice
from tts.text.language import detect_language

#: Used when the text says nothing (no letters) and for a language with no voice of its own.
FALLBACK_LANGUAGE = "en"


def default_voice_id(language: str | None) -> str:
    """The configured voice for ``language`` (ISO 639-1), else the default voice."""
    code = (language or "").split("-")[0].lower()
    return settings.TTS_DEFAULT_VOICES.get(code) or settings.TTS_DEFAULT_VOICE_ID


def text_language(text: str, languages: list[str] | None = None) -> str:
    """The language of ``text`` among ``languages`` (those with a default voice), else English."""
    candidates = languages or list(settings.TTS_DEFAULT_VOICES)
    return detect_language(text, candidates, prefer=FALLBACK_LANGUAGE) or FALLBACK_LANGUAGE


def default_voice_for_text(tenant: Tenant, text: str, language: str | None = None) -> Voice | None:
    """The voice this tenant gets for ``text`` (in ``language`` if given) when it names none."""
    wanted = language or text_language(text)
    return voice_find_cached(tenant, default_voice_id(wanted), fallback_id=settings.TTS_DEFAULT_VOICE_ID)


def default_voice_among(voices: Iterable[Voice], text: str) -> Voice | None:
    """``default_voice_for_text`` among voices already read (a page's list: no query), else None."""
    by_id = {voice.voice_id: voice for voice in voices}
    return by_id.get(default_voice_id(text_language(text))) or by_id.get(settings.TTS_DEFAULT_VOICE_ID)


def openai_voice(tenant: Tenant, name: str) -> Voice | None:
    """The voice OpenAI's ``voice`` names: a voice of this server by id or name, or OpenAI's own names
    through ``TTS_OPENAI_VOICES``; None if neither."""
    wanted = name.strip().lower()
    target = settings.TTS_OPENAI_VOICES.get(wanted)
    if target is None:
        return voice_find_cached(tenant, name)
    return voice_first_cached(tenant, wanted, target, settings.TTS_DEFAULT_VOICE_ID)


def language_voices(served: dict[str, Voice]) -> dict[str, str]:
    """Language -> default voice id, for the languages whose default voice is among ``served``
    (the dashboard's pages switch to it when a text in that language is typed)."""
    out: dict[str, str] = {}
    for code in settings.TTS_DEFAULT_VOICES:
        voice_id = default_voice_id(code)
        if voice_id in served:
            out[code] = voice_id
    return out
