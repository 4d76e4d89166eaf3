"""Tests: accounts."""
