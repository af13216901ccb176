"""What ``pyproject.toml`` promises a wheel holds: every licence text it names exists, and every package-data
pattern finds files (a renamed asset folder would otherwise ship a wheel without it, silently)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

if sys.version_info < (3, 11):  # tomllib
    pytest.skip("reading pyproject.toml needs Python 3.11's tomllib", allow_module_level=True)

import tomllib


def _project() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def test_every_licence_file_exists_and_the_mit_text_is_the_projects():
    project = _project()["project"]
    files = project["license-files"]
    assert "LICENSE" in files
    for name in files:
        assert (REPO_ROOT / name).is_file(), name
    assert "Permission is hereby granted, free of charge" in (REPO_ROOT / "LICENSE").read_text()
    assert project["license"].split(" AND ")[0] == "MIT"


def test_every_package_data_pattern_matches_a_file():
    package = REPO_ROOT / "src" / "skelanim"
    for pattern in _project()["tool"]["setuptools"]["package-data"]["skelanim"]:
        assert any(p.is_file() for p in package.glob(pattern)), f"package-data {pattern!r} matches no file"
