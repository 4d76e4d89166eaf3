"""Loaded by the server processes ``bench/request_path.py`` starts (its folder is put first on PYTHONPATH).

Every thread gets a profile function from the start; it records nothing until
SIGUSR1, then the platform's own modules entered by each Python call, per
thread, until SIGUSR2 writes them to ``REQUEST_PATH_OUT`` as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

_ROOT = os.environ.get("REQUEST_PATH_ROOT", "")
_OUT = os.environ.get("REQUEST_PATH_OUT", "")
_APPS = ("tts", "accounts", "infra", "ttsplatform")
_recording = False
_calls: dict[int, list[str]] = {}
_names: dict[str, str | None] = {}


def _module(filename: str) -> str | None:
    name = _names.get(filename, "")
    if name != "":
        return name
    found: str | None = None
    if filename.startswith(_ROOT + os.sep) and filename.endswith(".py"):
        rel = filename[len(_ROOT) + 1 : -3].split(os.sep)
        if rel[0] in _APPS and "migrations" not in rel and "management" not in rel:
            found = ".".join(part for part in rel if part != "__init__")
    _names[filename] = found
    return found


def _profile(frame, event, arg):  # type: ignore[no-untyped-def]
    if not _recording or event != "call" or frame.f_code.co_name == "<module>":
        return
    module = _module(frame.f_code.co_filename)
    if module is not None:
        _calls.setdefault(threading.get_ident(), []).append(module)


def _start(signum, frame):  # type: ignore[no-untyped-def]
    global _recording
    _calls.clear()
    _recording = True


def _stop(signum, frame):  # type: ignore[no-untyped-def]
    global _recording
    _recording = False
    with open(_OUT, "w") as out:
        json.dump([calls for calls in _calls.values() if calls], out)


if _ROOT and _OUT:
    sys.setprofile(_profile)
    threading.setprofile(_profile)
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
