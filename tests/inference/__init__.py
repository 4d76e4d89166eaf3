"""Tests: inference."""
