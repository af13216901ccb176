"""Foot contacts on constructed trajectories with known labels, and on a real walk."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skelanim import Motion, Skeleton
from skelanim.errors import ShapeError, SkeletonError
from skelanim.ops import find_feet, foot_contacts


def stepping_feet(fps: float = 30.0):
    """Two feet (Y up, 1.7 m body): foot 0 planted for frames 0-29, swings (up 0.2, forward 0.6 m) 30-49,
    planted 50-89; foot 1 swings 10-29 and 60-79, planted otherwise. Returns positions and true labels."""
    f = 90
    pos = np.zeros((f, 2, 3))
    truth = np.ones((f, 2), dtype=bool)
    pos[:, 0, 1] = 0.08  # ankle height at rest
    pos[:, 1, 1] = 0.08
    pos[:, 1, 0] = -0.2
    for joint, swings in ((0, [(30, 50)]), (1, [(10, 30), (60, 80)])):
        z = 0.0
        for t in range(f):
            for a, b in swings:
                if a <= t < b:
                    u = (t - a + 1) / (b - a)
                    pos[t, joint, 1] = 0.08 + 0.2 * np.sin(np.pi * u)
                    pos[t, joint, 2] = z + 0.6 * u
                    truth[t, joint] = False
                    break
            else:
                pos[t, joint, 2] = z
                continue
            if t == b - 1:
                z += 0.6
    return pos, truth


def test_contacts_on_constructed_steps():
    pos, truth = stepping_feet()
    got = foot_contacts(pos, 30.0, joints=[0, 1], height=1.7)
    assert isinstance(got, np.ndarray) and got.dtype == bool and got.shape == truth.shape
    # central differences blur the speed by one frame at each lift-off and touch-down
    edges = np.zeros_like(truth)
    change = np.argwhere(np.diff(truth.astype(int), axis=0) != 0)
    for t, j in change:
        edges[max(t - 1, 0) : t + 3, j] = True
    assert np.array_equal(got[~edges], truth[~edges])
    assert got[truth & ~edges].all() and not got[~truth & ~edges].any()


def test_contacts_thresholds_and_up_axis():
    pos, _truth = stepping_feet()
    # a tiny height threshold leaves only frames at the floor level itself
    assert not foot_contacts(pos, 30.0, joints=[0, 1], height_threshold=-1.0).any()
    assert foot_contacts(pos, 30.0, joints=[0, 1], height_threshold=10.0, speed_threshold=100.0).all()
    # the same data with Z up (y -> z, z -> -y) gives the same labels when told so
    zup = np.stack([pos[..., 0], -pos[..., 2], pos[..., 1]], -1)
    a = foot_contacts(pos, 30.0, joints=[0, 1], height=1.7)
    b = foot_contacts(torch.from_numpy(zup), 30.0, joints=[0, 1], height=1.7, up_axis="z")
    assert isinstance(b, torch.Tensor) and np.array_equal(a, b.numpy())
    # units: the same motion in centimetres with a height in centimetres gives the same labels
    assert np.array_equal(a, foot_contacts(pos * 100, 30.0, joints=[0, 1], height=170.0))
    with pytest.raises(ShapeError):
        foot_contacts(pos, joints=[0, 1])
    with pytest.raises(ShapeError):
        foot_contacts(pos, 30.0)
    with pytest.raises(ShapeError):
        foot_contacts(pos[..., :2], 30.0, joints=[0])


def test_find_feet_and_motion_input(body, motion):
    names = [body.names[j] for j in find_feet(body)]
    assert names == ["LeftFoot", "RightFoot", "LeftToeBase", "RightToeBase"]
    c = foot_contacts(motion)
    assert isinstance(c, torch.Tensor) and c.shape == (motion.num_frames, 4)
    c2 = foot_contacts(motion, joints=["LeftFoot"], height_threshold=0.1, speed_threshold=0.5)
    assert c2.shape == (motion.num_frames, 1)
    frozen = motion.rotations[:1].expand(motion.num_frames, -1, -1).clone()
    still = motion.copy(root_positions=motion.root_positions[:1].expand(motion.num_frames, 3).clone(), rotations=frozen)
    assert foot_contacts(still).all()
    # a frozen pose gliding at 1.2 units/s: above the default speed threshold (0.25 * 1.7 = 0.425/s)
    glide = still.copy(
        root_positions=still.root_positions
        + torch.linspace(0, 1.2 * motion.duration, motion.num_frames, dtype=torch.float64)[:, None]
        * torch.tensor([0, 0, 1.0])
    )
    assert not foot_contacts(glide).any()
    assert foot_contacts(glide, speed_threshold=1.3).all()
    noleg = Skeleton(["Root", "Head"], np.array([-1, 0]), torch.tensor([[0, 0, 0], [0, 1.0, 0]]))
    with pytest.raises(SkeletonError, match="foot"):
        foot_contacts(Motion.rest(noleg, 3))


@pytest.mark.parametrize(
    "relative,feet",
    [
        ("bandai_namco_1/dataset-1_walk_normal_001.bvh", ["Foot_L", "Foot_R", "Toes_L", "Toes_R"]),
        ("cmu_cgspeed_mb/01_01.bvh", ["LeftFoot", "RightFoot", "LeftToeBase", "RightToeBase"]),
        ("cmu_iclone_ccrig/002_01.bvh", ["CC_Base_L_Foot", "CC_Base_R_Foot", "CC_Base_L_ToeBase", "CC_Base_R_ToeBase"]),
    ],
)
def test_contacts_real(relative, feet, real):
    m = real(relative)
    assert [m.skeleton.names[j] for j in find_feet(m.skeleton)] == feet
    c = foot_contacts(m).numpy()
    assert c.shape == (m.num_frames, 4)
    if "walk" in relative:
        left = c[:, [0, 2]].any(1)
        right = c[:, [1, 3]].any(1)
        # a walk: each foot is down for a good part of the clip, and each is down while the other swings
        assert 0.2 < left.mean() < 0.95 and 0.2 < right.mean() < 0.95
        assert (left & ~right).sum() > 5 and (right & ~left).sum() > 5


def _named_legs(names: list[str], parents: list[int]) -> Skeleton:
    """A skeleton of these names and parents, each joint 1 below and to its side of its parent (shapes unused)."""
    offsets = torch.tensor([[0.0, 0.0, 0.0]] + [[0.1, -1.0, 0.0]] * (len(names) - 1))
    return Skeleton(names, np.array(parents), offsets)


def test_feet_of_unreal_and_smpl_skeletons():
    """Unreal's ik_foot_l/r (helpers under ik_foot_root, beside the legs) were taken as the feet, in contact all the
    time, and its ball_l toes and SMPL's left_foot (the toe below left_ankle) were missed (an audit's cases)."""
    ue = _named_legs(["root", "pelvis", "thigh_l", "calf_l", "foot_l", "ball_l", "thigh_r", "calf_r", "foot_r", "ball_r",
                      "ik_foot_root", "ik_foot_l", "ik_foot_r"], [-1, 0, 1, 2, 3, 4, 1, 6, 7, 8, 0, 10, 10])  # fmt: skip
    assert [ue.names[j] for j in find_feet(ue)] == ["foot_l", "foot_r", "ball_l", "ball_r"]
    smpl = _named_legs(["pelvis", "left_hip", "left_knee", "left_ankle", "left_foot", "right_hip", "right_knee",
                        "right_ankle", "right_foot"], [-1, 0, 1, 2, 3, 0, 5, 6, 7])  # fmt: skip
    assert [smpl.names[j] for j in find_feet(smpl)] == ["left_ankle", "right_ankle", "left_foot", "right_foot"]


@pytest.mark.parametrize("name", ["bandai_namco_1/dataset-1_walk_normal_001.bvh",
                                  "bandai_namco_2/dataset-2_walk_normal_001.bvh",
                                  "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"])  # fmt: skip
def test_the_default_labels_planted_feet_and_the_gait_threshold_the_stance(name, mocap_files) -> None:
    """The module docstring's account, on real walks: at the default 0.25 h/s a side (ankle or toe) is labelled in
    44-52 % of the frames, both sides in at most 6 % and neither in 4-10 % (the rolling heel strike and push-off
    left out); at the gait analysis' 1.0 h/s 54-67 % per side, both in 13-33 %, neither in none (each to the
    docstring's rounding). A walk has about 60 % stance per side and 20 % double support (Perry & Burnfield), which
    the second matches and the first does not."""
    import skelanim
    from skelanim.metrics.gait import SPEED_FRACTION

    motion = skelanim.load(mocap_files([name])[0])
    shares = {}
    for speed in (None, SPEED_FRACTION * motion.height):
        c = np.asarray(foot_contacts(motion, speed_threshold=speed))  # left foot, right foot, left toe, right toe
        left, right = c[:, 0] | c[:, 2], c[:, 1] | c[:, 3]
        shares[speed is None] = (left.mean(), right.mean(), (left & right).mean(), (~left & ~right).mean())
    left, right, both, neither = shares[True]
    assert 0.435 <= left < 0.525 and 0.435 <= right < 0.525 and both < 0.065 and 0.035 <= neither < 0.105
    left, right, both, neither = shares[False]
    assert 0.535 <= left < 0.675 and 0.535 <= right < 0.675 and 0.125 <= both < 0.335 and neither == 0.0


def test_a_crawl_is_labelled_with_the_standing_body_s_thresholds(mocap_files) -> None:
    """The default thresholds scale with the body (``Motion.stature``), not with how tall its pose stands: DeepMimic's
    crawl is the walk's URDF, bone for bone, so the two are judged alike. With the crawl's posed height (0.41 m, a
    third of the body) its feet were planted in under 1 % of the frames; with the walk's thresholds, computed here from
    the walk's own default (0.05 and 0.25 of the same size), in 22 % and 6 %."""
    import skelanim

    walk, crawl = (skelanim.load(p) for p in mocap_files(["deepmimic/humanoid3d_walk.txt",
                                                          "deepmimic/humanoid3d_crawl.txt"]))  # fmt: skip
    size = walk.skeleton.stature()
    assert size is not None and crawl.height < 0.35 * size  # the pose stands a third of the body high
    shared = np.asarray(foot_contacts(crawl, height_threshold=0.05 * size, speed_threshold=0.25 * size))
    assert np.array_equal(np.asarray(foot_contacts(crawl)), shared)
    assert np.array_equal(np.asarray(foot_contacts(walk)), np.asarray(foot_contacts(walk, height=size)))
    planted = shared.mean(0)
    assert planted.max() > 0.15 and np.asarray(foot_contacts(crawl, height=crawl.height)).mean() < 0.01



def test_joint_positions_are_taken_with_their_fps_names_and_feet(mocap_files, tmp_path) -> None:
    """``skelanim.load_positions`` returns a :class:`JointPositions`; foot contacts take its fps, its joint names and
    (its parents known) its feet found by name and its stature from frame 0's bones, and give the motion's own labels
    at that stature. Array functions read it as its positions."""
    import skelanim
    from skelanim import metrics

    motion = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])
    skelanim.save(motion, tmp_path / "walk.npz")
    data = skelanim.load_positions(tmp_path / "walk.npz")
    got = foot_contacts(data)
    size = data.skeleton().stature()
    assert size == pytest.approx(motion.stature, rel=1e-3)
    assert isinstance(got, np.ndarray) and np.array_equal(got, np.asarray(foot_contacts(motion, height=size)))
    feet = [motion.skeleton.names[j] for j in find_feet(motion.skeleton)]
    assert np.array_equal(foot_contacts(data, joints=feet[:1]), got[:, :1])
    with pytest.raises(SkeletonError, match="unknown joint 'Foot'"):
        foot_contacts(data, joints=["Foot"])
    assert np.array_equal(np.asarray(data), data.positions)
    assert float(np.asarray(metrics.mpjpe(data, data)).max()) == 0.0
