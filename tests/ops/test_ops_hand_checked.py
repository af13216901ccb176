"""Hand-checked cases for behaviour the rest of the ops tests left open (found by a mutation audit): One-Euro's
``beta`` check and its unit-free positions, the tie rule of :func:`joint_reflections`, :func:`foot_contacts` on
arrays and upside-down data, :func:`turned_up` onto X and Z, :func:`collapse` of a joint that bends in some frames
only."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim import Motion, Skeleton
from skelanim.errors import ShapeError, SkeletonError
from skelanim.ops import (
    collapse,
    foot_contacts,
    one_euro,
    reorder_joints,
    rotate,
    scale,
    smooth,
    smooth_rotations,
    turned_up,
)
from skelanim.ops.mirror import joint_reflections

_S = math.sqrt(0.5)


# ------------------------------------------------------------------ one_euro: beta >= 0
def test_one_euro_refuses_a_negative_beta():
    x = torch.linspace(0, 1, 5, dtype=torch.float64)[:, None]
    with pytest.raises(ShapeError, match="beta"):
        one_euro(x, fps=30, beta=-1.0)
    with pytest.raises(ShapeError, match="beta"):
        one_euro(np.linspace(0, 1, 5)[:, None], fps=30, beta=-1e-6)
    one_euro(x, fps=30, beta=0.0)  # the bound itself is allowed


def test_one_euro_smoothing_of_rotations_and_motions_refuses_a_negative_beta(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 10)
    with pytest.raises(ShapeError, match="beta"):
        smooth_rotations(m.rotations, method="one_euro", fps=m.fps, beta=-1.0)
    with pytest.raises(ShapeError, match="beta"):
        smooth(m, "one_euro", beta=-1.0)


# ------------------------------------------------------------------ smooth one_euro: positions in body heights
def _walk() -> Motion:
    import skelanim
    from skelanim.data.samples import sample_path

    return skelanim.load(sample_path("walk"))


@pytest.mark.parametrize("source", ["walk", "random"])
def test_smooth_one_euro_is_the_same_in_any_length_unit(source, helpers):
    # smooth's docstring: beta for positions is per body height, "so one value suits any unit": smoothing the
    # motion in units 100 times smaller gives positions exactly 100 times larger (to rounding).
    m = _walk() if source == "walk" else helpers.random_motion(helpers.body_skeleton(), 40, translations=True)
    big = scale(m, 100.0)
    a = smooth(m, "one_euro")
    b = smooth(big, "one_euro")
    assert not torch.allclose(a.root_positions, m.root_positions)  # it did smooth
    torch.testing.assert_close(b.root_positions, 100.0 * a.root_positions, rtol=1e-9, atol=1e-9)
    if m.joint_translations is not None:
        torch.testing.assert_close(b.joint_translations, 100.0 * a.joint_translations, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(b.rotations, a.rotations, rtol=0, atol=1e-12)
    torch.testing.assert_close(b.positions(), 100.0 * a.positions(), rtol=1e-9, atol=1e-7)


# ------------------------------------------------------------------ joint_reflections: the tie rule
def test_joint_reflections_keep_the_parents_reflection_among_equal_ones():
    # Hips -> Spine -> Chest with legs along +-Z, world reflection across Z: the legs pick N_Hips = (1, 1, -1)
    # (the only reflection that maps Spine's +Y onto itself and LeftLeg's +Z onto RightLeg's -Z). Spine's one child
    # (Chest, along +Y) leaves (-1, 1, 1) and (1, 1, -1) equally good; without a reference the docstring keeps the
    # parent's reflection where it is among the best, so (1, 1, -1) all the way down (Chest and the legs, with no
    # children, tie all four and keep it too).
    sk = Skeleton(["Hips", "Spine", "Chest", "LeftLeg", "RightLeg"], [-1, 0, 1, 0, 0],
                  [[0, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 0.1], [0, 0, -0.1]])  # fmt: skip
    world = torch.tensor([1.0, 1, -1], dtype=torch.float64)
    perm, left, right = joint_reflections(sk, world)
    assert perm.tolist() == [0, 1, 2, 4, 3]
    expected = torch.tensor([1.0, 1, -1], dtype=torch.float64).expand(5, 3)
    torch.testing.assert_close(right, expected, rtol=0, atol=0)
    torch.testing.assert_close(left[0], world, rtol=0, atol=0)  # the root's left side is M
    # "a rest rotation stays a rest rotation": R'_j = N_parent I N_j is the identity for every non-root joint
    for j in range(1, 5):
        mirrored_rest = torch.diag(left[j]) @ torch.diag(right[j])
        torch.testing.assert_close(mirrored_rest, torch.eye(3, dtype=torch.float64), rtol=0, atol=0)


# ------------------------------------------------------------------ foot_contacts on arrays
def test_foot_contacts_refuses_a_joint_index_equal_to_the_joint_count():
    pos = np.zeros((4, 2, 3))
    with pytest.raises(ShapeError, match="joints"):
        foot_contacts(pos, 30, joints=[2], height=1.0)
    with pytest.raises(ShapeError, match="joints"):
        foot_contacts(pos, 30, joints=[-3], height=1.0)
    assert foot_contacts(pos, 30, joints=[1, -2], height=1.0).shape == (4, 2)


def test_foot_contacts_default_height_is_frame_zero_extent():
    # joint 1 is 1 above joint 0 in frame 0 and 3 above later: the docstring's default height is frame 0's extent,
    # 1, so thresholds 0.05 (height) and 0.25 / s (speed). Joint 0 at heights 0, 0.1, 0.1 at 1 fps: elevation
    # 0, 0.1, 0.1 and speed (central differences) 0.1, 0.05, 0 -> contact only in frame 0. (Over all frames
    # the extent would be 3: thresholds 0.15 and 0.75, contact in every frame.)
    pos = np.zeros((3, 2, 3))
    pos[:, 1, 1] = [1.0, 3.0, 3.0]
    pos[:, 0, 1] = [0.0, 0.1, 0.1]
    out = foot_contacts(pos, 1.0, joints=[0])
    assert isinstance(out, np.ndarray)
    assert out[:, 0].tolist() == [True, False, False]


def test_foot_contacts_threshold_is_strict():
    # docstring: the thresholds are values "below which" a joint may be in contact; a resting foot has elevation
    # 0 and speed 0, not below thresholds of 0.
    pos = np.zeros((4, 1, 3))
    out = foot_contacts(pos, 30, joints=[0], height_threshold=0.0, speed_threshold=0.0)
    assert not out.any()
    out = foot_contacts(pos, 30, joints=[0], height_threshold=1e-9, speed_threshold=1e-9)
    assert out.all()


# ------------------------------------------------------------------ foot_contacts on upside-down data
def test_foot_contacts_on_y_down_array_match_the_y_up_original():
    # a foot on the floor (height 0) lifted to 0.3 and put back, Y up; by hand with a 0.05 height threshold
    # (speeds, at most 0.1 * 30 = 3 per second, stay under 9): contact where the height is 0.
    y = np.array([0, 0, 0, 0.1, 0.3, 0.3, 0.1, 0, 0, 0.0])
    up = np.zeros((10, 1, 3))
    up[:, 0, 1] = y
    down = up.copy()
    down[..., 1] *= -1  # camera-space: Y points down
    expected = [True, True, True, False, False, False, False, True, True, True]
    kw = {"joints": [0], "height_threshold": 0.05, "speed_threshold": 9.0}
    assert foot_contacts(up, 30, **kw)[:, 0].tolist() == expected
    assert foot_contacts(down, 30, up_axis="-y", **kw)[:, 0].tolist() == expected


def test_foot_contacts_on_upside_down_motion_match_the_original(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 60, amplitude=0.8)
    down = rotate(m, torch.diag(torch.tensor([1.0, -1, -1], dtype=torch.float64)))  # a half turn about X
    assert down.up_direction() == (1, -1.0)
    kw = {"joints": ["LeftFoot", "RightFoot"], "height_threshold": 0.1, "speed_threshold": 100.0}
    a = foot_contacts(m, **kw)
    # by hand: within 0.1 of each foot's lowest height (speeds are all under the threshold)
    y = m.positions()[:, [m.skeleton.index("LeftFoot"), m.skeleton.index("RightFoot")], 1]
    assert torch.equal(a, (y - y.min(dim=0).values) < 0.1)
    assert a.any() and not a.all()
    assert torch.equal(foot_contacts(down, **kw), a)  # the default up direction, its sign included
    assert torch.equal(foot_contacts(down, up_axis="-y", **kw), a)


# ------------------------------------------------------------------ turned_up onto X and Z
@pytest.mark.parametrize("target", [0, 2])
def test_turned_up_puts_plus_up_on_the_target_axis(target, helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 20)
    assert m.up_direction() == (1, 1.0)
    out, turn = turned_up(m, target)
    assert turn is not None
    e = torch.eye(3, dtype=torch.float64)
    torch.testing.assert_close(turn @ e[1], e[target], rtol=0, atol=1e-12)
    torch.testing.assert_close(turn @ turn.T, e, rtol=0, atol=1e-12)
    assert abs(float(torch.linalg.det(turn)) - 1.0) < 1e-12  # a proper rotation
    assert out.up_direction() == (target, 1.0)
    # the up coordinate keeps its value: every joint's height along +Y becomes its height along +e[target]
    torch.testing.assert_close(out.positions()[..., target], m.positions()[..., 1], rtol=0, atol=1e-9)


# ------------------------------------------------------------------ collapse a joint that bends in some frames only
def test_collapse_joint_bending_in_some_frames_keeps_world_positions(body):
    sk = body
    m = Motion.rest(sk, 6)
    rot = m.rotations.clone()
    rot[3:, sk.index("Spine")] = torch.tensor([_S, _S, 0, 0], dtype=torch.float64)  # bends in frames 3-5 only
    m = m.copy(rotations=rot)
    keep = [n for n in sk.names if n != "Spine"]
    out = collapse(m, keep)
    assert out.skeleton.names == keep
    idx = [sk.index(n) for n in keep]
    torch.testing.assert_close(out.positions(), m.positions()[:, idx], rtol=0, atol=1e-12)
    # Chest hangs off Hips now: 0.1 up then 0.2 along the turned Spine's +Y, i.e. +Z, in frames 3-5
    chest = out.positions()[:, out.skeleton.index("Chest")]
    hips = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    torch.testing.assert_close(chest[0], hips + torch.tensor([0.0, 0.3, 0.0], dtype=torch.float64))
    torch.testing.assert_close(chest[4], hips + torch.tensor([0.0, 0.1, 0.2], dtype=torch.float64))


def test_reorder_joints_keeps_every_joint_and_the_world(mocap_files, tmp_path) -> None:
    """DeepMimic's humanoid lists its joints root, chest, neck, right_hip, ...; its BVH depth first (root, chest, neck,
    right_shoulder, ...). ``reorder_joints`` puts the BVH's joints back in the clip's order: names, parents by name,
    offsets, rotations and world positions all the clip's; and ``Rig.adopt`` does so for a model's rig, which had
    refused the BVH written for its own skeleton."""
    import skelanim
    from skelanim.data.rig import Rig

    clip = skelanim.load(mocap_files(["deepmimic/humanoid3d_walk.txt"])[0])[:20]
    skelanim.save(clip, tmp_path / "walk.bvh")
    bvh = skelanim.load(tmp_path / "walk.bvh")
    assert bvh.skeleton.names != clip.skeleton.names and sorted(bvh.skeleton.names) == sorted(clip.skeleton.names)
    back = reorder_joints(bvh, clip.skeleton.names)
    assert back.skeleton.names == clip.skeleton.names and list(back.skeleton.parents) == list(clip.skeleton.parents)
    torch.testing.assert_close(back.skeleton.offsets, clip.skeleton.offsets, rtol=0, atol=1e-9)
    torch.testing.assert_close(back.positions(), clip.positions(), rtol=0, atol=1e-6)
    order = [bvh.skeleton.names.index(n) for n in clip.skeleton.names]
    torch.testing.assert_close(back.positions(), bvh.positions()[:, order], rtol=0, atol=1e-12)
    rig = Rig(clip.skeleton, 0, 1, clip.height, 0.0, [])
    assert rig.adopt(bvh).skeleton.names == clip.skeleton.names and rig.adopt(clip) is clip
    with pytest.raises(SkeletonError, match="before its parent"):
        reorder_joints(clip, [clip.skeleton.names[1], clip.skeleton.names[0], *clip.skeleton.names[2:]])
    with pytest.raises(SkeletonError, match="not a permutation"):
        reorder_joints(clip, clip.skeleton.names[:-1])
