"""Headless Chromium for the dashboard's browser tests, driven by Playwright.

Uses Debian's ``chromium`` (``/usr/bin/chromium``; ``make test`` installs it)
and never downloads a browser build. Tests skip with a reason when it or the
``playwright`` package is missing, unless ``TTS_REQUIRE_SERVICES=1`` (CI).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parent.parent.parent / "docs" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs the playwright package: pip install playwright"
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"needs Chromium at {CHROMIUM}: apt-get install -y chromium"
    return None


@pytest.fixture(scope="module")
def chromium(live_server_url: str) -> Iterator[Any]:
    """One browser per module; gone (with its event loop) before other modules' tests run.

    ``live_server_url`` comes first so that daphne does not inherit the flag set below.
    """
    reason = _missing()
    if reason:
        if os.environ.get("TTS_REQUIRE_SERVICES") == "1" or screenshots_requested():
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls the
    # tests make between browser steps are plain blocking calls, not async code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            yield browser
            browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def _screenshot_files() -> dict[str, bytes]:
    return {p.name: hashlib.sha256(p.read_bytes()).digest() for p in sorted(SCREENSHOTS.glob("*.png"))}


@pytest.fixture(autouse=True, scope="module")
def _screenshots_untouched() -> Iterator[None]:
    """Unless asked to refresh them, browser tests leave docs/screenshots/ exactly as it was."""
    before = _screenshot_files()
    yield
    if not screenshots_requested():
        assert _screenshot_files() == before, "a browser test changed docs/screenshots/ without TTS_SCREENSHOTS=1"


class PageErrors:
    """Console errors and uncaught exceptions of every page a context opens."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def watch(self, page: Any) -> None:
        page.on("console", lambda msg: msg.type == "error" and self.errors.append(f"console: {msg.text}"))
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))


def screenshots_requested() -> bool:
    """``TTS_SCREENSHOTS=1`` (``make screenshots``) refreshes the README's images; plain runs leave them."""
    return os.environ.get("TTS_SCREENSHOTS", "") in ("1", "true", "yes")


def screenshot(page: Any, name: str) -> bytes:
    """The page rendered whole (a PNG); written to docs/screenshots/ only when screenshots are requested,
    so that ``make test`` leaves the checkout as it found it."""
    png: bytes = page.screenshot(full_page=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000, f"{name}: no image rendered"
    if screenshots_requested():
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        (SCREENSHOTS / f"{name}.png").write_bytes(png)
    return png


def go_to(page: Any, name: str) -> None:
    """Follow a link of the dashboard's menu, opening the menu first where it is folded (phones)."""
    toggle = page.locator("#menu-toggle")
    if toggle.is_visible() and toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    page.locator("#site-menu").get_by_role("link", name=name, exact=True).click()


ALPHA_PASSWORD = "pw-" + "alpha" * 4


def logged_in_page(chromium: Any, base: str, viewport: dict, errors: PageErrors) -> tuple[Any, Any]:
    """A new context at ``viewport`` (a phone's touch and mobile flags at PHONE) logged in as alpha-owner."""
    phone = viewport == PHONE
    context = chromium.new_context(viewport=viewport, is_mobile=phone, has_touch=phone, device_scale_factor=1)
    page = context.new_page()
    errors.watch(page)
    page.goto(f"{base}/login/")
    page.get_by_label("Username").fill("alpha-owner")
    page.get_by_label("Password").fill(ALPHA_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")
    return context, page
