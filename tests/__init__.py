"""Tests; pytest, one file per endpoint or service (see STYLE.md)."""
