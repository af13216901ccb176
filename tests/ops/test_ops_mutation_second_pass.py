"""Second-pass mutation audit of :mod:`skelanim.ops`: options, defaults and corner cases that the other ops tests
left open (each test names the mutant it kills). Expected values are worked out by hand in the comments or computed
directly with SciPy / NumPy, never with the function under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.signal import butter, savgol_filter, sosfiltfilt
from scipy.spatial.distance import cdist

from skelanim import Motion, Skeleton
from skelanim.core.rotations import rotvec_to_quat
from skelanim.errors import ShapeError, SkeletonError
from skelanim.ops import (
    align_motions,
    butterworth,
    collapse,
    dtw,
    facing_directions,
    find_feet,
    foot_contacts,
    lateral_axis,
    mirror,
    mirror_permutation,
    normalize,
    one_euro,
    resample,
    sample_frames,
    sample_times,
    savgol,
    scale,
    simplify_channels,
    smooth,
    smooth_rotations,
    up_to_y,
)
from skelanim.ops.mirror import joint_reflections, mirror_skeleton


def _still(skel: Skeleton, root: list[list[float]], fps: float = 30.0, **kw) -> Motion:
    """Identity local rotations, the given root path."""
    f = len(root)
    rot = torch.zeros(f, skel.num_joints, 4, dtype=torch.float64)
    rot[..., 0] = 1.0
    return Motion(skel, rot, torch.tensor(root, dtype=torch.float64), fps, **kw)


def _continuous(q: np.ndarray) -> np.ndarray:
    """Sign continuity done by hand: q_t negated where q_t . q_{t-1} < 0 (after the earlier flips)."""
    q = q.copy()
    for t in range(1, len(q)):
        flip = (q[t] * q[t - 1]).sum(-1) < 0
        q[t][flip] *= -1
    return q


def _same_rotation(a: np.ndarray, b: np.ndarray, tol: float) -> None:
    """Unit quaternions equal up to sign, per quaternion."""
    err = np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1))
    assert err.max() < tol, err.max()


def _one_euro_reference(x: np.ndarray, fps: float, min_cutoff: float, beta: float, d_cutoff: float) -> np.ndarray:
    """The scalar 1-Euro filter as the filters' docstring states it (derivative of x_t - x_{t-1})."""

    def a(fc: float) -> float:
        return 1.0 / (1.0 + fps / (2.0 * math.pi * fc))

    out = np.empty_like(x)
    out[0], dx_hat = x[0], 0.0
    for t in range(1, len(x)):
        dx = (x[t] - x[t - 1]) * fps
        dx_hat = dx_hat + a(d_cutoff) * (dx - dx_hat)
        out[t] = out[t - 1] + a(min_cutoff + beta * abs(dx_hat)) * (x[t] - out[t - 1])
    return out


# ------------------------------------------------------------------ normalize
def _column() -> Skeleton:
    """Hips, a Head above it, two Feet whose End Sites lie 0.1 below them (Y up)."""
    names = ["Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0, 0, 0], [0, 0.8, 0], [0.1, -0.9, 0], [-0.1, -0.9, 0]], dtype=torch.float64)
    ends = {2: torch.tensor([0.0, -0.1, 0.1], dtype=torch.float64), 3: torch.tensor([0.0, -0.1, 0.1], dtype=torch.float64)}
    return Skeleton(names, np.array([-1, 0, 0, 0]), offsets, end_sites=ends)


def test_normalize_grounds_the_lowest_end_site_not_the_lowest_joint():
    # kills: normalize's frame-0 positions without End Sites (the feet joints, 0.1 higher, put on the ground)
    m = _still(_column(), [[2.0, 1.5, 3.0]])
    # Head at y 2.3, feet at 0.6, their End Sites at 0.5: height 1.8; the End Sites go to 0, the hips to 1.0 / 1.8
    out = normalize(m)
    assert out.root_positions[0].tolist() == pytest.approx([0.0, 1.0 / 1.8, 0.0], abs=1e-12)


def test_normalize_measures_the_default_height_along_the_up_axis_it_is_given():
    # kills: h = motion.height (along the guessed Y) where up_axis is given
    m = _still(_column(), [[2.0, 1.5, 3.0]])
    # extent along X: feet (and their End Sites) at x 2 +- 0.1, so 0.2; along Y it is 1.8
    out = normalize(m, up_axis="x", ground=False)
    assert out.skeleton.offsets[1].tolist() == pytest.approx([0.0, 0.8 / 0.2, 0.0], abs=1e-12)


def test_up_to_y_of_a_y_up_motion_is_a_new_motion():
    # kills: up_to_y handing back the input object itself (the docstring: a copy, values untouched)
    m = _still(_column(), [[2.0, 1.5, 3.0], [2.0, 1.6, 3.0]])
    out = up_to_y(m, up_axis="y")
    assert out is not m
    assert torch.equal(out.root_positions, m.root_positions) and torch.equal(out.rotations, m.rotations)


@pytest.mark.parametrize("up", ["-y", " -Y "])
def test_up_to_y_turns_an_upside_down_motion_half_a_turn_about_x(up):
    # kills: turned_up leaving a -Y-up motion as it is (only the axis compared, not its sign); the sign of a
    # spelling with spaces lost
    m = _still(_column(), [[2.0, -1.5, 3.0], [2.5, -1.4, 3.5]])
    out = up_to_y(m, up_axis=up)
    # up_to_y_matrix(1, -1) = diag(1, -1, -1): (x, y, z) -> (x, -y, -z), the root turned by the same half turn
    np.testing.assert_allclose(out.root_positions, m.root_positions * torch.tensor([1.0, -1.0, -1.0]), atol=1e-12)
    np.testing.assert_allclose(out.rotations[:, 0], np.tile([0.0, 1.0, 0.0, 0.0], (2, 1)), atol=1e-12)


@pytest.mark.parametrize("s", [math.inf, -math.inf, math.nan, 0.0])
def test_scale_refuses_a_factor_that_is_not_positive_and_finite(s):
    # kills: the finiteness check dropped (an infinite factor made a motion of inf and nan)
    with pytest.raises(ShapeError, match="scale factor"):
        scale(_still(_column(), [[0.0, 1.0, 0.0]]), s)


def test_normalize_of_a_motion_without_frames_scales_its_rest_pose():
    # kills: the early return for no frames dropped (frame 0 looked up in an empty motion)
    m = _still(_column(), [[0.0, 1.0, 0.0]])[0:0]
    out = normalize(m)
    # rest extent along Y with the End Sites: Head at 0.8, End Sites at -1.0: 1.8
    assert out.num_frames == 0
    assert out.skeleton.offsets[1].tolist() == pytest.approx([0.0, 0.8 / 1.8, 0.0], abs=1e-12)


# ------------------------------------------------------------------ align
def test_dtw_mahalanobis_needs_more_frames_than_dimensions_as_cdist_does():
    # kills: the check `N + M <= D` relaxed to `<` (a singular covariance inverted into a made-up cost)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))  # 4 frames in all, 4 dimensions
    with pytest.raises(ValueError):  # the independent rule: scipy refuses the same stack of observations
        cdist(a, b, "mahalanobis")  # its covariance comes from the 4 rows of a and b together
    with pytest.raises(ShapeError, match="mahalanobis"):
        dtw(a, b, "mahalanobis")


# ------------------------------------------------------------------ filters
@pytest.mark.parametrize("frames, used", [(7, 7), (6, 5)])
def test_savgol_on_a_clip_shorter_than_the_window_uses_the_longest_odd_window_that_fits(frames, used):
    # kills: the window for an odd-length short clip taken as f - 2 instead of f
    x = np.random.default_rng(1).normal(size=(frames, 3))
    np.testing.assert_allclose(savgol(x, window=9, polyorder=3), savgol_filter(x, used, 3, axis=0), atol=1e-12)


@pytest.mark.parametrize("mode", ["mirror", "nearest", "wrap"])
def test_savgol_passes_its_mode_to_scipy_with_and_without_dim(mode):
    # kills: mode dropped (always "interp"), and mode dropped on the dim != 0 path
    x = np.random.default_rng(2).normal(size=(12, 3))
    want = savgol_filter(x, 5, 2, axis=0, mode=mode)
    np.testing.assert_allclose(savgol(x, window=5, polyorder=2, mode=mode), want, atol=1e-12)
    np.testing.assert_allclose(savgol(x.T.copy(), window=5, polyorder=2, mode=mode, dim=1), want.T, atol=1e-12)


def test_butterworth_of_two_frames_filters_their_line_as_the_documented_padding_does():
    # kills: clips of two frames handed back unfiltered (the documented padding filters them like any other)
    x = np.array([[0.0, 1.0], [1.0, -2.0]])
    sos = butter(4, 3.0, btype="low", fs=30.0, output="sos")
    pad = 3 * (2 * len(sos) + 1 - min((sos[:, 2] == 0).sum(), (sos[:, 5] == 0).sum()))  # scipy's default padlen
    # repeated odd reflection of two points is their straight line, continued pad frames either way
    k = np.arange(-pad, 2 + pad)[:, None]
    line = x[0] + k * (x[1] - x[0])
    want = sosfiltfilt(sos, line, axis=0, padlen=0)[pad:-pad]
    np.testing.assert_allclose(butterworth(x, fps=30.0, cutoff=3.0), want, atol=1e-12)
    assert np.abs(want - x).max() > 1e-3  # the start-up transient a long ramp shows at its ends too


@pytest.mark.parametrize("d_cutoff", [0.0, -1.0])
def test_one_euro_refuses_a_derivative_cutoff_that_is_not_positive(d_cutoff):
    # kills: the d_cutoff > 0 check dropped (alpha(0) = 0 freezes the speed estimate at zero, silently)
    x = np.linspace(0.0, 1.0, 6)[:, None]
    with pytest.raises(ShapeError, match="d_cutoff"):
        one_euro(x, fps=30, d_cutoff=d_cutoff)
    q = rotvec_to_quat(torch.zeros(6, 3, dtype=torch.float64))
    with pytest.raises(ShapeError, match="d_cutoff"):
        smooth_rotations(q, method="one_euro", fps=30, d_cutoff=d_cutoff)


def test_one_euro_per_component_on_a_frame_axis_last_matches_the_scalar_filter():
    # kills: along_frames told the last axis holds vectors even when isotropic=False (dim=-1 then refused)
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(size=(2, 25)), axis=1)  # (channels, frames)
    got = one_euro(x, fps=50, min_cutoff=0.7, beta=0.2, d_cutoff=1.5, isotropic=False, dim=-1)
    want = np.stack([_one_euro_reference(c, 50.0, 0.7, 0.2, 1.5) for c in x])
    np.testing.assert_allclose(got, want, atol=1e-12)


# ------------------------------------------------------------------ rotations
def test_one_euro_rotations_about_one_axis_are_the_scalar_filter_of_the_angle():
    # kills: the rotation step's cutoff built on d_cutoff instead of min_cutoff (the two differ here)
    rng = np.random.default_rng(4)
    fps, n = 30.0, np.array([2.0, -1.0, 2.0]) / 3.0
    theta = np.cumsum(rng.normal(0.0, 0.08, size=40)) + 0.3 * np.sin(np.arange(40) / 5.0)
    q = rotvec_to_quat(torch.from_numpy(theta[:, None] * n))
    out = smooth_rotations(q, method="one_euro", fps=fps, min_cutoff=0.5, beta=0.3, d_cutoff=3.0).numpy()
    angle = 2.0 * np.arctan2(out[:, 1:] @ n, out[:, 0])  # signed angle about n (|theta| stays far below pi)
    np.testing.assert_allclose(angle, _one_euro_reference(theta, fps, 0.5, 0.3, 3.0), atol=1e-9)


def test_default_savgol_window_of_rotations_follows_polyorder():
    # kills: the default window taken for polyorder 3 whatever polyorder is (5 frames, too short for order 5)
    q = random_quats(30, seed=5, scale=0.4)
    # 0.15 s at 30 fps is 4.5 -> 4 frames, at least polyorder + 2 = 7, odd: 7
    got = smooth_rotations(q, fps=30, polyorder=5)
    want = savgol_filter(_continuous(q.numpy()), 7, 5, axis=0)
    _same_rotation(got.numpy(), want / np.linalg.norm(want, axis=-1, keepdims=True), 1e-10)


def random_quats(frames: int, *, seed: int, scale: float, joints: int = 2) -> torch.Tensor:
    rv = np.cumsum(np.random.default_rng(seed).normal(0.0, scale, size=(frames, joints, 3)), axis=0)
    return rotvec_to_quat(torch.from_numpy(rv))


@pytest.mark.parametrize("method, kw", [("savgol", {"window": 5}), ("butterworth", {"fps": 30, "cutoff": 5}),
                                        ("one_euro", {"fps": 30, "beta": 0.5})])  # fmt: skip
def test_smoothed_rotations_are_sign_continuous_even_for_fast_noisy_turns(method, kw):
    # kills: the final quat_continuous dropped (filtered fast turns come out with antipodal jumps)
    rng = np.random.default_rng(0)
    for _ in range(40):
        q = rotvec_to_quat(torch.from_numpy(rng.normal(size=(30, 3)) * rng.uniform(0.5, 3.0)))
        out = smooth_rotations(q, method=method, **kw)
        assert bool(((out[1:] * out[:-1]).sum(-1) >= 0).all())  # the documented q_t . q_{t-1} >= 0


def _motion_with_translations(frames: int = 60) -> Motion:
    names = ["Hips", "Spine", "LeftUpLeg", "RightUpLeg"]
    off = torch.tensor([[0, 0, 0], [0, 0.3, 0], [0.1, 0, 0], [-0.1, 0, 0]], dtype=torch.float64)
    skel = Skeleton(names, np.array([-1, 0, 0, 0]), off)
    t = np.arange(frames) / 30.0
    root = np.stack([0.2 * np.sin(3 * t), 1.0 + 0.05 * np.cos(7 * t), t], -1)
    return Motion(skel, random_quats(frames, seed=6, scale=0.3, joints=4), torch.from_numpy(root), 30.0)


def test_smooth_hands_cutoff_and_order_to_the_rotations():
    # kills: smooth calling smooth_rotations with cutoff 6 Hz whatever it was given
    m = _motion_with_translations()
    got = smooth(m, "butterworth", cutoff=2.0, order=2).rotations.numpy()
    sos = butter(2, 2.0, btype="low", fs=30.0, output="sos")
    want = sosfiltfilt(sos, _continuous(m.rotations.numpy()), axis=0)  # 60 frames: longer than scipy's padding
    _same_rotation(got, want / np.linalg.norm(want, axis=-1, keepdims=True), 1e-10)
    root = sosfiltfilt(sos, m.root_positions.numpy(), axis=0)
    np.testing.assert_allclose(smooth(m, "butterworth", cutoff=2.0, order=2).root_positions, root, atol=1e-10)


def test_smooth_hands_polyorder_to_the_rotations_and_its_default_window_follows_it():
    # kills: smooth_rotations called with polyorder 3; smooth's default window computed for polyorder 3
    m = _motion_with_translations()
    got = smooth(m, "savgol", window=9, polyorder=2).rotations.numpy()
    want = savgol_filter(_continuous(m.rotations.numpy()), 9, 2, axis=0)
    _same_rotation(got, want / np.linalg.norm(want, axis=-1, keepdims=True), 1e-10)
    # default window at 30 fps for polyorder 5: 7 frames (0.15 s -> 4, raised to polyorder + 2)
    out = smooth(m, "savgol", polyorder=5)
    np.testing.assert_allclose(out.root_positions, savgol_filter(m.root_positions.numpy(), 7, 5, axis=0), atol=1e-12)


# ------------------------------------------------------------------ resample
def test_sample_times_land_exactly_on_source_frames_at_an_ntsc_doubling():
    # kills: sample_times without its snap to whole frames (k * 29.97 / 59.94 is off by ~3e-14 for some k)
    s = sample_times(200, 29.97, 59.94)
    assert len(s) == 2 * 199 + 1
    assert torch.equal(s[::2], torch.arange(200, dtype=torch.float64))
    np.testing.assert_allclose(s[1::2], np.arange(199) + 0.5, atol=1e-12)


def test_resample_down_by_an_integer_ratio_copies_every_kept_frame_bit_for_bit():
    # kills: the lerp's exact branch at a == 1 (the last frame came out as x[-2] + 1 * (x[-1] - x[-2]))
    rng = np.random.default_rng(7)
    skel = Skeleton(["Hips", "Spine"], np.array([-1, 0]), torch.tensor([[0, 0, 0], [0, 0.3, 0.0]]))
    root = torch.from_numpy(rng.normal(size=(41, 3)) * np.array([1.3, 0.7, 11.1]))
    jt = torch.from_numpy(rng.normal(size=(41, 2, 3)))
    m = Motion(skel, random_quats(41, seed=8, scale=0.2), root, 120.0, joint_translations=jt)
    out = resample(m, 30.0)  # 120 -> 30 fps: frames 0, 4, ..., 40 (the last one included)
    assert out.num_frames == 11
    assert torch.equal(out.root_positions, root[::4])
    assert torch.equal(out.joint_translations, jt[::4])


def test_sample_frames_drops_per_frame_durations_even_at_the_same_rate():
    # kills: frame_durations dropped only where the rate changes (they no longer describe the new frames)
    m = _motion_with_translations(5)
    m.metadata.update(frame_durations=[1 / 30] * 5, frame_time=1 / 30, format="bvh")
    out = sample_frames(m, torch.tensor([0.5, 1.5, 2.25]), 30.0)
    assert "frame_durations" not in out.metadata
    assert out.metadata["frame_time"] == 1 / 30 and out.metadata["format"] == "bvh"  # the rate's own numbers stay


# ------------------------------------------------------------------ mirror
def test_mirror_permutation_pairs_unnamed_children_in_child_order():
    # kills: the structural completion pairing the unnamed children in another order
    names = ["Hips", "LeftHand", "a1", "b1", "RightHand", "a2", "b2"]
    off = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 0.1, 0], [1, -0.1, 0], [-1, 0, 0], [-1, 0.1, 0], [-1, -0.1, 0]],
                       dtype=torch.float64)  # fmt: skip
    skel = Skeleton(names, np.array([-1, 0, 1, 1, 0, 4, 4]), off)
    # LeftHand <-> RightHand by name; a1 <-> a2 and b1 <-> b2 as first and second unnamed children
    assert mirror_permutation(skel).tolist() == [0, 4, 5, 6, 1, 2, 3]


def test_joint_reflections_keep_the_parents_reflection_within_the_tolerance():
    # kills: the near-tie tolerance 1e-3 * (1 + scale) dropped (only the exact best reflection kept)
    names = ["Hips", "LeftUpLeg", "LeftLeg", "RightUpLeg", "RightLeg"]
    off = torch.tensor([[0, 0, 0], [1, 0, 0], [0, -1, 1e-4], [-1, 0, 0], [0, -1, -1e-4]], dtype=torch.float64)
    skel = Skeleton(names, np.array([-1, 0, 1, 0, 3]), off)
    _, left, right = joint_reflections(skel, torch.tensor([-1.0, 1.0, 1.0]))
    # Hips: its children map onto each other under the x flip (cost 0): right[0] = (-1, 1, 1).
    # LeftUpLeg: its child (0, -1, 1e-4) onto (0, -1, -1e-4): the z flip is exact, the parent's x flip is 2e-4 off,
    # within 1e-3 * (1 + 2): the parent's is kept.
    assert right[0].tolist() == [-1.0, 1.0, 1.0]
    assert left[1].tolist() == [-1.0, 1.0, 1.0] and right[1].tolist() == [-1.0, 1.0, 1.0]
    assert right[3].tolist() == [-1.0, 1.0, 1.0]


def test_mirror_across_a_given_axis_not_the_skeletons_lateral_one():
    # kills: mirror's axis= ignored (the X-lateral skeleton reflected across X anyway)
    m = _motion_with_translations(4)
    out = mirror(m, axis="z")
    # M = I - 2 e_z e_z^T: z negated; a quaternion (w, x, y, z) -> (w, -x, -y, z); Spine (1) is its own partner
    np.testing.assert_array_equal(out.root_positions, m.root_positions * torch.tensor([1.0, 1.0, -1.0]))
    np.testing.assert_array_equal(out.rotations[:, 1], m.rotations[:, 1] * torch.tensor([1.0, -1.0, -1.0, 1.0]))
    np.testing.assert_array_equal(out.rotations[:, 2], m.rotations[:, 3] * torch.tensor([1.0, -1.0, -1.0, 1.0]))


# ------------------------------------------------------------------ contacts
def _foot_and_head(foot: np.ndarray) -> np.ndarray:
    """(F, 2, 3) positions: the given foot path, a head fixed at (0, 1, 0) (so frame 0's extent is 1 when the foot
    starts at y = 0)."""
    head = np.tile([[0.0, 1.0, 0.0]], (len(foot), 1))
    return np.stack([foot, head], axis=1)


def test_foot_contacts_default_height_threshold_is_five_hundredths_of_the_height():
    # kills: DEFAULT_HEIGHT_FRACTION other than 0.05
    y = np.array([0, 0, 0, 0.045, 0.045, 0.045, 0.055, 0.055, 0.055])
    foot = np.stack([np.zeros(9), y, np.zeros(9)], -1)
    # height 1 (frame 0); at 1 fps the steps move at most 0.0225 per second, far below 0.25: height alone decides
    got = foot_contacts(_foot_and_head(foot), fps=1.0, joints=[0])
    assert got[:, 0].tolist() == [True] * 6 + [False] * 3


@pytest.mark.parametrize("speed, contact", [(0.24, True), (0.26, False)])
def test_foot_contacts_default_speed_threshold_is_a_quarter_height_per_second(speed, contact):
    # kills: DEFAULT_SPEED_FRACTION other than 0.25
    t = np.arange(20) / 10.0  # 10 fps, the foot sliding on the floor at `speed` units per second, height 1
    foot = np.stack([speed * t, np.zeros(20), np.zeros(20)], -1)
    got = foot_contacts(_foot_and_head(foot), fps=10.0, joints=[0])
    assert got[:, 0].tolist() == [contact] * 20


def test_foot_contacts_of_a_motion_take_the_fps_they_are_given(body):
    # kills: a motion's own fps used whatever fps= says
    m = _still(body, [[0.0, 1.0, 0.01 * k] for k in range(10)], fps=30.0)
    # every foot slides at 0.01 * 30 = 0.3 per second, on its floor; height 1.7: threshold 0.425 per second
    assert bool(foot_contacts(m).all())
    assert not bool(foot_contacts(m, fps=60.0).any())  # read as 60 fps: 0.6 per second


def test_foot_contacts_measure_the_default_height_along_the_up_axis_they_are_given(body):
    # kills: the default thresholds from Motion.height (along the guessed Y) where up_axis is given. Names that find
    # no head or foot: no stature, so the pose's extent is the body size (a named body's is its stature)
    nameless = Skeleton([f"j{i}" for i in range(body.num_joints)], body.parents, body.offsets, end_sites=body.end_sites)
    assert nameless.stature() is None
    m = _still(nameless, [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.08, 1.0, 0.0], [0.08, 1.0, 0.0]], fps=1.0)
    # along X the rest body spans the hands' End Sites, +-0.77: height 1.54, threshold 0.077 (0.085 along Y).
    # The feet rise 0.08 along X in frames 2 and 3 (at 0.04 per second: slow)
    got = foot_contacts(m, joints=find_feet(body), up_axis="x")
    assert got.shape == (4, 4)
    assert got.all(1).tolist() == [True, True, False, False] and not bool(got[2:].any())


def test_find_feet_takes_as_toes_only_foot_named_children_of_the_feet():
    # kills: the SMPL rule taking any other foot-named pair as the toes
    names = ["pelvis", "left_knee", "left_ankle", "left_foot_pad", "right_knee", "right_ankle", "right_foot_pad"]
    off = torch.tensor([[0, 1, 0], [0.1, -0.5, 0], [0, -0.45, 0], [0.05, -0.4, 0.1],
                        [-0.1, -0.5, 0], [0, -0.45, 0], [-0.05, -0.4, 0.1]], dtype=torch.float64)  # fmt: skip
    skel = Skeleton(names, np.array([-1, 0, 1, 1, 0, 4, 4]), off)
    # the pads hang from the knees, beside the ankles: no toes
    assert find_feet(skel) == [2, 5]


# ------------------------------------------------------------------ subset
def _body_cm(b: Skeleton, channels: list[tuple[str, ...]] | None = None) -> Skeleton:
    return Skeleton(b.names, b.parents.copy(), b.offsets * 100.0, channels or [], {k: v * 100 for k, v in b.end_sites.items()})


def test_collapse_tolerance_scales_with_a_centimetre_body(body):
    # kills: tol used in absolute units (a 1.7 m body in cm, height 170: tol * 170 = 1.7e-7 cm)
    skel = _body_cm(body)
    m = _still(skel, [[0.0, 100.0, 0.0]] * 3)
    rot = m.rotations.clone()
    rot[:, 1] = torch.tensor([math.cos(5e-11), 0.0, 0.0, math.sin(5e-11)])  # Spine turned 1e-10 rad about z
    out = collapse(m.copy(rotations=rot), [j for j in range(skel.num_joints) if j != 1])
    # Chest hangs 20 cm above Spine: it moves 20 * 1e-10 = 2e-9 cm from its rest offset, below 1.7e-7: no
    # animated translation (absolute 1e-9 would have called it one)
    assert out.joint_translations is None
    assert out.skeleton.channels[1] == ("Zrotation", "Xrotation", "Yrotation")


def test_collapse_keeps_each_joints_rotation_channel_order(body):
    # kills: the kept joints' rotation channels replaced by the default Z, X, Y order
    names = body.names
    channels = [("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")]
    channels += [("Xrotation", "Yrotation", "Zrotation")] * (len(names) - 1)
    m = _still(_body_cm(body, channels), [[0.0, 100.0, 0.0]] * 2)
    out = collapse(m, [j for j in range(len(names)) if j != 1])  # Spine removed, still: nothing animated
    assert out.skeleton.channels[1] == ("Xrotation", "Yrotation", "Zrotation")
    assert out.skeleton.channels[0] == channels[0]


def test_simplify_channels_tolerance_is_a_fraction_of_the_height(body):
    # kills: tol compared in absolute units
    skel = _body_cm(body)
    jt = skel.offsets.expand(3, -1, -1).clone()
    jt[1, 6, 0] += 1e-5  # LeftArm's translation moves 1e-5 cm in frame 1: 6e-8 of 170 cm, below tol = 1e-6
    m = _still(skel, [[0.0, 100.0, 0.0]] * 3, joint_translations=jt)
    out = simplify_channels(m)
    assert out.joint_translations is None
    assert out.skeleton.offsets[6].tolist() == pytest.approx([12.0, 0.0, 0.0], abs=1e-4)
    jt[1, 6, 0] += 1e-3  # 6e-6 of the height: animated
    with pytest.raises(SkeletonError, match="LeftArm"):
        simplify_channels(m.copy(joint_translations=jt))


# ------------------------------------------------------------------ more options
def test_foot_contacts_of_a_motion_take_the_height_they_are_given(body):
    # kills: height= ignored for a motion
    m = _still(body, [[0.0, 1.0, 0.01 * k] for k in range(10)], fps=30.0)
    # 0.3 per second: below 0.25 * 1.7 (the body's height) but above 0.25 * 1.0
    assert bool(foot_contacts(m).all())
    assert not bool(foot_contacts(m, height=1.0).any())


def test_foot_contacts_of_two_frames_see_the_speed_between_them():
    # kills: the speed taken as zero for clips of two frames (np.gradient needs 2: the forward difference)
    foot = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]])  # 0.1 per frame at 30 fps: 3 per second, height 1
    assert foot_contacts(_foot_and_head(foot), fps=30.0, joints=[0])[:, 0].tolist() == [False, False]
    assert foot_contacts(_foot_and_head(foot), fps=1.0, joints=[0])[:, 0].tolist() == [True, True]  # 0.1 per s


def test_smooth_leaves_positions_alone_when_told_to():
    # kills: positions=False ignored
    m = _motion_with_translations(20)
    out = smooth(m, "savgol", window=5, positions=False)
    assert torch.equal(out.root_positions, m.root_positions)
    want = savgol_filter(_continuous(m.rotations.numpy()), 5, 3, axis=0)
    _same_rotation(out.rotations.numpy(), want / np.linalg.norm(want, axis=-1, keepdims=True), 1e-10)


def test_mirror_skeleton_keeps_each_joints_own_channels():
    # kills: the channels taken from the partner joints (only offsets and End Sites come from the partner)
    names = ["Hips", "LeftArm", "RightArm"]
    off = torch.tensor([[0, 0, 0], [1, 0, 0], [-1, 0, 0]], dtype=torch.float64)
    channels = [("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"),
                ("Xrotation", "Yrotation", "Zrotation"), ("Zrotation", "Yrotation", "Xrotation")]  # fmt: skip
    out = mirror_skeleton(Skeleton(names, np.array([-1, 0, 0]), off, channels))
    assert out.channels == channels
    assert out.offsets.tolist() == [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]


def test_joint_reflections_reference_picks_only_among_the_reflections_the_offsets_allow():
    # kills: the reference deciding among all four reflections instead of the best ones
    names = ["Hips", "LeftUpLeg", "LeftLeg", "RightUpLeg", "RightLeg"]
    off = torch.tensor([[0, 0, 0], [1, 0, 0], [0, -1, 0.5], [-1, 0, 0], [0, -1, -0.5]], dtype=torch.float64)
    skel = Skeleton(names, np.array([-1, 0, 1, 0, 3]), off)
    reference = torch.eye(3, dtype=torch.float64).expand(5, 3, 3)
    _, left, right = joint_reflections(skel, torch.tensor([-1.0, 1.0, 1.0]), reference=reference)
    # LeftUpLeg's child (0, -1, 0.5) onto (0, -1, -0.5): only the z flip (cost 0) is good; the x flip, 1.0 off, is
    # not, though the identity reference would prefer it (diag(left * N) = I for N = left = (-1, 1, 1))
    assert left[1].tolist() == [-1.0, 1.0, 1.0]
    assert right[1].tolist() == [1.0, 1.0, -1.0]


def test_facing_is_undefined_when_left_and_right_lie_along_the_up_axis_to_rounding():
    # kills: only an exactly zero horizontal part refused (a 1e-12 sideways remainder gave a made-up direction)
    names = ["Hips", "LeftUpLeg", "RightUpLeg"]
    off = torch.tensor([[0, 0, 0], [1e-13, 0.5, 0], [-1e-13, -0.5, 0]], dtype=torch.float64)
    m = _still(Skeleton(names, np.array([-1, 0, 0]), off), [[0.0, 1.0, 0.0]])
    with pytest.raises(ShapeError, match="facing direction undefined"):
        facing_directions(m, up_axis="y")  # across = (2e-13, 1, 0): its part off the up axis is 2e-13 of it


def test_lateral_axis_tie_goes_to_x():
    # kills: a tie resolved to another axis than the lowest (the docstring: X first)
    names = ["Hips", "LeftLeg", "RightLeg"]
    off = torch.tensor([[0, 0, 0], [0, -1, 0], [0, -1, 0]], dtype=torch.float64)
    # reflecting the right leg across X or across Z leaves (0, -1, 0): asymmetry 0 for both, 2 across Y
    assert lateral_axis(Skeleton(names, np.array([-1, 0, 0]), off)) == 0


def _dtw_reference(c: np.ndarray) -> float:
    """The textbook O(N M) recurrence D[i, j] = c[i, j] + min(D[i-1, j-1], D[i-1, j], D[i, j-1])."""
    d = np.full((c.shape[0] + 1, c.shape[1] + 1), np.inf)
    d[0, 0] = 0.0
    for i in range(1, c.shape[0] + 1):
        for j in range(1, c.shape[1] + 1):
            d[i, j] = c[i - 1, j - 1] + min(d[i - 1, j - 1], d[i - 1, j], d[i, j - 1])
    return float(d[-1, -1])


@pytest.mark.parametrize("metric", ["cityblock", "sqeuclidean"])
def test_align_motions_uses_the_metric_it_is_given(metric):
    # kills: align_motions running DTW with the euclidean metric whatever metric= says
    m1, m2 = _motion_with_translations(10), _motion_with_translations(14)[3:]
    feats = []
    for m in (m1, m2):
        p = m.positions().numpy()
        feats.append(((p - p[:, :1]) / m.height).reshape(len(p), -1))  # pelvis (Hips, joint 0) relative, per height
    _, cost = align_motions(m1, m2, metric=metric, heading=False)  # world axes, as the features here
    assert cost == pytest.approx(_dtw_reference(cdist(feats[0], feats[1], metric)), rel=1e-12)
