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
from accounts.quota import reserve_characters, usage_for_period
from tests.audio_checks import assert_speech, decode_audio
from tests.browser.conftest import DESKTOP, PHONE, PageErrors, go_to, screenshot, screenshots_requested
from tests.fixtures import TenantCtx, second_version
from tests.jobs.conftest import long_text
from tts.models import Job, ModelVersion, PronunciationDictionary, SynthesisRecord, Voice
from tts.pronunciation.dictionaries import latest_version
from tts.usage.download_names import filename_for

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-" + "alpha" * 4
WORDS = "The quick brown fox jumps over the lazy dog near the quiet river bank. "
# Against the screen's width: a phone zooms out (and widens innerWidth) when a page is too wide.
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= Math.min(window.innerWidth, screen.width)"
# Text on one line, inside its box: one client rect for its contents, nothing cut off.
ONE_LINE = """el => { const r = document.createRange(); r.selectNodeContents(el);
  return r.getClientRects().length === 1 && el.scrollWidth <= el.clientWidth; }"""
# What sticks out past ``w`` pixels (outside scrolling boxes): named in a failure's message.
WIDEST = """w => Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > w + 1 && !e.parentElement?.closest('.table-wrap, pre'))
  .slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""
# A text field styled like the others (the stylesheet's border radius and padding), not the browser's default.
STYLED = "el => getComputedStyle(el).borderRadius === '6px' && parseFloat(getComputedStyle(el).paddingLeft) > 4"


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
    assert name == filename_for(item, "mp3") and name.startswith("joe_")
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


COUNTED_TEXT = "Four emoji 😀😀😀😀 in a line. The ferry left the harbour at dawn."
STOPPED_TEXT = " ".join(
    f"Sentence number {n} of a long reading, spoken while the listener decides to stop it." for n in range(1, 13)
)


def test_playground_bills_what_it_counts_and_keeps_a_stopped_run(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    reserve_characters(tenant=tenant_a.tenant, characters=161)  # 99,839 of 100,000 left
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, DESKTOP, errors)
    page.goto(f"{base}/playground/")
    # Counted as the server counts: code points of what is sent (an emoji is one), numbers written one way.
    page.get_by_label("Text", exact=True).fill(f"  {COUNTED_TEXT}\n")
    assert len(COUNTED_TEXT) == 62
    count = page.locator("#pg-count")
    assert count.inner_text() == "62 / 5,000 characters per run · 99,839 left this month"
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function("window.playgroundStats.done || window.playgroundStats.error", timeout=120_000)
    assert page.evaluate("window.playgroundStats.error") is None
    assert page.evaluate("window.playgroundStats.sentText") == COUNTED_TEXT
    # The month's remainder follows the run, without a reload.
    page.wait_for_function("document.getElementById('pg-month-left').textContent === '99,777'", timeout=30_000)
    item = SynthesisRecord.objects.get(tenant=tenant_a.tenant, source="playground")
    assert (item.text, item.characters, item.status) == (COUNTED_TEXT, 62, "success")
    assert usage_for_period(tenant_a.tenant).characters == 161 + 62
    # The WAV of what arrived is named by the one rule of every download.
    data, name = download_bytes(page, lambda: page.get_by_role("link", name="Download WAV").click())
    assert name == filename_for(item, "wav") and re.fullmatch(r"joe_\S+_four-emoji-in-a-line\.wav", name), name
    samples, rate = decode_audio(data, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050)

    # Stop part-way: what was spoken is kept, billed and offered, like a cancelled API stream bills it.
    page.get_by_label("Text", exact=True).fill(STOPPED_TEXT)
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function("window.playgroundStats.chunks > 0", timeout=120_000)
    page.get_by_role("button", name="■ Stop").click()
    assert page.locator("#pg-status").inner_text() == "Stopped"
    page.wait_for_selector("#pg-download:visible", timeout=60_000)
    stopped = SynthesisRecord.objects.exclude(pk=item.pk).get(tenant=tenant_a.tenant, source="playground")
    assert stopped.status == "cancelled" and stopped.audio, (stopped.status, stopped.audio)
    assert 0 < stopped.characters < len(STOPPED_TEXT)
    assert usage_for_period(tenant_a.tenant).characters == 161 + 62 + stopped.characters
    heard = page.evaluate("window.playgroundStats.audioSeconds")
    data, name = download_bytes(page, lambda: page.get_by_role("link", name="Download WAV").click())
    assert name == filename_for(stopped, "wav")
    samples, rate = decode_audio(data, "wav_22050")
    assert_speech(samples, rate, expected_rate=22050)
    assert len(samples) / rate == pytest.approx(heard, abs=0.05)
    assert page.locator("#pg-bytes").evaluate(ONE_LINE), page.locator("#pg-bytes").inner_text()
    # The history offers the stored part too, in any format.
    page.get_by_label("Download format").select_option("mp3_44100_128")
    data, name = download_bytes(page, lambda: page.get_by_role("link", name="Download MP3").click())
    assert name == filename_for(stopped, "mp3")
    samples, rate = decode_audio(data, "mp3_44100_128")
    assert_speech(samples, rate, expected_rate=44100)
    assert len(samples) / rate == pytest.approx(stopped.duration_s, abs=0.3)
    assert f"{stopped.characters} chars" in page.locator(f"#pg-recent li[data-item-id='{stopped.pk}']").inner_text()
    context.close()
    assert errors.errors == []


def test_playground_fits_a_phone_with_the_code_open(
    chromium: Any, live_server_url: str, tenant_a: TenantCtx, joe: Voice
) -> None:
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, PHONE, errors)
    page.goto(f"{base}/playground/")
    # A run's figures fit the phone, each on one line.
    page.get_by_label("Text", exact=True).fill(WORDS.strip())
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function("window.playgroundStats.done || window.playgroundStats.error", timeout=120_000)
    assert page.evaluate("window.playgroundStats.error") is None
    for figure in ("#pg-status", "#pg-ttfa", "#pg-total", "#pg-bytes"):
        assert page.locator(figure).evaluate(ONE_LINE), (figure, page.locator(figure).inner_text())
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    page.get_by_label("Text", exact=True).fill(WORDS * 100)
    assert page.locator("#pg-over").is_visible()
    assert "7,099 / 5,000 characters per run" in page.locator("#pg-count").inner_text()
    page.get_by_role("button", name="View code").click()
    for tab in ("curl", "Python", "JavaScript"):
        page.get_by_role("tab", name=tab).click()
        assert page.evaluate(NO_SIDEWAYS_SCROLL), tab
    maybe_screenshot(page, "playground-code-phone")
    context.close()
    assert errors.errors == []


def test_playground_voice_choice_chooses_the_model_and_is_sent(
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
    assert page.evaluate(offered) == ["joe", "zed"]  # every model's voices, grouped by model
    # A voice of another model, picked by hand: its model follows.
    page.get_by_label("Voice").select_option("zed")
    assert page.get_by_label("Model").input_value() == "joe-copy"
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
    assert page.get_by_label("Voice").input_value() == "joe"
    context.close()
    assert errors.errors == []


HISTORY_TEXT = "The lighthouse keeper climbed the stairs at dusk."


JAPANESE_TEXT = "今日は良い天気ですね。散歩に行きましょう。"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_history_fits_downloads_wav_by_default_and_searches(
    chromium: Any,
    live_server_url: str,
    tenant_a: TenantCtx,
    joe: Voice,
    viewport: dict,
    request: pytest.FixtureRequest,
) -> None:
    base = live_server_url
    headers = {"xi-api-key": tenant_a.key}
    japanese = None
    if viewport == DESKTOP:  # a Japanese item: its download keeps the words (Kokoro speaks it)
        request.getfixturevalue("kokoro")
        spoken = httpx.post(
            f"{base}/v1/text-to-speech/jf_alpha?output_format=mp3_44100_128",
            json={"text": JAPANESE_TEXT},
            headers=headers,
            timeout=180,
        )
        assert spoken.status_code == 200, spoken.text
        japanese = spoken.headers["history-item-id"]
    raw = httpx.post(
        f"{base}/v1/text-to-speech/joe?output_format=pcm_22050",
        json={"text": HISTORY_TEXT},
        headers=headers,
        timeout=120,
    )
    assert raw.status_code == 200
    other = httpx.post(
        f"{base}/v1/text-to-speech/joe?output_format=mp3_44100_128",
        json={"text": "Another item entirely."},
        headers=headers,
        timeout=120,
    )
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
    if japanese is not None:
        record = SynthesisRecord.objects.get(pk=japanese)
        jp = page.locator(f"#item-{japanese}")
        data, name = download_bytes(page, lambda: jp.get_by_role("button", name="Download").click())
        assert name == filename_for(record, "mp3"), name
        assert name.endswith("_今日は良い天気ですね-散歩に行きましょう.mp3"), name
        samples, rate = decode_audio(data, "mp3_44100_128")
        assert_speech(samples, rate, expected_rate=44100)
    # Text search, in a box styled like the other fields.
    assert page.get_by_label("Text contains").evaluate(STYLED)
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
    go_to(page, "Usage")
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
    # One colour per series across both charts, though emma leads in characters and joe in requests.
    charts = ("usage-chars-chart", "usage-requests-chart")
    colours = """id => Object.fromEntries(Chart.getChart(id).data.datasets.map(d => [d.label, d.backgroundColor]))"""
    by_chars, by_requests = (page.evaluate(f"({colours})('{c}')") for c in charts)
    assert page.evaluate("Chart.getChart('usage-requests-chart').data.datasets.map(d => d.label)") == ["emma", "joe"]
    assert by_chars == by_requests and len(set(by_chars.values())) == 2, (by_chars, by_requests)
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
    env = {"TTS_JOB_RUNNER": "thread", "TTS_JOB_CHUNK_CHARS": "500", "DJANGO_ALLOW_ASYNC_UNSAFE": ""}
    base = daphne_factory(env).url
    errors = PageErrors()
    context, page = new_page(chromium, base, viewport, errors)
    go_to(page, "Jobs")
    assert "Up to 20,940 characters now (20,940 left this month" in page.locator("#job-text-help").inner_text()
    # A request spoken before: the tenant's pace, which moves the bar while the first chunk runs.
    paced = httpx.post(
        f"{base}/v1/text-to-speech/joe", json={"text": HISTORY_TEXT}, headers={"xi-api-key": tenant_a.key}, timeout=120
    )
    assert paced.status_code == 200
    text = long_text(6000)
    page.get_by_label("Voice").select_option("joe")
    page.get_by_label("Format").select_option("wav_22050")
    page.get_by_label("Text", exact=True).fill(text)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_selector("text=Submitted a job of")
    # The form keeps what was chosen for the next job.
    assert (page.get_by_label("Voice").input_value(), page.get_by_label("Format").input_value()) == ("joe", "wav_22050")
    job = Job.objects.get(tenant=tenant_a.tenant)
    item = f"#job-{job.pk}"
    page.wait_for_function("window.jobsStats && window.jobsStats.connected")
    # Not blind in the first chunk: the bar moves (as its sentences are spoken) and a time left shows
    # before any chunk is done.
    page.wait_for_function(
        "window.jobsStats.firstChunkEstimated > 0 && window.jobsStats.firstChunk.width > 0", timeout=60_000
    )
    first = page.evaluate("window.jobsStats.firstChunk")
    assert first["width"] > 0 and first["eta"].startswith("· about"), first
    # An estimate of the time left appears once a chunk is done, and the bar moves between chunk events.
    page.wait_for_function(
        f"document.querySelector('{item} [data-role=eta]').textContent.includes('about')", timeout=120_000
    )
    assert page.evaluate("window.jobsStats.estimated") > 0
    page.wait_for_function(  # the bar ahead of the finished chunks: it moves within a chunk
        f"parseFloat(document.querySelector('{item} .meter-fill').style.width) > "
        f"Number(document.querySelector('{item} [data-role=bar]').getAttribute('aria-valuenow'))",
        timeout=30_000,
    )
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    maybe_screenshot(page, f"jobs-running-{'phone' if viewport == PHONE else 'desktop'}")
    page.locator(item).get_by_role("button", name=re.compile("^Cancel")).click()
    page.wait_for_selector("text=Cancelling: the job stops after the sentence")
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
    "/pronunciation/",
]
PLS = """<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>{grapheme}</grapheme><alias>{alias}</alias></lexeme>
</lexicon>"""
# Two of them: 68 characters, under the grapheme cap (TTS_DICTIONARY_MAX_STRING_CHARS, 100), and wider
# than a phone.
LONG_WORD = "Supercalifragilisticexpialidocious" * 2


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_page_fits_and_labels_its_controls(
    chromium: Any,
    live_server_url: str,
    tenant_a: TenantCtx,
    joe: Voice,
    kokoro: Voice,
    viewport: dict,
    tmp_path: Path,
) -> None:
    from tests.browser.test_dashboard import ACCESSIBILITY_CHECK, backfill_usage

    backfill_usage(tenant_a)
    api_key_revoke(api_key=api_key_create(tenant=tenant_a.tenant, name="an old key with a rather long name").api_key)
    base = live_server_url
    errors = PageErrors()
    context, page = new_page(chromium, base, viewport, errors)
    width = viewport["width"]

    # Pronunciation: a dictionary added from a PLS file, with long words that must not widen the page.
    page.goto(f"{base}/pronunciation/")
    assert page.get_by_label("Name", exact=True).evaluate(STYLED)
    first = tmp_path / "names.pls"
    first.write_text(PLS.format(grapheme=LONG_WORD, alias="a very long word indeed"))
    page.get_by_label("Name", exact=True).fill(f"Names {LONG_WORD}")
    page.get_by_label("PLS lexicon (.pls, .xml)").set_input_files(str(first))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("text=created with 1 rules")
    made = PronunciationDictionary.objects.get(tenant=tenant_a.tenant)
    edit = f"/pronunciation/{made.dictionary_id}/"

    for path in [*PAGES_390, edit]:
        page.goto(f"{base}{path}")
        assert page.evaluate(ACCESSIBILITY_CHECK) == [], path
        assert page.evaluate("document.documentElement.scrollWidth") == width, (path, page.evaluate(WIDEST, width))
    page.goto(f"{base}/playground/")
    page.get_by_role("button", name="View code").click()
    assert page.evaluate(ACCESSIBILITY_CHECK) == []

    # ... edited: a new name and, from another PLS file, the rules of version 2.
    page.goto(f"{base}/pronunciation/")
    page.locator(f"tr[data-dictionary-id='{made.dictionary_id}']").get_by_role("link", name=re.compile("^Edit")).click()
    page.wait_for_url(f"{base}{edit}")
    assert LONG_WORD in page.locator("#rule-list").inner_text()
    second = tmp_path / "acronyms.pls"
    second.write_text(PLS.format(grapheme="UN", alias="United Nations"))
    page.get_by_label("Name", exact=True).fill("Acronyms")
    page.get_by_label("Replace the rules with a PLS file (optional)").set_input_files(str(second))
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("text=Its rules are version 2 now (1 rules)")
    row = page.locator(f"tr[data-dictionary-id='{made.dictionary_id}']")
    assert "Acronyms" in row.inner_text() and LONG_WORD not in row.inner_text()
    made.refresh_from_db()
    assert made.name == "Acronyms" and [r["alias"] for r in latest_version(made).rules] == ["United Nations"]
    page.goto(f"{base}{edit}")
    assert "United Nations" in page.locator("#rule-list").inner_text()
    assert page.evaluate(ACCESSIBILITY_CHECK) == [] and page.evaluate(NO_SIDEWAYS_SCROLL)
    # ... and deleted (after the confirm dialog, which the page accepts).
    page.get_by_role("button", name="Delete Acronyms").click()
    page.wait_for_selector("text=Deleted the dictionary “Acronyms”")
    assert page.locator(f"tr[data-dictionary-id='{made.dictionary_id}']").count() == 0
    made.refresh_from_db()
    assert made.archived_at is not None and not made.is_default

    # The blend form: its fields styled, errors said once beside it in the page's words, -5 refused.
    page.goto(f"{base}/voices/")
    blend = page.locator("#voice-blend")
    assert blend.get_by_label("Name").evaluate(STYLED) and page.locator("#weight-jm_kumo").evaluate(STYLED)
    blend.get_by_label("Name").fill("Solo")
    page.locator("#weight-jf_alpha").fill("1")
    blend.get_by_role("button", name="Make the voice").click()
    expected = "Give 2 to 5 voices a weight above 0 (1 has one now)."
    assert page.get_by_text(expected).count() == 1 and page.locator("div.messages").count() == 0
    assert page.locator("#blend-errors").inner_text() == expected
    # The answer opens at the form (not the top of a long list): the field to fix is focused.
    page.wait_for_function("document.activeElement && document.activeElement.id === 'weight-am_adam'")
    assert page.get_by_role("alert").inner_text().startswith("The voice was not made: 1 thing to fix.")
    page.locator("#weight-jm_kumo").fill("-5")
    blend.get_by_role("button", name="Make the voice").click()
    assert page.locator("#blend-errors").inner_text() == "The weight of Kumo must be 0 (left out) or more."
    assert page.locator("#weight-jm_kumo").input_value() == "-5"  # what was typed stays, to be corrected
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    assert not Voice.objects.filter(tenant=tenant_a.tenant).exists()
    context.close()
    # The refused blends answer 400 on purpose; Chromium logs that, nothing else may be logged.
    assert [e for e in errors.errors if "status of 400" not in e] == []
