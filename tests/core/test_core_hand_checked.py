"""Hand-checked cases for behaviour the rest of the core tests left open (found by a mutation audit): the
parents-first check, a finite fps, the horizontal axes' order, End Sites under a joint rotation and under
:meth:`Skeleton.scaled`."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim import Motion, Skeleton
from skelanim.core.units import horizontal_axes
from skelanim.errors import ShapeError, SkeletonError

_S = math.sqrt(0.5)


def _quat(w: float, x: float, y: float, z: float) -> torch.Tensor:
    return torch.tensor([w, x, y, z], dtype=torch.float64)


# ------------------------------------------------------------------ Skeleton: parents first
@pytest.mark.parametrize("parents", [[-1, 1], [-1, 0, 2], [-1, 0, 1, 3]])
def test_joint_that_is_its_own_parent_is_refused(parents):
    # the class docstring: joints ordered parents-first, so parents[j] < j for every j > 0
    n = len(parents)
    with pytest.raises(SkeletonError, match="parents-first"):
        Skeleton([f"j{i}" for i in range(n)], parents, np.zeros((n, 3)))


def test_parent_just_before_the_joint_is_accepted():
    sk = Skeleton(["a", "b", "c"], [-1, 0, 1], np.zeros((3, 3)))
    assert sk.parents.tolist() == [-1, 0, 1]


# ------------------------------------------------------------------ Motion: fps must be finite
@pytest.mark.parametrize("fps", [float("inf"), float("-inf"), float("nan")])
def test_motion_rest_refuses_a_non_finite_fps(fps):
    sk = Skeleton(["a"], [-1], [[0.0, 0.0, 0.0]])
    with pytest.raises(ShapeError, match="fps"):
        Motion.rest(sk, 2, fps=fps)


def test_motion_constructor_refuses_infinite_fps():
    sk = Skeleton(["a"], [-1], [[0.0, 0.0, 0.0]])
    rot = torch.zeros(2, 1, 4, dtype=torch.float64)
    rot[..., 0] = 1.0
    with pytest.raises(ShapeError, match="fps"):
        Motion(sk, rot, torch.zeros(2, 3, dtype=torch.float64), float("inf"))


# ------------------------------------------------------------------ units.horizontal_axes
@pytest.mark.parametrize("up, expected", [(0, (1, 2)), (1, (2, 0)), (2, (0, 1))])
def test_horizontal_axes_follow_the_docstring(up, expected):
    # docstring: ((up + 1) % 3, (up + 2) % 3), by hand for each axis
    assert horizontal_axes(up) == expected


@pytest.mark.parametrize("up", [0, 1, 2])
def test_horizontal_axes_are_right_handed(up):
    # (a, b, up) right-handed: e[a] x e[b] = e[up]
    a, b = horizontal_axes(up)
    eye = np.eye(3)
    assert np.array_equal(np.cross(eye[a], eye[b]), eye[up])


# ------------------------------------------------------------------ kinematics: End Sites follow their joint's rotation
def test_end_site_follows_a_quarter_turn_of_its_joint():
    sk = Skeleton(["a", "b"], [-1, 0], [[0, 0, 0], [1, 0, 0]], end_sites={1: [1.0, 0, 0]})
    m = Motion.rest(sk, 1)
    rot = m.rotations.clone()
    rot[0, 1] = _quat(_S, 0, 0, _S)  # b turned +90 degrees about Z: its +X End Site points along +Y
    m = m.copy(rotations=rot)
    pos = m.positions(end_sites=True)[0]
    assert pos.shape == (3, 3)
    assert torch.allclose(pos[1], torch.tensor([1.0, 0, 0], dtype=torch.float64), atol=1e-12)
    assert torch.allclose(pos[2], torch.tensor([1.0, 1, 0], dtype=torch.float64), atol=1e-12)


def test_end_site_under_two_composed_turns():
    # a: +90 about Z; b: +90 about X; End Site (0, 1, 0) on b.
    # b sits at Rz (1, 0, 0) = (0, 1, 0); the End Site at b + Rz Rx (0, 1, 0) = b + Rz (0, 0, 1) = (0, 1, 1).
    sk = Skeleton(["a", "b"], [-1, 0], [[0, 0, 0], [1, 0, 0]], end_sites={1: [0.0, 1, 0]})
    m = Motion.rest(sk, 1)
    rot = m.rotations.clone()
    rot[0, 0] = _quat(_S, 0, 0, _S)
    rot[0, 1] = _quat(_S, _S, 0, 0)
    m = m.copy(rotations=rot)
    pos = m.positions(end_sites=True)[0]
    assert torch.allclose(pos[1], torch.tensor([0.0, 1, 0], dtype=torch.float64), atol=1e-12)
    assert torch.allclose(pos[2], torch.tensor([0.0, 1, 1], dtype=torch.float64), atol=1e-12)


# ------------------------------------------------------------------ Skeleton.scaled scales End Sites
def test_scaled_multiplies_end_sites():
    # docstring: "every offset (and End Site) multiplied by factor"
    sk = Skeleton(["a", "b", "c"], [-1, 0, 0], [[0, 0, 0], [1, 0, 0], [0, 2, 0]],
                  end_sites={1: [1.0, 0.5, 0], 2: [0.0, 0, -3.0]})  # fmt: skip
    out = sk.scaled(2.5)
    assert sorted(out.end_sites) == [1, 2]
    assert torch.allclose(out.end_sites[1], torch.tensor([2.5, 1.25, 0.0], dtype=torch.float64))
    assert torch.allclose(out.end_sites[2], torch.tensor([0.0, 0.0, -7.5], dtype=torch.float64))
    assert torch.allclose(out.offsets, 2.5 * sk.offsets)
    # so the rest pose, End Sites included, scales as a whole
    rest = Motion.rest(sk, 1).positions(end_sites=True)
    rest_scaled = Motion.rest(out, 1).positions(end_sites=True)
    assert torch.allclose(rest_scaled, 2.5 * rest)
    # the input is not modified
    assert torch.allclose(sk.end_sites[1], torch.tensor([1.0, 0.5, 0.0], dtype=torch.float64))
