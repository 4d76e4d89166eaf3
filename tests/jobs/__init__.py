"""Tests: jobs."""
