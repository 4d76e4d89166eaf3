"""Hot reload across processes: two servers share PostgreSQL and Redis; a version
activated through the admin of one is served by the other within its poll
(``TTS_MODEL_POLL_SECONDS``), both warm it and drop the old one within seconds,
and a stream that started before the switch finishes on the old version."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from django.contrib.auth import get_user_model

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx, make_joe
from tests.ops.second_version import write_joe_copy
from tests.servers import ServerProc
from tts.catalogue.model_import import import_piper_voice
from tts.models import ModelVersion, SynthesisRecord

LONG = " ".join(
    [
        "The ferry left the harbour at dawn, its horn echoing across the water.",
        "Gulls followed it out past the breakwater, hoping for scraps.",
        "On deck, a child counted the lighthouses one by one.",
        "The captain checked the charts and the weather twice.",
        "By noon the coast was only a thin grey line behind them.",
        "Nobody aboard noticed that the clocks had changed.",
        "The radio crackled with news from the mainland, then went silent.",
        "A cook sang in the galley while the soup simmered for hours.",
        "When the island finally appeared, everyone went up to the rail.",
    ]
)
SERVER_ENV = {
    "TTS_MODEL_LIFECYCLE": "true",
    "TTS_MODEL_POLL_SECONDS": "1",
    "LOG_LEVEL": "INFO",
    # The admin login below runs over plain http.
    "SESSION_COOKIE_SECURE": "false",
    "CSRF_COOKIE_SECURE": "false",
}


def readyz(server: ServerProc) -> dict:
    try:
        with urllib.request.urlopen(server.url + "/readyz", timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read())


def wait_for_models(server: ServerProc, expected: dict[str, str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while (state := readyz(server)).get("models") != expected:
        assert time.monotonic() < deadline, f"{server.url} still reports {state}"
        time.sleep(0.2)


def admin_login(server: ServerProc, username: str, password: str) -> httpx.Client:
    """A logged-in session on ``server``'s Django admin, as an operator's browser has."""
    admin = httpx.Client(base_url=server.url, timeout=30)
    admin.get("/admin/login/")
    login = admin.post(
        "/admin/login/?next=/admin/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": admin.cookies["csrftoken"]},
    )
    assert login.status_code == 302, login.text[:500]
    return admin


def admin_activate(admin: httpx.Client, version: ModelVersion) -> None:
    """The admin's "Activate" action on one version."""
    done = admin.post(
        "/admin/tts/modelversion/",
        data={
            "action": "activate",
            "_selected_action": str(version.pk),
            "csrfmiddlewaretoken": admin.cookies["csrftoken"],
        },
    )
    assert done.status_code == 302, done.text[:500]


@pytest.mark.server
@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_it_switches_versions_in_every_process_without_cutting_a_stream(
    tenant_a: TenantCtx, daphne_factory: Callable[..., ServerProc], tmp_path: Path
) -> None:
    v1, _ = make_joe()
    model, config = write_joe_copy(tmp_path)
    v2 = import_piper_voice(model, config, model_id=v1.model_id, voice_id="joe").model_version
    assert v2.status == ModelVersion.Status.DRAFT and v2.sha256 != v1.sha256
    get_user_model().objects.create_superuser("ops-admin", password="ops-admin-password-1")

    a = daphne_factory(SERVER_ENV, ready_path="/readyz")
    b = daphne_factory(SERVER_ENV, ready_path="/readyz")
    for server in (a, b):
        assert readyz(server)["models"] == {"en_US-joe-medium v1": "warm"}, "ready only once warmed"

    key = {"xi-api-key": tenant_a.key}
    # Logged in beforehand: password hashing is slow, the switch itself should land mid-stream.
    admin = admin_login(b, "ops-admin", "ops-admin-password-1")
    stream_url = "/v1/text-to-speech/joe/stream?output_format=pcm_22050"
    with (
        httpx.Client(base_url=a.url, headers=key, timeout=120) as http,
        http.stream("POST", stream_url, json={"text": LONG}) as stream,
    ):
        assert stream.status_code == 200
        chunks = stream.iter_bytes()
        first = next(chunks)
        stream_item = stream.headers["history-item-id"]

        admin_activate(admin, v2)
        admin.close()
        v2.refresh_from_db()
        assert v2.status == ModelVersion.Status.ACTIVE

        # The other process serves the new version once its poller has seen the switch
        # (1 s here; its lookup cache would expire within TTS_LOOKUP_CACHE_S anyway).
        switched_at = time.monotonic()
        served: list[int | None] = []
        while not served or served[-1] != v2.pk:
            assert time.monotonic() - switched_at < 10, f"still served by {served[-1]} after 10 s"
            after = http.post("/v1/text-to-speech/joe?output_format=wav_22050", json={"text": "After the switch."})
            assert after.status_code == 200
            samples, rate = decode_audio(after.content, "wav_22050")
            assert_speech(samples, rate, expected_rate=22050, text="After the switch.")
            served.append(SynthesisRecord.objects.get(pk=after.headers["history-item-id"]).model_version_id)
            time.sleep(0.1)
        assert set(served) <= {v1.pk, v2.pk}

        rest = b"".join(chunks)

    samples, rate = decode_audio(first + rest, "pcm_22050")
    assert_speech(samples, rate, expected_rate=22050, text=LONG)
    streamed = SynthesisRecord.objects.get(pk=stream_item)
    assert streamed.status == SynthesisRecord.Status.SUCCESS
    assert streamed.model_version_id == v1.pk, "the stream finished on the version it started with"
    assert streamed.completed_at > v2.activated_at, "the stream was still running when the switch happened"
    assert streamed.duration_s == pytest.approx(len(samples) / rate, abs=0.15)

    # Both processes warm the new version and let the old one go, without a restart.
    for server in (a, b):
        wait_for_models(server, {"en_US-joe-medium v2": "warm"})
    assert f"model version {v1.pk} is no longer wanted here" in a.log() + b.log()
