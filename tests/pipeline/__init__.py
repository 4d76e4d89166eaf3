"""Tests: the one pipeline, seen through every way in."""
