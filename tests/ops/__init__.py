"""Tests: ops."""
