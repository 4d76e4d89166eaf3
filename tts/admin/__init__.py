"""Operator admin: model versions (import, activate, retire), voices, and the history and jobs (read-only)."""

from __future__ import annotations

from . import lists, model_versions, voices

__all__ = ["lists", "model_versions", "voices"]
