"""``ops.resample.spline_frames``: a motion sampled densely through cubic splines (what ``predict`` plays a 25 fps
prediction at the input's rate with), against closed forms and the linear sampling it replaces there."""

from __future__ import annotations

import math

import numpy as np
import torch

from skelanim.core.motion import Motion
from skelanim.core.rotations import axis_angle_to_quat, quat_apply
from skelanim.ops.resample import sample_frames, spline_frames
from tests.helpers.small_body import small_body

F64 = torch.float64


def _swinging(frames: int, fps: float, angle) -> Motion:
    """A small body whose joints all turn by ``angle(t)`` about a fixed axis, its root on a circle of radius 10."""
    skeleton = small_body()
    t = torch.arange(frames, dtype=F64) / fps
    axis = torch.tensor([0.3, 0.9, 0.3], dtype=F64)
    axis = axis / axis.norm()
    q = axis_angle_to_quat(axis.expand(frames, 3), angle(t))
    rotations = q[:, None].expand(frames, skeleton.num_joints, 4).clone()
    root = torch.stack([10 * torch.cos(t), 90 + 0 * t, 10 * torch.sin(t)], -1)
    return Motion(skeleton, rotations, root, fps)


def test_whole_indices_are_the_frames_and_uniform_motion_is_kept_exactly():
    """At whole indices the frames themselves; a turn at a constant rate and a root moving in a straight line at
    a constant speed, sampled anywhere between, are what slerp and lerp give (the spline reproduces them)."""
    spin = _swinging(20, 25.0, lambda t: 1.3 * t)
    line = spin.copy(root_positions=torch.stack([3 * torch.arange(20, dtype=F64), torch.zeros(20, dtype=F64),
                                                 -torch.arange(20, dtype=F64)], -1))  # fmt: skip
    whole = torch.arange(20, dtype=F64)
    out = spline_frames(line, whole, 25.0)
    assert torch.equal(out.rotations, line.rotations) and torch.equal(out.root_positions, line.root_positions)
    between = torch.linspace(0.0, 19.0, 97, dtype=F64)
    cubic, linear = spline_frames(line, between, 120.0), sample_frames(line, between, 120.0)
    assert torch.allclose(cubic.positions(), linear.positions(), atol=1e-9) and cubic.fps == 120.0


def test_a_smooth_swing_comes_out_closer_to_the_truth_and_without_jolts():
    """A swing ``0.8 sin(2 pi 0.9 t)`` and a circling root, made at 25 fps and sampled at 120: the splines follow
    the true motion far closer than slerp and lerp away from the ends (1e-5 against 1e-2; within the first and
    last 0.2 s the free ends give 5e-3), and their acceleration has no jolt at the 25 fps frames (slerp's changes
    its angular velocity at every one of them)."""
    angle = lambda t: 0.8 * torch.sin(2 * math.pi * 0.9 * t)
    coarse = _swinging(51, 25.0, angle)  # 2 s
    fine = _swinging(241, 120.0, angle)
    indices = torch.arange(241, dtype=F64) * 25.0 / 120.0
    truth = fine.positions().numpy()
    cubic = spline_frames(coarse, indices, 120.0).positions().numpy()
    linear = sample_frames(coarse, indices, 120.0).positions().numpy()
    inner = slice(24, -24)
    err_cubic, err_linear = np.abs(cubic - truth)[inner].max(), np.abs(linear - truth)[inner].max()
    assert err_cubic < 0.01 * err_linear and np.abs(cubic - truth).max() < np.abs(linear - truth).max()

    def jolts(p: np.ndarray) -> float:  # the largest change of acceleration against the true motion's
        return float(np.abs(np.diff(p[12:-12], 3, axis=0)).max())

    assert jolts(cubic) < 2 * jolts(truth) < jolts(linear), (jolts(cubic), jolts(truth), jolts(linear))


def test_rotations_keep_the_sources_sign_and_short_motions_fall_back_to_slerp():
    swing = _swinging(8, 25.0, lambda t: 0.5 * t)
    flipped = swing.copy(rotations=-swing.rotations)  # the same rotations, the other sign
    out = spline_frames(flipped, torch.tensor([0.5, 3.25, 6.75], dtype=F64), 30.0)
    assert bool(((out.rotations * flipped.rotations[[0, 3, 6]]).sum(-1) > 0).all())
    two = swing[:2]
    at = torch.tensor([0.0, 0.4, 1.0], dtype=F64)
    assert torch.equal(spline_frames(two, at, 30.0).rotations, sample_frames(two, at, 30.0).rotations)
    assert torch.allclose(quat_apply(out.rotations[:, 0], torch.tensor([1.0, 0, 0], dtype=F64)).norm(dim=-1),
                          torch.ones(3, dtype=F64))  # unit


def test_zero_quaternions_are_the_identity_and_a_gradient_is_said_to_stop_here():
    """A review of this change: a zero quaternion raised scipy's "Found zero norm quaternions" (the library's rule
    makes it the identity, as sample_frames does), and rotations that needed a gradient came out detached without a
    word (savgol and butterworth warn)."""
    import pytest

    swing = _swinging(8, 25.0, lambda t: 0.5 * t)
    rotations = swing.rotations.clone()
    rotations[:, 2] = 0.0
    zeroed = swing.copy(rotations=rotations)
    at = torch.tensor([0.5, 2.5, 6.25], dtype=F64)
    out = spline_frames(zeroed, at, 30.0)
    assert torch.equal(out.rotations[:, 2], torch.tensor([[1.0, 0, 0, 0]] * 3, dtype=F64))
    needs = swing.copy(rotations=swing.rotations.clone().requires_grad_())
    with pytest.warns(UserWarning, match="passes no gradient back"):
        assert not spline_frames(needs, at, 30.0).rotations.requires_grad
