"""Development settings that ``make run`` leaves in ``var/dev-settings`` for manage.py to find.

``make run`` serves in development mode (``DEBUG``) with a secret generated
once for this checkout. It writes both to ``$VAR_DIR/dev-settings`` (mode
0600), so that the commands the README prints (``.venv/bin/python manage.py
createapikey demo``) work in a plain shell afterwards, with nothing exported.

settings.py reads the file only when the environment sets no ``SECRET_KEY``
(nor ``SECRET_KEY_FILE``), does not turn ``DEBUG`` off and does not say
``DEV_SETTINGS=off``: a production deployment sets its own secret, and a
machine that never ran ``make run`` has no such file, so production still
refuses to start without ``SECRET_KEY``. The production commands of a
checkout that once ran ``make run`` (``make serve``, ``make worker``, ``make
beat``, and every web process ``python -m ttsplatform.serve`` starts) set
``DEV_SETTINGS=off``: they never serve with ``DEBUG`` or the development
secret (and the demo password ``setup_demo`` gives in development).

Run as ``python -m ttsplatform.dev_settings``: creates the file if it is
missing (an existing secret is kept: sessions survive restarts) and prints
its path.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FILE_NAME = "dev-settings"
_HEADER = (
    "# Written by `make run`: development settings for this checkout (manage.py and the server read them\n"
    "# when SECRET_KEY is not set). Never copy this file to a production machine.\n"
)


def var_dir(base_dir: Path) -> Path:
    """The data directory settings use: ``$VAR_DIR``, else ``var/`` in the checkout."""
    return Path(os.environ.get("VAR_DIR") or base_dir / "var")


def read_dev_settings(directory: Path) -> dict[str, str]:
    """``NAME=value`` lines of ``directory/dev-settings`` when the environment lets them apply; else ``{}``."""
    if os.environ.get("SECRET_KEY") or os.environ.get("SECRET_KEY_FILE"):
        return {}
    if os.environ.get("DEV_SETTINGS", "").strip().lower() in ("0", "false", "no", "off"):
        return {}  # a production command of this checkout
    if os.environ.get("DEBUG", "").strip().lower() in ("0", "false", "no", "off"):
        return {}
    try:
        text = (directory / FILE_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    values: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and not name.lstrip().startswith("#"):
            values[name.strip()] = value.strip()
    return values


def write_dev_settings(directory: Path) -> Path:
    """Create ``directory/dev-settings`` with ``DEBUG=true`` and a new secret unless it exists."""
    path = directory / FILE_NAME
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    body = f"{_HEADER}DEBUG=true\nSECRET_KEY={secrets.token_urlsafe(50)}\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(body)
    return path


if __name__ == "__main__":
    written = write_dev_settings(var_dir(Path(__file__).resolve().parent.parent))
    print(f"Development settings (DEBUG, a generated SECRET_KEY) in {written}; manage.py reads them.")
