"""Fixtures for the file-format tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from needs import missing_data


@pytest.fixture
def deepmimic_folder(mocap_dir: Path) -> Path:
    """The DeepMimic clips and ``humanoid.urdf`` of the shared mocap data; skips when the folder is absent."""
    folder = Path(mocap_dir) / "deepmimic"
    if not folder.is_dir():
        missing_data(f"no deepmimic folder in {mocap_dir}")
    return folder
