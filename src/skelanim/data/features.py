"""Features a model may ask for, and their exact inverses.

Conventions
-----------
* ``M`` model joints: the skeleton's joints from the *body root* on (the pelvis; a static dummy joint 0 such
  as Bandai's ``joint_Root`` is left out, see :class:`~skelanim.data.rig.Rig`). ``rot[..., 0, :, :]`` is the
  body root's **world** rotation, ``rot[..., j > 0, :, :]`` a joint's local rotation.
* The up axis is ``up`` (0, 1, 2); the horizontal axes are ``a = (up + 1) % 3`` (the forward reference) and
  ``b = (up + 2) % 3``, so ``(a, b, up)`` is right-handed. The **yaw** of a horizontal direction ``d`` is
  ``atan2(d_b, d_a)``: the rotation ``R_yaw`` about ``up`` by that angle takes ``e_a`` to ``d``. For a Y-up
  skeleton ``a`` is Z and ``b`` is X, so yaw 0 faces +Z.
* Lengths are divided by the rig height ``height``; heights are measured from the rig's ``floor``.

Heading frame (recognition, generation)
---------------------------------------
Per frame ``t``, with ``R_t = R_yaw(yaw_t)``:

* ``rot_c[t, 0] = R_t^T rot[t, 0]`` (the root rotation without its heading), other joints as they are;
* ``root[t] = [v_a, v_b, dyaw, h]``: the pelvis step ``R_t^T (p[t+1] - p[t])`` along ``a`` and ``b`` (heights
  per frame), ``dyaw = wrap(yaw[t+1] - yaw[t])`` (radians per frame) and the pelvis height above the floor;
  the last frame repeats the previous step.

:func:`from_heading_frame` integrates it back; frames ``0..T-1`` come back exactly (the last frame's step
is never used).

Reference frame (prediction)
----------------------------
Everything is expressed relative to one frame ``ref`` of the window (the last observed one): root
rotations ``R_ref^T rot[t, 0]`` and pelvis ``R_ref^T (p[t] - p[ref])`` horizontally, height above the floor
vertically. Joint positions by FK from there are "with root motion"; with the pelvis set to zero they are
root-relative.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from skelanim.core.rotations import matrix_to_rot6d, rotvec_to_matrix
from skelanim.core.units import horizontal_axes

__all__ = [
    "from_heading_frame", "from_reference_frame", "heading_features", "horizontal_axes", "local_positions",
    "to_heading_frame", "to_reference_frame", "window_path", "wrap_angle", "yaw_from_directions", "yaw_matrix",
]  # fmt: skip


def wrap_angle(x: Tensor) -> Tensor:
    """Angles wrapped to ``[-pi, pi)``."""
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


def yaw_from_directions(directions: Tensor, up: int) -> Tensor:
    """Yaw angles of horizontal directions.

    Parameters
    ----------
    directions : Tensor
        ``(..., 3)`` directions (their up component is ignored).
    up : int
        Up axis.

    Returns
    -------
    Tensor
        ``(...)`` radians, ``atan2(d_b, d_a)``.
    """
    a, b = horizontal_axes(up)
    return torch.atan2(directions[..., b], directions[..., a])


def yaw_matrix(yaw: Tensor, up: int) -> Tensor:
    """Rotation matrices about the up axis.

    Parameters
    ----------
    yaw : Tensor
        ``(...)`` radians.
    up : int
        Up axis.

    Returns
    -------
    Tensor
        ``(..., 3, 3)``, taking ``e_a`` to ``cos(yaw) e_a + sin(yaw) e_b``.
    """
    axis = torch.zeros(3, dtype=yaw.dtype, device=yaw.device)
    axis[up] = 1.0
    return rotvec_to_matrix(yaw[..., None] * axis)


def _steps(x: Tensor) -> Tensor:
    """Forward differences along the frame axis ``-2`` (``(..., T, C)``), last step repeated (zero for ``T = 1``)."""
    if x.shape[-2] < 2:
        return torch.zeros_like(x)
    d = x[..., 1:, :] - x[..., :-1, :]
    return torch.cat([d, d[..., -1:, :]], dim=-2)


def to_heading_frame(rot: Tensor, pelvis: Tensor, yaw: Tensor, *, up: int, floor: float,
                     height: float) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Heading-frame rotations and root features (module docstring).

    Parameters
    ----------
    rot : Tensor
        ``(..., T, M, 3, 3)``; joint 0 is the body root's world rotation.
    pelvis : Tensor
        ``(..., T, 3)`` world position of the body root.
    yaw : Tensor
        ``(..., T)`` heading angles.
    up : int
        Up axis.
    floor, height : float
        Floor level along ``up`` and the normalising length.

    Returns
    -------
    tuple of Tensor
        ``rot_c`` ``(..., T, M, 3, 3)`` and ``root`` ``(..., T, 4)`` = ``[v_a, v_b, dyaw, h]``.
    """
    a, b = horizontal_axes(up)
    r_yaw = yaw_matrix(yaw, up)
    rot_c = torch.cat([(r_yaw.transpose(-1, -2) @ rot[..., 0, :, :])[..., None, :, :], rot[..., 1:, :, :]], dim=-3)
    step = (r_yaw.transpose(-1, -2) @ _steps(pelvis)[..., None])[..., 0] / height
    dyaw = wrap_angle(_steps(yaw[..., None]))[..., 0]
    h = (pelvis[..., up] - floor) / height
    return rot_c, torch.stack([step[..., a], step[..., b], dyaw, h], dim=-1)


def from_heading_frame(rot_c: Tensor, root: Tensor, *, up: int, floor: float, height: float,
                       yaw0: Tensor | float = 0.0, start: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """Integrate heading-frame features back to world rotations and the pelvis path.

    Parameters
    ----------
    rot_c : Tensor
        ``(..., T, M, 3, 3)`` heading-frame rotations.
    root : Tensor
        ``(..., T, 4)`` root features ``[v_a, v_b, dyaw, h]``.
    up : int
        Up axis.
    floor, height : float
        As for :func:`to_heading_frame`.
    yaw0 : Tensor or float
        ``(...)`` heading of frame 0.
    start : Tensor, optional
        ``(..., 3)`` pelvis position of frame 0 (its up component is ignored); default the origin.

    Returns
    -------
    tuple of Tensor
        ``rot`` ``(..., T, M, 3, 3)``, ``pelvis`` ``(..., T, 3)`` and ``yaw`` ``(..., T)``.
    """
    a, b = horizontal_axes(up)
    dyaw = root[..., 2]
    yaw0 = torch.as_tensor(yaw0, dtype=root.dtype, device=root.device)
    yaw = yaw0[..., None] + torch.cumsum(torch.cat([torch.zeros_like(dyaw[..., :1]), dyaw[..., :-1]], -1), -1)
    r_yaw = yaw_matrix(yaw, up)
    local = torch.zeros(*root.shape[:-1], 3, dtype=root.dtype, device=root.device)
    local[..., a], local[..., b] = root[..., 0], root[..., 1]
    world_step = (r_yaw @ local[..., None])[..., 0] * height
    offset = torch.cumsum(torch.cat([torch.zeros_like(world_step[..., :1, :]), world_step[..., :-1, :]], -2), -2)
    origin = torch.zeros(3, dtype=root.dtype, device=root.device) if start is None else start[..., None, :]
    pelvis = origin + offset
    pelvis = pelvis.clone()
    pelvis[..., up] = root[..., 3] * height + floor
    rot = torch.cat([(r_yaw @ rot_c[..., 0, :, :])[..., None, :, :], rot_c[..., 1:, :, :]], dim=-3)
    return rot, pelvis, yaw


def to_reference_frame(rot: Tensor, pelvis: Tensor, yaw: Tensor, ref: int, *, up: int, floor: float,
                       height: float) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Rotations and pelvis relative to frame ``ref`` of each window (module docstring).

    Parameters
    ----------
    rot : Tensor
        ``(..., T, M, 3, 3)`` as for :func:`to_heading_frame`.
    pelvis : Tensor
        ``(..., T, 3)`` world pelvis.
    yaw : Tensor
        ``(..., T)`` headings.
    ref : int
        The reference frame index.
    up : int
        Up axis.
    floor, height : float
        Floor level and normalising length.

    Returns
    -------
    tuple of Tensor
        ``rot_r`` ``(..., T, M, 3, 3)`` and ``pelvis_r`` ``(..., T, 3)`` (heights; up component above the floor).
    """
    r_ref = yaw_matrix(yaw[..., ref], up)[..., None, :, :]  # (..., 1, 3, 3)
    rot_r = torch.cat([(r_ref.transpose(-1, -2) @ rot[..., 0, :, :])[..., None, :, :], rot[..., 1:, :, :]], dim=-3)
    rel = pelvis - pelvis[..., ref : ref + 1, :]
    out = (r_ref.transpose(-1, -2) @ rel[..., None])[..., 0]
    out = out.clone()
    out[..., up] = pelvis[..., up] - floor
    return rot_r, out / height


def from_reference_frame(rot_r: Tensor, pelvis_r: Tensor, yaw_ref: Tensor, start: Tensor, *, up: int, floor: float,
                         height: float) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Inverse of :func:`to_reference_frame` given the reference heading and pelvis.

    Parameters
    ----------
    rot_r : Tensor
        ``(..., T, M, 3, 3)``.
    pelvis_r : Tensor
        ``(..., T, 3)``.
    yaw_ref : Tensor
        ``(...)`` heading of the reference frame.
    start : Tensor
        ``(..., 3)`` world pelvis of the reference frame.
    up : int
        Up axis.
    floor, height : float
        Floor level and normalising length.

    Returns
    -------
    tuple of Tensor
        World ``rot`` ``(..., T, M, 3, 3)`` and ``pelvis`` ``(..., T, 3)``.
    """
    r_ref = yaw_matrix(yaw_ref, up)[..., None, :, :]
    rot = torch.cat([(r_ref @ rot_r[..., 0, :, :])[..., None, :, :], rot_r[..., 1:, :, :]], dim=-3)
    flat = pelvis_r.clone()
    flat[..., up] = 0.0
    pelvis = start[..., None, :] + (r_ref @ flat[..., None])[..., 0] * height
    pelvis[..., up] = pelvis_r[..., up] * height + floor
    return rot, pelvis


def local_positions(positions: Tensor, pelvis: Tensor, yaw: Tensor, *, up: int, height: float) -> Tensor:
    """Joint positions relative to the pelvis, in the heading frame of their own frame.

    Parameters
    ----------
    positions : Tensor
        ``(..., T, M, 3)`` world positions.
    pelvis : Tensor
        ``(..., T, 3)``.
    yaw : Tensor
        ``(..., T)``.
    up : int
        Up axis.
    height : float
        Normalising length.

    Returns
    -------
    Tensor
        ``(..., T, M, 3)`` in heights.
    """
    r_yaw = yaw_matrix(yaw, up)[..., None, :, :]
    return (r_yaw.transpose(-1, -2) @ (positions - pelvis[..., None, :])[..., None])[..., 0] / height


def window_path(pelvis: Tensor, yaw: Tensor, *, up: int, height: float) -> Tensor:
    """The pelvis path and heading of a window, seen from its middle frame.

    Per-frame root features (:func:`to_heading_frame`) give the turning *rate*, a small signal under the sway
    of a gait; this gives where the body is and which way it faces relative to the middle frame
    ``c = T // 2``, so a turn reads as a heading that sweeps across the window and a path that bends.

    Parameters
    ----------
    pelvis : Tensor
        ``(..., T, 3)`` world pelvis positions.
    yaw : Tensor
        ``(..., T)`` heading angles.
    up : int
        Up axis.
    height : float
        Normalising length.

    Returns
    -------
    Tensor
        ``(..., T, 3)``: the pelvis offset from frame ``c`` along and across frame ``c``'s heading (heights),
        and the heading change from frame ``c`` (radians, wrapped to ``[-pi, pi)``).
    """
    a, b = horizontal_axes(up)
    c = yaw.shape[-1] // 2
    r_mid = yaw_matrix(yaw[..., c], up)[..., None, :, :]  # (..., 1, 3, 3)
    offset = (r_mid.transpose(-1, -2) @ (pelvis - pelvis[..., c : c + 1, :])[..., None])[..., 0] / height
    return torch.stack([offset[..., a], offset[..., b], wrap_angle(yaw - yaw[..., c : c + 1])], dim=-1)


def heading_features(rot: Tensor, pelvis: Tensor, yaw: Tensor, positions: Tensor, *, up: int, floor: float,
                     height: float) -> dict[str, Tensor]:  # fmt: skip
    """The per-frame features of a window in its own heading frames (recognition and generation inputs).

    Parameters
    ----------
    rot : Tensor
        ``(..., T, M, 3, 3)`` (body root in world).
    pelvis : Tensor
        ``(..., T, 3)``.
    yaw : Tensor
        ``(..., T)``.
    positions : Tensor
        ``(..., T, M, 3)`` world joint positions.
    up : int
        Up axis.
    floor, height : float
        Floor level and normalising length.

    Returns
    -------
    dict of str to Tensor
        ``rot6d`` ``(..., T, M, 6)`` (:func:`to_heading_frame`), ``root`` ``(..., T, 4)``, ``positions``
        ``(..., T, M, 3)`` (:func:`local_positions`) and ``velocities`` ``(..., T, M, 3)`` (their forward
        differences per frame, last one repeated).
    """
    rot_c, root = to_heading_frame(rot, pelvis, yaw, up=up, floor=floor, height=height)
    local = local_positions(positions, pelvis, yaw, up=up, height=height)
    shape = local.shape
    vel = _steps(local.reshape(*shape[:-3], shape[-3], -1)).reshape(shape)
    return {"rot6d": matrix_to_rot6d(rot_c), "root": root, "positions": local, "velocities": vel}
