"""A handful of real Bandai-Namco files for the dataset tests (skipped visibly when the data is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

NAMES = [
    "bandai_namco_1/dataset-1_walk_happy_001.bvh",
    "bandai_namco_1/dataset-1_walk_angry_001.bvh",
    "bandai_namco_1/dataset-1_bow_happy_001.bvh",
    "bandai_namco_1/dataset-1_dash_normal_001.bvh",  # 20 frames at 30 fps: shorter than a window
    "bandai_namco_2/dataset-2_run_elderly_001.bvh",
    "bandai_namco_2/dataset-2_walk_normal_001.bvh",
]


@pytest.fixture(scope="session")
def bandai_few(mocap_files) -> list[Path]:
    return mocap_files(NAMES)


@pytest.fixture(scope="session")
def few_dataset(bandai_few, tmp_path_factory):
    from skelanim.data import MotionDataset

    return MotionDataset(bandai_few, fps=25.0, cache=tmp_path_factory.mktemp("clip-cache"))
