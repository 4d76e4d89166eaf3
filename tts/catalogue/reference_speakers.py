"""The reference deployments' speaker names (``/api/tts``, ``/tts``) and the voices they stand for.

The table (``ReferenceSpeaker``, edited in the admin) maps CosyVoice's SFT
speakers and the articles' own names to voices. A name in the table with no
voice (``粤语女``: no Cantonese voice here), or a name that is neither in the
table nor a voice, is a 400 that lists the speakers there are.
"""

from __future__ import annotations

from accounts.models import Tenant
from infra.lookup_cache import LookupCache, lookup_cache
from tts.catalogue.voices import voice_find_cached, voices_served_for_tenant
from tts.errors import SynthesisError
from tts.models import ReferenceSpeaker, Voice

_speakers: LookupCache[str, tuple[str, str]] = lookup_cache("reference speakers")


def _speaker(name: str) -> tuple[str, str] | None:
    """(name, voice id) of a table row; voice id "" for a speaker with no voice."""

    def load() -> tuple[str, str] | None:
        row = ReferenceSpeaker.objects.filter(name=name).values_list("name", "voice_id").first()
        return (row[0], row[1]) if row is not None else None

    return _speakers.get(name, load)


def speakers_available(tenant: Tenant) -> list[str]:
    """The table's speakers whose voice this tenant can speak with now."""
    served = set(voices_served_for_tenant(tenant).values_list("voice_id", flat=True))
    rows = ReferenceSpeaker.objects.exclude(voice_id="").values_list("name", "voice_id")
    return [name for name, voice_id in rows if voice_id in served]


def speaker_voice(tenant: Tenant, speaker: str, *, field: str = "speaker") -> Voice:
    """The voice ``speaker`` stands for: a table row's voice, else a voice of this server by id or name.

    ``SynthesisError`` 400 naming ``field`` and listing the speakers available when the name has no voice.
    """
    row = _speaker(speaker)
    voice = None
    if row is not None and row[1]:
        voice = voice_find_cached(tenant, row[1])
    elif row is None:
        voice = voice_find_cached(tenant, speaker)
    if voice is not None:
        return voice
    available = speakers_available(tenant)
    why = "has no voice on this server" if row is not None else "is not a speaker of this server"
    listed = ", ".join(available) if available else "none"
    raise SynthesisError(
        f"Speaker '{speaker}' {why}. Speakers available: {listed} (any voice id of GET /v1/voices works too).",
        code="speaker_not_available",
        status=400,
        field=field,
    )
