"""manage.py activate_model: activate, preload and retire versions from the shell."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.fixtures import make_joe
from tts.models import ModelVersion


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("activate_model", *args, stdout=out)
    return out.getvalue()


def add_version(version: str) -> ModelVersion:
    first = ModelVersion.objects.get(model_id="en_US-joe-medium", version="1")
    return ModelVersion.objects.create(
        model_id=first.model_id,
        version=version,
        model_path=first.model_path,
        config_path=first.config_path,
        sha256=version.rjust(64, "0"),
        sample_rate=first.sample_rate,
    )


@pytest.mark.django_db
def test_it_activates_the_newest_version_and_retires_the_old_one() -> None:
    make_joe()
    add_version("2")
    v10 = add_version("10")
    assert "v10: active" in run("en_US-joe-medium")
    statuses = dict(ModelVersion.objects.values_list("version", "status"))
    assert statuses == {"1": "retired", "2": "draft", "10": "active"}
    assert ModelVersion.objects.get(pk=v10.pk).activated_at is not None


@pytest.mark.django_db
def test_it_preloads_or_retires_a_named_version() -> None:
    make_joe()
    v2 = add_version("2")
    run("en_US-joe-medium", "--model-version", "2", "--preload", "--no-activate")
    v2.refresh_from_db()
    assert v2.preload and v2.status == "draft"
    run("en_US-joe-medium", "--model-version", "1", "--retire")
    assert ModelVersion.objects.get(version="1").status == "retired"


@pytest.mark.django_db
def test_it_names_what_exists_when_asked_for_what_does_not() -> None:
    make_joe()
    with pytest.raises(CommandError, match="Known models: en_US-joe-medium"):
        run("no-such-model")
    with pytest.raises(CommandError, match=r"has no version '7' \(has: 1\)"):
        run("en_US-joe-medium", "--model-version", "7")
