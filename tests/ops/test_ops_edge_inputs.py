"""Edge inputs of the ops and of Motion: no frames, an index past the end, tensors that carry gradients, and
corrupt (NaN) rotations, each either handled or refused with a skelanim error, never a silent wrong answer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skelanim.core import rotations as r
from skelanim.errors import ShapeError
from skelanim.ops import align_motions, foot_contacts, resample, rotate_about_up, smooth


def test_an_index_past_the_end_is_an_index_error(motion):
    frames = motion.num_frames
    assert motion[frames - 1].num_frames == 1 and motion[-frames].num_frames == 1
    for index in (frames, frames + 7, -frames - 1, np.int64(frames)):
        with pytest.raises(IndexError, match=f"of a motion of {frames} frames"):
            motion[index]


def test_ops_on_a_motion_without_frames_say_so(motion):
    empty = motion[0:0]
    with pytest.raises(ShapeError, match="at least one frame"):
        foot_contacts(empty)
    with pytest.raises(ShapeError, match="without frames"):
        align_motions(empty, motion)
    with pytest.raises(ShapeError, match="needs a pivot"):
        rotate_about_up(empty, 0.5)
    assert rotate_about_up(empty, 0.5, pivot=[0.0, 0.0, 0.0]).num_frames == 0
    resampled = resample(empty, 2 * motion.fps)  # as its siblings: empty in, empty out (it had been a ShapeError)
    assert resampled.num_frames == 0 and resampled.fps == 2 * motion.fps
    for method in ("savgol", "butterworth", "one_euro"):  # smooth too (a review: it named an internal argument)
        smoothed = smooth(empty, method)
        assert smoothed.num_frames == 0 and smoothed.skeleton is motion.skeleton


def test_one_frame_of_nan_is_named_by_foot_contacts(motion):
    """A review: one NaN frame made the feet's floor NaN and every label False, without a word (the filters, the
    rotation smoothing and normalize refuse NaN)."""
    root = motion.root_positions.clone()
    root[3] = float("nan")
    with pytest.raises(ShapeError, match="not finite .NaN or infinite. at frame 3$"):
        foot_contacts(motion.copy(root_positions=root))
    with pytest.raises(ShapeError, match="at frame 0$"):
        foot_contacts(np.full((4, 2, 3), np.inf), fps=30.0, joints=[0, 1])


def test_contacts_and_alignment_take_motions_that_carry_gradients(motion):
    """A motion in a differentiable pipeline: labels and paths come out as for the same motion detached."""
    carried = motion.copy(rotations=motion.rotations.clone().requires_grad_())
    assert torch.equal(foot_contacts(carried), foot_contacts(motion))
    path, cost = align_motions(carried, motion)
    plain_path, plain_cost = align_motions(motion, motion)
    assert np.array_equal(path, plain_path) and cost == pytest.approx(plain_cost)


def test_nan_rotations_stay_nan_and_a_zero_quaternion_is_the_identity(motion):
    """The zero-length guard once read NaN as "too short" and drew corrupt frames as the identity."""
    for bad in ([np.nan, 1.0, 0.0, 0.0], [np.inf, 0.0, 0.0, 0.0]):
        q = np.array(bad)
        assert np.isnan(r.quat_to_matrix(q)).any() and np.isnan(r.quat_normalize(q)).any()
        assert np.isnan(r.quat_to_euler(q, "XYZ")).any() and np.isnan(r.quat_apply(q, np.ones(3))).any()
    assert np.array_equal(r.quat_to_matrix(np.zeros(4)), np.eye(3))  # documented: zero means identity
    rot = motion.rotations.clone()
    rot[2, 3] = float("nan")
    finite = torch.isfinite(motion.copy(rotations=rot).positions()).all(-1)  # (F, J)
    assert not finite[2].all() and finite[[0, 1, 3]].all()  # only the corrupt frame, from that joint down


def test_every_op_takes_the_up_axis_by_name(motion):
    from skelanim.ops import face_forward, facing_directions, normalize

    up = motion.up_axis()
    name = "xyz"[up]
    assert torch.equal(facing_directions(motion, up_axis=name), facing_directions(motion, up_axis=up))
    assert torch.equal(rotate_about_up(motion, 0.3, up_axis=name).positions(),
                       rotate_about_up(motion, 0.3, up_axis=up).positions())  # fmt: skip
    assert torch.equal(face_forward(motion, up_axis=name).positions(), face_forward(motion, up_axis=up).positions())
    assert torch.equal(normalize(motion, up_axis=name).positions(), normalize(motion, up_axis=up).positions())
    with pytest.raises(ShapeError, match="axis must be 0, 1 or 2"):
        rotate_about_up(motion, 0.3, up_axis=3)


def test_a_joint_index_outside_the_skeleton_is_a_skeleton_error(motion):
    from skelanim.errors import SkeletonError

    joints = motion.skeleton.num_joints
    assert motion.skeleton.indices([0, joints - 1]) == [0, joints - 1]
    for bad in (joints, 99, -1):
        with pytest.raises(SkeletonError, match=f"joint index {bad} is not one of the skeleton's {joints} joints"):
            foot_contacts(motion, joints=[bad])
        with pytest.raises(SkeletonError):
            motion.skeleton.children(bad)


def test_more_edge_inputs(motion):
    """A reversed motion, nested lists for the two rotation functions that refused them, and NaN where the
    one-euro filter and sample_frames let it through."""
    from skelanim.ops import one_euro, sample_frames

    backwards = motion[::-1]
    assert backwards.num_frames == motion.num_frames
    assert torch.equal(backwards.positions(), motion.positions().flip(0))
    assert torch.equal(motion[5:1:-2].positions(), motion.positions()[[5, 3]])
    q = r.quat_continuous([[1.0, 0.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0]])
    assert np.allclose(q, [[1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    assert np.allclose(r.mean_rotations([np.eye(3), np.eye(3)]), np.eye(3))
    for dim in (1, 2, -1):
        with pytest.raises(ShapeError, match="leading dim"):
            r.mean_rotations(np.tile(np.eye(3), (2, 1, 1)), dim=dim)
    with pytest.raises(ShapeError, match="NaN"):
        one_euro(np.array([[0.0], [np.nan], [1.0]]), fps=30)
    with pytest.raises(ShapeError, match="finite numbers"):
        sample_frames(motion, torch.tensor([0.5, float("nan")]), motion.fps)


def test_constructors_refuse_bad_offsets_and_fps_by_name(motion):
    from skelanim import Skeleton
    from skelanim.errors import SkeletonError

    with pytest.raises(SkeletonError, match=r"offsets must be \(J, 3\), got \(2, 2\)"):
        Skeleton(["a", "b"], [-1, 0], np.zeros((2, 2)))
    assert Skeleton(["a", "b"], [-1, 0], np.zeros(6)).offsets.shape == (2, 3)  # a flat list of (x, y, z) per joint
    for fps in (None, "30", 0.0, float("nan")):
        with pytest.raises(ShapeError, match="fps must be a positive number"):
            motion.copy(fps=fps)
    from skelanim.ops import resample

    for fps in (0.0, -30.0):  # named as resample's caller knows it (it had said fps_out, sample_times' name)
        with pytest.raises(ShapeError, match=r"^fps must be a positive number"):
            resample(motion, fps)


def test_wrong_joints_negative_costs_and_empty_averages_are_one_line_errors():
    """An audit's inputs that ended in a NumPy IndexError, a LinAlgError, or a result against the documented
    contract (a DTW of negative costs returned -2)."""
    from skelanim.ops.align import dtw_from_cost

    positions = np.zeros((5, 4, 3))
    positions[:, 3, 1] = 1.0
    assert foot_contacts(positions, 30, joints=[0, -4]).shape == (5, 2)
    with pytest.raises(ShapeError, match=r"joints \[0, 99\] must lie in 0 \.\. 3"):
        foot_contacts(positions, 30, joints=[0, 99])
    assert dtw_from_cost(np.ones((3, 4)))[1] == 4.0
    with pytest.raises(ShapeError, match="non-negative, got -1"):
        dtw_from_cost(-np.ones((3, 4)))
    with pytest.raises(ShapeError, match="no rotations to average"):
        r.mean_rotations(torch.zeros(0, 5, 3, 3))
