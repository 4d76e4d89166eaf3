"""Dashboard forms for accounts: creating an API key and switching tenants."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms
from django.utils import timezone

from .models import ALL_SCOPES, Scope


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text="So you can tell keys apart, e.g. 'production web app'.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    scopes = forms.MultipleChoiceField(
        choices=[(value, label) for value, label in Scope.choices if value in ALL_SCOPES],
        initial=ALL_SCOPES,
        widget=forms.CheckboxSelectMultiple,
        help_text="What the key may do.",
        error_messages={"required": "Choose at least one scope."},
    )
    expires_on = forms.DateField(
        required=False,
        label="Expires on (optional)",
        help_text="The key stops working at the start of this day (UTC). Leave empty for no expiry.",
        widget=forms.DateInput(attrs={"type": "date"}),
    )

    def clean_expires_on(self) -> dt.date | None:
        value: dt.date | None = self.cleaned_data.get("expires_on")
        if value is not None and value <= timezone.now().date():
            raise forms.ValidationError("The expiry date must be in the future.")
        return value

    def expires_at(self) -> dt.datetime | None:
        day = self.cleaned_data.get("expires_on")
        return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC) if day else None


class ApiKeyRenameForm(forms.Form):
    name = forms.CharField(max_length=100, label="New name", widget=forms.TextInput(attrs={"autocomplete": "off"}))

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the key a name.")
        return name


class TenantSwitchForm(forms.Form):
    # The largest primary key the database holds: a bigger number was a 500 (integer overflow).
    tenant_id = forms.IntegerField(label="Tenant", min_value=1, max_value=2**63 - 1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant_id"].error_messages["required"] = "Choose a tenant."
