"""Importing Piper voices: one ModelVersion per file, one Voice per speaker.

Everything is checked before anything is written: a broken or mismatched
file changes nothing. A voice served by ONNX Runtime is stored with its graph
split for windowed decoding (``windowed_model``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from infra.lookup_cache import clear_lookup_caches
from tts.catalogue.alignment_model import AlignmentPatchError, has_alignment_output, patched_model_copy
from tts.catalogue.windowed_model import windowed_options
from tts.models import ModelVersion, Voice

logger = logging.getLogger(__name__)


class VoiceImportError(Exception):
    """The voice files cannot be imported. The message says what is wrong with which file, by its
    name, in words an operator can act on (the admin shows it); ``detail`` keeps what a log or a
    shell wants beside it (a path, the raw error of ONNX Runtime or the JSON parser)."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def for_shell(self) -> str:
        return f"{self.message} ({self.detail})" if self.detail else self.message


@dataclass
class ImportResult:
    model_version: ModelVersion
    voices: list[Voice]
    created: bool


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class PiperVoiceFiles:
    model_path: Path
    config_path: Path
    config: dict
    sample_rate: int
    num_speakers: int
    speakers: dict[str, int]
    language: str
    sha256: str


def inspect_piper_voice(model_path: str | Path, config_path: str | Path | None = None) -> PiperVoiceFiles:
    """Read and check a Piper voice: config parses, the ONNX graph loads and agrees with it."""
    model = Path(model_path).resolve()
    config_file = Path(config_path).resolve() if config_path else Path(f"{model}.json")
    if not model.is_file():
        raise VoiceImportError(f"The model file {model.name} was not found.", detail=str(model))
    if not config_file.is_file():
        raise VoiceImportError(
            f"The config file {config_file.name} was not found: give the .onnx.json that came with "
            f"{model.name} (--config in the shell).",
            detail=str(config_file),
        )
    config, sample_rate, num_speakers = _read_piper_config(config_file)

    import onnxruntime

    try:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        logger.info("ONNX Runtime cannot load %s: %s", model, exc)
        raise VoiceImportError(
            f"{model.name} is not a loadable ONNX model: ONNX Runtime cannot read it (a truncated upload, "
            "another kind of file, or a model made for a newer ONNX Runtime). Upload the voice's .onnx file again.",
            detail=f"{model}: {exc}",
        ) from exc
    inputs = {i.name for i in session.get_inputs()}
    missing = {"input", "input_lengths", "scales"} - inputs
    if missing:
        raise VoiceImportError(
            f"{model.name} is an ONNX model but not a Piper voice: it lacks the input(s) "
            f"{', '.join(sorted(missing))} a Piper voice has.",
            detail=str(model),
        )
    has_sid = "sid" in inputs
    if has_sid != (num_speakers > 1):
        raise VoiceImportError(
            f"{model.name} and {config_file.name} disagree, so they are not one voice's files: the config says "
            f"{num_speakers} speaker(s) but the model {'takes' if has_sid else 'does not take'} a speaker id.",
            detail=f"{model}, {config_file}",
        )
    language_info = config.get("language") or {}
    language = str(language_info.get("family") or config.get("espeak", {}).get("voice", "en")).split("-")[0]
    speakers = {str(k): int(v) for k, v in (config.get("speaker_id_map") or {}).items()}
    if num_speakers > 1 and not speakers:
        speakers = {f"speaker-{i}": i for i in range(num_speakers)}
    return PiperVoiceFiles(
        model_path=model,
        config_path=config_file,
        config=config,
        sample_rate=sample_rate,
        num_speakers=num_speakers,
        speakers=speakers,
        language=language,
        sha256=file_sha256(model),
    )


def _read_piper_config(config_file: Path) -> tuple[dict, int, int]:
    """The config, its sample rate and speaker count; what is missing or wrong said by its field."""
    name = config_file.name
    hint = "the .onnx.json that came with the voice has it"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise VoiceImportError(
            f"{name} is not a Piper voice config: it is not JSON. Give the .onnx.json that came with the voice.",
            detail=f"{config_file}: {exc}",
        ) from exc
    if not isinstance(config, dict):
        raise VoiceImportError(f"{name} is not a Piper voice config: it is not a JSON object.", detail=str(config_file))
    audio = config.get("audio")
    rate = audio.get("sample_rate") if isinstance(audio, dict) else None
    if rate is None:
        raise VoiceImportError(f"{name} is not a Piper voice config: it has no audio.sample_rate ({hint}).")
    id_map = config.get("phoneme_id_map")
    if not isinstance(id_map, dict) or not id_map:
        raise VoiceImportError(f"{name} is not a Piper voice config: it has no phoneme_id_map ({hint}).")
    try:
        sample_rate, num_speakers = int(rate), int(config.get("num_speakers", 1))
    except (TypeError, ValueError) as exc:
        raise VoiceImportError(
            f"{name} is not a Piper voice config: audio.sample_rate and num_speakers must be whole numbers.",
            detail=f"{config_file}: {exc}",
        ) from exc
    if sample_rate <= 0 or num_speakers <= 0:
        raise VoiceImportError(
            f"{name} is not a Piper voice config: its sample rate and speaker count must be positive."
        )
    return config, sample_rate, num_speakers


def _default_model_id(model: Path) -> str:
    # Keep Piper's own spelling (en_US-joe-medium): clients see this id.
    return re.sub(r"[^-A-Za-z0-9_]", "-", model.name.removesuffix(".onnx"))[:100] or "piper-voice"


def _voice_base_name(model_id: str) -> str:
    # en_US-joe-medium -> joe (Piper's <lang>-<name>-<quality> convention)
    parts = model_id.split("-")
    return parts[1] if len(parts) == 3 else model_id


def import_piper_voice(
    model_path: str | Path,
    config_path: str | Path | None = None,
    *,
    model_id: str | None = None,
    voice_id: str | None = None,
    engine: str = ModelVersion.Engine.PIPER_ONNX,
    activate: bool = False,
    preload: bool = False,
) -> ImportResult:
    files = inspect_piper_voice(model_path, config_path)
    model_id = model_id or _default_model_id(files.model_path)
    if not re.fullmatch(r"[-a-zA-Z0-9_]+", model_id):
        raise VoiceImportError(f"The model id {model_id!r} may only hold letters, digits, '-' and '_'.")
    existing = ModelVersion.objects.filter(model_id=model_id, sha256=files.sha256, engine=engine).first()
    # Slow file work before the transaction: a new version gets its alignment-capable copy
    # and, on ONNX Runtime, that copy split for windowed decoding (an older import gets the parts now).
    served_path, options = (Path(existing.model_path), dict(existing.options)) if existing else _alignment_copy(files)
    if engine == ModelVersion.Engine.PIPER_ONNX and "windowed" not in options:
        windowed = windowed_options(served_path, Path(settings.VAR_DIR) / "models", files.sha256, files.config)
        if windowed is not None:
            options["windowed"] = windowed
            if existing is not None:
                ModelVersion.objects.filter(pk=existing.pk).update(options=options)
                existing.options = options
    with transaction.atomic():
        created = existing is None
        if existing is None:
            versions = ModelVersion.objects.filter(model_id=model_id).values_list("version", flat=True)
            numbers = [int(v) for v in versions if str(v).isdigit()]
            version = ModelVersion.objects.create(
                model_id=model_id,
                version=str(max(numbers, default=0) + 1),
                display_name=model_id,
                description=f"Piper voice imported from {files.model_path.name}",
                engine=engine,
                model_path=str(served_path),
                config_path=str(files.config_path),
                sha256=files.sha256,
                options=options,
                sample_rate=files.sample_rate,
                num_speakers=files.num_speakers,
                languages=[files.language],
                preload=preload,
            )
        else:
            version = existing
        if activate:
            activate_model_version(version)
        voices = _ensure_voices(version, files, voice_id)
    return ImportResult(model_version=version, voices=voices, created=created)


def _alignment_copy(files: PiperVoiceFiles) -> tuple[Path, dict]:
    """The model file to serve (a copy with phoneme durations for timestamps) and its options.

    ``sha256`` stays the source file's: it names the voice the operator gave,
    and the copy's audio is identical (only an output is added).
    """
    if has_alignment_output(files.model_path):
        return files.model_path, {"alignment": True}
    try:
        copy = patched_model_copy(files.model_path, Path(settings.VAR_DIR) / "models", files.sha256)
    except AlignmentPatchError as exc:
        logger.warning("%s; timestamps of this voice will be estimated", exc)
        return files.model_path, {"alignment": False}
    return copy, {"alignment": True, "source_model_path": str(files.model_path)}


def _ensure_voices(version: ModelVersion, files: PiperVoiceFiles, voice_id: str | None) -> list[Voice]:
    base = voice_id or _voice_base_name(version.model_id)
    wanted: list[tuple[str, str, int]]
    if files.num_speakers <= 1:
        wanted = [(slugify(base), base, 0)]
    else:
        wanted = [
            (slugify(f"{base}-{name}"), name, idx) for name, idx in sorted(files.speakers.items(), key=lambda kv: kv[1])
        ]
    voices = []
    for vid, name, speaker in wanted:
        voice = Voice.objects.filter(voice_id=vid).first()
        if voice is not None and voice.model_id != version.model_id:
            raise VoiceImportError(
                f"The voice id {vid!r} already belongs to model {voice.model_id!r}: choose another voice id "
                "(--voice-id in the shell)."
            )
        if voice is None:
            voice = Voice.objects.create(
                voice_id=vid,
                name=name.replace("_", " ").title() if files.num_speakers > 1 else name.title(),
                language=files.language,
                labels={"quality": version.model_id.rsplit("-", 1)[-1], "engine": "piper"},
                model_id=version.model_id,
                speaker_index=speaker,
            )
        voices.append(voice)
    return voices


def activate_model_version(version: ModelVersion) -> None:
    """Make ``version`` the one that serves its model; the previous active one retires."""
    with transaction.atomic():
        ModelVersion.objects.filter(model_id=version.model_id, status=ModelVersion.Status.ACTIVE).exclude(
            pk=version.pk
        ).update(status=ModelVersion.Status.RETIRED)
        ModelVersion.objects.filter(pk=version.pk).update(
            status=ModelVersion.Status.ACTIVE, activated_at=timezone.now()
        )
    clear_lookup_caches()  # served at once here; other processes within TTS_LOOKUP_CACHE_S or their poll
    version.refresh_from_db()


def retire_model_version(version: ModelVersion) -> None:
    ModelVersion.objects.filter(pk=version.pk).update(status=ModelVersion.Status.RETIRED)
    clear_lookup_caches()
    version.refresh_from_db()


def model_version_named(model_id: str, version: str | None = None) -> ModelVersion:
    """A model's version by name, or its newest (numeric versions compare as numbers).

    ``LookupError`` names what exists when nothing matches.
    """
    versions = list(ModelVersion.objects.filter(model_id=model_id))
    if not versions:
        known = sorted(set(ModelVersion.objects.values_list("model_id", flat=True)))
        raise LookupError(f"No model '{model_id}'. Known models: {', '.join(known) or 'none'}.")
    if version:
        matching = [v for v in versions if v.version == version]
        if not matching:
            have = ", ".join(sorted(v.version for v in versions))
            raise LookupError(f"Model '{model_id}' has no version '{version}' (has: {have}).")
        return matching[0]
    return max(versions, key=lambda v: (int(v.version) if v.version.isdigit() else -1, v.created_at))
