"""Dashboard forms for the tts app: the history filter, the playground's choices, a job to submit."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.core import validators

from tts.models import SynthesisRecord, Voice
from tts.services.usage_breakdown import BREAKDOWN_LABELS


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
