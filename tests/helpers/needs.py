"""What a test needs that the repository does not hold: the real mocap data and the peer libraries it compares
against. Where one is missing the test skips with the reason, except in CI, which sets ``SKELANIM_REQUIRE_DATA=1``
and ``SKELANIM_REQUIRE_PEERS=1`` (``.ci/run``): there a missing one fails the test instead of hiding it. The same for
``node`` and the npm tools of ``tools/`` (``SKELANIM_REQUIRE_NODE=1``)."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest


def missing_data(reason: str) -> None:
    """Skip with ``reason``, or fail under ``SKELANIM_REQUIRE_DATA=1`` (CI must not skip real-data tests)."""
    if os.environ.get("SKELANIM_REQUIRE_DATA") == "1":
        pytest.fail(f"real mocap data required: {reason}")
    pytest.skip(reason)


def peer_library(name: str) -> ModuleType:
    """Import the peer library ``name`` (a test extra: pybvh, bvhio, pybullet, vmcp, roma, ufbx); skip without it, or fail
    under ``SKELANIM_REQUIRE_PEERS=1`` (CI installs the test extras, so a missing one is a broken install)."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        if os.environ.get("SKELANIM_REQUIRE_PEERS") == "1":
            pytest.fail(f"peer library {name} required (pip install -e '.[test]'): {err}")
        pytest.skip(f"peer library {name} not installed: {err}")


#: The repository's build- and test-time JavaScript tools (``npm ci`` there installs them).
TOOLS = Path(__file__).resolve().parents[2] / "tools"


def node_tool(module: str, purpose: str) -> Path:
    """The ``tools/`` folder, once ``node`` and the npm module ``module`` are there; skip naming ``purpose``
    without them, or fail under ``SKELANIM_REQUIRE_NODE=1`` (CI installs both)."""
    reason = None
    if shutil.which("node") is None:
        reason = f"node is not on PATH: {purpose} is skipped"
    elif not (TOOLS / "node_modules" / module).is_dir():
        reason = f"tools/node_modules/{module} is missing (run `npm ci` in tools/): {purpose} is skipped"
    if reason:
        if os.environ.get("SKELANIM_REQUIRE_NODE") == "1":
            pytest.fail(f"{reason}, and SKELANIM_REQUIRE_NODE=1")
        pytest.skip(reason)
    return TOOLS
