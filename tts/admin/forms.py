"""Admin forms: importing a model version from files, editing one, and a voice checked against its model."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from tts.models import ModelVersion, Voice
from tts.services.model_storage import model_storage_dir, stored_model_path, stored_voice_models

_LANGUAGE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})?")


class ModelVersionImportForm(forms.Form):
    """The admin's "Add model version": the same inputs as ``manage.py import_piper_voice``.

    The files come from an upload or from model storage; the import itself
    (hash, sample rate, speakers, graph checks) is ``import_piper_voice``'s.
    """

    model_file = forms.FileField(
        required=False, label="Model file (.onnx)", widget=forms.ClearableFileInput(attrs={"accept": ".onnx"})
    )
    config_file = forms.FileField(
        required=False,
        label="Config file (.onnx.json)",
        widget=forms.ClearableFileInput(attrs={"accept": ".json"}),
        help_text="The Piper voice config that came with the model.",
    )
    stored_model = forms.ChoiceField(
        required=False,
        label="…or a model already in model storage",
        help_text="Voices under the server's model storage with their .onnx.json beside them.",
    )
    model_id = forms.CharField(
        required=False,
        max_length=100,
        label="Model id",
        help_text="The name clients use. Default: from the file name (en_US-joe-medium).",
    )
    voice_id = forms.SlugField(
        required=False,
        max_length=64,
        label="Voice id",
        help_text="For one speaker: its voice id; for several: their prefix. Default: from the model id.",
    )
    # Piper files only: the engines that read them (Kokoro models come in through import_kokoro_voices).
    engine = forms.ChoiceField(
        choices=[(ModelVersion.Engine.PIPER_ONNX, ModelVersion.Engine.PIPER_ONNX.label),
                 (ModelVersion.Engine.VITS_TORCH, ModelVersion.Engine.VITS_TORCH.label)],
        initial=ModelVersion.Engine.PIPER_ONNX,
    )
    activate = forms.BooleanField(required=False, help_text="Serve the model with this version from now on.")
    preload = forms.BooleanField(required=False, help_text="Load and warm it at start-up in every process.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        root = model_storage_dir()
        field = self.fields["stored_model"]
        assert isinstance(field, forms.ChoiceField)
        names = [str(p.relative_to(root)) for p in stored_voice_models()]
        field.choices = [("", "(none)"), *((name, name) for name in names)]
        field.help_text = f"{field.help_text} Model storage: {root}"

    def clean_model_id(self) -> str:
        value: str = self.cleaned_data["model_id"].strip()
        if value and not re.fullmatch(r"[-a-zA-Z0-9_]+", value):
            raise forms.ValidationError("Use only letters, digits, '-' and '_'.")
        return value

    def clean_stored_model(self) -> str:
        value: str = self.cleaned_data["stored_model"]
        if value and stored_model_path(value) is None:
            raise forms.ValidationError("That file is not in model storage (any more).")
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload, config, stored = data.get("model_file"), data.get("config_file"), data.get("stored_model")
        if upload and stored:
            self.add_error("stored_model", "Upload a file or choose a stored one, not both.")
        elif not upload and not stored and not self.errors:
            self.add_error("model_file", "Upload a model file or choose one already in model storage.")
        elif upload and not config:
            self.add_error("config_file", "Upload the model's .onnx.json config with it.")
        if upload and not (upload.name or "").endswith(".onnx"):
            self.add_error("model_file", "A Piper model file ends in .onnx.")
        return data


class LanguagesField(forms.CharField):
    """ISO 639-1 codes typed as "en, de"; the model field stores a list."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list):
            return [str(v) for v in value]
        text = super().to_python(value) or ""
        text = text.strip().removeprefix("[").removesuffix("]")
        codes = [c.strip().strip("'\"") for c in text.split(",") if c.strip().strip("'\"")]
        bad = [c for c in codes if not _LANGUAGE.fullmatch(c)]
        if bad:
            raise forms.ValidationError(f"Not a language code: {', '.join(bad)} (use e.g. en, de, pt-BR).")
        return codes

    def validate(self, value: Any) -> None:
        if self.required and not value:
            raise forms.ValidationError("Give at least one language, e.g. en.")


class ModelVersionChangeForm(forms.ModelForm):
    """What may change on a registered version; its files and what was read from them may not."""

    languages = LanguagesField(help_text="ISO 639-1 codes, comma-separated, e.g. en, de.")

    class Meta:
        model = ModelVersion
        fields = ("display_name", "description", "languages", "engine", "device", "preload")


class VoiceAdminForm(forms.ModelForm):
    """A voice must name a model that has a registered version, and a speaker that model has."""

    class Meta:
        model = Voice
        fields = (
            "voice_id", "name", "description", "language", "labels", "model_id", "speaker_index",
            "default_settings", "tenant", "is_active", "created_at",
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        models = sorted(set(ModelVersion.objects.values_list("model_id", flat=True)))
        field = self.fields["model_id"]
        field.help_text = "A model with a registered version: " + (", ".join(models) or "none yet (add one first)")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        model_id = data.get("model_id")
        if not model_id:
            return data
        versions = list(ModelVersion.objects.filter(model_id=model_id).values_list("num_speakers", "status"))
        if not versions:
            self.add_error("model_id", f"No model '{model_id}' is registered. Add a model version first.")
            return data
        speakers = max(n for n, _ in versions)
        index = data.get("speaker_index")
        if index is not None and index >= speakers:
            self.add_error(
                "speaker_index",
                f"'{model_id}' has {speakers} speaker(s): the index must be below {speakers}.",
            )
        return data
