"""What still uses a voice: the admin refuses to delete a voice while anything does.

History items, jobs, blends, the reference speakers' table and the default-voice settings all
name a voice by its ``voice_id`` (a string, not a foreign key: history outlives voices), so a
deletion cascades nothing and warns no one: old history would lose its voice, waiting jobs would
fail, and a later voice created under the same id would inherit all of it. Turning the voice's
"active" flag off stops serving it at once, keeps every reference whole, and can be undone.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Exists, OuterRef

from accounts.models import Tenant
from tts.models import Job, ReferenceSpeaker, SynthesisRecord, Voice

#: Names listed per kind of use (the rest is counted).
NAMES_SHOWN = 5


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def voice_uses(voice: Voice) -> list[str]:
    """One sentence per kind of use of ``voice``, in words an operator can act on; empty if unused."""
    voice_id = voice.voice_id
    uses: list[str] = []
    # Per tenant, so that the (tenant, voice_id) index answers: no scan or count of the history table.
    tenants = Tenant.objects.filter(pk=voice.tenant_id) if voice.tenant_id else Tenant.objects.all()
    with_history = list(
        tenants.filter(Exists(SynthesisRecord.objects.filter(tenant=OuterRef("pk"), voice_id=voice_id)))
        .order_by("slug")
        .values_list("slug", flat=True)[: NAMES_SHOWN + 1]
    )
    if with_history:
        many = len(with_history) > NAMES_SHOWN
        uses.append(
            f"History: items of {'more than ' if many else ''}{min(len(with_history), NAMES_SHOWN)} tenant(s) "
            f"name it ({', '.join(with_history[:NAMES_SHOWN])}{', …' if many else ''})."
        )
    waiting = Job.objects.filter(voice_id=voice_id, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).count()
    if waiting:
        uses.append(f"Jobs: {waiting} queued or running job(s) speak with it.")
    blends = [
        f"{name} ({other})"
        for other, name, blend in Voice.objects.exclude(blend=[]).values_list("voice_id", "name", "blend")
        if any(part.get("voice_id") == voice_id for part in blend or [])
    ]
    if blends:
        uses.append(f"Blends: {_names(blends)} mix its style.")
    speakers = list(ReferenceSpeaker.objects.filter(voice_id=voice_id).values_list("name", flat=True))
    if speakers:
        uses.append(f"Reference speakers: {_names(speakers)} speak with it on /api/tts and /tts.")
    configured = []
    if voice_id == settings.TTS_DEFAULT_VOICE_ID:
        configured.append("the default voice (TTS_DEFAULT_VOICE_ID)")
    for code, configured_id in settings.TTS_DEFAULT_VOICES.items():
        if configured_id == voice_id and configured_id != settings.TTS_DEFAULT_VOICE_ID:
            configured.append(f"the voice for {code} (TTS_DEFAULT_VOICES)")
    for name, configured_id in settings.TTS_OPENAI_VOICES.items():
        if configured_id == voice_id:
            configured.append(f"OpenAI's {name} (TTS_OPENAI_VOICES)")
    if configured:
        uses.append(f"Settings: it is {_names(configured)}.")
    return uses
