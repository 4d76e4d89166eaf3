"""Piper's text front end (espeak-ng phonemes to ids), shared by every engine that
serves Piper voices, so the ONNX and PyTorch engines read text identically."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from piper.config import PiperConfig
from piper.voice import PiperVoice


def read_piper_config(config_path: str | Path) -> PiperConfig:
    with open(config_path, encoding="utf-8") as fh:
        data = json.load(fh)
    return PiperConfig.from_dict(data)


class PiperFrontend:
    """Phonemizes text the way ``piper-tts`` does for a given voice config."""

    def __init__(self, config: PiperConfig) -> None:
        self.config = config
        # PiperVoice's phonemizer only reads ``config``; it never touches the
        # session, so a voice object without one is enough for text work.
        self._voice = PiperVoice(session=cast(Any, None), config=config)

    def phonemize(self, text: str) -> list[list[str]]:
        return self._voice.phonemize(text)

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        return self._voice.phonemes_to_ids(list(phonemes))
