"""IK evaluation, training and input checks against hand values, closed forms and numpy: the frames ``evaluate``
picks and the table it prints, the loss weights ``train`` refuses, the data helpers (default split, up axis, dummy
root, augmentation) and the input checks (no frames, a body of another size, the proportions, the bone refused
first, the body's size from glitched frames, the lengthening that noise gives bones)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import quat_normalize
from skelanim.errors import ShapeError


def _posed(motion, rig, stretch: dict[str, float] | None = None) -> torch.Tensor:
    """``(F, J, 3)`` float64 FK positions of ``motion``'s rotations on the rig's rest offsets, with the bone to each
    joint named in ``stretch`` made that many times its length (the IK root where the file puts it)."""
    offsets = rig.offsets.clone()
    for name, factor in (stretch or {}).items():
        offsets[rig.skeleton.names.index(name)] *= factor
    q = quat_normalize(motion.rotations)
    trans = offsets.expand(q.shape[0], -1, -1).clone()
    trans[:, rig.ik_root] = motion.positions()[:, rig.ik_root] - offsets[0]
    return forward_kinematics(q, trans, rig.parents)[1]


# ---------------------------------------------------------------- evaluate


def test_select_frames_keeps_each_window_inside_one_file():
    """Files of 20 and 5 frames, 16 frames asked: two windows of 8, spread from frame 0 to frame 24. The second is
    shortened to the 5 frames of its file (not begun in the first), and each window begins a sequence."""
    from skelanim.ik.evaluate import select_frames

    starts = torch.zeros(25, dtype=torch.bool)
    starts[[0, 20]] = True
    idx, first = select_frames(starts, 16, window=8)
    assert idx.tolist() == list(range(8)) + list(range(20, 25))
    assert first.tolist() == [True] + [False] * 7 + [True] + [False] * 4
    file_of = [0 if int(i) < 20 else 1 for i in idx]
    window_of = np.cumsum(first.numpy()) - 1
    for w in set(window_of.tolist()):  # no window spans two files
        assert len({f for f, v in zip(file_of, window_of) if v == w}) == 1


def test_format_table_puts_each_number_under_its_heading():
    from skelanim.ik.evaluate import format_table

    report = {"frames": 12, "height": 170.0, "joints": ["Hips", "Hand_L"],
              "methods": {"gat": {"local_geodesic_deg": 1.25, "global_geodesic_deg": 7.5, "mpjpe": 0.831,
                                  "mpjpe_pct_height": 0.489, "poses_per_s_batch1": 123.0, "poses_per_s_batched": 4567.0}},
              "per_joint": {"gat": {"Hips": 0.75, "Hand_L": 3.5}}}  # fmt: skip
    lines = format_table(report, noise=0.01).splitlines()
    head = lines[2].split()
    assert head[:5] == ["method", "local", "deg", "global", "deg"]
    row = next(line for line in lines if line.startswith("gat ")).split()
    assert [float(v) for v in row[1:]] == [1.25, 7.5, 0.831, 0.489, 123.0, 4567.0]
    assert next(line for line in lines if line.startswith("Hand_L")).split()[1:] == ["3.50"]
    assert lines[0].startswith("12 frames, height 170, input noise 1% of height")


# ---------------------------------------------------------------- train


@pytest.mark.parametrize("weights", [{"mirror": 1.5}, {"noisy": 1.5}])
def test_train_refuses_fractions_above_one_before_reading_data(tmp_path, weights):
    from skelanim.ik.train import LossWeights, train

    with pytest.raises(ValueError, match="fractions"):
        train(["no-such-file.bvh"], tmp_path / "model", weights=LossWeights(**weights))


# ---------------------------------------------------------------- data


def test_default_split_validates_every_tenth_file_from_the_sixth():
    """With no ``--val`` pattern: of 5 files or fewer the last validates (checked_split's message says so); from 6 on,
    every tenth (sorted) starting with the sixth, so 6 files still validate on the last."""
    from skelanim.ik.data import split_files

    names = [Path(f"clip_{i:02d}.bvh") for i in range(20)]
    train, val = split_files(names)
    assert val == [names[5], names[15]] and train == [n for i, n in enumerate(names) if i not in (5, 15)]
    for n in range(1, 7):
        assert split_files(names[:n])[1] == [names[n - 1]]
    assert split_files(names[:20], exclude=["clip_00.bvh"])[1] == [names[6], names[16]]


def test_up_axis_is_the_axis_the_poses_are_tallest_along():
    import skelanim
    from skelanim.data.samples import sample_path
    from skelanim.ik.data import up_axis

    walk = skelanim.load(sample_path("walk"))  # the DeepMimic humanoid: Y up
    assert up_axis(walk.positions().float()) == 1
    rng = np.random.default_rng(0)
    for axis in range(3):  # a 1.7 tall column, 0.5 and 0.3 wide
        size = np.roll([1.7, 0.5, 0.3], axis)
        points = torch.from_numpy(rng.uniform(-0.5, 0.5, (40, 15, 3)) * size)
        assert up_axis(points) == axis


def test_up_axis_of_the_bandai_training_poses_is_y(bandai_motion, bandai_rig):
    from skelanim.ik.data import pose_set, up_axis

    names, pos = bandai_motion.skeleton.names, bandai_motion.positions()  # Y up: the head is above the toes along Y
    assert int((pos[:, names.index("Head")] - pos[:, names.index("Toes_L")]).mean(0).abs().argmax()) == 1
    assert up_axis(pose_set([bandai_motion], bandai_rig).positions) == 1


def test_a_rotating_root_is_not_a_dummy():
    """Joint 0 with one child is a dummy only while it never rotates (in every motion given)."""
    from skelanim.core.motion import Motion
    from skelanim.core.skeleton import Skeleton
    from skelanim.ik.data import detect_ik_root

    skeleton = Skeleton(["root", "hips", "spine"], [-1, 0, 1], [[0, 0, 0], [0, 1, 0], [0, 0.5, 0]])
    still = torch.zeros(4, 3, 4, dtype=torch.float64)
    still[..., 0] = 1.0
    turning = still.clone()
    turning[2, 0] = torch.tensor([0.9659258262890683, 0.0, 0.25881904510252074, 0.0])  # 30 degrees about y
    zero = torch.zeros(4, 3)
    assert detect_ik_root([Motion(skeleton, still, zero, 30.0)]) == 1
    assert detect_ik_root([Motion(skeleton, turning, zero, 30.0)]) == 0
    assert detect_ik_root([Motion(skeleton, still, zero, 30.0), Motion(skeleton, turning, zero, 30.0)]) == 0


def test_augmentation_never_turns_a_dummy_root(bandai_motion, bandai_rig, bandai_poses):
    """The heading turns the positions and the world rotations of the joints below the dummy root together; the
    dummy root itself never rotates (identity, as the files have it)."""
    from skelanim.ik.data import augment

    rig = bandai_rig
    assert rig.ik_root == 1 and rig.fixed.tolist()[:2] == [True, False]
    _, world, pos = bandai_poses
    rel = (pos - pos[:, 1:2]).float()
    world = world.float()[:16]
    _, clean, turned = augment(rel[:16], world, rig, torch.Generator().manual_seed(0), up=1)
    eye = torch.eye(3).expand(16, 3, 3)
    assert torch.allclose(world[:, 0], eye, atol=1e-6)
    assert torch.allclose(turned[:, 0], eye, atol=1e-6)
    heading = turned[:, 1] @ world[:, 1].transpose(1, 2)  # the turn each sample got
    assert float((heading - eye).abs().amax()) > 0.1
    assert torch.allclose(clean[:, 2:], rel[:16, 2:] @ heading.transpose(1, 2), atol=1e-3)
    assert torch.allclose(turned[:, 2:], heading[:, None] @ world[:, 2:], atol=1e-5)


# ---------------------------------------------------------------- checks


def test_no_frames_is_a_shape_error(bandai_rig):
    from skelanim.ik.checks import check_positions
    from skelanim.ik.solve import solve

    empty = np.zeros((0, 22, 3))
    with pytest.raises(ShapeError, match="no frames"):
        check_positions(empty, bandai_rig.skeleton, ik_root=1)
    with pytest.raises(ShapeError, match="no frames"):
        solve(empty)


def test_a_body_40_percent_larger_warns_and_20_percent_does_not(bandai_motion, bandai_rig):
    """SCALE_WARNING is 1.25: a body 1.4 times the model's (or 1/1.3) warns, one 1.2 times (or 1/1.2) does not."""
    from skelanim.ik.checks import check_positions

    pos = _posed(bandai_motion, bandai_rig)
    for factor in (1.4, 1 / 1.3):
        with pytest.warns(UserWarning, match=f"bones are {factor:.3g} times the model skeleton's"):
            check_positions(pos * factor, bandai_rig.skeleton, ik_root=1)
    for factor in (1.2, 1 / 1.2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_positions(pos * factor, bandai_rig.skeleton, ik_root=1)
        assert not [w for w in caught if "times the model skeleton's" in str(w.message)]


def test_proportions_are_judged_on_clips_of_exactly_proportion_frames(bandai_motion, bandai_rig):
    """A thigh 15 % long (3 % of the height) warns on a clip of PROPORTION_FRAMES frames ("at least"), not one
    frame shorter."""
    from skelanim.ik.checks import PROPORTION_FRAMES, warn_proportions

    pos = _posed(bandai_motion, bandai_rig, {"LowerLeg_L": 1.15})
    with pytest.warns(UserWarning, match="the bone to LowerLeg_L is 1.15 times it"):
        warn_proportions(pos[:PROPORTION_FRAMES], bandai_rig.skeleton, ik_root=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_proportions(pos[: PROPORTION_FRAMES - 1], bandai_rig.skeleton, ik_root=1)


def test_the_refusal_names_the_first_bone_off(bandai_motion, bandai_rig):
    """Forearm L (joint 8) and shin R (joint 19) three times their length: 2 of the 20 bones below the IK root are
    off, and the message names the first in joint order."""
    from skelanim.ik.checks import check_positions

    pos = _posed(bandai_motion, bandai_rig, {"Hand_L": 3.0, "Foot_R": 3.0})
    with pytest.raises(ShapeError) as err:
        check_positions(pos, bandai_rig.skeleton, ik_root=1)
    assert "2 of 20 bones" in str(err.value) and "the bone to Hand_L is 3 times it" in str(err.value)


def test_bone_slack_is_a_fraction_of_the_bodys_own_height(bandai_motion, bandai_rig):
    """A body 0.55 times the model's with its chest bone (4.9 % of the height) 2.5 times long: the bone is 0.825 *
    4.9 % = 4.0 % of the model's height off, 7.4 % of the body's own height, past BONE_SLACK (5 %): refused."""
    from skelanim.ik.checks import check_positions

    pos = _posed(bandai_motion, bandai_rig, {"Chest": 2.5}) * 0.55
    with pytest.raises(ShapeError, match="the bone to Chest is 2.5 times it"):
        check_positions(pos, bandai_rig.skeleton, ik_root=1)


def test_body_scale_ignores_three_glitched_frames_of_nine(bandai_motion, bandai_rig):
    """The median over frames (per its doc): a body 0.8 times the model's, three of nine frames blown up tenfold."""
    from skelanim.ik.checks import body_scale

    pos = _posed(bandai_motion[:9], bandai_rig) * 0.8
    pos[[1, 4, 7]] *= 10.0
    assert body_scale(pos, bandai_rig.skeleton) == pytest.approx(0.8, rel=1e-9)


def test_noise_lengthening_matches_a_simulation():
    """``2 sigma^2 / l^2`` (its doc), checked against numpy: bones of 1, 2 and 3 (a column 6 tall, so 1/6, 1/3 and 1/2
    of the height) between joints with independent Gaussian noise sigma per axis; the median over bones is the middle
    one's mean relative lengthening."""
    from skelanim.core.skeleton import Skeleton
    from skelanim.ik.checks import noise_lengthening

    skeleton = Skeleton(["a", "b", "c", "d"], [-1, 0, 1, 2], [[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 3, 0]])
    assert skeleton.height() == pytest.approx(6.0)
    sigma = 0.03  # of the height
    rng = np.random.default_rng(0)
    gains = []
    for length in (1.0, 2.0, 3.0):
        bone = rng.normal(0, sigma * 6, (1_000_000, 3)) - rng.normal(0, sigma * 6, (1_000_000, 3))
        bone[:, 1] += length
        gains.append(np.linalg.norm(bone, axis=1).mean() / length - 1)
    simulated = float(np.median(gains))
    assert simulated == pytest.approx(2 * sigma**2 * 3**2, rel=0.05)  # the middle bone: l = 1/3
    assert noise_lengthening(sigma, skeleton) == pytest.approx(simulated, rel=0.1)


def test_select_frames_scores_no_frame_twice():
    """One file of 10 frames, 9 asked in windows of 8: windows start at frames 0 and (shifted back from 9 to end in
    the file) 2. The second adds only frames 8 and 9, which go on from the first window: frames 0-8 once each, one
    sequence. Two files of 10: the second window, in the other file, starts its own sequence."""
    from skelanim.ik.evaluate import select_frames

    starts = torch.zeros(10, dtype=torch.bool)
    starts[0] = True
    idx, first = select_frames(starts, 9, window=8)
    assert idx.tolist() == list(range(9))
    assert first.tolist() == [True] + [False] * 8
    starts = torch.zeros(20, dtype=torch.bool)
    starts[[0, 10]] = True
    idx, first = select_frames(starts, 16, window=8)
    assert idx.tolist() == list(range(8)) + list(range(12, 20))
    assert first.tolist() == [True] + [False] * 7 + [True] + [False] * 7
    assert len(set(idx.tolist())) == len(idx)
