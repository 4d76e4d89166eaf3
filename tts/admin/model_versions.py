"""Admin for model versions: add from files (upload or model storage; Piper or Kokoro), activate, retire with a
warning."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import DatabaseError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from tts.catalogue import (
    KOKORO_MODEL_ID,
    StoredUpload,
    VoiceImportError,
    activate_model_version,
    import_kokoro_voices,
    import_piper_voice,
    kokoro_voices_beside,
    piper_config_beside,
    retire_model_version,
    store_uploaded_voice,
)
from tts.inference.kokoro_model import KokoroSource
from tts.models import ModelVersion, Voice

from .forms import ModelVersionChangeForm, ModelVersionImportForm

logger = logging.getLogger(__name__)


def voices_left_unserved(versions: list[ModelVersion]) -> list[Voice]:
    """Voices that no version serves once ``versions`` stop serving: those of models whose active one is among them."""
    models = {v.model_id for v in versions if v.status == ModelVersion.Status.ACTIVE}
    return list(Voice.objects.filter(model_id__in=models, is_active=True).select_related("tenant").order_by("voice_id"))


def _as_uploaded(message: str, stored: StoredUpload | None, form: ModelVersionImportForm) -> str:
    """``message`` with the files named as the operator uploaded them, not as model storage keeps them
    (a Piper config is stored as ``<model>.onnx.json`` beside its model)."""
    if stored is None:
        return message
    data = form.cleaned_data
    companion = data["voices_file"] if form.is_kokoro else data["config_file"]
    # The companion first: its stored name starts with the model's.
    for kept, upload in ((stored.config_path, companion), (stored.model_path, data["model_file"])):
        if upload is not None and upload.name:
            message = message.replace(kept.name, Path(upload.name).name)
    return message


# What an operator may change on a registered version; the rest comes from its files and its lifecycle.
_EDITABLE_FIELDS = ("display_name", "description", "languages", "engine", "device", "preload")


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    list_display = (
        "model_id",
        "version",
        "engine",
        "status",
        "device",
        "loaded_at_start",
        "sample_rate",
        "num_speakers",
        "activated_at",
    )
    list_filter = ("status", "engine")
    search_fields = ("model_id",)
    form = ModelVersionChangeForm
    fields = (
        "model_id",
        "version",
        "status",
        "display_name",
        "description",
        "languages",
        "engine",
        "device",
        "preload",
        "model_path",
        "config_path",
        "sha256",
        "sample_rate",
        "num_speakers",
        "options",
        "created_at",
        "activated_at",
    )
    readonly_fields = tuple(name for name in fields if name not in _EDITABLE_FIELDS)
    actions = ["activate", "retire"]
    delete_confirmation_template = "admin/tts/modelversion/delete_confirmation.html"

    @admin.display(description="Loaded at start", boolean=True, ordering="preload")
    def loaded_at_start(self, obj: ModelVersion) -> bool:
        """Every process loads and warms the active versions, and the preloaded ones not retired, at
        start (``tts.catalogue.lifecycle``): "preload" alone would show an active version as not loaded."""
        return obj.status != ModelVersion.Status.RETIRED and (obj.status == ModelVersion.Status.ACTIVE or obj.preload)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        # A bulk delete would skip the warning about voices left without a model; delete one at a time.
        actions.pop("delete_selected", None)
        return actions

    # --- add: the import ------------------------------------------------------

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None) -> Any:
        if not self.has_add_permission(request):
            return super().add_view(request, form_url, extra_context)  # Django's own 403
        form = ModelVersionImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            version = self._import(request, form)
            if version is not None:
                return HttpResponseRedirect(reverse("admin:tts_modelversion_change", args=[version.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": "Add model version",
            "subtitle": None,
            "opts": self.opts,
            "form": form,
            "has_view_permission": self.has_view_permission(request),
            "media": self.media + form.media,
        }
        return TemplateResponse(
            request, "admin/tts/modelversion/import.html", context, status=400 if form.errors else 200
        )

    def _import(self, request: HttpRequest, form: ModelVersionImportForm) -> ModelVersion | None:
        data = form.cleaned_data
        kokoro = form.is_kokoro
        stored: StoredUpload | None = None
        model_path: Path | None
        beside: Path | None
        if data["model_file"]:
            companion = data["voices_file"] if kokoro else data["config_file"]
            stored = store_uploaded_voice(data["model_file"], companion, kokoro=kokoro)
            model_path, beside = stored.model_path, stored.config_path
        else:
            model_path = form.stored_path()  # None: Kokoro from its installed packages
            beside = None
            if model_path is not None:
                beside = kokoro_voices_beside(model_path) if kokoro else piper_config_beside(model_path)
        try:
            if kokoro:
                source = KokoroSource(model_path, beside) if model_path is not None and beside is not None else None
                result = import_kokoro_voices(
                    model_id=data["model_id"] or KOKORO_MODEL_ID,
                    voice_prefix=data["voice_id"] or None,
                    activate=data["activate"],
                    preload=data["preload"],
                    source=source,
                )
            else:
                assert model_path is not None  # checked by the form
                result = import_piper_voice(
                    model_path,
                    beside,
                    model_id=data["model_id"] or None,
                    voice_id=data["voice_id"] or None,
                    engine=data["engine"],
                    activate=data["activate"],
                    preload=data["preload"],
                )
        except (VoiceImportError, DatabaseError) as exc:
            if stored is not None:
                stored.discard()
            if isinstance(exc, VoiceImportError):
                logger.info("model import refused: %s", exc.for_shell())
                form.add_error(None, f"Not imported: {_as_uploaded(exc.message, stored, form)}")
            else:
                logger.exception("model import failed in the database")
                form.add_error(None, "Not imported: the database refused the new version; the server log says why.")
            return None
        version = result.model_version
        voices = ", ".join(v.voice_id for v in result.voices)
        verb = "Imported" if result.created else "Already registered:"
        self.message_user(
            request,
            f"{verb} {version.model_id} version {version.version} ({version.status}, {version.engine}, "
            f"{version.sample_rate} Hz, {version.num_speakers} speaker(s)); voices: {voices}.",
            messages.SUCCESS if result.created else messages.WARNING,
        )
        return version

    # --- actions ----------------------------------------------------------------

    @admin.action(description="Activate (serves its model from now on, in every process)")
    def activate(self, request: HttpRequest, queryset: QuerySet[ModelVersion]) -> None:
        by_model: dict[str, ModelVersion] = {}
        for version in queryset:
            if version.model_id in by_model:
                self.message_user(request, f"Pick one version of {version.model_id} to activate.", messages.ERROR)
                return
            by_model[version.model_id] = version
        for version in by_model.values():
            activate_model_version(version)
        self.message_user(request, f"Activated {len(by_model)} version(s).")

    @admin.action(description="Retire (stop serving)")
    def retire(self, request: HttpRequest, queryset: QuerySet[ModelVersion]) -> HttpResponse | None:
        versions = list(queryset)
        unserved = voices_left_unserved(versions)
        if unserved and request.POST.get("confirm") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": "Retire the only active version?",
                "opts": self.opts,
                "versions": versions,
                "voices": unserved,
                "models": sorted({v.model_id for v in unserved}),
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/tts/modelversion/retire_confirmation.html", context)
        for version in versions:
            retire_model_version(version)
        self.message_user(request, f"Retired {len(versions)} version(s).")
        if unserved:
            names = ", ".join(v.voice_id for v in unserved)
            self.message_user(
                request, f"No version serves these voices now; requests for them get 503: {names}.", messages.WARNING
            )
        return None

    def render_delete_form(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        obj = context.get("object")
        context["voices_left_unserved"] = voices_left_unserved([obj]) if isinstance(obj, ModelVersion) else []
        return super().render_delete_form(request, context)
