"""Skeleton topology helpers, Motion containers and forward kinematics on hand-checked cases."""

import math

import numpy as np
import pytest
import torch

from skelanim import Motion, Skeleton
from skelanim.core.kinematics import forward_kinematics
from skelanim.core.skeleton import head_and_feet
from skelanim.errors import ShapeError, SkeletonError


def small_body() -> Skeleton:
    names = ["Hips", "Spine", "Head", "LeftUpLeg", "LeftLeg", "RightUpLeg", "RightLeg", "LeftArm", "RightArm"]
    parents = [-1, 0, 1, 0, 3, 0, 5, 1, 1]
    offsets = [
        [0, 100, 0], [0, 20, 0], [0, 50, 0], [10, 0, 0], [0, -45, 0], [-10, 0, 0], [0, -45, 0],
        [15, 40, 0], [-15, 40, 0],
    ]
    return Skeleton(names, np.array(parents), torch.tensor(offsets, dtype=torch.float64),
                    end_sites={2: torch.tensor([0.0, 10.0, 0.0])})


def test_topology_helpers():
    sk = small_body()
    assert sk.children("Hips") == [1, 3, 5]
    assert sk.children(1) == [2, 7, 8]
    assert sk.chain("Hips", "LeftLeg") == [0, 3, 4]
    with pytest.raises(SkeletonError, match="not a descendant"):
        sk.chain("LeftUpLeg", "Head")
    chains = sk.chains()
    assert sorted(j for c in chains for j in c) == list(range(sk.num_joints))
    assert [0] in chains and [3, 4] in chains
    assert sk.leaves == [2, 4, 6, 7, 8]
    assert sorted(sk.left_right_pairs()) == [(3, 5), (4, 6), (7, 8)]
    perm = sk.mirror_permutation()
    assert perm[3] == 5 and perm[5] == 3 and perm[0] == 0
    assert np.array_equal(perm[perm], np.arange(sk.num_joints))


def test_pelvis_is_where_the_body_branches():
    sk = small_body()
    assert sk.pelvis == 0  # the root branches
    dummy = Skeleton(["Root", *sk.names], np.array([-1, *(p + 1 for p in sk.parents)]),
                     torch.cat([torch.zeros(1, 3, dtype=torch.float64), sk.offsets]))  # a static root above it
    assert dummy.pelvis == 1 and dummy.names[1] == "Hips"
    chain = Skeleton(["A", "B", "C"], np.array([-1, 0, 1]), torch.zeros(3, 3))
    assert chain.pelvis == 0  # never branches


def test_topology_difference_names_the_first_difference():
    sk = small_body()
    assert sk.topology_difference(small_body()) is None and sk.same_topology(small_body())
    renamed = Skeleton([*sk.names[:4], "LeftKnee", *sk.names[5:]], sk.parents, sk.offsets)
    assert sk.topology_difference(renamed) == "joint 4 named 'LeftKnee', not 'LeftLeg'"
    reparented = Skeleton(sk.names, np.array([-1, 0, 1, 0, 3, 0, 5, 1, 2]), sk.offsets)  # RightArm under Head
    assert sk.topology_difference(reparented) == "joint 8's parent 2, not 1"
    fewer = Skeleton(sk.names[:7], sk.parents[:7], sk.offsets[:7])
    assert sk.topology_difference(fewer) == "7 joints, not 9"
    assert not any(sk.same_topology(o) for o in (renamed, reparented, fewer))


@pytest.mark.parametrize(
    "left,right",
    [
        ("LeftHand", "RightHand"), ("UpperLeg_L", "UpperLeg_R"), ("thigh_l", "thigh_r"),
        ("L_Hip", "R_Hip"), ("CC_Base_L_Thigh", "CC_Base_R_Thigh"), ("LHipJoint", "RHipJoint"),
        ("mixamorig:LeftUpLeg", "mixamorig:RightUpLeg"), ("left_knee", "right_knee"), ("hand.L", "hand.R"), ("lhand", "rhand"),
    ],
)
def test_left_right_naming_schemes(left, right):
    sk = Skeleton(["root", left, right], np.array([-1, 0, 0]), torch.zeros(3, 3))
    assert sk.left_right_pairs() == [(1, 2)]


def test_centre_names_are_not_paired():
    names = ["Hips", "LowerBack", "Spine", "Neck", "Head", "LThumb", "RThumb", "Left", "Right"]
    sk = Skeleton(names, np.array([-1, 0, 1, 2, 3, 4, 4, 4, 4]), torch.zeros(9, 3))
    pairs = [(sk.names[a], sk.names[b]) for a, b in sk.left_right_pairs()]
    assert ("LThumb", "RThumb") in pairs and ("Left", "Right") in pairs
    assert all(a not in ("LowerBack", "Hips") for a, _ in pairs)


def test_adjacency_is_the_tree():
    sk = small_body()
    adj = sk.adjacency()
    assert torch.equal(adj, adj.T)
    assert int(adj.sum()) == 2 * (sk.num_joints - 1)
    assert adj[0, 1] == 1 and adj[1, 0] == 1 and adj[0, 2] == 0
    norm = sk.adjacency(self_loops=True, normalize=True)
    deg = sk.adjacency(self_loops=True).sum(1)
    assert torch.allclose(norm[0, 1], 1 / torch.sqrt(deg[0] * deg[1]))


def test_bad_skeletons_raise():
    with pytest.raises(SkeletonError, match="parents-first"):
        Skeleton(["a", "b"], np.array([1, -1]), torch.zeros(2, 3))
    with pytest.raises(SkeletonError, match="duplicate"):
        Skeleton(["a", "a"], np.array([-1, 0]), torch.zeros(2, 3))
    with pytest.raises(SkeletonError, match="unknown joint 'Tail'"):
        small_body().index("Tail")


def test_height_and_up_axis():
    sk = small_body()
    assert sk.up_axis() == 1
    # feet at 100-45 = 55, head end site at 100+20+50+10 = 180, lowest point 55 -> height 125
    assert sk.height() == pytest.approx(125.0)
    z_up = Skeleton(sk.names, sk.parents, sk.offsets[:, [0, 2, 1]])
    assert z_up.up_axis() == 2


def test_head_and_feet_by_name():
    names = ["Hips", "Neck", "Head", "head_end", "LeftFoot", "RightAnkle", "l_toes", "LeftHand", "Spine"]
    assert head_and_feet(names) == ([1, 2, 3], [4, 5, 6])
    assert head_and_feet(["root", "chest"]) == ([], [])


def test_up_axis_without_head_or_feet_names_is_the_largest_extent():
    sk = Skeleton(["a", "b", "c"], np.array([-1, 0, 1]), torch.tensor([[0, 0, 0], [0.1, 0, 2.0], [0, 0.3, 1.0]]))
    assert sk.up_axis() == 2


def rotation_z(angle: float) -> list[float]:
    return [math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)]


def test_fk_closed_form_planar_arm():
    # A planar 3-link arm along +X, rotating about Z: closed-form joint positions.
    sk = Skeleton(["base", "elbow", "wrist", "tip"], np.array([-1, 0, 1, 2]),
                  torch.tensor([[0, 0, 0], [2, 0, 0], [1.5, 0, 0], [1, 0, 0]], dtype=torch.float64))
    a, b, c = 0.3, -1.1, 0.7
    rot = torch.tensor([[rotation_z(a), rotation_z(b), rotation_z(c), rotation_z(0.0)]], dtype=torch.float64)
    motion = Motion(sk, rot, torch.tensor([[1.0, 2.0, 3.0]]), fps=30)
    pos = motion.positions()[0]
    expect_elbow = np.array([1 + 2 * math.cos(a), 2 + 2 * math.sin(a), 3])
    expect_wrist = expect_elbow + 1.5 * np.array([math.cos(a + b), math.sin(a + b), 0])
    expect_tip = expect_wrist + 1.0 * np.array([math.cos(a + b + c), math.sin(a + b + c), 0])
    assert np.allclose(pos.numpy(), [[1, 2, 3], expect_elbow, expect_wrist, expect_tip], atol=1e-12)


def test_fk_batched_and_differentiable():
    sk = small_body()
    rot = torch.randn(2, 5, sk.num_joints, 4, dtype=torch.float64, requires_grad=True)
    trans = sk.offsets.expand(2, 5, -1, -1).clone()
    world_rot, world_pos = forward_kinematics(rot, trans, sk.parents)
    assert world_rot.shape == (2, 5, sk.num_joints, 3, 3) and world_pos.shape == (2, 5, sk.num_joints, 3)
    world_pos.sum().backward()
    assert torch.isfinite(rot.grad).all() and rot.grad.abs().sum() > 0
    # Unit quaternions in -> orthonormal world rotations out
    eye = world_rot @ world_rot.transpose(-1, -2)
    assert torch.allclose(eye, torch.eye(3, dtype=torch.float64).expand_as(eye), atol=1e-10)


def test_end_sites_and_rest_motion():
    sk = small_body()
    motion = Motion.rest(sk, num_frames=3)
    pos = motion.positions(end_sites=True)
    assert pos.shape == (3, sk.num_joints + 1, 3)
    assert torch.allclose(pos[0, -1], torch.tensor([0.0, 180.0, 0.0], dtype=torch.float64))
    assert motion.end_site_names() == ["Head_end"]


def test_motion_slicing_concatenation_and_validation():
    sk = small_body()
    motion = Motion.rest(sk, num_frames=10, fps=60)
    assert motion.duration == pytest.approx(9 / 60)
    part = motion[2:5]
    assert part.num_frames == 3 and part.fps == 60
    joined = Motion.concatenate([part, motion[5:]])
    assert joined.num_frames == 8
    moving = motion.copy(root_positions=torch.arange(30, dtype=torch.float64).reshape(10, 3))
    for index in (3, np.int64(3), torch.tensor(3), np.array(3)):  # e.g. from argmax: one frame, as with an int
        one = moving[index]
        assert one.num_frames == 1 and torch.equal(one.root_positions[0], moving.root_positions[3])
    assert torch.equal(moving[np.int32(-1)].root_positions, moving.root_positions[-1:])
    with pytest.raises(ShapeError, match="resample"):
        Motion.concatenate([motion, motion.copy(fps=30)])
    with pytest.raises(ShapeError, match="rotations must be"):
        Motion(sk, torch.zeros(4, 3, 4), torch.zeros(4, 3), 30)
    with pytest.raises(ShapeError, match="fps"):
        Motion(sk, motion.rotations, motion.root_positions, 0)


def test_skeleton_dict_round_trip():
    sk = small_body()
    assert Skeleton.from_dict(sk.to_dict()) == sk


def _turned(motion, axis: list[float], angle: float):
    """``motion`` with its root turned by ``angle`` about ``axis`` (the rest pose keeps its up axis)."""
    from skelanim.core.rotations import axis_angle_to_quat, quat_apply, quat_multiply

    turn = axis_angle_to_quat(torch.tensor(axis, dtype=torch.float64), torch.tensor(angle, dtype=torch.float64))
    rotations = motion.rotations.clone()
    rotations[:, 0] = quat_multiply(turn, rotations[:, 0])
    return motion.copy(rotations=rotations, root_positions=quat_apply(turn, motion.root_positions))


@pytest.mark.parametrize("relative", ["xia_style/angry_13_000.bvh", "xia_style/depressed_13_000.bvh",
                                      "cmu_cgspeed_mb/01_01.bvh", "cmu_iclone_ccrig/001_01.bvh",
                                      "deepmimic/humanoid3d_jump.txt", "deepmimic/humanoid3d_run.txt",
                                      "deepmimic/humanoid3d_spinkick.txt", "deepmimic/humanoid3d_kick.txt"])  # fmt: skip
def test_turned_captures_whose_pelvis_moves_most_along_the_up_axis_are_read_up(mocap_dir, relative: str) -> None:
    """Walks that turn, jumps and runs turned Z-up, Z-down or X-up at the root were read as Y-up (the rule
    wanted the pelvis to travel least along the up axis, and a straight walk sways less than it bobs, a jump
    rises): a CMU walk 25 m tall in a GLB. The left and right joints lie apart along the turned Y, or the body
    travels along another axis: up is the posed axis, in the whole clip and in its first 240 frames; the
    untouched clips stay Y-up, and so do the crawl and the get-up, which lie along X."""
    from skelanim.io import load

    motion = load(mocap_dir / relative)
    for clip in (motion, motion[:240]):
        assert clip.up_axis() == 1
        assert _turned(clip, [1.0, 0.0, 0.0], math.pi / 2).up_direction() == (2, 1.0)
        assert _turned(clip, [1.0, 0.0, 0.0], -math.pi / 2).up_direction() == (2, -1.0)
        assert _turned(clip, [0.0, 0.0, 1.0], -math.pi / 2).up_direction() == (0, 1.0)
    for lying in ("deepmimic/humanoid3d_crawl.txt", "deepmimic/humanoid3d_getup_facedown.txt"):
        assert load(mocap_dir / lying).up_axis() == 1


@pytest.mark.parametrize("relative", ["deepmimic/humanoid3d_crawl.txt", "deepmimic/humanoid3d_getup_facedown.txt"])
def test_a_lying_clip_turned_about_its_up_axis_keeps_it(mocap_dir, relative: str) -> None:
    """A review of ops: the crawl turned 30 degrees about Y read X-up and 60 degrees Z-down (the rule compared axes
    one by one, and a body lying between two of them spreads over both), so face_forward, which turns it, could
    not be applied twice and normalize grounded it along X. Judged in the body's own axes, every turn reads Y."""
    from skelanim import ops
    from skelanim.io import load

    clip = load(mocap_dir / relative)
    for degrees in range(0, 360, 15):
        assert _turned(clip, [0.0, 1.0, 0.0], math.radians(degrees)).up_direction() == (1, 1.0), degrees
    once = ops.face_forward(clip, forward="+z")
    assert torch.allclose(ops.face_forward(once, forward="+z").positions(), once.positions(), atol=1e-9)


@pytest.mark.parametrize(("relative", "frames"), [("cmu_cgspeed_max/131_01.bvh", slice(825, 855)),
                                                  ("cmu_cgspeed_max/131_02.bvh", slice(311, 341)),
                                                  ("cmu_iclone_ccrig/001_01.bvh", slice(344, 359))])
def test_a_turned_second_of_standing_is_read_up_along_its_body(mocap_dir, relative: str, frames: slice) -> None:
    """A review of ops: a CMU stand of one second turned Z-up read Y-up, upside down (its pelvis bobs 0.34 along
    its body and 0.11 across it, which the crawl rule took for travel along a lying body; a crawl travels a good
    part of its length), so normalize made it 4.67 tall and foot_contacts found half the contacts."""
    from skelanim.io import load

    clip = load(mocap_dir / relative)[frames]
    assert clip.up_direction() == (1, 1.0)
    assert _turned(clip, [1.0, 0.0, 0.0], math.pi / 2).up_direction() == (2, 1.0)
    assert _turned(clip, [1.0, 0.0, 0.0], -math.pi / 2).up_direction() == (2, -1.0)
    assert _turned(clip, [0.0, 0.0, 1.0], -math.pi / 2).up_direction() == (0, 1.0)


@pytest.mark.parametrize("relative", ["xia_style/neutral_01_000.bvh", "cmu_cgspeed_max/131_01.bvh",
                                      "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"])
def test_a_z_up_capture_of_a_y_up_skeleton_is_z_up(mocap_dir, relative: str) -> None:
    """Walks turned Z-up at the root (the rest pose stays Y-up): the pose stands along Z and the pelvis travels
    least along it, so Z is up; the height is the walk's own (it came out 2.8 times too small on the Xia walk)."""
    from skelanim import ops
    from skelanim.core.rotations import axis_angle_to_quat, quat_apply, quat_multiply
    from skelanim.io import load

    walk = load(mocap_dir / relative)
    turn = axis_angle_to_quat(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), torch.tensor(math.pi / 2))
    rotations = walk.rotations.clone()
    rotations[:, 0] = quat_multiply(turn, rotations[:, 0])
    z_up = walk.copy(rotations=rotations, root_positions=quat_apply(turn, walk.root_positions))
    assert walk.up_axis() == 1 and z_up.skeleton.up_axis() == 1 and z_up.up_axis() == 2
    assert z_up.height == pytest.approx(walk.height, rel=1e-9)
    assert float(ops.normalize(z_up).positions(end_sites=True)[0, :, 2].min()) == pytest.approx(0.0, abs=1e-9)
    assert bool((ops.foot_contacts(z_up) == ops.foot_contacts(walk)).all())


def test_the_rest_measures_equal_the_rest_positions(mocap_dir) -> None:
    """``height`` and ``up_axis`` read the rest pose through a float64 array (torch's per-row indexing cost a
    millisecond a call, three calls per frame of IK input checks): the same sums, bit for bit, as
    :meth:`Skeleton.rest_positions`, End Sites included, for a float32 skeleton too."""
    from skelanim.io import load

    for relative in ("bandai_namco_1/dataset-1_walk_normal_001.bvh", "cmu_cgspeed_mb/01_01.bvh"):
        sk = load(mocap_dir / relative).skeleton
        for skeleton in (sk, Skeleton(sk.names, sk.parents, sk.offsets.float(), sk.channels, sk.end_sites)):
            for ends in (False, True):
                expected = skeleton.rest_positions(end_sites=ends).numpy()
                assert np.array_equal(skeleton._rest_array(end_sites=ends), expected)


def test_a_skeleton_whose_names_say_nothing_is_up_along_its_moving_bodys_height(mocap_dir) -> None:
    """CMU 01_01 with its joints renamed J0, J1, ...: no head or feet to go by, and its T-pose rest is as wide
    along X (26.07) as it is tall (25.65), so the rest said X and the video drew the walk lying on its side. The
    walk's median extent says Y (26.1 against 9.0), and Z once the capture is turned Z-up."""
    from skelanim.io import load

    walk = load(mocap_dir / "cmu_cgspeed_mb/01_01.bvh")[:240]
    sk = walk.skeleton
    anonymous = walk.copy(skeleton=Skeleton([f"J{i}" for i in range(sk.num_joints)], sk.parents, sk.offsets,
                                            end_sites=sk.end_sites))  # fmt: skip
    assert anonymous.skeleton.up_axis() == 0  # the rest pose alone
    assert anonymous.up_axis() == 1 and _turned(anonymous, [1.0, 0.0, 0.0], math.pi / 2).up_axis() == 2
    assert anonymous.height == pytest.approx(walk.height)


def test_concatenating_the_same_skeleton_in_other_units_keeps_each_clips_joints(mocap_dir) -> None:
    """CMU 01_01 and the same frames in metres (offsets scaled): the second clip's joints moved by up to 16 units
    on the first's bones; now every clip keeps its own positions (through joint translations), as it already did
    when the first carried joint translations."""
    from skelanim.core.motion import Motion
    from skelanim.io import load

    a = load(mocap_dir / "cmu_cgspeed_mb/01_01.bvh")[:50]
    s = 0.0254 / 0.45
    b = Motion(a.skeleton.scaled(s), a.rotations, a.root_positions * s, a.fps)
    joined = Motion.concatenate([a, b])
    assert float((joined.positions()[:50] - a.positions()).abs().max()) < 1e-9
    assert float((joined.positions()[50:] - b.positions()).abs().max()) < 1e-9
    assert Motion.concatenate([a, a]).joint_translations is None  # one skeleton: no translations added


def test_stature_is_the_bone_path_from_head_to_foot() -> None:
    names = ["Hips", "Spine", "Head", "LeftUpLeg", "LeftLeg", "LeftFoot", "RightUpLeg", "RightLeg"]
    offsets = [[0, 0, 0], [0, 10, 0], [0, 5, 0], [3, -1, 0], [0, -8, 0], [0, -8, 1], [-3, -1, 0], [0, -8, 0]]
    sk = Skeleton(names, np.array([-1, 0, 1, 0, 3, 4, 0, 6]), torch.tensor(offsets, dtype=torch.float64))
    by_hand = 5 + 10 + math.sqrt(10) + 8 + math.sqrt(65)  # Head, Spine up to the hips; LeftUpLeg, LeftLeg, LeftFoot
    assert sk.stature() == pytest.approx(by_hand)  # RightLeg is not named like a foot: the left path only
    assert sk.scaled(2.5).stature() == pytest.approx(2.5 * by_hand)
    # a review: the longest pair had let one prop decide (an axe's tip named Axe_Head, 100 units from the hand)
    with_axe = Skeleton(["Hips", "Spine", "Neck", "Head", "Arm", "Axe_Head", "LeftUpLeg", "LeftFoot", "RightUpLeg",
                         "RightFoot"], np.array([-1, 0, 1, 2, 1, 4, 0, 6, 0, 8]),
                        torch.tensor([[0, 0, 0], [0, 10, 0], [0, 4, 0], [0, 2, 0], [5, 0, 0], [100, 0, 0],
                                      [3, 0, 0], [0, -16, 0], [-3, 0, 0], [0, -16, 0]], dtype=torch.float64))
    assert with_axe.stature() == pytest.approx(10 + 4 + 2 + 3 + 16)  # Head to a foot (Neck to a foot: 2 less)
    # an audit: two figures under one scene root, 300 units apart, had paired each head with the other's feet too
    one = ["Hips", "Spine", "Head", "LeftUpLeg", "LeftFoot", "RightUpLeg", "RightFoot"]
    body = [[0, 10, 0], [0, 5, 0], [3, 0, 0], [0, -16, 0], [-3, 0, 0], [0, -16, 0]]
    two = Skeleton(["Scene", *one, *[f"B_{n}" for n in one]],
                   np.array([-1, 0, 1, 2, 1, 4, 1, 6, 0, 8, 9, 8, 11, 8, 13]),
                   torch.tensor([[0, 0, 0], [0, 0, 0], *body, [300, 0, 0], *body], dtype=torch.float64))
    assert two.stature() == pytest.approx(5 + 10 + 3 + 16)
    headless = Skeleton(["A", "B", "C"], np.array([-1, 0, 1]), torch.ones(3, 3))
    assert headless.stature() is None
    motion = Motion.rest(headless)
    assert motion.stature == motion.height  # no head or foot by name: the posed height


def test_motion_height_is_the_lower_middle_extent_of_an_even_count_of_frames():
    """:attr:`Motion.height` is one frame's extent (its docstring): with two frames, the smaller, not their mean."""
    sk = Skeleton(["root", "top"], np.array([-1, 0]), torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    motion = Motion.rest(sk, num_frames=2)
    quats = motion.rotations.clone()
    quats[1, 0] = torch.tensor([math.cos(math.pi / 6), 0.0, 0.0, math.sin(math.pi / 6)])  # frame 1: tilted 60° about z
    tilted = motion.copy(rotations=quats)
    assert tilted.height == pytest.approx(0.5)  # cos 60°, not the mean 0.75 of the two frames' 1 and 0.5
