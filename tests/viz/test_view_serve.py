"""``skelanim view --serve``: a page load asks the server for nothing but the page (no favicon 404 in the console),
``HEAD`` answers as ``GET`` does, and a busy port is refused before the page is written.

The browser test needs playwright and Chromium (see ``tests/helpers/browser.py``); it skips without them."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import VIEWPORT  # tests/helpers

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path
from skelanim.viz import viewer

WALK = str(sample_path("walk"))


@pytest.fixture
def served() -> Iterator[tuple[str, list[str]]]:
    """A server of the walk's page on a free port, and the list of paths it was asked for (method and path)."""
    page = viewer.build_viewer_html([skelanim.load(WALK)], labels=["walk"])
    server = viewer.make_server(page, port=0)
    asked: list[str] = []
    handler: Any = server.RequestHandlerClass
    handler.log_request = lambda self, code="-", size="-": asked.append(f"{self.command} {self.path} {code}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield viewer.server_url(server), asked
    finally:
        server.shutdown()
        server.server_close()


def test_served_page_loads_without_a_favicon_request(browser: Any, served: tuple[str, list[str]]) -> None:
    """Each load of a served page logged ``404 /favicon.ico`` as a console error: the page names an empty icon."""
    url, asked = served
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
        page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
        page.goto(url + "?autoplay=0")
        page.wait_for_function("window.skelanimViewer && window.skelanimViewer.ready")
        page.wait_for_timeout(500)  # a favicon is asked for after the load
        assert errors == []
        assert [a for a in asked if "favicon" in a] == [] and asked[0] == "GET /?autoplay=0 200", asked
    finally:
        context.close()


def test_head_answers_as_get_does(served: tuple[str, list[str]]) -> None:
    """``HEAD`` of any path answered 200 where ``GET`` gives 404."""
    url, _ = served
    for path in ("", "index.html", "viewer.html?x=1"):
        with urllib.request.urlopen(urllib.request.Request(url + path, method="HEAD"), timeout=5) as response:
            assert response.status == 200 and int(response.headers["Content-Length"]) > 1000
            assert response.read() == b""
    for path in ("secret.txt", "favicon.ico", "../etc/passwd"):
        for method in ("GET", "HEAD"):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(urllib.request.Request(url + path, method=method), timeout=5)
            assert caught.value.code == 404, (method, path)


def test_view_serve_on_a_busy_port_writes_nothing(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--serve --port BUSY -o p.html`` wrote p.html and then failed: the port is now bound first."""
    holder = viewer.make_server("busy", port=0)
    try:
        port = holder.server_address[1]
        out = tmp_path / "p.html"
        code = main(["view", WALK, "--serve", "--port", str(port), "-o", str(out)])
        stdout, stderr = capfd.readouterr()
        assert code == 2, (stdout, stderr)
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "--port" in lines[0], stderr
        assert stdout == ""
        assert list(tmp_path.iterdir()) == []
    finally:
        holder.server_close()
