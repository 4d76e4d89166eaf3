"""Jobs page: the current tenant's jobs in keyset pages with bounded queries,
submit (run to the end in a server thread), download, cancel, another tenant's
ids answering 404, and live progress over the session-authenticated WebSocket."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client
from django.utils import timezone

from accounts.models import Membership, Usage
from tests.audio_checks import assert_speech, decode_audio
from tests.dashboard.conftest import login
from tests.fixtures import TenantCtx
from tests.jobs.conftest import wait_job
from tts.jobs.events import job_publish
from tts.models import Job, SynthesisRecord, Voice
from tts.routing import websocket_urlpatterns

TEXT = (
    "The harbour was quiet that morning, and the fishing boats rocked against the old stone wall. "
    "Gulls argued over scraps near the market while the baker opened his shutters."
)
ORIGIN = "http://testserver"


def make_jobs(ctx: TenantCtx, n: int, **fields: Any) -> list[Job]:
    """``n`` jobs one second apart, newest first, without running anything."""
    now = timezone.now()
    defaults: dict[str, Any] = {
        "voice_id": "joe",
        "voice_name": "Joe",
        "output_format": "mp3_44100_128",
        "status": Job.Status.RUNNING,
        "characters": 500,
        "total_chunks": 4,
        "done_chunks": 1,
        "audio_seconds": 7.5,
    }
    defaults.update(fields)
    jobs = [
        Job(tenant=ctx.tenant, text=f"{ctx.tenant.slug} job {i}", created_at=now - dt.timedelta(seconds=i), **defaults)
        for i in range(n)
    ]
    return Job.objects.bulk_create(jobs)


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Job ids handed to a runner, recorded instead of run (as in tests/jobs)."""
    calls: list[str] = []
    monkeypatch.setattr("tts.jobs.actions.job_dispatch", lambda job_id: calls.append(str(job_id)))
    return calls


def _ids(html: str) -> list[str]:
    return re.findall(r'data-job-id="([0-9a-f-]{36})"', html)


def spent(ctx: TenantCtx) -> int:
    usage = Usage.objects.filter(tenant=ctx.tenant).first()
    return usage.characters if usage else 0


def test_it_lists_only_the_current_tenants_jobs_newest_first(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client
) -> None:
    mine = make_jobs(tenant_a, 3)
    failed = make_jobs(
        tenant_a, 1, status=Job.Status.FAILED, error_code="engine_error", error_message="The model crashed."
    )[0]
    Job.objects.filter(pk=failed.pk).update(created_at=timezone.now() - dt.timedelta(hours=1))
    theirs = make_jobs(tenant_b, 2)
    response = owner_a.get("/jobs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert _ids(html) == [str(j.pk) for j in mine] + [str(failed.pk)]
    assert not any(str(j.pk) in html for j in theirs) and "beta job" not in html
    assert 'aria-current="page">Jobs</a>' in html
    assert (
        'aria-valuenow="25"' in html
        and "1 of 4 chunks" in html
        and ">7.5</span> s of audio" in html
        and "500 chars" in html
    )
    assert "engine_error: The model crashed." in html
    # Running jobs can be cancelled; none has audio to download yet.
    assert html.count('data-role="cancel"') == 3
    assert 'data-role="download"' not in html


def test_it_says_when_there_are_no_jobs(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    html = owner_a.get("/jobs/").content.decode()
    assert 'id="jobs-empty"' in html and "No jobs yet" in html
    assert '<label for="id_text">Text</label>' in html and 'name="csrfmiddlewaretoken"' in html


def test_it_pages_through_jobs_with_a_bounded_number_of_queries(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice, django_assert_max_num_queries: Any
) -> None:
    made = make_jobs(tenant_a, 60)
    seen: list[str] = []
    url = "/jobs/"
    for _ in range(4):
        # session, user, memberships, voices, this month's usage (the limit the form states), cursor,
        # page (+ the session's first save in a savepoint): the same on every page, whatever the size.
        with django_assert_max_num_queries(9):
            response = owner_a.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        seen += _ids(html)
        match = re.search(r'href="\?before=([0-9a-f-]{36})" rel="next"', html)
        if not match:
            break
        url = f"/jobs/?before={match.group(1)}"
    assert seen == [str(j.pk) for j in made]
    assert owner_a.get(f"/jobs/?before={made[0].pk}").status_code == 200
    assert owner_a.get("/jobs/?before=not-a-job").status_code == 404


def test_it_answers_404_for_another_tenants_job(tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client) -> None:
    theirs = make_jobs(tenant_b, 1, status=Job.Status.QUEUED)[0]
    for job_id in (str(theirs.pk), "00000000-0000-0000-0000-000000000000", "nope"):
        assert owner_a.get(f"/jobs/{job_id}/audio/").status_code == 404
        assert owner_a.post(f"/jobs/{job_id}/cancel/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == Job.Status.QUEUED and not theirs.cancel_requested


@pytest.mark.django_db(transaction=True)
def test_it_submits_a_job_that_runs_to_the_end_and_downloads(tenant_a: TenantCtx, joe: Voice, settings: Any) -> None:
    settings.TTS_JOB_RUNNER = "thread"  # as `make run` without a broker: the job runs in a server thread
    client = login(tenant_a, enforce_csrf=True)
    page = client.get("/jobs/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert token
    body = {"voice": "joe", "text": TEXT, "output_format": "wav_22050", "csrfmiddlewaretoken": token.group(1)}
    assert client.post("/jobs/new/", {k: v for k, v in body.items() if k != "csrfmiddlewaretoken"}).status_code == 403
    response = client.post("/jobs/new/", body)
    assert response.status_code == 302 and response["Location"] == "/jobs/"
    job = Job.objects.get(tenant=tenant_a.tenant)
    assert (job.voice_id, job.output_format, job.characters, job.api_key_id) == ("joe", "wav_22050", len(TEXT), None)
    job = wait_job(job.pk, lambda j: j.is_finished, timeout=120)
    assert job.status == Job.Status.SUCCEEDED, (job.error_code, job.error_message)
    job = wait_job(job.pk, lambda j: j.history_item_id is not None, timeout=10)  # written just after the status
    html = client.get("/jobs/").content.decode()
    assert "Submitted a job of" in html and _ids(html) == [str(job.pk)]
    assert f'href="/jobs/{job.pk}/audio/" class="button" data-role="download">' in html
    assert 'data-role="cancel"' not in html
    audio = client.get(f"/jobs/{job.pk}/audio/")
    assert audio.status_code == 200 and audio["Content-Type"] == "audio/wav"
    # Named like every download: voice, time, first words.
    assert re.search(r'filename="joe_\d{4}-\d\d-\d\d_\d{6}_[a-z-]+\.wav"', audio["Content-Disposition"])
    samples, rate = decode_audio(b"".join(audio.streaming_content), "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=TEXT)
    assert len(samples) / rate == pytest.approx(job.audio_seconds, abs=0.05)
    record = SynthesisRecord.objects.get(pk=job.history_item_id)
    assert (record.source, record.status, record.tenant_id) == ("job", "success", tenant_a.tenant.pk)
    assert spent(tenant_a) == len(TEXT)


def test_it_says_what_is_wrong_with_a_submission(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice, dispatched: list
) -> None:
    for body, expected in (
        ({"voice": "joe", "text": "   ", "output_format": "mp3_44100_128"}, "Enter some text to speak."),
        ({"voice": "ghost", "text": TEXT, "output_format": "mp3_44100_128"}, "Select a valid choice."),
        ({"voice": "joe", "text": TEXT, "output_format": "pcm_7"}, "Select a valid choice."),
    ):
        response = owner_a.post("/jobs/new/", body)
        assert response.status_code == 400 and expected in response.content.decode(), body
    # The plan's limits are the service's to enforce: the form shows its message.
    tenant_a.tenant.plan.monthly_character_limit = 10
    tenant_a.tenant.plan.save()
    response = owner_a.post("/jobs/new/", {"voice": "joe", "text": TEXT, "output_format": "mp3_44100_128"})
    assert response.status_code == 429 and 'class="field-error"' in response.content.decode()
    assert not Job.objects.exists() and dispatched == []


def test_it_cancels_a_queued_job_and_refunds_it(
    tenant_a: TenantCtx, owner_a: Client, joe: Voice, dispatched: list
) -> None:
    owner_a.post("/jobs/new/", {"voice": "joe", "text": TEXT, "output_format": "mp3_44100_128"})
    job = Job.objects.get()
    assert job.status == Job.Status.QUEUED and spent(tenant_a) == len(TEXT)
    response = owner_a.post(f"/jobs/{job.pk}/cancel/", follow=True)
    assert "Cancelled the job" in response.content.decode()
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED and spent(tenant_a) == 0
    # Again: it is finished, nothing changes.
    response = owner_a.post(f"/jobs/{job.pk}/cancel/", follow=True)
    assert "there is nothing to cancel" in response.content.decode()
    assert owner_a.get(f"/jobs/{job.pk}/audio/").status_code == 404
    assert owner_a.get(f"/jobs/{job.pk}/cancel/").status_code == 405


def test_it_asks_a_running_job_to_stop(tenant_a: TenantCtx, owner_a: Client) -> None:
    job = make_jobs(tenant_a, 1)[0]
    response = owner_a.post(f"/jobs/{job.pk}/cancel/", follow=True)
    assert "Cancelling: the job stops after the sentence" in response.content.decode()
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.cancel_requested
    assert "Cancelling…" in response.content.decode()


def test_it_sends_members_to_login(client: Client) -> None:
    for url in ("/jobs/", "/jobs/00000000-0000-0000-0000-000000000000/audio/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")


# --- live progress over the WebSocket --------------------------------------------------


def session_headers(user: object, tenant_id: int, origin: str = ORIGIN) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    session = SessionStore(session_key=client.cookies["sessionid"].value)
    session["current_tenant_id"] = tenant_id
    session.save()
    headers = [(b"cookie", f"sessionid={session.session_key}".encode()), (b"host", b"testserver")]
    return [*headers, (b"origin", origin.encode())] if origin else headers


async def open_socket(path: str, headers: list[tuple[bytes, bytes]]) -> WebsocketCommunicator:
    ws = WebsocketCommunicator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), path, headers=headers)
    connected, _ = await ws.connect()
    assert connected
    return ws


@pytest.mark.django_db(transaction=True)
def test_a_session_user_follows_their_tenants_jobs_only(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    mine = make_jobs(tenant_a, 1)[0]
    theirs = make_jobs(tenant_b, 1)[0]
    now = timezone.now()
    ended_just_now, ended_long_ago = make_jobs(
        tenant_a, 2, status=Job.Status.CANCELLED, done_chunks=2, finished_at=now - dt.timedelta(seconds=30)
    )
    Job.objects.filter(pk=ended_long_ago.pk).update(finished_at=now - dt.timedelta(hours=1))
    headers = session_headers(tenant_a.owner, tenant_a.tenant.pk)

    async def scenario() -> list[dict[str, Any]]:
        ws = await open_socket("/v1/jobs/progress", headers)
        # First, what a page rendered a moment ago may have missed: the tenant's unfinished jobs and
        # those that ended lately (never another tenant's, never one that ended an hour ago).
        snapshot = [await ws.receive_json_from(timeout=5) for _ in range(2)]
        assert {(m["job_id"], m["status"], m["snapshot"]) for m in snapshot} == {
            (str(mine.pk), "running", True), (str(ended_just_now.pk), "cancelled", True)
        }  # fmt: skip
        assert await ws.receive_nothing(timeout=0.2)
        await database_sync_to_async(job_publish)(theirs)
        mine.done_chunks, mine.audio_seconds = 3, 21.5
        await database_sync_to_async(job_publish)(mine)
        got = [await ws.receive_json_from(timeout=5)]
        assert await ws.receive_nothing(timeout=0.2)
        # The per-job socket: the state at subscription, then its end.
        one = await open_socket(f"/v1/jobs/{mine.pk}/progress", headers)
        got.append(await one.receive_json_from(timeout=5))
        mine.status, mine.done_chunks = Job.Status.SUCCEEDED, 4
        await database_sync_to_async(job_publish)(mine)
        got.append(await one.receive_json_from(timeout=5))
        closed = await one.receive_output(timeout=5)
        assert closed == {"type": "websocket.close", "code": 1000}
        await ws.disconnect()
        return got

    live, state, final = async_to_sync(scenario)()
    assert live["job_id"] == str(mine.pk) and live["done_chunks"] == 3 and live["progress"] == 0.75
    assert live["audio_seconds"] == 21.5 and set(live) == {
        "type", "job_id", "status", "done_chunks", "total_chunks", "progress", "audio_seconds", "error_code",
    }  # fmt: skip
    assert state["job_id"] == str(mine.pk) and state["done_chunks"] == 1  # the row, not the unsaved object
    assert final["status"] == "succeeded" and final["progress"] == 1.0


async def refused(path: str, headers: list[tuple[bytes, bytes]]) -> tuple[dict[str, Any], int]:
    ws = await open_socket(path, headers)
    message = await ws.receive_json_from(timeout=5)
    closed = await ws.receive_output(timeout=5)
    assert closed["type"] == "websocket.close"
    await ws.disconnect()
    return message, closed["code"]


@pytest.mark.django_db(transaction=True)
def test_a_session_user_is_refused_another_tenants_job(tenant_a: TenantCtx, tenant_b: TenantCtx) -> None:
    theirs = make_jobs(tenant_b, 1)[0]
    message, code = async_to_sync(refused)(
        f"/v1/jobs/{theirs.pk}/progress", session_headers(tenant_a.owner, tenant_a.tenant.pk)
    )
    assert (message["status"], code) == ("job_not_found", 4404)
    # A session pointing at a tenant the user is not a member of, another site's page,
    # or no Origin at all: no tenant, as with no key.
    outsider = get_user_model().objects.create_user(username="outsider", password="pw-outsider")
    for headers in (
        session_headers(outsider, tenant_b.tenant.pk),
        session_headers(tenant_a.owner, tenant_b.tenant.pk),
        session_headers(tenant_a.owner, tenant_a.tenant.pk, origin="http://evil.example"),
        session_headers(tenant_a.owner, tenant_a.tenant.pk, origin=""),
    ):
        for path in ("/v1/jobs/progress", f"/v1/jobs/{theirs.pk}/progress"):
            message, code = async_to_sync(refused)(path, headers)
            assert (message["status"], code) == ("unauthorized", 4401)
    # Removing the membership takes effect on the next connection.
    Membership.objects.filter(user=tenant_a.owner, tenant=tenant_a.tenant).delete()
    message, code = async_to_sync(refused)("/v1/jobs/progress", session_headers(tenant_a.owner, tenant_a.tenant.pk))
    assert code == 4401


def test_the_limit_says_what_remains_this_month(tenant_a: TenantCtx, owner_a: Client, joe: Voice) -> None:
    from accounts.quota import reserve_characters

    reserve_characters(tenant=tenant_a.tenant, characters=79_060)  # 20,940 of 100,000 left
    html = owner_a.get("/jobs/").content.decode()
    assert 'Up to <strong id="job-max-chars">20,940</strong> characters now' in html
    assert "(20,940 left this month; a job may have up to 500,000)" in html
    too_long = owner_a.post("/jobs/new/", {"voice": "joe", "text": "x " * 10_500, "output_format": "mp3_44100_128"})
    assert too_long.status_code == 429 and 'class="field-error"' in too_long.content.decode()
    reserve_characters(tenant=tenant_a.tenant, characters=20_940)
    assert "Your monthly characters are used up" in owner_a.get("/jobs/").content.decode()


def test_cancelling_says_what_was_refunded(tenant_a: TenantCtx, owner_a: Client, joe: Voice, dispatched: list) -> None:
    owner_a.post("/jobs/new/", {"voice": "joe", "text": TEXT, "output_format": "mp3_44100_128"})
    job = Job.objects.get()
    response = owner_a.post(f"/jobs/{job.pk}/cancel/", follow=True)
    html = response.content.decode()
    assert f"Cancelled the job; {len(TEXT)} characters were refunded (0 charged for what was spoken)." in html
    assert f"Refunded {len(TEXT)} characters; charged 0 for what was spoken." in html
    summary = owner_a.get(f"/jobs/{job.pk}/summary/").json()
    assert summary == {
        "job_id": str(job.pk),
        "status": "cancelled",
        "characters": len(TEXT),
        "characters_charged": 0,
        "refunded": len(TEXT),
    }


def test_a_partly_spoken_job_shows_its_refund_and_running_ones_an_estimate(
    tenant_a: TenantCtx, tenant_b: TenantCtx, owner_a: Client
) -> None:
    started = timezone.now() - dt.timedelta(seconds=30)
    running = make_jobs(tenant_a, 1, started_at=started)[0]
    make_jobs(tenant_a, 1, status=Job.Status.CANCELLED, characters=500, characters_charged=120)
    html = owner_a.get("/jobs/").content.decode()
    assert "Refunded 380 characters; charged 120 for what was spoken." in html
    assert f'data-started="{started.isoformat()[:19]}' in html.replace("+00:00", "")
    assert f'id="job-{running.pk}"' in html and 'data-role="eta"' in html
    running_summary = owner_a.get(f"/jobs/{running.pk}/summary/").json()
    assert running_summary["characters_charged"] is None and running_summary["refunded"] == 0
    theirs = make_jobs(tenant_b, 1)[0]
    assert owner_a.get(f"/jobs/{theirs.pk}/summary/").status_code == 404
