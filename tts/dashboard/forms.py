"""Dashboard forms for the tts app: the history filter, a job to submit, the usage range, a blend of
voices and a pronunciation dictionary."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.core import validators

from tts.catalogue import MAX_COMPONENTS
from tts.errors import SynthesisError
from tts.models import SynthesisRecord, Voice
from tts.pronunciation import rules_from_pls
from tts.text.lexicon import Rule
from tts.usage import BREAKDOWN_LABELS


class HistoryFilterForm(forms.Form):
    """GET filters for the history list; every field optional, bad values named in errors."""

    q = forms.CharField(
        required=False,
        label="Text contains",
        max_length=200,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "words in the text"}),
    )
    # Any voice id, not only today's voices: history outlives deleted voices. The select offers the current ones.
    voice = forms.SlugField(required=False, label="Voice", max_length=64, widget=forms.Select)
    source = forms.ChoiceField(
        required=False, label="Source", choices=[("", "Any source"), *SynthesisRecord.Source.choices]
    )
    status = forms.ChoiceField(
        required=False, label="Status", choices=[("", "Any status"), *SynthesisRecord.Status.choices]
    )
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    before = forms.UUIDField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, voices: list[Voice], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "Any voice"), *((v.voice_id, f"{v.name} ({v.voice_id})") for v in voices)]
        wanted = self.data.get("voice") if self.is_bound else None
        if wanted and all(wanted != value for value, _ in choices):
            choices.append((wanted, wanted))  # keep a filter on a voice that is gone selectable
        widget = self.fields["voice"].widget
        assert isinstance(widget, forms.Select)
        widget.choices = choices

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and end < start:
            self.add_error("date_to", "'To' must be on or after 'From'.")
        return data

    def date_range(self) -> tuple[dt.datetime | None, dt.datetime | None]:
        """[from 00:00, the day after 'to' 00:00) in UTC, so 'to' includes its whole day."""
        start, end = self.cleaned_data.get("date_from"), self.cleaned_data.get("date_to")
        after = dt.datetime.combine(start, dt.time.min, tzinfo=dt.UTC) if start else None
        # 'To' on the last day a date can hold has no day after it: no upper bound then (a 500 before).
        if end is None or end >= dt.date.max:
            return after, None
        return after, dt.datetime.combine(end + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)


class JobSubmitForm(forms.Form):
    """A long-form job from the dashboard: one text, a voice, an output format."""

    voice = forms.ChoiceField(label="Voice")
    text = forms.CharField(
        label="Text", widget=forms.Textarea(attrs={"rows": 6, "aria-describedby": "job-text-help"}), strip=False
    )
    output_format = forms.ChoiceField(label="Format")

    def __init__(self, *args: Any, voices: list[Voice], formats: dict[str, str], max_chars: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        voice_field = self.fields["voice"]
        format_field = self.fields["output_format"]
        assert isinstance(voice_field, forms.ChoiceField) and isinstance(format_field, forms.ChoiceField)
        voice_field.choices = [(v.voice_id, f"{v.name} ({v.language})") for v in voices]
        format_field.choices = list(formats.items())
        text_field = self.fields["text"]
        assert isinstance(text_field, forms.CharField)
        text_field.max_length = max_chars
        text_field.widget.attrs["maxlength"] = str(max_chars)
        text_field.validators.append(validators.MaxLengthValidator(max_chars))

    def clean_text(self) -> str:
        text: str = self.cleaned_data["text"]
        if not text.strip():
            raise forms.ValidationError("Enter some text to speak.")
        return text


class UsageRangeForm(forms.Form):
    """GET choices of the usage page: a range of UTC days and what to split the usage by."""

    MAX_DAYS = 366

    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    breakdown = forms.ChoiceField(required=False, label="Break down by", choices=list(BREAKDOWN_LABELS.items()))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        today = dt.datetime.now(dt.UTC).date()
        end = data.get("date_to") or today
        start = data.get("date_from") or end - dt.timedelta(days=29)
        if end < start:
            self.add_error("date_to", "'To' must be on or after 'From'.")
        elif (end - start).days >= self.MAX_DAYS:
            self.add_error("date_from", f"Choose at most {self.MAX_DAYS} days.")
        data["date_from"], data["date_to"] = start, end
        data["breakdown"] = data.get("breakdown") or "none"
        return data


class PronunciationDictionaryForm(forms.Form):
    """A dictionary from the dashboard: a name, a description and a PLS file, whose rules become a
    new version (required for a new dictionary; when editing, leave it empty to keep the rules)."""

    name = forms.CharField(label="Name", max_length=200)
    description = forms.CharField(
        label="Description (optional)", required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )
    file = forms.FileField(label="PLS lexicon (.pls, .xml)", required=True)

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        upload = self.fields["file"]
        upload.widget.attrs["accept"] = ".pls,.xml,application/pls+xml"
        if editing:
            upload.required = False
            upload.label = "Replace the rules with a PLS file (optional)"
            upload.help_text = "Its rules become the next version; leave it empty to keep the rules as they are."

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the dictionary a name.")
        return name

    def clean_file(self) -> list[Rule] | None:
        upload = self.cleaned_data.get("file")
        if not upload:
            return None
        # The same bounds as the API's uploads (TTS_DICTIONARY_MAX_FILE_BYTES, each rule's lengths).
        try:
            return rules_from_pls(upload, field=upload.name)
        except SynthesisError as exc:
            raise forms.ValidationError(exc.message) from exc


class VoiceBlendForm(forms.Form):
    """The voices page's "make a voice": a name and a weight per Kokoro voice (blank or 0 leaves it
    out, a negative weight is refused), 2 to ``MAX_COMPONENTS`` voices in the mix."""

    name = forms.CharField(label="Name", max_length=100)

    def __init__(self, *args: Any, voices: list[Voice], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.voices = voices
        for voice in voices:
            self.fields[f"weight-{voice.voice_id}"] = forms.FloatField(
                required=False,
                min_value=0,
                max_value=100,
                label=voice.name,
                error_messages={
                    "invalid": f"The weight of {voice.name} must be a number.",
                    "min_value": f"The weight of {voice.name} must be 0 (left out) or more.",
                    "max_value": f"The weight of {voice.name} must be at most 100.",
                },
            )

    def weight_fields(self) -> list[tuple[Voice, forms.BoundField]]:
        return [(voice, self[f"weight-{voice.voice_id}"]) for voice in self.voices]

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the voice a name.")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if any(name.startswith("weight-") for name in self.errors):
            return data
        chosen = self.blend()
        if not 2 <= len(chosen) <= MAX_COMPONENTS:
            raise forms.ValidationError(
                f"Give 2 to {MAX_COMPONENTS} voices a weight above 0 ({len(chosen)} "
                f"{'has' if len(chosen) == 1 else 'have'} one now)."
            )
        return data

    def blend(self) -> dict[str, float]:
        """Voice id -> weight, for the voices with a weight above 0."""
        data = getattr(self, "cleaned_data", {})
        return {
            voice.voice_id: float(weight)
            for voice in self.voices
            if (weight := data.get(f"weight-{voice.voice_id}")) is not None and weight > 0
        }
