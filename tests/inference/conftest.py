"""Fixtures for the inference tests: small random-weight voices, exported once per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.inference.random_vits import RandomVoice


def _random_voice(tmp_path_factory: pytest.TempPathFactory, shape: str, n_speakers: int) -> RandomVoice:
    pytest.importorskip("torch")
    from tests.inference.random_vits import build_random_voice

    return build_random_voice(tmp_path_factory.mktemp(f"voice-{shape}"), shape, n_speakers=n_speakers)


@pytest.fixture(scope="session")
def random_voice_medium(tmp_path_factory: pytest.TempPathFactory) -> RandomVoice:
    """Single speaker, Piper's medium shapes."""
    return _random_voice(tmp_path_factory, "medium", 1)


@pytest.fixture(scope="session")
def random_voice_x_low_multi(tmp_path_factory: pytest.TempPathFactory) -> RandomVoice:
    """Three speakers, Piper's x_low shapes."""
    return _random_voice(tmp_path_factory, "x_low", 3)


@pytest.fixture(scope="session")
def random_voice_high(tmp_path_factory: pytest.TempPathFactory) -> RandomVoice:
    """Single speaker, Piper's high decoder layout (narrowed)."""
    return _random_voice(tmp_path_factory, "high", 1)
