"""The dashboard in a real browser: headless Chromium against a real daphne.

Logs in, creates a key and uses it through the API, plays text in the
playground (bytes over the WebSocket, an AudioContext that played them),
finds the item in history and downloads it, plays a voice preview, lists the
pronunciation dictionaries, revokes the key and sees the API refuse it; submits a long-form job and watches its
progress bar move over the WebSocket; then every page at phone width. Renders
each page whole (saved into docs/screenshots/ only with ``TTS_SCREENSHOTS=1``,
as ``make screenshots`` does) and fails on any JavaScript error.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.utils import timezone

from accounts.models import ApiKey
from accounts.quota import reserve_characters
from tests.audio_checks import assert_speech, decode_audio
from tests.browser.conftest import DESKTOP, PHONE, PageErrors, screenshot
from tests.fixtures import TenantCtx
from tests.jobs.conftest import long_text
from tts.models import Job, SynthesisRecord, Voice
from tts.pronunciation.dictionaries import dictionary_create
from tts.usage.download_names import filename_for
from tts.usage.rollup import rollup_usage

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-" + "alpha" * 4
API_TEXT = "The ferry left the harbour at dawn. Gulls followed it out past the breakwater."
PLAY_TEXT = "Hello from the playground. This second sentence is synthesized while the first one plays."
PAGES = {
    "overview": "/",
    "keys": "/keys/",
    "playground": "/playground/",
    "history": "/history/",
    "jobs": "/jobs/",
    "voices": "/voices/",
    "pronunciation": "/pronunciation/",
}


def backfill_usage(ctx: TenantCtx) -> None:
    """A month of earlier syntheses, so the overview's chart has something to show."""
    now = timezone.now()
    rows = [
        SynthesisRecord(
            tenant=ctx.tenant,
            voice_id="joe",
            voice_name="Joe",
            text=f"Earlier request number {day}.",
            characters=200 + (day * 137) % 900,
            output_format="mp3_44100_128",
            source="job" if day % 3 else "openai",
            status="success",
            created_at=now - dt.timedelta(days=day, hours=1),
        )
        for day in range(1, 29, 2)
    ]
    SynthesisRecord.objects.bulk_create(rows)
    rollup_usage(days=30)  # what the beat task does every few minutes
    reserve_characters(tenant=ctx.tenant, characters=12_480)


def sample_dictionaries(ctx: TenantCtx) -> None:
    """Two pronunciation dictionaries, one of them a default, for the pronunciation page's picture."""
    made, _ = dictionary_create(tenant=ctx.tenant, name="Product names", rules=[
        {"type": "alias", "string_to_replace": "TTS", "alias": "text to speech"},
        {"type": "phoneme", "string_to_replace": "Kokoro", "phoneme": "ko\u02c8ko\u027eo", "alphabet": "ipa"},
    ])  # fmt: skip
    made.is_default = True
    made.save(update_fields=["is_default"])
    dictionary_create(tenant=ctx.tenant, name="Acronyms", rules=[
        {"type": "alias", "string_to_replace": "UN", "alias": "United Nations"},
    ])  # fmt: skip


def login(page: Any, base: str) -> None:
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill("alpha-owner")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")


def download_bytes(page: Any, click: Any) -> bytes:
    with page.expect_download() as info:
        click()
    path = info.value.path()
    return Path(path).read_bytes()


def test_it_runs_the_whole_dashboard_in_a_browser(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    base = live_server_url
    backfill_usage(tenant_a)
    sample_dictionaries(tenant_a)
    joe.description = "A calm American English voice (Piper, CC0)."
    joe.labels = {"accent": "american", "gender": "male", "use case": "narration"}
    joe.save()
    errors = PageErrors()
    context = chromium.new_context(viewport=DESKTOP, accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page = context.new_page()
    errors.watch(page)
    page.on("dialog", lambda dialog: dialog.accept())

    # --- log in; the overview shows usage and draws the chart -----------------
    page.goto(f"{base}/login/")
    screenshot(page, "login-desktop")
    login(page, base)
    assert page.locator("h1").first.inner_text().startswith("Overview")
    page.wait_for_function("document.getElementById('usage-chart') && window.Chart && Chart.getChart('usage-chart')")
    assert page.evaluate("Chart.getChart('usage-chart').data.datasets[0].data.reduce((a, b) => a + b, 0)") > 0
    screenshot(page, "overview-desktop")

    # --- create a key; the secret is shown once with a copy button --------------
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("browser test key")
    page.get_by_label("Expires on (optional)").fill((timezone.now() + dt.timedelta(days=30)).date().isoformat())
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key-secret").input_value()
    assert re.fullmatch(r"tts_[0-9a-f]{12}_[\w-]{40,}", secret)
    page.get_by_role("button", name="Copy").click()
    page.wait_for_function("document.getElementById('copy-status').textContent.length > 0")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    screenshot(page, "keys-desktop")
    key = ApiKey.objects.get(tenant=tenant_a.tenant, name="browser test key")

    # --- ... and use it from here, through the API ------------------------------
    response = httpx.post(
        f"{base}/v1/text-to-speech/joe?output_format=mp3_44100_128",
        json={"text": API_TEXT},
        headers={"xi-api-key": secret},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    samples, rate = decode_audio(response.content, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=API_TEXT)
    api_item = SynthesisRecord.objects.get(pk=response.headers["history-item-id"])
    assert api_item.api_key_id == key.pk and api_item.status == "success"

    # --- the playground streams over the WebSocket into Web Audio ---------------
    page.get_by_role("link", name="Playground").click()
    page.get_by_label("Voice").select_option("joe")
    page.get_by_label("Text", exact=True).fill(PLAY_TEXT)
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function("window.playgroundStats.done || window.playgroundStats.error", timeout=120_000)
    stats = page.evaluate("window.playgroundStats")
    assert stats["error"] is None, stats
    assert stats["bytes"] > 22050, stats  # over half a second of s16le at 22.05 kHz
    assert stats["chunks"] >= 2, stats  # more than one piece: it streamed
    assert stats["firstAudioMs"] is not None and stats["firstAudioMs"] <= stats["totalMs"]
    # The AudioContext really played what arrived: every scheduled buffer ran to its end.
    page.wait_for_function(
        "window.playgroundStats.ended >= window.playgroundStats.scheduled && window.playgroundStats.scheduled > 0",
        timeout=60_000,
    )
    played = page.evaluate("({state: window.playgroundStats.contextState, ended: window.playgroundStats.ended})")
    assert played["state"] == "running" and played["ended"] >= 2
    assert page.locator("#pg-ttfa").inner_text().endswith(" ms")
    assert page.locator("#pg-total").inner_text().endswith(" ms")
    wav = download_bytes(page, lambda: page.get_by_role("link", name="Download WAV").click())
    samples, rate = decode_audio(wav, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=PLAY_TEXT)
    screenshot(page, "playground-desktop")
    played_item = SynthesisRecord.objects.get(tenant=tenant_a.tenant, source="playground")
    assert played_item.status == "success" and played_item.text.strip() == PLAY_TEXT

    # --- history: both items are there, play inline, download as WAV -----------
    page.get_by_role("link", name="History").click()
    item = page.locator(f"#item-{api_item.pk}")
    assert API_TEXT in item.inner_text()
    assert page.locator(f"#item-{played_item.pk}").count() == 1
    duration = item.locator("audio").evaluate(
        "a => new Promise((ok, fail) => { a.onloadedmetadata = () => ok(a.duration); a.onerror = fail; a.load(); })"
    )
    assert duration == pytest.approx(api_item.duration_s, abs=0.3)
    item.get_by_label("Download format").select_option("wav_22050")
    data = download_bytes(page, lambda: item.get_by_role("button", name="Download").click())
    samples, rate = decode_audio(data, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=API_TEXT)
    page.get_by_label("Source").select_option("playground")
    page.get_by_role("button", name="Filter").click()
    assert page.locator("[data-item-id]").count() == 1
    page.get_by_role("link", name="Clear").click()
    screenshot(page, "history-desktop")

    # --- voices: the catalog, and a preview that plays --------------------------
    page.get_by_role("link", name="Voices").click()
    assert "en · shared" in page.locator(".voice-card").first.inner_text()
    page.get_by_role("button", name="Play preview of Joe").click()
    page.wait_for_selector("button.preview[data-ended='1']", timeout=60_000)
    screenshot(page, "voices-desktop")

    # --- pronunciation dictionaries: the list, each with its actions --------------
    page.get_by_role("link", name="Pronunciation").click()
    assert page.locator("#dictionary-list tbody tr").count() == 2
    screenshot(page, "pronunciation-desktop")

    # --- revoke the key; the API refuses it --------------------------------------
    page.get_by_role("link", name="API keys").click()
    page.locator(f"tr[data-key-prefix='{key.prefix}']").get_by_role("button", name="Revoke").click()
    page.wait_for_selector("text=It no longer works.")
    assert page.locator(f"tr[data-key-prefix='{key.prefix}']").count() == 0  # revoked keys hide behind a toggle
    page.get_by_role("link", name=re.compile("^Show revoked keys")).click()
    assert "revoked" in page.locator(f"tr[data-key-prefix='{key.prefix}']").inner_text()
    refused = httpx.post(
        f"{base}/v1/text-to-speech/joe", json={"text": "Still there?"}, headers={"xi-api-key": secret}, timeout=30
    )
    assert refused.status_code == 401
    assert "revoked" in refused.text
    key.refresh_from_db()
    assert key.revoked_at is not None

    # --- log out ----------------------------------------------------------------
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r".*/login/$"))
    context.close()
    assert errors.errors == []


def test_it_follows_a_job_live_in_a_browser(
    chromium: Any, daphne_factory: Any, tenant_a: TenantCtx, joe: Voice
) -> None:
    # Jobs in a thread of this server (whether or not REDIS_URL is set), in small chunks, so that
    # the job is still running when the page after the submit subscribes to its progress.
    env = {"TTS_JOB_RUNNER": "thread", "TTS_JOB_CHUNK_CHARS": "100", "DJANGO_ALLOW_ASYNC_UNSAFE": ""}
    base = daphne_factory(env).url
    text = long_text(1500)  # about 17 chunks of a sentence each: seconds of work after the page subscribes
    errors = PageErrors()
    context = chromium.new_context(viewport=DESKTOP, accept_downloads=True)
    page = context.new_page()
    errors.watch(page)
    login(page, base)
    page.get_by_role("link", name="Jobs").click()
    assert "No jobs yet" in page.locator("#jobs-empty").inner_text()
    page.get_by_label("Voice").select_option("joe")
    page.get_by_label("Format").select_option("wav_22050")
    page.get_by_label("Text", exact=True).fill(text)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_selector("text=Submitted a job of")
    job = Job.objects.get(tenant=tenant_a.tenant)
    item = page.locator(f"#job-{job.pk}")
    page.wait_for_function("window.jobsStats && window.jobsStats.connected")
    # The bar moves and the job ends without a reload: only the WebSocket can have done that.
    page.wait_for_function(f"document.getElementById('job-{job.pk}').dataset.status === 'succeeded'", timeout=180_000)
    assert page.evaluate("window.jobsStats.updated") >= 1
    assert item.get_by_role("progressbar").get_attribute("aria-valuenow") == "100"
    assert item.locator("[data-role='status']").inner_text() == "Succeeded"
    assert item.locator("form[data-role='cancel']").count() == 0
    screenshot(page, "jobs-desktop")
    with page.expect_download() as info:
        item.get_by_role("link", name=re.compile("^Download")).click()
    data = Path(info.value.path()).read_bytes()
    samples, rate = decode_audio(data, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=text)
    job.refresh_from_db()
    assert info.value.suggested_filename == filename_for(job, "wav")  # named like every download
    assert job.status == "succeeded" and job.total_chunks >= 10
    context.close()
    assert errors.errors == []


ACCESSIBILITY_CHECK = """() => {
  const problems = [];
  for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
    const labelled = (el.labels && el.labels.length) || el.getAttribute('aria-label');
    if (!labelled) problems.push('unlabelled ' + (el.id || el.name));
  }
  for (const el of document.querySelectorAll('button, a[href]')) {
    const named = el.textContent.trim() || el.getAttribute('aria-label');
    if (!named) problems.push('nameless ' + el.outerHTML.slice(0, 60));
  }
  if (!document.querySelector('main h1')) problems.push('no h1 in main');
  // Against the screen's width: a phone zooms out (and widens innerWidth) when a page is too wide.
  if (document.documentElement.scrollWidth > Math.min(window.innerWidth, screen.width) + 1) {
    problems.push('scrolls sideways: ' + document.documentElement.scrollWidth + 'px');
  }
  return problems;
}"""


def test_it_fits_a_phone_and_labels_every_control(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    base = live_server_url
    backfill_usage(tenant_a)
    sample_dictionaries(tenant_a)
    now = timezone.now()
    Job.objects.bulk_create(
        Job(
            tenant=tenant_a.tenant,
            voice_id="joe",
            voice_name="Joe",
            output_format="mp3_44100_128",
            text=f"A long chapter, part {n}. The harbour was quiet that morning.",
            characters=12_000 + 1_000 * n,
            total_chunks=6,
            done_chunks=done,
            audio_seconds=done * 95.0,
            status=status,
            error_code="engine_error" if status == "failed" else "",
            error_message="The engine stopped responding." if status == "failed" else "",
            created_at=now - dt.timedelta(minutes=n),
        )
        for n, (status, done) in enumerate([("running", 2), ("queued", 0), ("failed", 3), ("cancelled", 1)])
    )
    errors = PageErrors()
    context = chromium.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=1)
    page = context.new_page()
    errors.watch(page)
    page.goto(f"{base}/login/")
    assert page.evaluate(ACCESSIBILITY_CHECK) == []
    screenshot(page, "login-phone")
    login(page, base)
    for name, path in PAGES.items():
        page.goto(f"{base}{path}")
        if name == "overview":
            page.wait_for_function("window.Chart && Chart.getChart('usage-chart')")
        assert page.evaluate(ACCESSIBILITY_CHECK) == [], name
        screenshot(page, f"{name}-phone")
    # Empty states and errors say what happened.
    page.goto(f"{base}/history/?source=job&status=failed")
    assert "Nothing matches these filters" in page.locator("#history-empty").inner_text()
    page.goto(f"{base}/history/00000000-0000-0000-0000-000000000000/audio/")
    assert "Not found" in page.locator("h1").inner_text()
    context.close()
    # The 404 above is the page's own answer; anything else in the console is a bug.
    assert [e for e in errors.errors if "404" not in e] == []
