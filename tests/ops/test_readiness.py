"""/healthz and /readyz: not ready until models are warm, nor without a database;
the lifecycle loads what gets activated or preloaded and drops what retires or idles."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from django.test import Client

from tests.fixtures import TenantCtx, make_joe
from tests.ops.fake_engine import FakeEngine
from tests.servers import ServerProc
from tts.catalogue import lifecycle as model_lifecycle
from tts.catalogue.engines import spec_for
from tts.catalogue.lifecycle import ModelLifecycle
from tts.catalogue.model_import import activate_model_version, retire_model_version
from tts.inference.engine import ModelSpec, SynthesisParams
from tts.inference.registry import EngineRegistry
from tts.models import ModelVersion

FAKE_ENGINES = {"piper-onnx": "tests.ops.fake_engine.FakeEngine"}


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(0.05)


@pytest.fixture
def lifecycle(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelLifecycle]:
    """This process's lifecycle, on the fake engine, as the server would have it."""
    FakeEngine.loads.clear()
    lc = ModelLifecycle(EngineRegistry(FAKE_ENGINES), poll_seconds=0.05, idle_seconds=0)
    monkeypatch.setattr(model_lifecycle, "_lifecycle", lc)
    monkeypatch.setattr(model_lifecycle, "_lifecycle_pid", os.getpid())
    yield lc
    FakeEngine.gate.set()
    lc.stop()


def second_version(model_id: str = "en_US-joe-medium", **fields: object) -> ModelVersion:
    first = ModelVersion.objects.get(model_id=model_id, version="1")
    return ModelVersion.objects.create(
        model_id=model_id,
        version=str(fields.pop("version", "2")),
        model_path=first.model_path,
        config_path=first.config_path,
        sha256="0" * 64,
        sample_rate=first.sample_rate,
        **fields,
    )


@pytest.mark.django_db(transaction=True)
def test_it_is_not_ready_until_warm_up_ends(lifecycle: ModelLifecycle) -> None:
    version, _ = make_joe()
    FakeEngine.gate.clear()
    lifecycle.start()
    wait_for(lambda: version.pk in FakeEngine.loads)  # loading done, warm-up synthesis held at the gate

    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response["Retry-After"]
    assert response.json()["reason"].startswith("models warming up")
    assert Client().get("/healthz").status_code == 200

    FakeEngine.gate.set()
    assert lifecycle.warmup_done.wait(10)
    response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["models"] == {"en_US-joe-medium v1": "warm"}
    assert body["warmup_seconds"] >= 0


@pytest.mark.django_db(transaction=True)
def test_it_warms_activated_and_preloaded_versions_and_drops_retired_ones(lifecycle: ModelLifecycle) -> None:
    v1, _ = make_joe()
    lifecycle.sync()
    registry = lifecycle.registry
    assert [s.id for s in registry.loaded_specs()] == [v1.pk]

    v2 = second_version()
    lifecycle.sync()
    assert [s.id for s in registry.loaded_specs()] == [v1.pk], "a draft is not loaded"

    activate_model_version(v2)
    held = registry.get(lifecycle_spec(v1))  # a request that started on v1
    lifecycle.sync()
    assert [s.id for s in registry.loaded_specs()] == [v2.pk]
    assert all(registry.is_warm(s) for s in registry.loaded_specs())
    assert held.synthesize_ids([1], params()).audio.size, "the old engine still finishes its work"

    draft = second_version(version="3", preload=True)
    lifecycle.sync()
    assert {s.id for s in registry.loaded_specs()} == {v2.pk, draft.pk}

    retire_model_version(draft)
    lifecycle.sync()
    assert [s.id for s in registry.loaded_specs()] == [v2.pk]
    lifecycle.warmup_done.set()
    assert lifecycle.readiness().ready


@pytest.mark.django_db(transaction=True)
def test_it_unloads_idle_versions_and_loads_them_again_on_use(lifecycle: ModelLifecycle) -> None:
    v1, _ = make_joe()
    lifecycle.idle_seconds = 0.01
    lifecycle.sync()
    lifecycle.warmup_done.set()
    time.sleep(0.05)
    assert lifecycle.unload_idle() == [v1.pk]
    assert lifecycle.registry.loaded_specs() == []
    lifecycle.sync()
    assert lifecycle.registry.loaded_specs() == [], "idle-unloaded versions wait for a request"
    state = lifecycle.readiness()
    assert state.ready and state.models == {"en_US-joe-medium v1": "unloaded (idle)"}

    lifecycle.registry.get(lifecycle_spec(v1))  # the next request loads it
    lifecycle.sync()
    assert lifecycle.registry.is_warm(lifecycle_spec(v1))

    ModelVersion.objects.filter(pk=v1.pk).update(preload=True)
    time.sleep(0.05)
    assert lifecycle.unload_idle() == [], "preloaded versions stay"


@pytest.mark.django_db(transaction=True)
def test_it_reports_a_version_that_will_not_load_without_blocking_the_others(lifecycle: ModelLifecycle) -> None:
    v1, _ = make_joe()
    broken = ModelVersion.objects.create(
        model_id="en_US-broken-medium",
        model_path="/models/broken.txt",
        config_path="/models/broken.json",
        sha256="1" * 64,
        sample_rate=22050,
        status=ModelVersion.Status.ACTIVE,
    )
    lifecycle.start()
    assert lifecycle.warmup_done.wait(10), "a broken version does not hold up the warm-up of the others"
    assert [s.id for s in lifecycle.registry.loaded_specs()] == [v1.pk]
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["reason"] == "models not warm yet: en_US-broken-medium v1"
    assert body["models"]["en_US-joe-medium v1"] == "warm"
    assert body["models"]["en_US-broken-medium v1"] == "failed: ValueError: not a model file: /models/broken.txt"

    retire_model_version(broken)
    wait_for(lambda: Client().get("/readyz").status_code == 200)


def lifecycle_spec(version: ModelVersion) -> ModelSpec:
    version.refresh_from_db()
    return spec_for(version)


def params() -> SynthesisParams:
    return SynthesisParams()


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.server
@pytest.mark.django_db(transaction=True)
def test_it_is_alive_but_not_ready_without_a_database(daphne_factory: Callable[..., ServerProc]) -> None:
    # Nothing listens on the discard port: every connection attempt is refused.
    server = daphne_factory({"DATABASE_URL": "postgres://nobody@127.0.0.1:9/gone", "TTS_MODEL_LIFECYCLE": "true"})
    status, body = get_json(server.url + "/healthz")
    assert status == 200 and body == {"status": "ok"}
    status, body = get_json(server.url + "/readyz")
    assert status == 503
    assert body["status"] == "unavailable"
    assert body["reason"].startswith("database: ")


@pytest.mark.django_db
def test_it_answers_probes_by_ip_even_though_that_host_is_not_allowed(tenant_a: TenantCtx) -> None:
    # Kubelets and Prometheus call pods by IP; the API itself still refuses that host.
    client = Client(HTTP_HOST="10.1.2.3:8000")
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/metrics").status_code == 200
    assert client.get("/v1/voices", HTTP_XI_API_KEY=tenant_a.key).status_code == 400


def test_it_runs_no_lifecycle_in_the_test_process() -> None:
    assert model_lifecycle.get_lifecycle() is None
