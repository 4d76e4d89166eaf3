"""Tests: dashboard."""
