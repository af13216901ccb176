"""Headless Chromium for the viewer's end-to-end tests (``tests/viz``): the page wrapper and a pixel comparison;
the ``browser`` and ``open_viewer`` fixtures are in ``tests/viz/conftest.py``.

Browser tests need Python ``playwright`` and a Chromium at ``/usr/bin/chromium`` (Debian's ``chromium`` package;
override with ``SKELANIM_CHROMIUM``). Without them they skip, unless ``SKELANIM_REQUIRE_BROWSER=1``, which turns the
skip into a failure. ``SKELANIM_SCREENSHOT_DIR`` keeps the screenshots they take.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CHROMIUM = os.environ.get("SKELANIM_CHROMIUM", "/usr/bin/chromium")
REQUIRE_BROWSER = os.environ.get("SKELANIM_REQUIRE_BROWSER") == "1"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 960, "height": 640}


def unavailable(reason: str) -> None:
    """Skip the browser test for ``reason``, or fail under ``SKELANIM_REQUIRE_BROWSER=1``."""
    if REQUIRE_BROWSER:
        pytest.fail(f"SKELANIM_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


class ViewerPage:
    """An opened viewer page plus the console errors it produced."""

    def __init__(self, page: Any, errors: list[str], shots: Path) -> None:
        self.page = page
        self.errors = errors
        self.shots = shots

    def js(self, expression: str, arg: Any = None) -> Any:
        return self.page.evaluate(expression, arg)

    def screenshot(self, name: str) -> np.ndarray:
        """An RGB screenshot of the page as ``(H, W, 3)`` uint8 (kept under SKELANIM_SCREENSHOT_DIR)."""
        from PIL import Image

        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path))
        keep = os.environ.get("SKELANIM_SCREENSHOT_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(keep) / path.name)
        return np.asarray(Image.open(path).convert("RGB"))


def changed_fraction(a: np.ndarray, b: np.ndarray, threshold: int = 40) -> float:
    """Fraction of pixels whose RGB values differ by more than ``threshold`` in sum."""
    return float((np.abs(a.astype(np.int32) - b.astype(np.int32)).sum(-1) > threshold).mean())
