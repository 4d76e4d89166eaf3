"""Tests: text."""
