"""Tests of tts.audio: formats, resampling, streaming encoders."""
