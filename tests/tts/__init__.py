"""Tests: tts."""
