"""``Motion.height_along`` takes an axis as every ops function does (``0/1/2``, ``"x"``, ``"+y"``, ``"-Z"``), checked
on a two-joint figure whose extents along X, Y and Z are 1, 2 and 3 by construction; an empty motion measures its rest pose along the axis asked for; ``Motion.num_joints``."""

from __future__ import annotations

import numpy as np
import pytest

from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.errors import ShapeError

#: a root at the origin and one joint at (1, 2, 3): extents 1, 2 and 3 along X, Y and Z in any frame of the rest pose
BOX = Skeleton(["a", "b"], [-1, 0], [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
EXTENT = {0: 1.0, 1: 2.0, 2: 3.0}


@pytest.mark.parametrize(("axis", "index"), [(0, 0), (1, 1), (2, 2), (np.int64(1), 1), ("x", 0), ("y", 1), ("z", 2),
                                             ("Y", 1), ("+y", 1), ("-y", 1), (" -Z ", 2), ("+X", 0)])  # fmt: skip
def test_height_along_takes_every_spelling_of_an_axis(axis, index):
    """A sign names the same axis: a height along it is an extent, the same either way."""
    motion = Motion.rest(BOX, 3)
    assert motion.height_along(axis) == pytest.approx(EXTENT[index])


@pytest.mark.parametrize("axis", [3, -1, "w", "xy", ""])
def test_height_along_refuses_a_bad_axis_in_one_line(axis):
    """Refused as every ops function refuses it (one parser, :func:`skelanim.core.units.axis_index`)."""
    from skelanim.ops import mirror_skeleton

    with pytest.raises(ShapeError, match="axis must be") as err:
        Motion.rest(BOX, 2).height_along(axis)
    assert "\n" not in str(err.value)
    with pytest.raises(ShapeError, match="axis must be"):
        mirror_skeleton(BOX, axis=axis)


@pytest.mark.parametrize(("axis", "index"), [(0, 0), ("y", 1), (2, 2)])
def test_an_empty_motion_measures_its_rest_pose_along_the_axis_asked_for(axis, index):
    """Without frames the rest pose is measured, along ``axis`` (not along the skeleton's up axis, Z here)."""
    empty = Motion.rest(BOX, 0)
    assert empty.num_frames == 0
    assert empty.height_along(axis) == pytest.approx(EXTENT[index])
    assert empty.height == pytest.approx(BOX.height())  # the guessed up axis: unchanged


def test_motion_num_joints_is_its_skeletons():
    motion = Motion.rest(BOX, 4)
    assert motion.num_joints == len(BOX.names) == motion.rotations.shape[1] == 2
    assert Motion.rest(BOX, 0).num_joints == 2
    with pytest.raises(AttributeError):
        motion.num_joints = 3  # type: ignore[misc]
