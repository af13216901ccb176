"""Metrics against closed forms: FID, diversity, accuracy/vote, MPJPE and angle error at horizons, jerk,
foot skating, ground penetration, bone-length consistency."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim.core.rotations import rotvec_to_matrix
from skelanim.metrics.distribution import (
    accuracy,
    diversity,
    fid,
    frechet_distance,
    gaussian_stats,
    group_means,
    multimodality,
    nearest_distances,
    outlier_share,
    vote,
)
from skelanim.metrics.kinematic import (
    angle_error_at,
    bone_length_error,
    foot_skating,
    ground_penetration,
    horizon_frames,
    jerk,
    mpjpe,
    mpjpe_at,
)  # fmt: skip


# ------------------------------------------------------------------------------------------- FID & co
def test_fid_of_a_set_with_itself_is_zero():
    x = torch.randn(500, 8, generator=torch.Generator().manual_seed(0))
    assert fid(x, x) == pytest.approx(0.0, abs=1e-8)


def test_frechet_distance_closed_forms():
    mu_a, mu_b = torch.tensor([0.0, 1.0, 2.0]), torch.tensor([3.0, -1.0, 2.0])
    eye = torch.eye(3)
    assert frechet_distance(mu_a, eye, mu_b, eye) == pytest.approx(13.0)  # |mu diff|^2 for equal covariances
    a, b = torch.tensor([1.0, 4.0, 9.0]), torch.tensor([4.0, 1.0, 9.0])  # diagonal: sum (sqrt a - sqrt b)^2
    assert frechet_distance(mu_a, torch.diag(a), mu_a, torch.diag(b)) == pytest.approx(2.0)
    rot = rotvec_to_matrix(torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64)).float()  # rotated covariance: same
    s = torch.diag(a)
    assert frechet_distance(mu_a, rot @ s @ rot.T, mu_b, rot @ s @ rot.T) == pytest.approx(13.0, abs=1e-4)


def test_fid_of_shifted_gaussian_samples_is_the_squared_shift():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(20000, 4, generator=g, dtype=torch.float64)
    shift = torch.tensor([1.0, -2.0, 0.5, 0.0], dtype=torch.float64)
    y = torch.randn(20000, 4, generator=g, dtype=torch.float64) + shift
    assert fid(x, y) == pytest.approx(float((shift**2).sum()), rel=0.03)
    assert fid(x.numpy(), y.numpy()) == pytest.approx(fid(x, y))


def test_gaussian_stats_rejects_one_sample():
    with pytest.raises(ValueError):
        gaussian_stats(torch.zeros(1, 3))


def test_diversity_and_multimodality():
    assert diversity(torch.ones(10, 3)) == 0.0
    two = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    # pairs of distinct rows: two points at distance 5 are always 5 apart (draws with replacement gave about 2.5)
    assert diversity(two, pairs=4000) == pytest.approx(5.0, abs=1e-12)
    three = torch.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 8.0]])  # distances 5, 8, 5: a mean of 6 over distinct pairs
    assert diversity(three, pairs=20000) == pytest.approx(6.0, abs=0.05)
    feats = torch.cat([torch.zeros(5, 2), torch.full((5, 2), 10.0)])
    labels = [0] * 5 + [1] * 5
    assert multimodality(feats, labels) == 0.0  # identical within each class
    assert diversity(feats, pairs=4000) > 5.0
    assert math.isnan(multimodality(torch.zeros(2, 2), [0, 1]))


def test_multimodality_by_hand():
    """Multimodality (module docstring; Guo et al. 2020, Action2Motion): the mean distance between pairs of samples
    of one class, averaged over the classes with two or more samples. Classes whose distinct pairs are all the same distance apart make it exact whatever pairs are drawn:
    class 7 is two points 5 apart (a 3-4-5 triangle), class 2 the corners of an equilateral triangle of side 2,
    classes 9 and 4 one sample each (left out, not counted as 0). By hand: (5 + 2) / 2 = 3.5; class 7 alone: 5."""
    feats = torch.tensor([[0.0, 0.0], [10.0, 0.0], [1.0, 1.0], [100.0, 100.0], [3.0, 4.0], [12.0, 0.0],
                          [11.0, math.sqrt(3.0)]], dtype=torch.float64)  # fmt: skip
    labels = [7, 2, 9, 4, 7, 2, 2]
    assert multimodality(feats, labels) == pytest.approx(3.5, abs=1e-12)
    assert multimodality(feats.numpy(), torch.tensor(labels), pairs=7, seed=3) == pytest.approx(3.5, abs=1e-12)
    assert multimodality(feats[[0, 4, 2]], [7, 7, 9]) == pytest.approx(5.0, abs=1e-12)


def test_nearest_distances_match_a_kd_tree():
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(0)
    reference, query = rng.normal(size=(500, 7)), rng.normal(size=(300, 7))
    expected, _ = cKDTree(reference).query(query)
    assert np.allclose(nearest_distances(query, reference, chunk=64).numpy(), expected, atol=1e-12)


def test_outlier_share_counts_rows_beyond_the_calibration_quantile():
    rng = np.random.default_rng(1)
    reference = rng.normal(size=(2000, 3))
    calibration = rng.normal(size=(1000, 3))  # drawn like the reference: about 1 % beyond the 0.99 quantile
    share, threshold = outlier_share(calibration, reference, calibration, q=0.99)
    assert share == pytest.approx(0.01, abs=1e-3) and threshold > 0
    like = rng.normal(size=(4000, 3))
    assert outlier_share(like, reference, calibration)[0] < 0.03
    far = like + np.array([6.0, 0.0, 0.0])  # every row far from the real cloud (a knee at the chest)
    assert outlier_share(far, reference, calibration)[0] > 0.95
    half = np.concatenate([like[:2000], far[:2000]])
    assert outlier_share(half, reference, calibration)[0] == pytest.approx(0.5, abs=0.03)


def test_accuracy_and_vote():
    assert accuracy([1, 2, 3, 4], [1, 2, 0, 4]) == 0.75
    with pytest.raises(ValueError):
        accuracy([1, 2], [1])
    probs = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.7, 0.3], [0.45, 0.55]])
    groups, pred = vote(probs, [7, 7, 7, 3, 3])
    assert groups.tolist() == [3, 7]
    assert pred.tolist() == [0, 1]  # group 3: 1.15 vs 0.85; group 7: 1.4 vs 1.6
    groups, means = group_means(probs, [7, 7, 7, 3, 3])
    torch.testing.assert_close(means, torch.tensor([[0.575, 0.425], [1.4 / 3, 1.6 / 3]]))  # by hand
    # an API review: NumPy probabilities had crashed (a NumPy dtype given to torch.zeros); the same answers
    groups_np, pred_np = vote(probs.numpy(), np.array([7, 7, 7, 3, 3]))
    assert groups_np.tolist() == [3, 7] and pred_np.tolist() == [0, 1]
    torch.testing.assert_close(group_means(probs.double().numpy(), [7, 7, 7, 3, 3])[1],
                               torch.tensor([[0.575, 0.425], [1.4 / 3, 1.6 / 3]], dtype=torch.float64))  # fmt: skip


# ------------------------------------------------------------------------------------------- kinematic
def test_horizon_frames_at_25_fps():
    assert horizon_frames([80, 160, 320, 400, 560, 1000], 25.0) == [1, 3, 7, 9, 13, 24]
    with pytest.raises(ValueError):
        horizon_frames([10], 25.0)


def test_mpjpe_and_angle_error_at_horizons():
    pred = torch.zeros(2, 25, 3, 3)
    target = torch.zeros(2, 25, 3, 3)
    target[..., 0] = torch.arange(25, dtype=torch.float32)[None, :, None]  # error grows by 1 per frame
    assert mpjpe_at(pred, target, [80, 1000], 25.0) == pytest.approx([1.0, 24.0])
    assert mpjpe_at(pred, target, [80], 25.0, height=2.0) == pytest.approx([0.5])
    angles = torch.zeros(1, 25, 2, 3)
    angles[..., 2] = torch.deg2rad(torch.arange(25, dtype=torch.float64))[None, :, None]
    rot = rotvec_to_matrix(angles)
    ident = torch.eye(3, dtype=torch.float64).expand_as(rot)
    assert angle_error_at(rot, ident, [80, 400], 25.0) == pytest.approx([1.0, 9.0], abs=1e-4)


def test_jerk_of_a_cubic_and_of_a_standing_pose():
    fps = 30.0
    t = torch.arange(40, dtype=torch.float64) / fps
    a = 0.7
    pos = torch.zeros(40, 2, 3, dtype=torch.float64)
    pos[:, :, 1] = a * t[:, None] ** 3  # d3/dt3 = 6a, exact for third finite differences
    assert jerk(pos, fps) == pytest.approx(6 * a, rel=1e-6)
    assert jerk(pos, fps, height=2.0) == pytest.approx(3 * a, rel=1e-6)
    assert jerk(torch.ones(40, 2, 3), fps) == 0.0
    assert jerk(torch.ones(3, 2, 3), fps) == 0.0


def _feet_motion(speed: float, lift: float, frames: int = 20, fps: float = 20.0) -> torch.Tensor:
    """Two joints: 0 a static pelvis at height 1, 1 a foot at height ``lift`` sliding at ``speed`` along x."""
    pos = torch.zeros(frames, 2, 3, dtype=torch.float64)
    pos[:, 0, 1] = 1.0
    pos[:, 1, 0] = speed * torch.arange(frames) / fps
    pos[:, 1, 1] = lift
    return pos


def test_foot_skating_closed_forms():
    standing = _feet_motion(0.0, 0.0)
    assert foot_skating(standing, [1], 20.0, threshold=0.05) == 0.0
    sliding = _feet_motion(0.5, 0.0)
    assert foot_skating(sliding, [1], 20.0, threshold=0.05) == pytest.approx(0.5)  # planted: full speed counts
    assert foot_skating(sliding, [1], 20.0, threshold=0.05, height=2.0) == pytest.approx(0.25)
    lifted = _feet_motion(0.5, 0.05)  # at the threshold above a floor at 0: weight 2 - 2^1 = 0
    assert foot_skating(lifted, [1], 20.0, threshold=0.05, floor=0.0) == pytest.approx(0.0, abs=1e-12)
    assert foot_skating(lifted, [1], 20.0, threshold=0.05) == pytest.approx(0.5)  # default: its own lowest point
    half = _feet_motion(0.5, 0.05 * math.log2(1.5))  # weight 2 - 1.5 = 0.5
    assert foot_skating(half, [1], 20.0, threshold=0.05, floor=[0.0]) == pytest.approx(0.25)
    step = _feet_motion(0.5, 0.0)
    step[10:, 1, 1] = 1.0  # lifted for the second half: only the 9 steps on the floor count (the lift step has weight 0)
    assert foot_skating(step, [1], 20.0, threshold=0.05) == pytest.approx(0.5 * 9 / 19)
    assert foot_skating(_feet_motion(0.5, 0.1), [1], 20.0, threshold=0.05, floor=[0.1]) == pytest.approx(0.5)
    vertical = _feet_motion(0.0, 0.0)
    vertical[:, 1, 1] = torch.linspace(0, 0.01, 20, dtype=torch.float64)  # vertical motion is not skating
    assert foot_skating(vertical, [1], 20.0, threshold=0.05) == 0.0


def test_ground_penetration():
    pos = _feet_motion(0.0, 0.0)
    assert ground_penetration(pos) == 0.0
    pos[:10, 1, 1] = -0.02
    assert ground_penetration(pos) == pytest.approx(0.01)
    assert ground_penetration(pos, floor=0.01, height=2.0) == pytest.approx((10 * 0.03 + 10 * 0.01) / 20 / 2)


def test_bone_length_error():
    parents = [-1, 0, 1]
    offsets = torch.tensor([[0.0, 0, 0], [0, 1, 0], [0, 2, 0]])
    rest = torch.tensor([[0.0, 0, 0], [0, 1, 0], [0, 3, 0]])
    rot = rotvec_to_matrix(torch.tensor([0.1, 0.7, -0.3], dtype=torch.float64)).float()
    pos = torch.stack([rest, rest @ rot.T])  # rigid motion keeps lengths
    assert bone_length_error(pos, parents, offsets) == pytest.approx(0.0, abs=1e-6)
    assert bone_length_error(pos, parents) == pytest.approx(0.0, abs=1e-6)
    stretched = pos.clone()
    stretched[1, 2] = stretched[1, 1] + 1.5 * (stretched[1, 2] - stretched[1, 1])  # second bone 2 -> 3 in frame 1
    assert bone_length_error(stretched, parents, offsets) == pytest.approx((0 + 0 + 0 + 0.5) / 4, abs=1e-6)
    assert bone_length_error(np.asarray(stretched), parents) > 0.0
    assert bone_length_error(stretched, parents, offsets, bones=[1]) == pytest.approx(0.0, abs=1e-6)


def test_pose_errors_refuse_a_pair_of_other_shapes():
    """A target of one pose (or one frame) against a clip had broadcast and been scored without a word."""
    from skelanim.errors import ShapeError
    from skelanim.metrics.kinematic import angle_error, mpjpe

    pred = torch.randn(10, 22, 3, dtype=torch.float64)
    assert mpjpe(pred, pred + torch.tensor([0.0, 3.0, 4.0], dtype=torch.float64)).tolist() == [5.0] * 10
    for target in (pred[0], pred[:1], pred[..., :2]):
        with pytest.raises(ShapeError, match=r"\(\.\.\., T, J, 3\) arrays of one shape"):
            mpjpe(pred, target)
    rot = torch.eye(3, dtype=torch.float64).expand(10, 22, 3, 3)
    assert angle_error(rot, rot).abs().max() == 0
    with pytest.raises(ShapeError, match=r"\(\.\.\., T, J, 3, 3\) arrays of one shape"):
        angle_error(rot, rot[0])


def test_guards_a_metric_audit_asked_for():
    """A NaN position had made bone_length_error read 0.0 (a perfect score); a horizon past the predicted frames
    was a bare IndexError; NaN features a torch linear-algebra error; 150 ms at 30 fps was taken as the fourth
    frame (Python's round, half to even) where rounding up a half gives the fifth."""
    p = np.zeros((10, 3, 3))
    p[:, 1, 1], p[:, 2, 1], p[:, 2, 0] = 1.0, 2.0, np.linspace(0.0, 1.0, 10)
    assert bone_length_error(p, [-1, 0, 1]) > 0.05
    p[4, 2, 0] = np.nan
    assert math.isnan(bone_length_error(p, [-1, 0, 1]))
    with pytest.raises(ValueError, match="beyond the 20 predicted frames"):
        mpjpe_at(np.zeros((2, 20, 3, 3)), np.zeros((2, 20, 3, 3)), [1000], 25.0)
    assert horizon_frames([150, 80, 1000], 30.0) == [4, 1, 29] and horizon_frames([80, 1000], 25.0) == [1, 24]
    features = torch.randn(10, 4, dtype=torch.float64)
    bad = features.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="second feature set holds NaN"):
        fid(features, bad)


def test_kinematic_measures_refuse_arguments_that_would_score_without_a_word():
    """A review of the API: jerk at fps -1 read -0.44, skating at fps 0 or threshold 0 read 0.0, mpjpe at height 0
    inf, bone_length_error of 22 joints against 2 parents 0.0; a foot index past the joints was a bare
    IndexError. The same calls with good arguments still score."""
    from skelanim.errors import ShapeError

    p = np.zeros((6, 3, 3))
    p[:, 1, 1], p[:, 2, 1], p[:, 2, 0] = 1.0, 2.0, np.linspace(0.0, 1.0, 6) ** 3
    assert jerk(p, 10.0) > 0 and foot_skating(p, [2], 10.0, threshold=0.1) > 0
    for fps in (-1.0, 0.0, float("nan")):
        with pytest.raises(ValueError, match="fps must be a positive number"):
            jerk(p, fps)
        with pytest.raises(ValueError, match="fps must be a positive number"):
            foot_skating(p, [2], fps, threshold=0.1)
    with pytest.raises(ValueError, match="threshold must be a positive number, got 0"):
        foot_skating(p, [2], 10.0, threshold=0)
    with pytest.raises(ValueError, match="axis must be 0, 1 or 2, got 3"):
        foot_skating(p, [2], 10.0, threshold=0.1, up_axis=3)
    with pytest.raises(ValueError, match="up_axis must point up"):
        ground_penetration(p, up_axis="-y")
    assert foot_skating(p, [2], 10.0, threshold=0.1, up_axis="y") == foot_skating(p, [2], 10.0, threshold=0.1)
    with pytest.raises(ShapeError, match=r"foot joints \[99\] not joints of the 3"):
        foot_skating(p, [99], 10.0, threshold=0.1)
    with pytest.raises(ShapeError, match="floor must be one height or one per foot joint"):
        foot_skating(p, [1, 2], 10.0, threshold=0.1, floor=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="height must be a positive number"):
        mpjpe(p, p, height=0)
    with pytest.raises(ValueError, match="height must be a positive number"):
        ground_penetration(p, height=-1)
    with pytest.raises(ShapeError, match="parents name 2 joints, the positions have 3"):
        bone_length_error(p, [-1, 0])
    with pytest.raises(ShapeError, match=r"bones \[5\] not joints"):
        bone_length_error(p, [-1, 0, 1], bones=[5])
    assert bone_length_error(p, [-1, 0, 1], bones=[1]) == 0.0 < bone_length_error(p, [-1, 0, 1], bones=[2])


def test_diversity_of_few_rows_is_the_exact_mean_over_all_their_pairs():
    """A review: 300 random pairs of 17 rows (136 distinct pairs) read 18.71 where the mean over all pairs is 17.83.
    Where there are no more distinct pairs than draws, every pair counts once (here against scipy's pdist); more
    rows are still sampled."""
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(5)
    few = rng.normal(size=(17, 8)) * 3.0
    assert diversity(few, pairs=300) == pytest.approx(float(pdist(few).mean()), rel=1e-12)
    assert diversity(few, pairs=100) != pytest.approx(float(pdist(few).mean()), rel=1e-6)  # 136 pairs > 100 draws
    labels = [0] * 6 + [1] * 11
    exact = np.mean([pdist(few[:6]).mean(), pdist(few[6:]).mean()])
    assert multimodality(few, labels, pairs=55) == pytest.approx(float(exact), rel=1e-12)
