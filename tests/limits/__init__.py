"""Tests: limits."""
