"""``mypy`` passes on ``src/skelanim`` with the settings in ``pyproject.toml`` (``[tool.mypy]``): a change that
breaks the annotations fails here with mypy's report. Skipped, with the reason, where mypy is not installed
(it is in the ``test`` extras)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_mypy_passes_on_the_package():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO_ROOT / "pyproject.toml"), str(REPO_ROOT / "src" / "skelanim")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"mypy found problems:\n{done.stdout}{done.stderr}"
