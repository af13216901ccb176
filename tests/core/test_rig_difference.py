"""``Skeleton.rig_difference``: the same joints with other rest axes (a mirror image of a rig among them) are
another rig, which the learned models refuse or retarget (found by a read-only review: a Bandai take mirrored by
``convert --mirror`` was read by the shipped recogniser as a 35 % walk, by FID as 1124 from its original, and
``predict --retarget`` did not retarget it; the command line: tests/cli/test_mirrored_take_cli.py).

Independent sources: the angle between two offsets worked out by hand (rotations about one axis) and the mirror of a
rig's offsets by the reflection written out."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

import skelanim
from skelanim import Skeleton, ops


def chain() -> Skeleton:
    """Root, pelvis with two legs (10 units) and a spine (20 units up)."""
    names = ["Root", "Hips", "LeftLeg", "RightLeg", "Spine"]
    offsets = [[0, 0, 0], [3, 90, 1], [5, -10, 0], [-5, -10, 0], [0, 20, 0]]
    return Skeleton(names, [-1, 0, 1, 1, 1], torch.tensor(offsets, dtype=torch.float64))


def with_spine_turned(skeleton: Skeleton, degrees: float) -> Skeleton:
    """The spine's offset turned about Z by ``degrees``: the angle between the two offsets is ``degrees``."""
    offsets = skeleton.offsets.clone()
    a = math.radians(degrees)
    offsets[4] = torch.tensor([-20 * math.sin(a), 20 * math.cos(a), 0.0], dtype=torch.float64)
    return Skeleton(skeleton.names, skeleton.parents, offsets)


@pytest.mark.parametrize(("degrees", "same"), [(0.0, True), (44.0, True), (46.0, False), (180.0, False)])
def test_a_bone_turned_past_45_degrees_makes_another_rig(degrees: float, same: bool) -> None:
    """The threshold: a bone's rest offset 44 degrees from the other rig's is the same rig, 46 is not; the message
    names the bone and the angle."""
    difference = chain().rig_difference(with_spine_turned(chain(), degrees))
    assert (difference is None) == same
    if not same:
        assert difference == (f"its bone to 'Spine' turned {degrees:.0f} degrees at rest (a rig with other rest "
                               "axes, or the mirror image of this one, which convert --mirror writes; --keep-skeleton keeps the rig)")
    assert chain().same_rig(with_spine_turned(chain(), degrees)) == same


def test_the_pelvis_placement_short_bones_and_topology() -> None:
    """The pelvis's own offset places the body (a take's start), so it may point anywhere; a bone shorter than 1 %
    of the longest is no direction to compare; other joints are the topology's message."""
    moved = chain()
    offsets = moved.offsets.clone()
    offsets[1] = torch.tensor([-40.0, 0.0, 25.0], dtype=torch.float64)  # the pelvis elsewhere, another direction
    assert chain().rig_difference(Skeleton(moved.names, moved.parents, offsets)) is None
    offsets = chain().offsets.clone()
    offsets[4] = torch.tensor([0.0, -0.5, 0.0], dtype=torch.float64)  # 0.5 of a 90-unit longest: not compared
    assert chain().rig_difference(Skeleton(chain().names, chain().parents, offsets)) is None
    other = Skeleton(["Root", "Hips", "LeftLeg", "RightLeg"], [-1, 0, 1, 1], chain().offsets[:4])
    assert chain().rig_difference(other) == chain().topology_difference(other) == "4 joints, not 5"


def test_every_bandai_take_is_one_rig_and_its_mirror_image_another(mocap_dir: Path) -> None:
    """All 211 Bandai-Namco takes are the rig of the first (their bones agree to a fraction of a degree); the
    mirror image of one (``ops.mirror``: offsets M offsets[P], by hand below) turns its spine 180 degrees."""
    files = sorted(mocap_dir.glob("bandai_namco_*/*.bvh"))
    assert len(files) == 211
    first = skelanim.load(files[0]).skeleton
    assert [f.name for f in files if not first.same_rig(skelanim.load(f).skeleton)] == []
    mirrored = ops.mirror(skelanim.load(files[0])).skeleton
    swap = first.mirror_permutation()
    reflected = first.offsets.numpy()[swap] * np.array([-1.0, 1.0, 1.0])  # Bandai's lateral axis is X
    np.testing.assert_allclose(mirrored.offsets.numpy(), reflected, atol=1e-12)
    difference = first.rig_difference(mirrored)
    assert difference is not None and difference.startswith("its bone to 'Spine' turned 180 degrees")
