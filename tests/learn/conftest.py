"""Tiny real-data fixtures for the learning tests (skipped visibly when the mocap data is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

NAMES = [
    "bandai_namco_1/dataset-1_walk_happy_001.bvh",
    "bandai_namco_1/dataset-1_walk_angry_001.bvh",
    "bandai_namco_1/dataset-1_bow_happy_001.bvh",
    "bandai_namco_1/dataset-1_bow_angry_001.bvh",
    "bandai_namco_2/dataset-2_run_elderly_001.bvh",
    "bandai_namco_2/dataset-2_run_normal_001.bvh",
]


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def learn_files(mocap_files) -> list[Path]:
    return mocap_files(NAMES)


@pytest.fixture(scope="session")
def tiny_ds(learn_files, tmp_path_factory):
    """Six clips (walk, bow, run; two styles each) at 25 fps."""
    from skelanim.data import MotionDataset

    return MotionDataset(learn_files, fps=25.0, cache=tmp_path_factory.mktemp("learn-cache"))
