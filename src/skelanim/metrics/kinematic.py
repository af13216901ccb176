"""Errors and quality measures of joint trajectories: MPJPE and angle error at horizons, jerk, foot skating,
ground penetration, bone-length consistency.

Every length is divided by ``height`` (default 1: raw file units), so callers report raw values and
height-normalised ones with the same function.

Definitions
-----------
* **MPJPE** ``(..., T)``: the mean over joints of the Euclidean distance between predicted and true joint
  positions, per frame. At horizon ``h`` ms of a prediction sampled at ``fps`` it is read at future frame
  ``round(h * fps / 1000)``, halves rounded up (1-based: frame 1 is the first predicted frame), averaged over
  sequences.
* **Angle error** ``(..., T)``: the mean over joints of the geodesic angle between predicted and true rotations
  (:func:`~skelanim.core.rotations.matrix_geodesic`), degrees.
* **Jerk**: the mean norm of the third time derivative of joint positions, by third finite differences
  ``(p[t+3] - 3 p[t+2] + 3 p[t+1] - p[t]) * fps^3`` (exact for cubics), in lengths per s^3.
* **Foot skating** (after Zhang et al. 2018, *Mode-adaptive neural networks*): per foot joint and step from
  frame ``t`` to ``t + 1`` the horizontal speed ``|Δp_horizontal| * fps`` weighted by ``clip(2 - 2^(e / H), 0,
  1)``, where ``e`` is the joint's elevation at the step's midpoint (the mean of its heights at ``t`` and
  ``t + 1``) above its resting height (by default its lowest height in the sequence; or ``floor``, per joint)
  and ``H`` the contact threshold; the mean over joints and the ``F - 1`` steps, in
  lengths per second. A foot planted on the floor scores its full sliding speed, one lifted ``H`` or more
  scores nothing.
* **Ground penetration**: per frame the depth of the lowest joint below ``floor`` (0 when above), averaged.
* **Bone-length error**: the mean over bones and frames of ``|l - L| / L``, where ``l`` is the measured
  parent-child distance and ``L`` the reference length (the skeleton's offsets when given, else the
  bone's mean length over the frames, so the value measures consistency).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from skelanim.core._tensor import as_tensor
from skelanim.core.rotations import matrix_geodesic
from skelanim.errors import ShapeError
from skelanim.ops._common import axis_index

__all__ = [
    "angle_error", "angle_error_at", "bone_length_error", "foot_skating", "ground_penetration", "horizon_frames",
    "jerk", "mpjpe", "mpjpe_at",
]  # fmt: skip


def _t(x: Tensor | np.ndarray) -> Tensor:
    return x.detach().double() if isinstance(x, Tensor) else as_tensor(x, dtype=torch.float64)  # any numpy layout


def _positions(x: Tensor | np.ndarray, name: str = "positions") -> Tensor:
    """``x`` as a float64 ``(..., F, J, 3)`` tensor, else a :class:`~skelanim.errors.ShapeError` naming ``name`` (an
    ``(F, 3)`` trajectory had failed with a bare IndexError, or been read as one frame of ``F`` joints)."""
    t = _t(x)
    if t.ndim < 3 or t.shape[-1] != 3:
        raise ShapeError(f"{name} must be (..., F, J, 3) joint positions, got {tuple(t.shape)} (a single joint's "
                         "(F, 3) path is (F, 1, 3))")  # fmt: skip
    return t


def _pair(pred: Tensor | np.ndarray, target: Tensor | np.ndarray, tail: tuple[int, ...],
          what: str) -> tuple[Tensor, Tensor]:  # fmt: skip
    """``pred`` and ``target`` as float64 tensors of one shape ending in ``tail`` (a target that broadcast against
    the prediction, one pose for every frame, had been scored without a word)."""
    a, b = _t(pred), _t(target)
    if a.shape != b.shape or a.ndim < len(tail) + 2 or tuple(a.shape[a.ndim - len(tail) :]) != tail:
        want = ", ".join(["...", "T", "J", *map(str, tail)])
        raise ShapeError(f"{what} must be two ({want}) arrays of one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    return a, b


def _positive(name: str, value: float) -> float:
    """``value`` as a float, refused unless finite and above 0 (a rate, threshold or height of 0 or below had
    given 0.0, inf or a negative score without a word)."""
    number = float(value)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return number


def _axis(up_axis: int | str) -> int:
    """``up_axis`` as an index (the ops' :func:`~skelanim.ops._common.axis_index`); a downward one is refused, as
    these measures take the floor below the body."""
    if isinstance(up_axis, str) and up_axis.strip().startswith("-"):
        raise ValueError(f"up_axis must point up (0, 1, 2 or 'x', 'y', 'z'), got {up_axis!r}")
    return axis_index(up_axis)


def _joints(what: str, indices: Sequence[int], num_joints: int) -> list[int]:
    """``indices`` as a list, refused where one is not a joint of ``num_joints``."""
    out = [int(j) for j in indices]
    bad = [j for j in out if not 0 <= j < num_joints]
    if bad:
        raise ShapeError(f"{what} {bad} not joints of the {num_joints} in the positions")
    return out


def horizon_frames(horizons_ms: Sequence[float], fps: float, frames: int | None = None) -> list[int]:
    """0-based indices into the predicted frames for horizons in milliseconds: ``round(h * fps / 1000) - 1``, halves
    rounded up (150 ms at 30 fps is the fifth frame; Python's ``round`` had taken the fourth, half to even).

    Raises ``ValueError`` for a horizon shorter than one frame, or beyond ``frames`` predicted frames when given.
    """
    out = []
    for h in horizons_ms:
        k = math.floor(float(h) * fps / 1000.0 + 0.5 + 1e-9)
        if k < 1:
            raise ValueError(f"horizon {h} ms is shorter than one frame at {fps:g} fps")
        if frames is not None and k > frames:
            raise ValueError(f"horizon {h} ms is frame {k} at {fps:g} fps, beyond the {frames} predicted frames")
        out.append(k - 1)
    return out


def mpjpe(pred: Tensor | np.ndarray, target: Tensor | np.ndarray, *, height: float = 1.0) -> Tensor:
    """Per-frame mean per-joint position error (an evaluation: detached, in float64; not a training loss).

    Parameters
    ----------
    pred, target : Tensor or ndarray
        ``(..., T, J, 3)`` joint positions, one shape.
    height : float
        Divide by this length.

    Returns
    -------
    Tensor
        ``(..., T)`` float64.
    """
    a, b = _pair(pred, target, (3,), "predicted and true positions")
    return (a - b).norm(dim=-1).mean(-1) / _positive("height", height)


def mpjpe_at(pred: Tensor | np.ndarray, target: Tensor | np.ndarray, horizons_ms: Sequence[float], fps: float,
             *, height: float = 1.0) -> list[float]:  # fmt: skip
    """MPJPE at horizons, averaged over sequences.

    Parameters
    ----------
    pred, target : Tensor or ndarray
        ``(N, T, J, 3)`` predicted and true future positions (frame 0 is the first predicted frame).
    horizons_ms : sequence of float
        Horizons in ms.
    fps : float
        Frame rate of the predictions.
    height : float
        Normalising length.

    Returns
    -------
    list of float
        One value per horizon.
    """
    err = mpjpe(pred, target, height=height)
    return [float(err[..., k].mean()) for k in horizon_frames(horizons_ms, fps, err.shape[-1])]


def angle_error(pred: Tensor | np.ndarray, target: Tensor | np.ndarray) -> Tensor:
    """Per-frame mean geodesic angle in degrees between ``(..., T, J, 3, 3)`` rotation matrices of one shape;
    ``(..., T)`` (detached, float64)."""
    return torch.rad2deg(matrix_geodesic(*_pair(pred, target, (3, 3), "predicted and true rotations"))).mean(-1)


def angle_error_at(
    pred: Tensor | np.ndarray, target: Tensor | np.ndarray, horizons_ms: Sequence[float], fps: float
) -> list[float]:
    """Angle error (degrees) at horizons, averaged over sequences; rotations ``(N, T, J, 3, 3)``."""
    err = angle_error(pred, target)
    return [float(err[..., k].mean()) for k in horizon_frames(horizons_ms, fps, err.shape[-1])]


def jerk(positions: Tensor | np.ndarray, fps: float, *, height: float = 1.0) -> float:
    """Mean jerk magnitude of ``(..., F, J, 3)`` positions (``F >= 4``), lengths per s^3 (0 when ``F < 4``); a
    :class:`~skelanim.errors.ShapeError` for another shape (an ``(F, 3)`` path is ``(F, 1, 3)``)."""
    fps, height = _positive("fps", fps), _positive("height", height)
    p = _positions(positions)
    if p.shape[-3] < 4:
        return 0.0
    d3 = p[..., 3:, :, :] - 3 * p[..., 2:-1, :, :] + 3 * p[..., 1:-2, :, :] - p[..., :-3, :, :]
    return float(d3.norm(dim=-1).mean()) * fps**3 / height


def foot_skating(
    positions: Tensor | np.ndarray,
    feet: Sequence[int],
    fps: float,
    *,
    up_axis: int | str = 1,
    floor: float | Sequence[float] | Tensor | None = None,
    threshold: float,
    height: float = 1.0,
) -> float:
    """Weighted horizontal foot speed near the floor (module docstring).

    Parameters
    ----------
    positions : Tensor or ndarray
        ``(..., F, J, 3)`` world joint positions, ``F >= 2``.
    feet : sequence of int
        ``K`` foot joint indices (positions carry no names: ``skeleton.indices(names)`` gives them, as does
        :func:`~skelanim.ops.contacts.find_feet`).
    fps : float
        Frame rate.
    up_axis : int or str
        Up axis: 0, 1, 2 or ``"x"``, ``"y"``, ``"z"`` (the ops' keyword; positive direction).
    floor : float or sequence of float, optional
        Resting height of each foot joint along the up axis (one value for all, or ``K`` values). Default: each
        foot joint's lowest height over the frames of its own sequence, so a foot that hovers above the
        ground while it slides is not excused.
    threshold : float
        ``H``: elevation at which a foot stops counting (same units as positions).
    height : float
        Normalising length of the result.

    Returns
    -------
    float
        Mean weighted speed in lengths per second (divided by ``height``).
    """
    fps, threshold, height = _positive("fps", fps), _positive("threshold", threshold), _positive("height", height)
    up = _axis(up_axis)
    p = _positions(positions)
    feet = [feet] if isinstance(feet, str) else list(feet)  # once: an iterator of indices is read once
    named = [j for j in feet if isinstance(j, str)]
    if named:  # positions carry no joint names
        raise ShapeError(f"feet must be joint indices into the positions, got names {named}: "
                         "pass skeleton.indices(names) (Skeleton.indices) instead")  # fmt: skip
    p = p[..., _joints("foot joints", feet, p.shape[-2]), :]
    if p.shape[-3] < 2:
        return 0.0
    if floor is None:
        rest = p[..., up].min(dim=-2, keepdim=True).values  # (..., 1, K)
    else:
        rest = torch.as_tensor(floor, dtype=torch.float64).reshape(-1)
        if rest.numel() not in (1, p.shape[-2]):
            raise ShapeError(f"floor must be one height or one per foot joint ({p.shape[-2]}), got {rest.numel()}")
    elevation = (p[..., :-1, :, up] + p[..., 1:, :, up]) / 2 - rest
    step = p[..., 1:, :, :] - p[..., :-1, :, :]
    horiz = torch.cat([step[..., :up], step[..., up + 1 :]], dim=-1).norm(dim=-1) * fps
    weight = (2 - torch.pow(2.0, elevation.clamp_min(0) / threshold)).clamp(0, 1)
    return float((horiz * weight).mean()) / height


def ground_penetration(
    positions: Tensor | np.ndarray, *, up_axis: int | str = 1, floor: float = 0.0, height: float = 1.0
) -> float:
    """Mean over frames of the lowest joint's depth below ``floor`` along ``up_axis`` (as :func:`foot_skating`'s);
    positions ``(..., F, J, 3)``."""
    p, up = _positions(positions), _axis(up_axis)
    return float((floor - p[..., up].min(-1).values).clamp_min(0).mean()) / _positive("height", height)


def bone_length_error(positions: Tensor | np.ndarray, parents: Sequence[int], offsets: Tensor | np.ndarray | None = None,
                      *, bones: Sequence[int] | None = None) -> float:  # fmt: skip
    """Relative bone-length deviation (module docstring).

    Parameters
    ----------
    positions : Tensor or ndarray
        ``(..., F, J, 3)``.
    parents : sequence of int
        ``(J,)`` parent indices (``-1`` for roots).
    offsets : Tensor or ndarray, optional
        ``(J, 3)`` rest offsets giving the reference lengths; default each bone's mean measured length.
    bones : sequence of int, optional
        Child joints of the bones to measure (default every joint with a parent).

    Returns
    -------
    float
        Mean relative error over bones (of non-zero reference length) and frames; ``nan`` where a position or
        offset is not finite (a NaN had made every reference length fail its test, and read 0.0, a perfect score).
    """
    p = _positions(positions)
    if len(parents) != p.shape[-2]:
        raise ShapeError(f"parents name {len(parents)} joints, the positions have {p.shape[-2]}")
    wanted = None if bones is None else set(_joints("bones", bones, p.shape[-2]))
    child = [j for j, q in enumerate(parents) if q >= 0 and (wanted is None or j in wanted)]
    par = [int(parents[j]) for j in child]
    lengths = (p[..., child, :] - p[..., par, :]).norm(dim=-1)  # (..., F, B)
    if offsets is not None:
        ref = _t(offsets)[child].norm(dim=-1)
    else:
        ref = lengths.reshape(-1, len(child)).mean(0)
    if not (bool(torch.isfinite(lengths).all()) and bool(torch.isfinite(ref).all())):
        return math.nan
    keep = ref > 1e-9 * max(float(ref.max()), 1e-300) if len(child) else ref > 0
    if not bool(keep.any()):
        return 0.0
    return float(((lengths[..., keep] - ref[keep]).abs() / ref[keep]).mean())
