"""The dashboard's flows in Chromium, at 1280 px and 390 px: keys (post/redirect/get, revoked toggle,
rename), the playground (counter, cut notice, model, speed, format, recent generations, view code), the
history (390 px without sideways scroll, WAV by default, readable names, search), usage breakdowns
and the jobs page. Screenshots only when ``TTS_SCREENSHOTS=1``."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.utils import timezone

from accounts.keys import api_key_create, api_key_revoke
from accounts.models import ApiKey
from accounts.quota import reserve_characters
from tests.audio_checks import assert_speech, decode_audio
from tests.browser.conftest import DESKTOP, PHONE, PageErrors, screenshot, screenshots_requested
from tests.fixtures import TenantCtx, second_version
from tests.jobs.conftest import long_text
from tts.models import Job, ModelVersion, SynthesisRecord, Voice

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-" + "alpha" * 4
WORDS = "The quick brown fox jumps over the lazy dog near the quiet river bank. "
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"


def maybe_screenshot(page: Any, name: str) -> None:
    """Extra images for docs/screenshots/, rendered only when ``TTS_SCREENSHOTS`` asks for them."""
    if screenshots_requested():
        screenshot(page, name)


def login(page: Any, base: str) -> None:
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill("alpha-owner")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")


def new_page(chromium: Any, base: str, viewport: dict, errors: PageErrors) -> tuple[Any, Any]:
    phone = viewport == PHONE
    context = chromium.new_context(
        viewport=viewport, accept_downloads=True, is_mobile=phone, has_touch=phone, device_scale_factor=1
    )
    page = context.new_page()
    errors.watch(page)
    page.on("dialog", lambda dialog: dialog.accept())
    login(page, base)
    return context, page


def download_bytes(page: Any, click: Any) -> tuple[bytes, str]:
    with page.expect_download() as info:
        click()
    return Path(info.value.path()).read_bytes(), info.value.suggested_filename


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_keys_post_redirect_get_toggle_and_rename(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, viewport: dict
) -> None:
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, viewport, errors)
    page.goto(f"{base}/keys/")
    page.get_by_label("Name", exact=True).fill("reload test key")
    page.get_by_role("button", name="Create key").click()
    page.wait_for_url(f"{base}/keys/")  # the POST answered with a redirect
    secret = page.locator("#new-key-secret").input_value()
    assert re.fullmatch(r"tts_[0-9a-f]{12}_[\w-]{40,}", secret)
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    maybe_screenshot(page, f"keys-new-{'phone' if viewport == PHONE else 'desktop'}")
    count = ApiKey.objects.filter(tenant=tenant_a.tenant).count()
    page.reload()
    assert page.locator("#new-key-secret").count() == 0  # shown once
    assert ApiKey.objects.filter(tenant=tenant_a.tenant).count() == count  # a reload creates nothing
    key = ApiKey.objects.get(name="reload test key")

    # Rename: the key keeps working under its new name.
    row = page.locator(f"tr[data-key-prefix='{key.prefix}']")
    row.locator("summary").click()
    row.get_by_label("New label for reload test key").fill("renamed in browser")
    row.get_by_role("button", name="Save the new label").click()
    page.wait_for_selector("text=Renamed the key")
    assert "renamed in browser" in page.locator(f"tr[data-key-prefix='{key.prefix}'] [data-role=name]").inner_text()
    ok = httpx.get(f"{base}/v1/user/subscription", headers={"xi-api-key": secret}, timeout=30)
    assert ok.status_code == 200

    # Revoke: the row leaves the list; the toggle shows it again.
    page.locator(f"tr[data-key-prefix='{key.prefix}']").get_by_role("button", name="Revoke").click()
    page.wait_for_selector("text=It no longer works.")
    assert page.locator(f"tr[data-key-prefix='{key.prefix}']").count() == 0
    page.get_by_role("link", name="Show revoked keys (1)").click()
    assert "revoked" in page.locator(f"tr[data-key-prefix='{key.prefix}']").inner_text()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    page.get_by_role("link", name="Hide revoked keys (1)").click()
    assert page.locator(f"tr[data-key-prefix='{key.prefix}']").count() == 0
    context.close()
    assert errors.errors == []


def run_snippet(code: str, key: str, tmp: Path, *, python: bool) -> bytes:
    code = code.replace("YOUR_API_KEY", key)
    if python:
        subprocess.run([sys.executable, "-c", code], cwd=tmp, check=True, timeout=120)
    else:
        subprocess.run(["bash", "-c", code], cwd=tmp, check=True, timeout=120)
    return next(tmp.glob("speech.*")).read_bytes()


def test_playground_counter_cut_speed_format_recent_and_code(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, tmp_path: Path
) -> None:
    plan = tenant_a.tenant.plan
    plan.max_characters_per_request = 300
    plan.save()
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, DESKTOP, errors)
    page.goto(f"{base}/playground/")
    assert not page.locator("#pg-download").is_visible()  # no audio, no download button
    text = (WORDS * 6).strip()  # over the limit of 300
    page.get_by_label("Text", exact=True).fill(text)
    assert page.locator("#pg-count-n").inner_text() == str(len(text))
    over = page.locator("#pg-over")
    assert over.is_visible() and f"{len(text) - 300} characters over the limit of 300" in over.inner_text()
    page.get_by_label("Speed").select_option("1.25")
    page.get_by_label("Download format").select_option("mp3_44100_128")
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function("window.playgroundStats.done || window.playgroundStats.error", timeout=120_000)
    stats = page.evaluate("window.playgroundStats")
    assert stats["error"] is None and stats["cut"] is True and stats["sentChars"] <= 300
    # The MP3 download appears once the item is stored, and is the run's audio.
    page.wait_for_selector("#pg-download:visible", timeout=30_000)
    assert page.locator("#pg-download").inner_text() == "Download MP3"
    data, name = download_bytes(page, lambda: page.locator("#pg-download").click())
    item = SynthesisRecord.objects.get(tenant=tenant_a.tenant, source="playground")
    said = item.text.strip()
    assert text.startswith(said) and text[len(said)] == " " and len(said) <= 300  # cut at a whole word
    assert item.settings.get("speed") == 1.25
    samples, rate = decode_audio(data, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text=said)
    assert name.startswith("joe_") and name.endswith(".mp3")
    # The recent generations list links to the item in the history.
    recent = page.locator(f"#pg-recent li[data-item-id='{item.pk}'] a")
    assert "Joe" in recent.inner_text()

    # View code: the same request, and curl and the elevenlabs SDK really speak with it.
    page.get_by_label("Text", exact=True).fill("Code from the playground.")
    page.get_by_role("button", name="View code").click()
    curl = page.locator("#code-curl").inner_text()
    assert "/v1/text-to-speech/joe?output_format=mp3_44100_128" in curl and '"speed":1.25' in curl
    (tmp_path / "curl").mkdir()
    spoken = run_snippet(curl, tenant_a.key, tmp_path / "curl", python=False)
    samples, rate = decode_audio(spoken, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text="Code from the playground.")
    page.get_by_role("tab", name="Python").click()
    python = page.locator("#code-python").inner_text()
    assert "client.text_to_speech.convert(" in python and page.locator("#code-curl").is_hidden()
    (tmp_path / "py").mkdir()
    spoken = run_snippet(python, tenant_a.key, tmp_path / "py", python=True)
    samples, rate = decode_audio(spoken, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100, text="Code from the playground.")
    page.get_by_role("tab", name="JavaScript").click()
    js = page.locator("#code-js").inner_text()
    assert "await fetch(" in js and '"xi-api-key": "YOUR_API_KEY"' in js and "Code from the playground." in js
    maybe_screenshot(page, "playground-code-desktop")

    # A failed run shows no figures of the run before.
    assert page.locator("#pg-ttfa").inner_text().endswith(" ms")
    page.get_by_label("Text", exact=True).fill("   ")
    page.get_by_role("button", name="▶ Play").click()
    assert page.locator("#pg-status").inner_text() == "Failed"
    dash = "\u2013"
    assert page.locator("#pg-ttfa").inner_text() == dash and page.locator("#pg-total").inner_text() == dash
    assert not page.locator("#pg-download").is_visible()
    recent.click()
    page.wait_for_url(re.compile(r".*/history/\?source=playground#item-"))
    assert page.locator(f"#item-{item.pk}").count() == 1
    context.close()
    assert errors.errors == []


def test_playground_fits_a_phone_with_the_code_open(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, PHONE, errors)
    page.goto(f"{base}/playground/")
    page.get_by_label("Text", exact=True).fill(WORDS * 100)
    assert page.locator("#pg-over").is_visible()
    page.get_by_role("button", name="View code").click()
    for tab in ("curl", "Python", "JavaScript"):
        page.get_by_role("tab", name=tab).click()
        assert page.evaluate(NO_SIDEWAYS_SCROLL), tab
    maybe_screenshot(page, "playground-code-phone")
    context.close()
    assert errors.errors == []


def test_playground_model_choice_filters_the_voices_and_is_sent(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    old = ModelVersion.objects.get()
    second_version(old, model_id="joe-copy", version="1", status="active", display_name="Joe copy")
    Voice.objects.create(voice_id="zed", name="Zed", language="en", model_id="joe-copy")
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, DESKTOP, errors)
    page.goto(f"{base}/playground/")
    offered = "Array.from(document.querySelectorAll('#pg-voice option:not([disabled])')).map(o => o.value)"
    assert page.get_by_label("Model").input_value() == "en_US-joe-medium"
    assert page.evaluate(offered) == ["joe"]
    page.get_by_label("Model").select_option("joe-copy")
    assert page.evaluate(offered) == ["zed"] and page.get_by_label("Voice").input_value() == "zed"
    page.get_by_label("Text", exact=True).fill("The second model speaks.")
    page.get_by_role("button", name="View code").click()
    curl = page.locator("#code-curl").inner_text()
    assert "/v1/text-to-speech/zed?" in curl and '"model_id":"joe-copy"' in curl
    page.get_by_role("tab", name="Python").click()
    assert 'model_id="joe-copy"' in page.locator("#code-python").inner_text()
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function("window.playgroundStats.done || window.playgroundStats.error", timeout=120_000)
    assert page.evaluate("window.playgroundStats.error") is None
    item = SynthesisRecord.objects.get(tenant=tenant_a.tenant, source="playground")
    assert (item.voice_id, item.model_id, item.status) == ("zed", "joe-copy", "success")
    assert item.model_version_id != old.pk and item.audio
    # Back to the first model: its voice again.
    page.get_by_label("Model").select_option("en_US-joe-medium")
    assert page.evaluate(offered) == ["joe"] and page.get_by_label("Voice").input_value() == "joe"
    context.close()
    assert errors.errors == []


HISTORY_TEXT = "The lighthouse keeper climbed the stairs at dusk."


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_history_fits_downloads_wav_by_default_and_searches(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, viewport: dict
) -> None:
    base = live_server_url
    headers = {"xi-api-key": tenant_a.key}
    raw = httpx.post(f"{base}/v1/text-to-speech/joe?output_format=pcm_22050", json={"text": HISTORY_TEXT},
                     headers=headers, timeout=120)
    assert raw.status_code == 200
    other = httpx.post(f"{base}/v1/text-to-speech/joe?output_format=mp3_44100_128",
                       json={"text": "Another item entirely."}, headers=headers, timeout=120)
    assert other.status_code == 200
    item_id = raw.headers["history-item-id"]
    errors = PageErrors()
    context, page = new_page(chromium, base, viewport, errors)
    page.goto(f"{base}/history/")
    # Document width equals the viewport: nothing scrolls sideways, "Download" is whole on screen.
    assert page.evaluate("document.documentElement.scrollWidth") == viewport["width"]
    item = page.locator(f"#item-{item_id}")
    button = item.get_by_role("button", name="Download")
    box = button.bounding_box()
    assert box is not None and box["x"] + box["width"] <= viewport["width"]
    maybe_screenshot(page, f"history-{'phone' if viewport == PHONE else 'desktop'}")
    data, name = download_bytes(page, lambda: button.click())
    assert re.fullmatch(r"joe_\d{4}-\d\d-\d\d_\d{6}_the-lighthouse-keeper-climbed-the-stairs\.wav", name), name
    samples, rate = decode_audio(data, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050, text=HISTORY_TEXT)
    # Text search.
    page.get_by_label("Text contains").fill("lighthouse")
    page.get_by_role("button", name="Filter").click()
    assert page.locator("[data-item-id]").count() == 1 and page.locator(f"#item-{item_id}").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") == viewport["width"]
    context.close()
    assert errors.errors == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_usage_breakdown_charts_and_csv(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, viewport: dict
) -> None:
    now = timezone.now().replace(hour=12)
    spread = [(0, "joe", "openai", 120), (1, "emma", "job", 900), (3, "joe", "playground", 40)]
    for days, voice, source, chars in spread:
        SynthesisRecord.objects.create(
            tenant=tenant_a.tenant, voice_id=voice, source=source, characters=chars, status="success",
            output_format="mp3_44100_128", api_key=tenant_a.api_key if source == "openai" else None,
            created_at=now - dt.timedelta(days=days),
        )  # fmt: skip
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, viewport, errors)
    page.get_by_role("link", name="Usage").click()
    page.get_by_label("From").fill((now - dt.timedelta(days=6)).date().isoformat())
    page.get_by_label("Break down by").select_option("voice")
    page.get_by_role("button", name="Show").click()
    page.wait_for_function(
        "window.Chart && Chart.getChart('usage-chars-chart') && Chart.getChart('usage-requests-chart')"
    )
    labels = page.evaluate("Chart.getChart('usage-chars-chart').data.datasets.map(d => d.label)")
    assert labels == ["emma", "joe"]
    total = page.evaluate(
        "Chart.getChart('usage-chars-chart').data.datasets.reduce((s, d) => s + d.data.reduce((a, b) => a + b, 0), 0)"
    )
    assert total == 1060
    assert page.evaluate("Chart.getChart('usage-requests-chart').data.labels.length") == 7
    assert "emma" in page.locator("#usage-table").inner_text()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    maybe_screenshot(page, f"usage-{'phone' if viewport == PHONE else 'desktop'}")
    page.get_by_label("Break down by").select_option("api_keys")
    page.get_by_role("button", name="Show").click()
    data, name = download_bytes(page, lambda: page.get_by_role("link", name="Export CSV").click())
    lines = data.decode().splitlines()
    assert lines[0] == "day,api_key,characters,requests,audio_seconds" and name.endswith("_api_keys.csv")
    assert any(f"alpha key (tts_{tenant_a.api_key.prefix}),120,1" in line for line in lines)
    assert any("No API key (dashboard),900,1" in line for line in lines)
    context.close()
    assert errors.errors == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_jobs_show_what_remains_an_estimate_and_the_refund_on_cancel(
    chromium: Any, daphne_factory: Any, tenant_a: TenantCtx, joe: Voice, viewport: dict
) -> None:
    reserve_characters(tenant=tenant_a.tenant, characters=79_060)
    env = {"TTS_JOB_RUNNER": "thread", "TTS_JOB_CHUNK_CHARS": "100", "DJANGO_ALLOW_ASYNC_UNSAFE": ""}
    base = daphne_factory(env).url
    errors = PageErrors()
    context, page = new_page(chromium, base, viewport, errors)
    page.get_by_role("link", name="Jobs").click()
    assert "Up to 20,940 characters now (20,940 left this month" in page.locator("#job-text-help").inner_text()
    text = long_text(6000)
    page.get_by_label("Voice").select_option("joe")
    page.get_by_label("Text", exact=True).fill(text)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_selector("text=Submitted a job of")
    job = Job.objects.get(tenant=tenant_a.tenant)
    item = f"#job-{job.pk}"
    page.wait_for_function("window.jobsStats && window.jobsStats.connected")
    # An estimate of the time left appears once a chunk is done, and the bar moves between chunk events.
    page.wait_for_function(f"document.querySelector('{item} [data-role=eta]').textContent.includes('about')",
                           timeout=120_000)
    assert page.evaluate("window.jobsStats.estimated") > 0
    page.wait_for_function(  # the bar ahead of the finished chunks: it moves within a chunk
        f"parseFloat(document.querySelector('{item} .meter-fill').style.width) > "
        f"Number(document.querySelector('{item} [data-role=bar]').getAttribute('aria-valuenow'))",
        timeout=30_000,
    )
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    maybe_screenshot(page, f"jobs-running-{'phone' if viewport == PHONE else 'desktop'}")
    page.locator(item).get_by_role("button", name=re.compile("^Cancel")).click()
    page.wait_for_selector("text=Cancelling: the job stops after the chunk")
    page.wait_for_function(f"document.querySelector('{item}').dataset.status === 'cancelled'", timeout=60_000)
    refund = page.locator(f"{item} [data-role=refund]")
    refund.wait_for(state="visible", timeout=10_000)
    job.refresh_from_db()
    assert job.status == "cancelled" and job.characters_charged < job.characters
    expected = f"Refunded {job.characters - job.characters_charged:,} characters; charged {job.characters_charged:,}"
    assert expected in refund.inner_text()
    assert page.locator(f"{item} [data-role=eta]").inner_text() == ""
    context.close()
    assert errors.errors == []


PAGES_390 = [
    "/",
    "/usage/",
    "/usage/?breakdown=api_keys",
    "/keys/",
    "/keys/?revoked=1",
    "/playground/",
    "/history/",
    "/history/?q=lighthouse&source=openai",
    "/jobs/",
    "/voices/",
]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_page_fits_and_labels_its_controls(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice, viewport: dict
) -> None:
    from tests.browser.test_dashboard import ACCESSIBILITY_CHECK, backfill_usage

    backfill_usage(tenant_a)
    api_key_revoke(api_key=api_key_create(tenant=tenant_a.tenant, name="an old key with a rather long name").api_key)
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, viewport, errors)
    for path in PAGES_390:
        page.goto(f"{base}{path}")
        assert page.evaluate(ACCESSIBILITY_CHECK) == [], path
        assert page.evaluate("document.documentElement.scrollWidth") == viewport["width"], path
    page.goto(f"{base}/playground/")
    page.get_by_role("button", name="View code").click()
    assert page.evaluate(ACCESSIBILITY_CHECK) == []
    context.close()
    assert errors.errors == []
