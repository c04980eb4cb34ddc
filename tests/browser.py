"""Real headless Chromium for the HTML tests (Debian's /usr/bin/chromium driven by Playwright; no browser
download): a module-scoped browser fixture, fresh pages that collect console errors and dialogs, and the
screenshots the docs use (``ROOFLINE_SCREENSHOTS=docs/img pytest tests/report/test_html.py``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
READY = "window.rooflineReport && window.rooflineReport.ready"


def _need_chromium() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed")


def _watch(page) -> list[str]:
    """Console errors, page errors and dialogs of a page, as they come."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    return problems


def _browser():
    """Playwright for a test that launches its own browser (tests/analysis/test_compare.py): ``with _browser() as p``."""
    _need_chromium()
    from playwright.sync_api import sync_playwright

    return sync_playwright()


def _open(p, path: Path, ready: str = READY):
    """(browser, page, problems) with ``path`` loaded and ready, in a browser of its own; close the browser."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems = _watch(page)
    page.goto(path.as_uri())
    page.wait_for_function(ready, timeout=60_000)
    return browser, page, problems


@pytest.fixture(scope="module")
def browser():
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def open_page(browser):
    """open_page(path, ready) -> (page, problems): a fresh page; console errors and dialogs are problems."""
    pages = []

    def _open(path: Path, ready: str = READY):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        pages.append(page)
        problems = _watch(page)
        page.goto(path.as_uri())
        page.wait_for_function(ready, timeout=60_000)
        return page, problems

    yield _open
    for page in pages:
        page.close()


def _screenshot(page, name: str, full_page: bool = True, publish: bool = True) -> None:
    """Into test-artifacts/, and into $ROOFLINE_SCREENSHOTS too when ``publish`` (the docs' images)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=full_page)
    if publish and os.environ.get("ROOFLINE_SCREENSHOTS"):
        out = Path(os.environ["ROOFLINE_SCREENSHOTS"])
        out = out if out.is_absolute() else REPO / out
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / name, out / name)
