"""Metrics checked against independent sources: closed forms, numpy/scipy, hand-built poses and the rules the
docstrings state (gait, foot skating, horizons, FID and its covariance, nearest distances, the evaluate
command's foot-contact threshold)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import torch
from scipy.spatial import cKDTree

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.metrics import gait
from skelanim.metrics.compare import set_summary
from skelanim.metrics.distribution import fid, gaussian_stats, nearest_distances
from skelanim.metrics.gait import GaitError, Leg, gait_analysis, hip_flexion
from skelanim.metrics.kinematic import foot_skating, horizon_frames

#: the ``mocap_files`` fixture (tests/conftest.py): paths in the shared data, a skip (or a CI failure) when absent
MocapFiles = Callable[[list[str]], list[Path]]


# ------------------------------------------------------------------------------------------ gait: hip flexion
@pytest.mark.parametrize("turn", [0.0, 40.0, 200.0])
def test_hip_flexion_of_hand_built_thighs_is_their_sagittal_tilt(turn: float) -> None:
    """The module docstring's rule: the thigh's angle from the downward vertical within the sagittal plane,
    positive with the knee in front of the hip. A thigh straight down is 0; tilted forward by theta it is theta,
    backward -theta, whatever the heading (``turn``) and whatever sideways component (abduction, out of the
    sagittal plane) it also has."""
    thetas = np.array([0.0, 10.0, 30.0, 45.0, 80.0, -15.0, -40.0])
    a = math.radians(turn)
    fwd = np.array([math.cos(a), 0.0, math.sin(a)])
    side = np.array([-math.sin(a), 0.0, math.cos(a)])  # horizontal, across the forward direction
    up = np.array([0.0, 1.0, 0.0])
    t = np.radians(thetas)[:, None]
    hip = np.array([0.3, 0.9, -0.2])
    knee = hip + 0.45 * (np.sin(t) * fwd - np.cos(t) * up) + 0.1 * side
    positions = np.stack([np.broadcast_to(hip, knee.shape), knee, knee - [0.0, 0.4, 0.0]], axis=1)  # (F, 3, 3)
    leg = Leg("left", hip=0, knee=1, ankle=2, toe=None)
    got = hip_flexion(positions, leg, 1, np.broadcast_to(fwd, knee.shape))
    np.testing.assert_allclose(got, thetas, atol=1e-9)


def test_hip_flexion_of_a_walk_stays_within_a_quarter_turn(looped_walk: Callable[[int], Motion]) -> None:
    """A thigh never points above the horizontal in walking: |hip flexion| < 90 degrees everywhere (a flipped
    sign reads a thigh hanging down as about 180)."""
    report = gait_analysis(looped_walk(5))
    assert report.num_cycles > 0
    assert np.abs(report.hip_flexion).max() < 90.0
    assert np.abs(report.hip_flexion).max() > 10.0  # and the thigh does swing


def test_hip_flexion_of_real_walks_stays_within_a_quarter_turn(mocap_files: MocapFiles) -> None:
    for path in mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh", "xia_style/neutral_01_000.bvh"]):
        report = gait_analysis(skelanim.load(path))
        assert report.num_cycles > 0 and 10.0 < np.abs(report.hip_flexion).max() < 90.0, path.name


# ------------------------------------------------------------------------------------------ gait: cycles
# The looped DeepMimic walk (tests/conftest.py ``looped_walk``) has 38 frames per stride. The tests below give
# gait_analysis hand-made foot contacts (``side_contacts`` replaced), so the heel strikes, and the share of each
# cycle in stance, are known by construction; the positions are the walk's.
PERIOD = 38


def _contacts(frames: int, strikes: list[int], stance: int, lead: int = 0) -> np.ndarray:
    """``(F,)`` bool: in contact for ``stance`` frames from each strike (and for ``lead`` frames at the start),
    off otherwise, so the strikes are exactly the contact onsets after frame 0."""
    c = np.zeros(frames, dtype=bool)
    c[:lead] = True
    for s in strikes:
        c[s : s + stance] = True
    return c


def _with_contacts(monkeypatch: pytest.MonkeyPatch, left: np.ndarray, right: np.ndarray) -> None:
    table = np.stack([left, right], axis=1)
    monkeypatch.setattr(gait, "side_contacts", lambda *args, **kwargs: table.copy())


def _onsets(c: np.ndarray) -> list[int]:
    return [f for f in range(1, len(c)) if c[f] and not c[f - 1]]


def test_a_cycle_with_two_strikes_of_the_other_foot_is_no_cycle(looped_walk: Callable[[int], Motion],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The docstring: a cycle counts when the other foot struck exactly once in between. The right foot touches
    down twice within the left cycle 55-93 (a stumble at 60, then its strike at 74): that cycle is left out, the
    left cycles around it are kept."""
    walk = looped_walk(5)
    f = walk.num_frames
    left = _contacts(f, [17, 55, 93, 131, 169], 22)
    right = _contacts(f, [36, 74, 112, 150, 188], 22, lead=20)
    right[60:64] = True  # the stumble: a second onset of the right foot inside the left cycle 55-93
    assert _onsets(left) == [17, 55, 93, 131, 169] and _onsets(right) == [36, 60, 74, 112, 150, 188]
    _with_contacts(monkeypatch, left, right)
    report = gait_analysis(walk)
    left_cycles = [(c.start, c.end) for c in report.cycles if c.side == "left"]
    assert left_cycles == [(17, 55), (93, 131), (131, 169)]


def test_stance_fraction_is_each_foot_s_own_share_of_its_cycle(looped_walk: Callable[[int], Motion],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A limp: the left foot stays down 20 frames of its 38-frame stride, the right one 30. Per the docstring
    (share of a cycle's frames in which its foot is in contact) every left cycle has stance 20/38, every right
    cycle 30/38, and the report's mean is the mean over the cycles."""
    walk = looped_walk(5)
    f = walk.num_frames
    left = _contacts(f, [17, 55, 93, 131, 169], 20)
    right = _contacts(f, [36, 74, 112, 150, 188], 30, lead=28)
    _with_contacts(monkeypatch, left, right)
    report = gait_analysis(walk)
    sides = [c.side for c in report.cycles]
    assert sides.count("left") == sides.count("right") == 4
    for c in report.cycles:
        assert c.end - c.start == PERIOD
        assert c.stance_fraction == pytest.approx((20 if c.side == "left" else 30) / PERIOD, abs=1e-12), c
    assert report.stance_fraction == pytest.approx((20 + 30) / (2 * PERIOD), abs=1e-12)


def test_flexion_sd_is_the_sample_sd_of_the_cycle_curves(looped_walk: Callable[[int], Motion],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Cycles of unequal length (left strikes at 17, 55, 91, 131: 38, 36 and 40 frames) give unequal
    time-normalised curves; their sd per sample is numpy's sample sd (ddof=1) of knee flexion computed here
    from the positions (arccos of the thigh and shank directions, linear interpolation to 101 samples)."""
    walk = looped_walk(5)
    f = walk.num_frames
    strikes = [17, 55, 91, 131]
    left = _contacts(f, strikes, 20)
    right = _contacts(f, [36, 74, 112, 150], 20, lead=20)
    _with_contacts(monkeypatch, left, right)
    report = gait_analysis(walk)
    cycles = [(c.start, c.end) for c in report.cycles if c.side == "left"]
    assert cycles == list(itertools.pairwise(strikes))

    names = walk.skeleton.names
    pos = walk.positions().numpy()
    thigh = pos[:, names.index("left_knee")] - pos[:, names.index("left_hip")]
    shank = pos[:, names.index("left_ankle")] - pos[:, names.index("left_knee")]
    cos = np.sum(thigh * shank, axis=1) / np.linalg.norm(thigh, axis=1) / np.linalg.norm(shank, axis=1)
    knee = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    rows = np.stack([np.interp(np.linspace(s, e, 101), np.arange(f), knee) for s, e in cycles])
    mean, sd = report.curve("knee_flexion", "left")
    np.testing.assert_allclose(mean, rows.mean(axis=0), atol=1e-6)
    np.testing.assert_allclose(sd, np.std(rows, axis=0, ddof=1), atol=1e-6)
    assert np.std(rows, axis=0, ddof=1).max() > 0.5  # the curves do differ
    hips = report.hip_flexion[[i for i, c in enumerate(report.cycles) if c.side == "left"]]
    np.testing.assert_allclose(report.curve("hip_flexion", "left")[1], np.std(hips, axis=0, ddof=1), atol=1e-12)


def test_flexion_sd_of_a_real_walk_is_the_sample_sd(mocap_files: MocapFiles) -> None:
    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    report = gait_analysis(skelanim.load(path))
    assert report.num_cycles >= 2
    for name, rows in (("knee_flexion", report.knee_flexion), ("hip_flexion", report.hip_flexion)):
        np.testing.assert_allclose(report.curve(name)[1], np.std(rows, axis=0, ddof=1), atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 100.0], ids=["metres", "centimetres"])
def test_min_stride_is_a_fraction_of_the_height(looped_walk: Callable[[int], Motion], scale: float) -> None:
    """``min_stride`` is a fraction of the body height (the docstring), in any units: just below the walk's
    stride over its height every cycle is kept, just above it none is (a GaitError), also for the walk in cm."""
    walk = looped_walk(5)
    walk = walk.copy(skeleton=walk.skeleton.scaled(scale), root_positions=walk.root_positions * scale)
    report = gait_analysis(walk)
    ratios = [c.stride_length / walk.height for c in report.cycles]
    assert report.num_cycles > 2 and 0.5 < min(ratios) <= max(ratios) < 1.0  # about 1.24 m strides, 1.28 m tall
    assert gait_analysis(walk, min_stride=0.99 * min(ratios)).num_cycles == report.num_cycles
    with pytest.raises(GaitError, match="no gait cycles"):
        gait_analysis(walk, min_stride=1.01 * max(ratios))


# ------------------------------------------------------------------------------------------ foot skating
def test_foot_skating_takes_each_foot_s_own_lowest_height_as_its_floor() -> None:
    """The docstring's default floor: each foot joint's lowest height over the frames of its own sequence. Two
    foot joints resting at 0 and 0.08 (threshold 0.02) both slide at 1 unit/s along x at constant height: each
    is at its own floor, weight 1, so the score is their speed, 1. A batch of two such sequences, the second
    lifted by 0.5 and sliding at 3 units/s, scores the mean of 1 and 3."""
    fps = 10.0
    p = torch.zeros(10, 2, 3, dtype=torch.float64)
    p[:, :, 0] = torch.arange(10, dtype=torch.float64)[:, None] / fps
    p[:, 0, 1] = 0.08
    assert foot_skating(p, [0, 1], fps, threshold=0.02) == pytest.approx(1.0, abs=1e-12)
    fast = p.clone()
    fast[..., 0] *= 3.0
    fast[..., 1] += 0.5
    batch = torch.stack([p, fast])
    assert foot_skating(batch, [0, 1], fps, threshold=0.02) == pytest.approx(2.0, abs=1e-12)
    assert foot_skating(batch.numpy(), [1], fps, threshold=0.02) == pytest.approx(2.0, abs=1e-12)



def test_foot_skating_weighs_each_step_by_its_midpoint_elevation() -> None:
    """The docstring's rule: a step from frame t to t + 1 weighs by the elevation at its midpoint. A foot rising
    0.01 a frame from the floor (threshold 0.02) while it slides 0.1 a frame at 10 fps: the three steps' midpoints
    lie at 0.005, 0.015 and 0.025, weights 2 - 2^(e / 0.02) clipped to [0, 1], each times the speed 1 unit/s. Read
    at a step's end (0.01, 0.02, 0.03) the weights would be 0.586, 0 and 0, a score of 0.195 instead of 0.376."""
    fps, threshold = 10.0, 0.02
    p = torch.zeros(4, 1, 3, dtype=torch.float64)
    p[:, 0, 0] = 0.1 * torch.arange(4, dtype=torch.float64)
    p[:, 0, 1] = 0.01 * torch.arange(4, dtype=torch.float64)
    weights = [min(1.0, max(0.0, 2 - 2 ** (e / threshold))) for e in (0.005, 0.015, 0.025)]
    expected = sum(weights) / 3 * 1.0
    assert expected == pytest.approx(0.3763, abs=1e-4)  # (0.811 + 0.318 + 0) / 3
    assert foot_skating(p, [0], fps, threshold=threshold, floor=0.0) == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------------------------ horizons
def test_a_horizon_one_frame_past_the_predicted_frames_is_refused() -> None:
    """``round(h * fps / 1000)`` is the 1-based frame; beyond ``frames`` predicted frames is a ValueError:
    800 ms at 25 fps is frame 20 (index 19) of 20, 840 ms frame 21, one past the end."""
    assert horizon_frames([800], 25.0, frames=20) == [19]
    with pytest.raises(ValueError, match="beyond the 20 predicted frames"):
        horizon_frames([840], 25.0, frames=20)
    with pytest.raises(ValueError, match="beyond the 1 predicted frames"):
        horizon_frames([80], 25.0, frames=1)  # frame 2 of 1


# ------------------------------------------------------------------------------------------ distribution
@pytest.mark.parametrize("rows", [2, 4, 7, 10])
def test_covariance_is_numpy_s_unbiased_one(rows: int) -> None:
    x = np.random.default_rng(rows).normal(size=(rows, 3))
    mu, sigma = gaussian_stats(x)
    np.testing.assert_allclose(mu.numpy(), x.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(sigma.numpy(), np.cov(x, rowvar=False), atol=1e-12)


@pytest.mark.parametrize("rows", [4, 6, 9])
def test_fid_of_small_sets_matches_the_sqrtm_closed_form(rows: int) -> None:
    """FID = |mu_a - mu_b|^2 + Tr(S_a + S_b - 2 sqrtm(S_a S_b)) (Heusel et al.), with numpy's unbiased
    covariances and scipy's sqrtm: on small sets a biased covariance is off by (N - 1) / N."""
    rng = np.random.default_rng(10 + rows)
    a, b = rng.normal(size=(rows, 3)), 2.0 * rng.normal(size=(rows + 2, 3)) + 0.5
    sa, sb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    expected = float(np.sum((a.mean(0) - b.mean(0)) ** 2) + np.trace(sa + sb - 2 * scipy.linalg.sqrtm(sa @ sb).real))
    assert fid(a, b) == pytest.approx(expected, rel=1e-7)


def test_nearest_distance_of_each_reference_row_to_the_reference_is_zero() -> None:
    rng = np.random.default_rng(3)
    for size in (1, 2, 3, 17):
        reference = rng.normal(size=(size, 4))
        np.testing.assert_array_equal(nearest_distances(reference, reference).numpy(), np.zeros(size))
        np.testing.assert_array_equal(nearest_distances(reference[np.arange(size)[::-1]], reference, chunk=1).numpy(), np.zeros(size))
        query = rng.normal(size=(9, 4))
        expected, _ = cKDTree(reference).query(query)
        np.testing.assert_allclose(nearest_distances(query, reference, chunk=4).numpy(), expected, atol=1e-12)


# ------------------------------------------------------------------------------------------ evaluate's threshold
def _sliding_feet(lift: float, frames: int = 30, fps: float = 30.0) -> Motion:
    """A body with two feet on a 1-unit hip (height 1), standing at frame 0, then lifted ``lift`` and gliding
    at 1 unit/s along x at that height: the first step is a vertical lift, every later one a slide."""
    sk = Skeleton(["Hips", "LeftFoot", "RightFoot"], [-1, 0, 0],
                  torch.tensor([[0.0, 1.0, 0.0], [0.1, -1.0, 0.0], [-0.1, -1.0, 0.0]], dtype=torch.float64))
    m = Motion.rest(sk, frames, fps=fps)
    root = m.root_positions.clone()
    root[1:, 1] += lift
    root[1:, 0] += (torch.arange(1, frames, dtype=torch.float64) - 1) / fps
    return m.copy(root_positions=root)


@pytest.mark.parametrize("lift", [0.005, 0.01, 0.015, 0.03, 0.1, 0.15])
def test_evaluate_foot_skating_weighs_a_lifted_foot_at_two_percent_of_the_height(lift: float) -> None:
    """``skelanim evaluate``'s foot skating (:func:`set_summary`): the contact threshold H is 2 % of the height
    (compare's documented FEET_THRESHOLD, 0.02), the weight ``clip(2 - 2^(e / H), 0, 1)`` (kinematic's module
    docstring). Each foot's floor is its height at frame 0; the F - 1 steps are one lift without horizontal
    motion and F - 2 slides at 1 unit/s at elevation ``lift``, so the mean is ``(F - 2) / (F - 1) * weight``.
    A foot lifted 3 % of the height or more (up to 20 %) does not count at all."""
    m = _sliding_feet(lift)
    height, frames = 1.0, m.num_frames
    assert float(m.positions()[:, 1:, 1].min()) == pytest.approx(0.0, abs=1e-12)
    weight = min(max(2.0 - 2.0 ** (lift / (0.02 * height)), 0.0), 1.0)
    out = set_summary([m], up_axis=1, height=height, floor=0.0)
    assert out["foot_skating"] == pytest.approx((frames - 2) / (frames - 1) * weight, abs=1e-12)
    if lift >= 0.02:
        assert out["foot_skating"] == 0.0


def test_the_metrics_take_reversed_and_strided_numpy_views():
    """A test audit: a NumPy view with a negative stride (``x[::-1]``, ``np.flip``) reached torch.as_tensor, which
    refuses it with its own ValueError; every metric now reads it as the contiguous copy it equals."""
    from skelanim.metrics import diversity, fid, foot_skating, jerk, mpjpe
    from skelanim.metrics.distribution import gaussian_stats

    rng = np.random.default_rng(5)
    feats, other = rng.normal(size=(12, 3)), rng.normal(size=(9, 3))
    view = feats[::-1]
    same = np.ascontiguousarray(view)
    assert fid(view, other) == fid(same, other)
    assert diversity(view, pairs=20) == diversity(same, pairs=20)
    assert all(torch.equal(a, b) for a, b in zip(gaussian_stats(view), gaussian_stats(same), strict=True))
    walk = np.cumsum(rng.normal(size=(8, 3, 3)), axis=0)
    flipped = np.flip(walk, axis=0)
    assert jerk(flipped, 30.0) == jerk(np.ascontiguousarray(flipped), 30.0)
    assert float(mpjpe(flipped, walk[::-1][:, ::-1][:, ::-1]).abs().max()) == 0.0
    skating = [foot_skating(p, [0, 2], 30.0, threshold=0.5) for p in (flipped, np.ascontiguousarray(flipped))]
    assert skating[0] == skating[1]
