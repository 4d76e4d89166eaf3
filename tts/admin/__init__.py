"""Operator admin: model versions (import, activate, retire), voices, pronunciation dictionaries,
and the history and jobs (read-only)."""

from __future__ import annotations

from . import lists, model_versions, pronunciation, voices

__all__ = ["lists", "model_versions", "pronunciation", "voices"]
