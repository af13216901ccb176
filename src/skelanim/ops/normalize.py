"""Normalisation: scale, unit height, the body at the origin on the ground, facing a fixed direction.

Conventions
-----------
* The up axis is :meth:`Motion.up_axis` (0, 1 or 2), found from the motion itself because some
  exporters store a rest pose that is not upright; "horizontal" means the other two axes. Where the guess
  cannot be right (a body stood along another axis than its rest pose's, which looks like a crawl), every
  function takes ``up_axis=``. The height is :attr:`Motion.height` (median over frames of the extent along
  the up axis).
* The character's facing is found from world joint positions, not from the root's local frame (rigs
  disagree on bone axes): the lateral vector ``across`` is the sum over hip/thigh and shoulder/clavicle
  left-right pairs of ``p_left - p_right`` (all left-right pairs when there are none of those), and the
  facing direction is the horizontal part of ``across x up`` (right-handed axes: with +Y up and the left
  side towards +X, the character faces +Z).
* Rotating a whole motion about the up axis pre-multiplies the root's rotation and rotates the root
  trajectory about a pivot; local joint rotations and translations below the root are untouched.
"""

from __future__ import annotations

import math
import re

import torch
from torch import Tensor

from skelanim.core._tensor import ArrayLike, as_tensor, numpy_in_numpy_out
from skelanim.core.motion import Motion
from skelanim.core.rotations import axis_angle_to_quat, matrix_to_quat, quat_apply, quat_multiply
from skelanim.core.units import UNITS, canonical_unit, guess_unit, motion_unit, signed_axis_name, up_to_y_matrix
from skelanim.errors import ShapeError, SkeletonError
from skelanim.ops._common import direction_vector, signed_up

__all__ = ["face_forward", "facing_directions", "normalize", "root_relative", "rotate", "rotate_about_up", "scale",
           "to_origin", "to_units", "turned_up", "up_to_y"]

_HIP = re.compile(r"hip|thigh|upleg|up_leg|upperleg|upper_leg", re.IGNORECASE)
_SHOULDER = re.compile(r"shoulder|clavicle|collar|upperarm|upper_arm|leftarm|rightarm", re.IGNORECASE)


def scale(motion: Motion, s: float) -> Motion:
    """Scale a motion's lengths by ``s``: skeleton offsets and End Sites, root positions, joint translations.

    Parameters
    ----------
    motion:
        The motion (not modified).
    s:
        Positive finite factor.

    Returns
    -------
    Motion
        A new motion on ``motion.skeleton.scaled(s)``; rotations and fps are unchanged. The lengths stay in the
        motion's unit: ``metadata["units"]`` is kept, or, where the file named none, set to the unit guessed from
        the stature before scaling (:attr:`~skelanim.core.motion.Motion.stature`, as every exporter guesses it), so
        that an export to metres (glTF) scales by ``s`` too instead of guessing again from the scaled body. A normalised motion's ``"height"``
        (no length unit) is kept: ``scale(normalize(m), 170)`` had been labelled metres, a 170 m figure.
    """
    s = float(s)
    if not (s > 0 and math.isfinite(s)):
        raise ShapeError(f"scale factor must be a positive finite number, got {s}")
    jt = None if motion.joint_translations is None else motion.joint_translations * s
    metadata = dict(motion.metadata)
    if canonical_unit(str(metadata.get("units", ""))) is None and metadata.get("units") != "height":
        metadata["units"] = guess_unit(motion.stature)
    return motion.copy(
        skeleton=motion.skeleton.scaled(s),
        rotations=motion.rotations.clone(),
        root_positions=motion.root_positions * s,
        joint_translations=jt,
        metadata=metadata,
    )


def to_units(motion: Motion, unit: str) -> Motion:
    """The motion in another length unit: its lengths times the ratio of the two units, labelled ``unit``.

    Parameters
    ----------
    motion:
        The motion (not modified); its unit is ``metadata["units"]``, or where that names none the unit its
        stature suggests (:func:`~skelanim.core.units.motion_unit`, what exporters assume).
    unit:
        A key of :data:`~skelanim.core.units.UNITS` (``"m"``, ``"cm"``, ``"mm"``, ``"in"``, ``"cmu"``) or an alias
        (``"metres"``, ``"inches"``).

    Returns
    -------
    Motion
        :func:`scale`'d by ``UNITS[from] / UNITS[unit]``, ``metadata["units"]`` set to ``unit`` (:func:`scale` keeps
        the label: ``scale(cm_clip, 0.01)`` is a 1.7 cm figure to a glTF export).
    """
    target = canonical_unit(str(unit))
    if target is None:
        raise ShapeError(f"unknown length unit {unit!r}; choose from {', '.join(UNITS)} (or metres, inches, ...)")
    if motion.metadata.get("units") == "height":
        raise ShapeError("a normalised motion's lengths are fractions of its height, in no length unit; scale it by "
                         "the height first (ops.scale)")  # fmt: skip
    source = motion_unit(motion.metadata.get("units"), motion.stature)
    out = scale(motion, UNITS[source] / UNITS[target])
    out.metadata["units"] = target
    return out


def normalize(motion: Motion, *, height: float | None = None, ground: bool = True, up_axis: int | str | None = None) -> Motion:
    """Unit height, the body at the horizontal origin and the lowest point on the ground, at frame 0.

    Parameters
    ----------
    motion:
        The motion (not modified).
    height:
        The height to divide by; default :attr:`Motion.height`, the body's extent as this clip shows it (the median
        over frames), so a clip in which the body crouches, crawls or lies comes out larger than one in which it
        stands: the DeepMimic humanoid's crawl 3.1 times its walk, a Bandai bow 0.91 times the same actor's walk
        (raised arms). For clips of one body at one scale (a dataset), pass a number per body, or
        ``height=motion.stature`` (bone lengths from head to foot, which no pose changes: 137.11 for every Bandai
        clip; 0.9-1.2 times a standing height, so a standing body then measures about, not exactly, 1).
    ground:
        Also shift along the up axis so that the lowest joint or End Site of frame 0 is at 0. When
        ``False`` only the horizontal position is moved.
    up_axis:
        0, 1 or 2 (or ``"x"``, ``"y"``, ``"z"``, signed ``"-y"`` for data whose up points down); default
        :meth:`Motion.up_direction`, its sign included. Also the axis the default ``height`` is measured along.

    Returns
    -------
    Motion
        Lengths divided by ``height`` (``metadata["units"]`` is ``"height"``, no length unit, so that an export to
        metres does not read a unit-height figure as 1 cm tall); the whole trajectory translated so that at frame 0 the body's
        horizontal coordinates are 0 (those of :attr:`Skeleton.pelvis <skelanim.Skeleton.pelvis>`: the root on
        most skeletons, Bandai-Namco's ``Hips`` under its static root), and, with ``ground``, the lowest point is
        at up-coordinate 0.
    """
    up, sign = signed_up(motion, up_axis)
    h = motion.height_along(up) if height is None else float(height)
    if not (h > 0 and math.isfinite(h)):
        raise ShapeError(f"cannot normalise a motion of height {h}")
    out = scale(motion, 1.0 / h)
    out.metadata["units"] = "height"  # no length unit: an export (glTF) guesses from the size, 1 m, not 1 cm
    return to_origin(out, ground=ground, up_axis=signed_axis_name(up, sign))


def to_origin(motion: Motion, *, ground: bool = True, up_axis: int | str | None = None) -> Motion:
    """Translate the whole motion so that at frame 0 the body is at the horizontal origin, and on the ground.

    Parameters
    ----------
    motion:
        The motion (not modified).
    ground:
        Also shift along the up axis so that the lowest joint or End Site of frame 0 is at 0 (for data whose up
        points down, the highest); when ``False`` the up coordinate is kept.
    up_axis:
        As in :func:`normalize`; default :meth:`Motion.up_direction`, its sign included.

    Returns
    -------
    Motion
        The motion with one constant added to every root position: at frame 0 the horizontal coordinates of
        :attr:`Skeleton.pelvis <skelanim.Skeleton.pelvis>` (the body, not a static dummy root above it) are 0.
        Lengths, rotations, fps and metadata are kept; an empty motion comes back as it is.
    """
    up, sign = signed_up(motion, up_axis)
    out = motion.copy(metadata=dict(motion.metadata))
    if out.num_frames == 0:
        return out
    pos0 = out[0:1].positions(end_sites=True)[0]
    shift = -pos0[out.skeleton.pelvis].clone()
    lowest = pos0[:, up].min() if sign > 0 else pos0[:, up].max()  # an upside-down source's floor is above it
    shift[up] = -lowest if ground else 0.0
    return out.copy(root_positions=out.root_positions + shift)  # every joint hangs from the root: all move


@numpy_in_numpy_out
def root_relative(positions: Tensor, *, root: int = 0) -> Tensor:
    """Positions relative to the root joint.

    Parameters
    ----------
    positions:
        ``(..., J, 3)`` world positions (numpy or torch).
    root:
        Index of the joint subtracted.

    Returns
    -------
    ``(..., J, 3)`` ``positions - positions[..., root:root+1, :]`` (the root's row becomes 0).
    """
    t = as_tensor(positions)
    if t.ndim < 2 or t.shape[-1] != 3 or not -t.shape[-2] <= root < t.shape[-2]:
        raise ShapeError(f"positions must be (..., J, 3) with root < J, got {tuple(t.shape)} and root={root}")
    root %= t.shape[-2]  # a negative index counts from the end, as in Python
    return t - t[..., root : root + 1, :]


def _lateral_pairs(motion: Motion) -> list[tuple[int, int]]:
    skel = motion.skeleton
    pairs = skel.left_right_pairs()
    if not pairs:
        raise SkeletonError("cannot find the character's facing: no left/right joint pairs in the skeleton")
    picked = [(l, r) for l, r in pairs if _HIP.search(skel.names[l]) or _SHOULDER.search(skel.names[l])]
    return picked or pairs


def _unit(axis: int) -> torch.Tensor:
    v = torch.zeros(3, dtype=torch.float64)
    v[axis] = 1.0
    return v


def facing_directions(motion: Motion, *, up_axis: int | str | None = None) -> torch.Tensor:
    """Per-frame horizontal facing direction.

    Parameters
    ----------
    motion:
        A motion whose skeleton has left/right joint pairs.
    up_axis:
        0, 1 or 2 (or ``"x"``, ``"y"``, ``"z"``, signed ``"-y"`` for data whose up points down); default
        :meth:`Motion.up_direction`, its sign included.

    Returns
    -------
    torch.Tensor
        ``(F, 3)`` unit vectors with zero up-component (see the module docstring for the definition).
    """
    pairs = _lateral_pairs(motion)
    axis, sign = signed_up(motion, up_axis)
    up = sign * _unit(axis)
    pos = motion.positions()
    left = torch.tensor([l for l, _ in pairs])
    right = torch.tensor([r for _, r in pairs])
    across = (pos[:, left] - pos[:, right]).sum(1)
    fwd = torch.linalg.cross(across, up.expand_as(across), dim=-1)
    fwd[:, axis] = 0.0
    norm = fwd.norm(dim=-1, keepdim=True)
    flat = (norm[:, 0] <= 1e-9 * across.norm(dim=-1)) | (norm[:, 0] == 0)
    if bool(flat.any()):  # the motion's file (where a reader named it) and the first such frame
        raise ShapeError("facing direction undefined: the left/right joints are aligned with the up axis",
                         path=motion.metadata.get("path"), where=f"frame {int(flat.nonzero()[0, 0])}")  # fmt: skip
    return fwd / norm


def rotate_about_up(
    motion: Motion, angle: float, *, pivot: ArrayLike | None = None, up_axis: int | str | None = None
) -> Motion:
    """Rotate the whole motion by ``angle`` radians about the up axis through ``pivot``.

    Parameters
    ----------
    motion:
        The motion (not modified).
    angle:
        Radians, counter-clockwise seen from above (right-hand rule about +up).
    pivot:
        ``(3,)`` point on the rotation axis; default the body's position at frame 0 (that of
        :attr:`Skeleton.pelvis <skelanim.Skeleton.pelvis>`: the root on most skeletons).
    up_axis:
        0, 1 or 2 (or ``"x"``, ``"y"``, ``"z"``, signed ``"-y"`` for data whose up points down); default
        :meth:`Motion.up_direction`, its sign included.

    Returns
    -------
    Motion
        Root rotations ``q_yaw * q_root``; root positions ``pivot + R_yaw (p - pivot)``.
    """
    axis, sign = signed_up(motion, up_axis)
    up = sign * _unit(axis)
    q_yaw = axis_angle_to_quat(up, torch.tensor(float(angle), dtype=torch.float64))
    if pivot is None and motion.num_frames < 1:
        raise ShapeError("rotate_about_up needs a pivot for a motion without frames (its default is frame 0's body)")
    if pivot is None:
        p = motion[0:1].positions()[0, motion.skeleton.pelvis].to(torch.float64)
    else:
        p = as_tensor(pivot, dtype=torch.float64).reshape(3)
    return rotate(motion, q_yaw, pivot=p)


def rotate(motion: Motion, rotation: ArrayLike, *, pivot: ArrayLike | None = None) -> Motion:
    """Turn the whole motion, its world, by one rotation about ``pivot``.

    Parameters
    ----------
    motion:
        The motion (not modified).
    rotation:
        ``(4,)`` quaternion (normalised here; zero is refused) or ``(3, 3)`` rotation matrix ``R`` (orthonormal
        within 1e-5, determinant +1; a scaled or sheared matrix is refused, not projected).
    pivot:
        ``(3,)`` fixed point; default the origin.

    Returns
    -------
    Motion
        Root rotations ``q_R * q_root``; root positions ``pivot + R (p - pivot)`` (the joints below follow).
    """
    r = as_tensor(rotation, dtype=torch.float64)
    if tuple(r.shape) not in ((4,), (3, 3)):
        raise ShapeError(f"a rotation is a (4,) quaternion or a (3, 3) matrix, got {tuple(r.shape)}")
    if not torch.isfinite(r).all():
        raise ShapeError("the rotation holds NaN or infinite values")
    if r.shape == (3, 3):
        gap, det = float((r.T @ r - torch.eye(3, dtype=r.dtype)).abs().max()), float(torch.linalg.det(r))
        if gap > 1e-5 or det < 0:
            raise ShapeError(f"the (3, 3) matrix is no rotation (R^T R is {gap:.3g} off the identity, determinant "
                             f"{det:.3g})")  # fmt: skip
        q = matrix_to_quat(r)
    elif float(r.norm()) < 1e-9:
        raise ShapeError("a zero quaternion is no rotation")
    else:
        q = r / r.norm()
    p = torch.zeros(3, dtype=torch.float64) if pivot is None else as_tensor(pivot, dtype=torch.float64).reshape(3)
    rot = motion.rotations.clone()
    rot[:, 0] = quat_multiply(q, rot[:, 0])
    root = p + quat_apply(q, motion.root_positions - p)
    return motion.copy(rotations=rot, root_positions=root, metadata=dict(motion.metadata))


def up_to_y(motion: Motion, *, up_axis: int | str | None = None) -> Motion:
    """The motion turned so that its up direction is +Y (:func:`~skelanim.core.units.up_to_y_matrix` about the
    origin; a Y-up motion comes back as a shallow copy, its tensors the input's, as the package docstring says of
    every op).
    ``up_axis`` as :func:`rotate_about_up`'s, default :meth:`Motion.up_direction`."""
    turned, _ = turned_up(motion, 1, up_axis=up_axis)
    return motion.copy() if turned is motion else turned


def turned_up(motion: Motion, target: int, *, up_axis: int | str | None = None) -> tuple[Motion, torch.Tensor | None]:
    """``motion`` turned about the origin so that its up direction is ``+e[target]`` (a model rig's up axis), and the
    turn: ``R = up_to_y_matrix(target).T @ up_to_y_matrix(axis, sign)`` (:func:`~skelanim.core.units.up_to_y_matrix`,
    a proper rotation through +Y and on to ``+e[target]``; the up coordinate keeps its value), so a Z-up copy of a
    Y-up capture comes back as the original, to rounding.

    Parameters
    ----------
    motion : Motion
        The motion (not modified).
    target : int
        The up axis to turn onto (0, 1 or 2; its positive direction).
    up_axis : int or str, optional
        As :func:`rotate_about_up`'s; default :meth:`Motion.up_direction`, its sign included.

    Returns
    -------
    tuple of Motion and Tensor or None
        The turned motion (``motion`` itself where it is up along ``+e[target]`` already) and the ``(3, 3)`` float64
        rotation applied (``v' = R @ v``; ``R.T`` turns back), or ``None`` where none was.
    """
    axis, sign = signed_up(motion, up_axis)
    if (axis, sign) == (target, 1.0):
        return motion, None
    turn = up_to_y_matrix(axis, sign) if target == 1 else up_to_y_matrix(target).T @ up_to_y_matrix(axis, sign)
    return rotate(motion, turn), turn


def face_forward(motion: Motion, *, forward: str | ArrayLike = "+z", up_axis: int | str | None = None) -> Motion:
    """Rotate the motion about the up axis so that the character faces ``forward`` on the first frame.

    Parameters
    ----------
    motion:
        The motion (not modified).
    forward:
        Target direction: ``"+z"``, ``"-x"``, ... or a 3-vector; its horizontal part is used, so it must
        not be parallel to the up axis (for a Z-up skeleton pass e.g. ``"+y"``).
    up_axis:
        0, 1 or 2 (or ``"x"``, ``"y"``, ``"z"``, signed ``"-y"`` for data whose up points down); default
        :meth:`Motion.up_direction`, its sign included.

    Returns
    -------
    Motion
        The motion rotated about the vertical line through the body's first-frame position; its
        :func:`facing_directions` at frame 0 equals the horizontal ``forward``.
    """
    if motion.num_frames == 0:
        return motion.copy(metadata=dict(motion.metadata))
    axis, sign = signed_up(motion, up_axis)
    target = direction_vector(forward).clone()
    target[axis] = 0.0
    if float(target.norm()) < 1e-9:
        raise ShapeError(f"forward {forward!r} is parallel to the up axis ({'XYZ'[axis]}); pick a horizontal one")
    target = target / target.norm()
    signed = signed_axis_name(axis, sign)
    current = facing_directions(motion[0:1], up_axis=signed)[0]
    up = sign * _unit(axis)
    current = current.detach()  # the angle is a number: float() of a tensor with a gradient warns
    angle = math.atan2(float(torch.dot(up, torch.linalg.cross(current, target))), float(torch.dot(current, target)))
    return rotate_about_up(motion, angle, up_axis=signed)
