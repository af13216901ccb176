"""Pelvis against shoulders: retargeting keeps the yaw between the hip line and the shoulder line.

Bandai-Namco's zero pose is no T-pose: its legs lie along -Y and its shoulders along +Z, 90 degrees apart
about the spine. Rest frames built from one lateral axis for the whole body (the mean of the two) put its
pelvis and chest frames 45 degrees off, and every retarget from or onto Bandai twisted the pelvis against
the shoulders by 35-90 degrees. The twist is measured here independently of the rig: from world positions
of the hip and shoulder joints found by name.
"""

from __future__ import annotations

import math

import pytest
import torch

from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.io.deepmimic import humanoid_skeleton
from skelanim.retarget import Retargeter
from skelanim.retarget.rig import SLOT, CanonicalRig

#: (left hip, right hip, left shoulder, right shoulder) joint names per skeleton family.
_NAMES = {
    "bandai": ("UpperLeg_L", "UpperLeg_R", "UpperArm_L", "UpperArm_R"),
    "cmu": ("LeftUpLeg", "RightUpLeg", "LeftArm", "RightArm"),
    "cmu_max": ("LeftHip", "RightHip", "LeftShoulder", "RightShoulder"),
    "ccrig": ("CC_Base_L_Thigh", "CC_Base_R_Thigh", "CC_Base_L_Upperarm", "CC_Base_R_Upperarm"),
    "deepmimic": ("left_hip", "right_hip", "left_shoulder", "right_shoulder"),
}
_FAMILY = {"bandai": "bandai", "xia": "cmu", "cmu_mb": "cmu", "cmu_max": "cmu_max", "ccrig": "ccrig", "deepmimic": "deepmimic"}  # fmt: skip
_LIMIT = 5.0  # degrees


def _yaw(v: torch.Tensor) -> torch.Tensor:
    """Heading ``(F,)`` (radians, about +Y) of ``(F, 3)`` vectors."""
    return torch.atan2(v[:, 0], v[:, 2])


def line_twist(motion: Motion, family: str) -> float:
    """Mean yaw (degrees, about world +Y) of the shoulder line (left - right) against the hip line."""
    names = motion.skeleton.names
    lh, rh, ls, rs = (names.index(n) for n in _NAMES[family])
    pos = motion.positions()
    d = _yaw(pos[:, ls] - pos[:, rs]) - _yaw(pos[:, lh] - pos[:, rh])
    return math.degrees(float(torch.atan2(torch.sin(d), torch.cos(d)).mean()))


def _target(clips: dict[str, Motion], name: str) -> Skeleton:
    return humanoid_skeleton() if name == "urdf" else clips[name].skeleton


PAIRS = [("bandai", "xia"), ("bandai", "ccrig"), ("xia", "bandai"), ("deepmimic", "bandai"), ("bandai", "urdf"),
         ("cmu_max", "bandai"), ("xia", "cmu_mb"), ("ccrig", "xia"), ("bandai", "bandai")]  # fmt: skip


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_copy_keeps_the_pelvis_shoulder_twist(clips, source, target):
    motion = clips[source]
    out = Retargeter(motion.skeleton, _target(clips, target), "copy")(motion)
    before = line_twist(motion, _FAMILY[source])
    after = line_twist(out, "deepmimic" if target == "urdf" else _FAMILY[target])
    assert abs(after - before) < _LIMIT, (before, after)


@pytest.mark.parametrize("method", ["ik", "nkn"])
@pytest.mark.parametrize(("source", "target"), [("bandai", "xia"), ("xia", "bandai"), ("bandai", "ccrig")])
def test_every_method_keeps_the_twist(clips, source, target, method):
    motion = clips[source]
    out = Retargeter(motion.skeleton, clips[target].skeleton, method)(motion)
    before, after = line_twist(motion, _FAMILY[source]), line_twist(out, _FAMILY[target])
    assert abs(after - before) < _LIMIT, (method, before, after)


def test_robot_export_keeps_the_twist(clips):
    from skelanim.retarget.robot import to_deepmimic

    motion = clips["bandai"]
    out = to_deepmimic(motion)
    assert abs(line_twist(out, "deepmimic") - line_twist(motion, "bandai")) < _LIMIT


@pytest.mark.parametrize("source", ["bandai", "xia", "cmu_max", "ccrig", "deepmimic"])
def test_pelvis_and_chest_frames_follow_their_own_joints(clips, source):
    """The canonical left axis (+X) of the encoded hips frame is the hip line, the chest's the shoulder
    line (headings, mean over the clip)."""
    motion = clips[source]
    rig = CanonicalRig(motion.skeleton)
    frames, _ = rig.encode(motion.rotations, motion.local_translations())
    names, pos = motion.skeleton.names, motion.positions()
    lh, rh, ls, rs = (names.index(n) for n in _NAMES[_FAMILY[source]])
    for slot, line in ((SLOT["hips"], pos[:, lh] - pos[:, rh]), (SLOT["chest"], pos[:, ls] - pos[:, rs])):
        d = _yaw(frames[:, slot, :, 0]) - _yaw(line)
        mean = math.degrees(float(torch.atan2(torch.sin(d), torch.cos(d)).mean()))
        assert abs(mean) < _LIMIT, (source, slot, mean)  # a mean: clavicles turn the shoulder line against the chest
