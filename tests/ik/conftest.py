"""Real Bandai-Namco poses for the IK tests (skipped visibly when the data is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import skelanim
from skelanim.ik.data import detect_ik_root
from skelanim.ik.frames import IKRig

WALK = "bandai_namco_1/dataset-1_walk_angry_001.bvh"
DANCE = "bandai_namco_1/dataset-1_byebye_childish_001.bvh"


@pytest.fixture(scope="session")
def bandai_files(mocap_files) -> list[Path]:
    return mocap_files([WALK, DANCE])


@pytest.fixture(scope="session")
def bandai_motion(bandai_files):
    """60 frames of an angry walk (a style held out of the shipped model's training)."""
    return skelanim.load(bandai_files[0])[::3][:60]


@pytest.fixture(scope="session")
def bandai_rig(bandai_motion) -> IKRig:
    return IKRig(bandai_motion.skeleton, ik_root=detect_ik_root([bandai_motion]))


@pytest.fixture(scope="session")
def bandai_poses(bandai_motion, bandai_rig):
    """(local quats, world rotations, world positions) recomputed on the rig's rest offsets, float64."""
    from skelanim.core.kinematics import forward_kinematics
    from skelanim.core.rotations import quat_normalize

    q = quat_normalize(bandai_motion.rotations)
    own = bandai_motion.positions()
    world, pos = forward_kinematics(q, bandai_rig.translations(own[:, bandai_rig.ik_root]), bandai_rig.parents)
    return q, world, pos


@pytest.fixture(scope="session")
def torch_threads():
    torch.set_num_threads(1)
