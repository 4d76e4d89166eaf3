"""Small typed readers for environment variables that fail loudly.

Every setting comes from the environment with an embedded default, so a bare
machine runs with no configuration. ``NAME_FILE`` may point at a file holding
the value (Docker/Kubernetes secrets).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def _raw(name: str) -> str | None:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            with open(file_path, encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path!r} cannot be read: {exc}") from exc
    return os.environ.get(name)


def env_str(name: str, default: str | None = None) -> str:
    value = _raw(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"The {name} environment variable is required.")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use true/false, 1/0, yes/no, on/off).")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        result = default
    else:
        try:
            result = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
    if minimum is not None and result < minimum:
        raise ImproperlyConfigured(f"{name}={result} is below the minimum {minimum}.")
    if maximum is not None and result > maximum:
        raise ImproperlyConfigured(f"{name}={result} is above the maximum {maximum}.")
    return result


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    value = _raw(name)
    if value is None or value == "":
        result = default
    else:
        try:
            result = float(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if minimum is not None and result < minimum:
        raise ImproperlyConfigured(f"{name}={result} is below the minimum {minimum}.")
    return result


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None or value.strip() == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(choices)}.")
    return value


def env_map(name: str, default: dict[str, str]) -> dict[str, str]:
    """``key=value`` pairs separated by commas (``en=joe,zh=zf_xiaoxiao``), over ``default``."""
    result = dict(default)
    for item in env_list(name, []):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ImproperlyConfigured(f"{name}: {item!r} is not a key=value pair.")
        result[key.strip()] = value.strip()
    return result


def env_float_map(name: str, default: dict[str, float], *, minimum: float | None = None) -> dict[str, float]:
    """``key=number`` pairs separated by commas (``kokoro-onnx=0.9,piper-onnx=0.1``), over ``default``."""
    result = dict(default)
    for key, value in env_map(name, {}).items():
        try:
            number = float(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {key}={value!r} is not a number.") from None
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}: {key}={number} is below the minimum {minimum}.")
        result[key] = number
    return result
