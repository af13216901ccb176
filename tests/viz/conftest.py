"""Fixtures of the viewer's end-to-end tests: a headless Chromium per module and a page opener (the harness is in
``tests/helpers/browser.py``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, ViewerPage, unavailable  # tests/helpers


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (Debian's) driven by playwright, shared by the module's tests."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the Python package playwright is not installed (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set SKELANIM_CHROMIUM)")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def open_viewer(browser: Any, tmp_path: Path) -> Iterator[Callable[..., ViewerPage]]:
    """``open_viewer(html_text, query="autoplay=0")`` writes the page, opens it from file:// and waits for
    ``window.skelanimViewer.ready``."""
    contexts: list[Any] = []

    def _open(page_html: str, query: str = "autoplay=0", name: str = "viewer") -> ViewerPage:
        path = tmp_path / f"{name}.html"
        path.write_text(page_html, encoding="utf-8")
        context = browser.new_context(viewport=VIEWPORT)
        contexts.append(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
        page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
        page.goto(path.as_uri() + (f"?{query}" if query else ""))
        page.wait_for_function("window.skelanimViewer && (window.skelanimViewer.ready || window.skelanimViewer.error)")
        error = page.evaluate("window.skelanimViewer.error")
        assert error is None, error
        return ViewerPage(page, errors, tmp_path)

    yield _open
    for context in contexts:
        context.close()
