"""Where model files live on the server, and how uploaded ones get there.

Uploads land in ``VAR_DIR/models/uploads/<sha256>/`` under their own names
(so the import derives the same model id as ``import_piper_voice`` would from
the file), written under a temporary name and renamed, so a half-received file
is never seen. Registration itself is ``model_import.import_piper_voice`` (or
``kokoro_import.import_kokoro_voices``): this module only places files.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from django.conf import settings

from tts.catalogue.model_import import file_sha256


class UploadedFileLike(Protocol):
    name: str | None

    def chunks(self, chunk_size: int | None = None) -> Iterable[bytes]: ...


def model_storage_dir() -> Path:
    """The folder the operator's model files live in (the alignment copies go there too)."""
    return Path(settings.VAR_DIR) / "models"


def piper_config_beside(model: Path) -> Path:
    """Where a stored Piper model's config lies: ``<name>.onnx.json``."""
    return Path(f"{model}.json")


def kokoro_voices_beside(model: Path) -> Path:
    """Where a stored Kokoro graph's voices lie: ``<stem>.voices.npz`` (as the platform writes its own)."""
    return model.with_name(f"{model.stem}.voices.npz")


def stored_voice_models() -> list[Path]:
    """Piper voices already on the server: every ``*.onnx`` in model storage with its ``.onnx.json`` beside it."""
    root = model_storage_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.onnx") if p.is_file() and piper_config_beside(p).is_file())


def stored_kokoro_models() -> list[Path]:
    """Kokoro graphs already on the server: every ``*.onnx`` in model storage with ``<stem>.voices.npz`` beside it."""
    root = model_storage_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.onnx") if p.is_file() and kokoro_voices_beside(p).is_file())


def stored_model_path(relative: str, *, kokoro: bool = False) -> Path | None:
    """``relative`` (as offered by ``stored_voice_models``, or ``stored_kokoro_models`` when ``kokoro``)
    resolved inside model storage, else None."""
    root = model_storage_dir().resolve()
    candidate = (root / relative).resolve()
    offered = stored_kokoro_models() if kokoro else stored_voice_models()
    if not candidate.is_relative_to(root) or candidate not in {p.resolve() for p in offered}:
        return None
    return candidate


def _safe_name(name: str | None, default: str) -> str:
    base = os.path.basename(name or "") or default
    cleaned = re.sub(r"[^-A-Za-z0-9_.]", "-", base).lstrip(".")
    return cleaned[:150] or default


@dataclass
class StoredUpload:
    model_path: Path
    config_path: Path
    added: list[Path]  # the files this upload wrote; the rest were stored before

    def discard(self) -> None:
        """Remove what this upload added (after a failed import); files stored before stay."""
        for path in self.added:
            path.unlink(missing_ok=True)
        try:
            self.model_path.parent.rmdir()  # only when nothing else is stored there
        except OSError:
            pass


def _receive(upload: UploadedFileLike, folder: Path) -> tuple[Path, str]:
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".upload-")
    with os.fdopen(fd, "wb") as out:
        for chunk in upload.chunks():
            digest.update(chunk)
            out.write(chunk)
    return Path(tmp), digest.hexdigest()


def _place(tmp: Path, dest: Path, sha: str, added: list[Path]) -> Path:
    """``tmp`` renamed to ``dest``; an existing ``dest`` with the same bytes is kept, one with others is not
    overwritten (a registered version may read it): the new bytes go beside it under their hash."""
    if dest.exists():
        if file_sha256(dest) == sha:
            tmp.unlink()
            return dest
        dest = dest.with_name(f"{dest.stem}.{sha[:12]}{dest.suffix}")
    os.replace(tmp, dest)
    added.append(dest)
    return dest


def store_uploaded_voice(model: UploadedFileLike, config: UploadedFileLike, *, kokoro: bool = False) -> StoredUpload:
    """Place an uploaded model and its companion in model storage: a Piper config as ``<model>.json``,
    Kokoro voices (``kokoro``) as ``<stem>.voices.npz``, where the stored lists find them."""
    uploads = model_storage_dir() / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    model_tmp, model_sha = _receive(model, uploads)
    config_tmp, config_sha = _receive(config, uploads)
    name = _safe_name(model.name, "voice.onnx")
    if not name.endswith(".onnx"):
        name += ".onnx"
    folder = uploads / model_sha
    folder.mkdir(exist_ok=True)
    added: list[Path] = []
    model_path = _place(model_tmp, folder / name, model_sha, added)
    beside = kokoro_voices_beside(model_path) if kokoro else piper_config_beside(model_path)
    config_path = _place(config_tmp, beside, config_sha, added)
    return StoredUpload(model_path=model_path, config_path=config_path, added=added)
