"""Operator admin: model versions (import, activate, retire), voices, pronunciation dictionaries,
and the history and jobs (read-only), the reference endpoints' speaker table."""

from __future__ import annotations

from . import lists, model_versions, pronunciation, reference_speakers, voices

__all__ = ["lists", "model_versions", "pronunciation", "reference_speakers", "voices"]
