"""Retargeting onto the DeepMimic humanoid, written as a DeepMimic file and played in pybullet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from needs import peer_library

from skelanim.io import deepmimic
from skelanim.retarget.robot import hinge_limits, make_feasible, save_deepmimic, to_deepmimic


@pytest.fixture(scope="module")
def written(clips, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("robot") / "walk.txt"
    save_deepmimic(to_deepmimic(clips["bandai"]), out)
    return out


def test_hinges_are_exact_and_within_limits(clips):
    robot = to_deepmimic(clips["cmu_max"])
    limits = hinge_limits()
    for name, (low, high) in limits.items():
        q = robot.rotations[:, robot.skeleton.index(name)]
        assert float(q[:, 1:3].abs().max()) < 1e-9, name  # about +z only
        angle = 2 * torch.atan2(q[:, 3], q[:, 0])
        assert float(angle.min()) >= low - 1e-6 and float(angle.max()) <= high + 1e-6, name


def test_hinge_fix_keeps_ankles(clips):
    from skelanim.retarget import Retargeter

    raw = Retargeter(clips["bandai"].skeleton, deepmimic.humanoid_skeleton(), "copy")(clips["bandai"])
    fixed = make_feasible(raw)
    p0, p1 = raw.positions(), fixed.positions()
    lift = (p1[:, 0] - p0[:, 0])[:, None]
    for name in ("left_ankle", "right_ankle"):
        j = raw.skeleton.index(name)
        err = (p1[:, j] - lift[:, 0] - p0[:, j]).norm(dim=-1)
        assert float(err.max()) < 0.02, name  # where the ankle could be reached, it is


def test_pybullet_plays_the_written_clip(written, pose_pybullet_humanoid):
    pybullet = peer_library("pybullet")
    urdf = deepmimic.bundled_urdf_path()
    frames = np.array(json.loads(written.read_text())["Frames"])
    assert frames.shape[1] == 44 and frames.shape[0] > 10
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(urdf), globalScaling=0.25, physicsClientId=client)
        info = [pybullet.getJointInfo(body, j, physicsClientId=client) for j in range(pybullet.getNumJoints(body, physicsClientId=client))]
        index = {i[12].decode(): i[0] for i in info}
        limits = {i[12].decode(): (i[8], i[9]) for i in info if i[2] == pybullet.JOINT_REVOLUTE}
        assert set(limits) == {"right_knee", "left_knee", "right_elbow", "left_elbow"}
        lowest = np.inf
        for frame in frames:
            pose_pybullet_humanoid(pybullet, body, index, frame, client)
            for name, (low, high) in limits.items():
                angle = pybullet.getJointState(body, index[name], physicsClientId=client)[0]
                assert low - 1e-6 <= angle <= high + 1e-6, (name, angle)
            for foot in ("right_ankle", "left_ankle"):
                aabb_min, _ = pybullet.getAABB(body, index[foot], physicsClientId=client)
                lowest = min(lowest, aabb_min[1])  # Y is up
        assert lowest > -0.005, lowest  # feet never below the ground plane
        assert lowest < 0.03, lowest  # and they do reach it
    finally:
        pybullet.disconnect(physicsClientId=client)
