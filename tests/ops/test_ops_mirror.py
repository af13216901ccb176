"""Mirroring: exact involution, FK equals reflected positions with left/right swapped, scipy for M R M."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from skelanim import Motion, Skeleton
from skelanim.errors import SkeletonError
from skelanim.ops import lateral_axis, mirror, mirror_permutation, mirror_quat, mirror_skeleton


def reflected(positions: torch.Tensor, perm: np.ndarray, axis: int) -> torch.Tensor:
    s = torch.ones(3, dtype=torch.float64)
    s[axis] = -1.0
    return positions[:, torch.as_tensor(perm)] * s


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_mirror_quat_is_reflection_conjugation(axis):
    rot = Rotation.random(50, random_state=axis)
    q = rot.as_quat(scalar_first=True)
    m = np.diag([-1.0 if a == axis else 1.0 for a in range(3)])
    expected = m @ rot.as_matrix() @ m
    got = Rotation.from_quat(mirror_quat(q, axis=axis), scalar_first=True).as_matrix()
    assert np.allclose(got, expected, atol=1e-12)
    assert np.array_equal(mirror_quat(mirror_quat(q, axis="xyz"[axis]), axis=axis), q)


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("translations", [False, True])
def test_mirror_fk_and_involution(asymmetric, translations, helpers, check_unchanged):
    skel = helpers.body_skeleton(asymmetric=asymmetric)
    m = helpers.random_motion(skel, 25, amplitude=1.0, translations=translations)
    done = check_unchanged(m)
    out = mirror(m)
    assert done()
    perm = skel.mirror_permutation()
    assert perm[skel.index("LeftHand")] == skel.index("RightHand")
    assert torch.allclose(
        out.positions(end_sites=True)[:, : skel.num_joints], reflected(m.positions(), perm, 0), atol=1e-12
    )
    ends = sorted(skel.end_sites)
    end_perm = np.array([ends.index(int(perm[j])) for j in ends])
    assert torch.allclose(
        out.positions(end_sites=True)[:, skel.num_joints :],
        reflected(m.positions(end_sites=True)[:, skel.num_joints :], end_perm, 0),
        atol=1e-12,
    )
    twice = mirror(out)
    assert torch.equal(twice.rotations, m.rotations)
    assert torch.equal(twice.root_positions, m.root_positions)
    assert twice.skeleton == m.skeleton
    if translations:
        assert torch.equal(twice.joint_translations, m.joint_translations)
    if asymmetric:  # the result sits on the mirror image of the skeleton, a different skeleton
        assert not torch.allclose(out.skeleton.offsets, skel.offsets)
    else:
        assert torch.allclose(out.skeleton.offsets, skel.offsets, atol=0)


def test_mirror_swaps_sides_semantically(helpers):
    skel = helpers.body_skeleton()
    m = Motion.rest(skel, 1)
    rot = m.rotations.clone()
    # raise the left arm: rotate LeftShoulder +90 deg about Z (the +X arm swings up to +Y)
    rot[0, skel.index("LeftShoulder")] = torch.tensor([2**-0.5, 0, 0, 2**-0.5], dtype=torch.float64)
    m = m.copy(rotations=rot)
    up = 1
    left_hand, right_hand = skel.index("LeftHand"), skel.index("RightHand")
    assert m.positions()[0, left_hand, up] > m.positions()[0, right_hand, up] + 0.3
    out = mirror(m)
    assert out.positions()[0, right_hand, up] > out.positions()[0, left_hand, up] + 0.3
    assert float(out.positions()[0, right_hand, 0]) < 0  # the right hand stays on the right (-X)


def test_lateral_axis_detection(helpers):
    skel = helpers.body_skeleton()
    assert lateral_axis(skel) == 0
    # swap X and Z in the offsets: the body is now symmetric across Z
    perm_axes = torch.tensor([2, 1, 0])
    turned = Skeleton(
        skel.names,
        skel.parents,
        skel.offsets[:, perm_axes],
        list(skel.channels),
        {k: v[perm_axes] for k, v in skel.end_sites.items()},
    )
    assert lateral_axis(turned) == 2
    m = helpers.random_motion(turned, 5)
    out = mirror(m)  # detected Z
    assert torch.allclose(out.positions(), reflected(m.positions(), turned.mirror_permutation(), 2), atol=1e-12)
    assert torch.allclose(mirror_skeleton(turned).offsets, turned.offsets, atol=1e-15)
    lone = Skeleton(["A", "B"], np.array([-1, 0]), torch.tensor([[0.0, 0, 0], [0, 1.0, 0]]))
    assert lateral_axis(lone) == 0


def test_mirror_permutation_completed_by_structure(helpers):
    # Hand ends with no side marker in their names: the structural completion pairs them
    base = helpers.body_skeleton()
    names = base.names + ["hand_end_a", "hand_end_b"]
    parents = np.concatenate([base.parents, [base.index("LeftHand"), base.index("RightHand")]])
    offsets = torch.cat([base.offsets, torch.tensor([[0.05, 0, 0.02], [-0.05, 0, 0.02]], dtype=torch.float64)])
    skel = Skeleton(names, parents, offsets)
    perm = mirror_permutation(skel)
    assert perm[skel.index("hand_end_a")] == skel.index("hand_end_b") and perm[skel.index("hand_end_b")] == skel.index("hand_end_a")
    m = helpers.random_motion(skel, 6)
    assert torch.allclose(mirror(m).positions(), reflected(m.positions(), perm, 0), atol=1e-12)


def test_mirror_rejects_asymmetric_tree():
    names = ["Hips", "LeftLeg", "Spine", "RightLeg"]
    skel = Skeleton(names, np.array([-1, 0, 0, 2]), torch.rand(4, 3, dtype=torch.float64))
    with pytest.raises(SkeletonError, match="partner"):
        mirror(Motion.rest(skel, 2))


@pytest.mark.parametrize(
    "relative",
    ["cmu_iclone_ccrig/002_03.bvh", "bandai_namco_1/dataset-1_walk_normal_001.bvh", "cmu_cgspeed_max/131_01.bvh"],
)
def test_mirror_real(relative, real):
    m = real(relative)
    axis = lateral_axis(m.skeleton)
    out = mirror(m)
    perm = mirror_permutation(m.skeleton)
    assert (perm != np.arange(len(perm))).sum() >= 8
    assert torch.allclose(out.positions(), reflected(m.positions(), perm, axis), atol=1e-9 * m.height)
    twice = mirror(out)
    assert torch.equal(twice.rotations, m.rotations) and torch.equal(twice.root_positions, m.root_positions)
    assert twice.skeleton == m.skeleton


def test_mirror_quat_refuses_what_is_not_quaternions():
    from skelanim.errors import ShapeError

    with pytest.raises(ShapeError, match=r"q must have shape \(\.\.\., 4\), got \(5, 3\)"):
        mirror_quat(torch.randn(5, 3))


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (lambda n: f"Bip01 L {n}", lambda n: f"Bip01 R {n}"),  # 3ds Max Biped
        (lambda n: f"{n.lower()}.l", lambda n: f"{n.lower()}.r"),  # Blender
        (lambda n: f"l{n}", lambda n: f"r{n}"),  # Daz
        (lambda n: f"{n}-L", lambda n: f"{n}-R"),
        (lambda n: f"{n}L", lambda n: f"{n}R"),
    ],
)
def test_mirror_pairs_the_sides_of_other_naming_conventions(mocap_files, left, right):
    """Joints named as 3ds Max Biped, Blender, Daz and others name their sides had no pairs: the mirror reflected
    the motion and swapped nothing (left limbs ended on the right, 0.5 heights from the true mirror, an audit's
    measure), without a word. Now their pairs are found and the mirror is the one of the usual names."""
    import warnings

    import skelanim
    from skelanim.ops import rename

    (path,) = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])
    motion = skelanim.load(path)[:60]

    def convention(name: str) -> str:
        for side, make in (("Left", left), ("Right", right)):
            if name.startswith(side):
                return make(name[len(side):])
        return name

    renamed = rename(motion, convention)
    assert renamed.skeleton.left_right_pairs() and len(renamed.skeleton.left_right_pairs()) == len(
        motion.skeleton.left_right_pairs())  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mirror(renamed).positions()
    torch.testing.assert_close(got, mirror(motion).positions(), rtol=0, atol=1e-9)


def test_mirror_of_a_skeleton_without_sides_says_so():
    skeleton = Skeleton(["Root", "A", "B"], np.array([-1, 0, 1]), torch.tensor([[0.0, 0, 0], [1, 1, 0], [1, 0, 0]]))
    with pytest.warns(UserWarning, match="no left/right joint pairs"):
        mirror(Motion.rest(skeleton, 3))


@pytest.mark.parametrize(("name", "turn"), [
    ("deepmimic/humanoid3d_walk.txt", [[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]),  # Y up to Z up; its rest's lateral is Z
    ("bandai_namco_1/dataset-1_walk_normal_001.bvh", [[0, 1.0, 0], [-1, 0, 0], [0, 0, 1]]),  # to X up; lateral X
])  # fmt: skip
def test_a_turned_capture_is_mirrored_across_an_upright_plane(name: str, turn: list, mocap_files) -> None:
    """A Y-up rig turned to stand along the axis its rest pose's left and right lie apart on (``ops.rotate``):
    the mirror across the skeleton's rest lateral axis (from its offsets) had turned the walk upside down (a review:
    neck above ankles by +1.21 before, -1.21 after). Now the default plane is upright: the heads stay above the feet
    by the same height, and the positions are the originals reflected across one level axis, sides swapped."""
    import skelanim
    from skelanim import ops
    from skelanim.core.skeleton import head_and_feet
    from skelanim.ops.mirror import mirror_permutation

    turned = ops.rotate(skelanim.load(mocap_files([name])[0]), turn)
    up = turned.up_axis()
    assert up != 1 and ops.lateral_axis(turned.skeleton) == up  # the trap: the rest's side to side is now up
    mirrored = ops.mirror(turned)
    assert mirrored.up_direction() == turned.up_direction()
    heads, feet = head_and_feet(turned.skeleton.names)
    before, after = turned.positions(), mirrored.positions()

    def rise(p: torch.Tensor) -> float:  # heads over feet along the up axis, frame 0
        return float(p[0, heads, up].mean() - p[0, feet, up].mean())

    assert rise(after) == pytest.approx(rise(before), rel=1e-9) and rise(before) > 0
    perm = torch.as_tensor(mirror_permutation(turned.skeleton))
    matched = [a for a in range(3) if torch.allclose(after, before[:, perm] * torch.tensor(
        [-1.0 if k == a else 1.0 for k in range(3)], dtype=before.dtype), atol=1e-9)]  # fmt: skip
    assert len(matched) == 1 and matched[0] != up
