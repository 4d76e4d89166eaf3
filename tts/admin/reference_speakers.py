"""Admin for the reference endpoints' speaker table: a CosyVoice speaker name -> one of this server's voices."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from infra.lookup_cache import clear_lookup_caches
from tts.models import ReferenceSpeaker, Voice


class ReferenceSpeakerForm(forms.ModelForm):
    """``voice_id`` chosen among the shared voices (blank: no voice, the speaker answers 400)."""

    voice_id = forms.ChoiceField(required=False, help_text="blank: no voice here (requests for it answer 400)")

    class Meta:
        model = ReferenceSpeaker
        fields = ["name", "voice_id", "note"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        voices = Voice.objects.filter(tenant__isnull=True, is_active=True).order_by("language", "voice_id")
        choices = [("", "(no voice)")] + [(v.voice_id, f"{v.voice_id} ({v.language}, {v.name})") for v in voices]
        current = self.instance.voice_id if self.instance and self.instance.pk else ""
        if current and current not in {value for value, _ in choices}:
            choices.append((current, f"{current} (not installed)"))
        field = self.fields["voice_id"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices


@admin.register(ReferenceSpeaker)
class ReferenceSpeakerAdmin(admin.ModelAdmin):
    form = ReferenceSpeakerForm
    list_display = ("name", "voice_id", "note")
    search_fields = ("name", "voice_id")

    def save_model(self, request: Any, obj: ReferenceSpeaker, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        clear_lookup_caches()  # this process answers with the new voice at once; others within their cache's TTL

    def delete_model(self, request: Any, obj: ReferenceSpeaker) -> None:
        super().delete_model(request, obj)
        clear_lookup_caches()
