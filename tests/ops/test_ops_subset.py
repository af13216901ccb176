"""collapse() keeps world transforms of kept joints (checked by FK of the original); rename()."""

from __future__ import annotations

import pytest
import torch

from skelanim import Motion
from skelanim.core.rotations import matrix_geodesic
from skelanim.errors import SkeletonError
from skelanim.ops import collapse, rename, simplify_channels

UPPER = ["Chest", "Neck", "Head", "LeftArm", "LeftHand", "RightArm", "RightHand"]
MAIN = [
    "Hips",
    "Chest",
    "Head",
    "LeftArm",
    "LeftForeArm",
    "LeftHand",
    "RightArm",
    "RightHand",
    "LeftUpLeg",
    "LeftFoot",
    "RightUpLeg",
    "RightLeg",
    "RightFoot",
    "RightToeBase",
]


def assert_same_world(original: Motion, collapsed: Motion, keep_names: list[str], atol: float = 1e-12):
    idx = [original.skeleton.index(n) for n in collapsed.skeleton.names]
    rot0, pos0 = original.world()
    rot1, pos1 = collapsed.world()
    assert torch.allclose(pos1, pos0[:, idx], atol=atol)
    assert float(matrix_geodesic(rot1, rot0[:, idx]).max()) < 1e-9
    assert sorted(collapsed.skeleton.names) == sorted(keep_names)


@pytest.mark.parametrize("keep", [MAIN, UPPER, ["Hips"], ["LeftArm", "LeftHand"]])
def test_collapse_keeps_world_transforms(keep, helpers, check_unchanged):
    m = helpers.random_motion(helpers.body_skeleton(), 20, amplitude=1.0)
    done = check_unchanged(m)
    out = collapse(m, keep)
    assert done()
    assert_same_world(m, out, keep)
    # the removed intermediate joints are animated, so kept children need per-frame translations
    # unless nothing was removed between kept joints
    if keep in (MAIN, UPPER):
        assert out.joint_translations is not None
    # rest pose: the collapsed skeleton's rest pose is the original's restricted to the kept joints
    idx = [m.skeleton.index(n) for n in out.skeleton.names]
    rest = m.skeleton.rest_positions()
    assert torch.allclose(out.skeleton.rest_positions(), rest[idx] - rest[idx[0]], atol=1e-12)


def test_collapse_parents_and_order(body, motion):
    out = collapse(motion, list(reversed(MAIN)))  # any order in, skeleton order out
    assert out.skeleton.names == [n for n in body.names if n in MAIN]
    parent_of = {out.skeleton.names[j]: out.skeleton.names[p] for j, p in enumerate(out.skeleton.parents) if p >= 0}
    assert parent_of["Head"] == "Chest" and parent_of["LeftArm"] == "Chest" and parent_of["LeftForeArm"] == "LeftArm"
    assert parent_of["LeftFoot"] == "LeftUpLeg" and parent_of["RightToeBase"] == "RightFoot"
    assert set(out.skeleton.end_sites) == {
        out.skeleton.index(n) for n in ["Head", "LeftHand", "RightHand", "RightToeBase"]
    }
    # indices work too
    by_index = collapse(motion, [body.index(n) for n in MAIN])
    assert torch.equal(by_index.rotations, out.rotations)


def test_collapse_static_intermediates_need_no_translations(helpers):
    skel = helpers.body_skeleton()
    m = helpers.random_motion(skel, 15, amplitude=1.0)
    rot = m.rotations.clone()
    removed = [skel.index(n) for n in ["Spine", "Neck", "LeftShoulder", "RightShoulder", "LeftLeg"]]
    rot[:, removed] = torch.tensor([1.0, 0, 0, 0], dtype=torch.float64)  # un-animated
    m = m.copy(rotations=rot)
    keep = [n for n in skel.names if skel.index(n) not in removed]
    out = collapse(m, keep)
    assert out.joint_translations is None
    assert_same_world(m, out, keep)
    assert torch.allclose(
        out.skeleton.offsets[out.skeleton.index("Chest")], torch.tensor([0, 0.3, 0], dtype=torch.float64)
    )


def test_collapse_everything_is_identity(motion):
    out = collapse(motion, motion.skeleton.names)
    assert out.skeleton == motion.skeleton
    assert torch.allclose(out.rotations, motion.rotations, atol=1e-15)
    assert torch.equal(out.root_positions, motion.root_positions) and out.joint_translations is None


def test_collapse_with_joint_translations_and_channels(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 12, translations=True)
    out = collapse(m, MAIN)
    assert_same_world(m, out, MAIN)
    assert out.joint_translations is not None
    head = out.skeleton.index("Head")
    assert out.skeleton.has_position_channels(head)
    assert out.skeleton.rotation_order(head) == "ZXY"


def test_collapse_new_root_and_errors(motion):
    out = collapse(motion, UPPER)
    assert out.skeleton.names[0] == "Chest" and out.skeleton.has_position_channels(0)
    assert torch.allclose(out.root_positions, motion.positions()[:, motion.skeleton.index("Chest")], atol=1e-12)
    with pytest.raises(SkeletonError, match="one tree"):
        collapse(motion, ["LeftHand", "RightHand"])
    with pytest.raises(SkeletonError):
        collapse(motion, [])
    with pytest.raises(SkeletonError, match="unknown joint"):
        collapse(motion, ["Hips", "Tail"])


def test_rename(motion, check_unchanged):
    done = check_unchanged(motion)
    out = rename(motion, {"Hips": "pelvis", "Head": "head"})
    assert done() and motion.skeleton.names[0] == "Hips"
    assert out.skeleton.names[0] == "pelvis" and out.skeleton.names[4] == "head"
    assert torch.equal(out.positions(), motion.positions())
    upper = rename(motion, str.upper)
    assert upper.skeleton.names == [n.upper() for n in motion.skeleton.names]
    with pytest.raises(SkeletonError, match="unknown"):
        rename(motion, {"Tail": "tail"})
    assert rename(motion, {"Tail": "tail"}, strict=False).skeleton.names == motion.skeleton.names
    with pytest.raises(SkeletonError, match="duplicate"):
        rename(motion, {"Spine": "Chest"})


# ------------------------------------------------------------------------------------------ real data
CC_MAIN = [
    "CC_Base_Hip",
    "CC_Base_Pelvis",
    "CC_Base_Waist",
    "CC_Base_Spine01",
    "CC_Base_Spine02",
    "CC_Base_NeckTwist01",
    "CC_Base_Head",
    *[
        f"CC_Base_{s}_{part}"
        for s in "LR"
        for part in ("Thigh", "Calf", "Foot", "ToeBase", "Clavicle", "Upperarm", "Forearm", "Hand")
    ],
]


def test_collapse_ccrig_to_main_joints(real):
    m = real("cmu_iclone_ccrig/001_01.bvh")
    assert m.skeleton.num_joints == 100 and len(CC_MAIN) == 23
    out = collapse(m, CC_MAIN)
    assert out.skeleton.num_joints == 23
    idx = [m.skeleton.index(n) for n in out.skeleton.names]
    err = (out.positions() - m.positions()[:, idx]).norm(dim=-1).max()
    assert float(err) <= 1e-6 * m.height
    rot0, _ = m.world()
    rot1, _ = out.world()
    assert float(matrix_geodesic(rot1, rot0[:, idx]).max()) < 1e-6
    # CC_Base_NeckTwist02 (removed, between NeckTwist01 and Head) is animated: Head's translation varies
    assert out.joint_translations is not None


def test_simplify_channels_of_a_motion_without_frames(helpers):
    """An audit: ``simplify_channels(m[:0])`` raised torch's untyped "max(): Expected reduction dim" where mirror,
    normalize and collapse return a motion without frames. Nothing is animated in no frames: every joint is kept, on
    its rest offset, the root's zero, with the simple layout's channels."""
    for translations in (False, True):
        m = helpers.random_motion(helpers.body_skeleton(), 12, translations=translations)
        out = simplify_channels(m[:0])
        assert out.num_frames == 0 and out.joint_translations is None
        assert out.skeleton.names == m.skeleton.names
        assert torch.equal(out.skeleton.offsets[1:], m.skeleton.offsets[1:]) and not out.skeleton.offsets[0].any()
        assert [len(c) for c in out.skeleton.channels] == [6] + [3] * (m.skeleton.num_joints - 1)
        assert out.positions().shape == (0, m.skeleton.num_joints, 3)
