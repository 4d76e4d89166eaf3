"""Tests of word/character timestamps, their endpoints and captions."""
