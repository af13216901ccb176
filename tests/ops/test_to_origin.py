"""``ops.to_origin``: one translation of the whole motion that puts the first frame's pelvis at the horizontal
origin and its lowest point (End Sites included) on the ground; checked on a hand-built rest pose, whose lowest
point and pelvis are known from the offsets, and on random motion."""

from __future__ import annotations

import numpy as np
import torch

from skelanim import Motion, ops


def test_a_rest_pose_lands_with_its_toes_on_the_ground_under_the_origin(helpers):
    skeleton = helpers.body_skeleton()
    rest = Motion.rest(skeleton, num_frames=3)
    rest = rest.copy(root_positions=rest.root_positions + torch.tensor([5.0, 2.0, -3.0], dtype=torch.float64))
    placed = ops.to_origin(rest, up_axis="y")
    # by hand: the rest pose's hips at (0, 1, 0) (their offset), moved to (5, 3, -3); lowest are the toes and their
    # End Sites, 0.45 + 0.45 + 0.05 below the hips, at 3 - 0.95
    expected_shift = torch.tensor([-5.0, -(3.0 - 0.95), 3.0], dtype=torch.float64)
    torch.testing.assert_close(placed.root_positions - rest.root_positions, expected_shift.expand(3, 3))
    torch.testing.assert_close(placed.rotations, rest.rotations)
    assert placed.skeleton is rest.skeleton or torch.equal(placed.skeleton.offsets, rest.skeleton.offsets)


def test_without_ground_the_height_is_kept_and_upside_down_data_meets_the_floor_from_below(helpers):
    motion = helpers.random_motion(helpers.body_skeleton(), frames=12, seed=3)
    first = motion[0:1].positions(end_sites=True)[0]
    kept = ops.to_origin(motion, ground=False, up_axis="y")
    shift = (kept.root_positions - motion.root_positions)[0]
    torch.testing.assert_close(shift, torch.stack([-first[0, 0], torch.zeros((), dtype=torch.float64), -first[0, 2]]))
    upside_down = ops.to_origin(motion, up_axis="-y")  # the floor is above a body whose up points down
    top = upside_down[0:1].positions(end_sites=True)[0][:, 1].max()
    assert abs(float(top)) < 1e-12


def test_every_frame_moves_by_the_same_amount_and_normalize_is_it_after_scaling(helpers):
    motion = helpers.random_motion(helpers.body_skeleton(asymmetric=True), frames=20, seed=1)
    placed = ops.to_origin(motion, up_axis="y")
    moved = (placed.positions() - motion.positions()).numpy()
    np.testing.assert_allclose(moved, np.broadcast_to(moved[0, 0], moved.shape), atol=1e-12)
    height = motion.height_along(1)
    unit = ops.normalize(motion, up_axis="y")
    torch.testing.assert_close(unit.positions(), ops.scale(placed, 1.0 / height).positions())
    assert len(ops.to_origin(motion[0:0]).root_positions) == 0


def test_a_result_shares_the_tensors_an_op_left_as_they_are_as_the_package_says() -> None:
    """The ``skelanim.ops`` docstring's rule, checked so that it stays true as written: ``to_origin`` passes the
    rotations through (the same storage: an in-place edit of the result's reaches the input), ``up_to_y`` of a
    Y-up motion everything; cloning first, as the docstring says, keeps the input."""
    import skelanim
    from skelanim import ops
    from skelanim.data.samples import sample_path

    walk = skelanim.load(sample_path("walk"))
    moved = ops.to_origin(walk)
    assert moved.rotations.data_ptr() == walk.rotations.data_ptr()
    assert moved.root_positions.data_ptr() != walk.root_positions.data_ptr()
    same = ops.up_to_y(walk)
    assert same is not walk and same.root_positions.data_ptr() == walk.root_positions.data_ptr()
    before = walk.root_positions.clone()
    safe = same.copy(root_positions=same.root_positions.clone())
    safe.root_positions[:, 1] += 1.0
    assert torch.equal(walk.root_positions, before)
