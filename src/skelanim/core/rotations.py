"""Rotation math: the single implementation used by the whole project.

This module holds the quaternion algebra, interpolation and distances, and re-exports the rest, so every
rotation function is imported from here: the conversions between matrices, quaternions, 6D and rotation
vectors live in :mod:`skelanim.core.rotation_convert`, the Euler functions in :mod:`skelanim.core.euler`.

Conventions
-----------
* **Quaternions** are ``(w, x, y, z)`` (scalar first) and compose with the Hamilton product:
  ``quat_to_matrix(quat_multiply(a, b)) == quat_to_matrix(a) @ quat_to_matrix(b)`` (``b`` acts first).
* **Matrices** act on column vectors: ``v' = R @ v``.
* **Euler angles** are *intrinsic* in the listed order, as BVH means them: order ``"ZXY"`` means
  ``R = Rz(a[..., 0]) @ Rx(a[..., 1]) @ Ry(a[..., 2])``. Radians. The 12 orders are in :data:`EULER_ORDERS`
  (6 Tait-Bryan, 6 proper Euler); order strings are case-insensitive. This equals scipy's
  ``Rotation.from_euler("ZXY", a)`` (upper case = intrinsic); scipy's lower case (extrinsic, about the fixed
  axes) is ``extrinsic=True`` on every Euler function. The Euler functions live in :mod:`skelanim.core.euler` and
  are re-exported here.
* **6D rotations** (Zhou et al. 2019) are the first two *columns* of ``R``, laid out as
  ``[R00, R10, R20, R01, R11, R21]``, mapped back by Gram-Schmidt.
* **Rotation vectors** are ``axis * angle`` (radians).

Backend
-------
Torch does the math: every function is batched over any leading dims ``...`` (broadcast between
arguments), differentiable, and keeps dtype and device; where floating arguments differ in dtype (float32
quaternions, a float64 slerp fraction or angle), the result has the wider one, so mixing never loses precision.
Non-floating inputs become float64. NumPy arrays
are accepted at the edges: a public function given NumPy arrays (and no tensor) returns NumPy arrays
(see :func:`numpy_in_numpy_out`).

Robustness
----------
Values and gradients stay finite at 0 and 180 degrees and for degenerate input: angles come from
``atan2`` forms, norms and divisions use ``where`` guards so the unused branch never yields NaN. A zero
quaternion (or zero axis) means identity; 6D input with zero or parallel columns is completed to a valid
rotation; non-unit quaternions are normalised wherever a rotation is meant.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from skelanim.core._tensor import (
    _check,
    _check_broadcast,
    _cross,
    _eps2,
    _like,
    _safe_atan2,
    _safe_norm,
    _safe_normalize,
    _sum_sq,
    along_frames,
    as_tensor,
    numpy_in_numpy_out,
)
from skelanim.errors import ShapeError

__all__ = [
    "EULER_ORDERS", "as_tensor", "axis_angle_to_quat", "euler_to_matrix", "euler_to_quat", "matrix_geodesic",
    "matrix_to_euler", "matrix_to_quat", "matrix_to_rot6d", "matrix_to_rotvec", "mean_rotations", "numpy_in_numpy_out",
    "quat_apply", "quat_canonical", "quat_conjugate", "quat_continuous", "quat_geodesic", "quat_identity", "quat_inverse",
    "quat_multiply", "quat_normalize", "quat_slerp", "quat_to_euler", "quat_to_matrix", "quat_to_rot6d", "quat_to_rotvec",
    "rot6d_to_matrix", "rot6d_to_quat", "rotvec_to_matrix", "rotvec_to_quat",
]  # fmt: skip

#: The 12 Euler orders: 6 Tait-Bryan, then 6 proper Euler.
EULER_ORDERS: tuple[str, ...] = (
    "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX",
    "XYX", "XZX", "YXY", "YZY", "ZXZ", "ZYZ",
)  # fmt: skip


def _quat_id_like(q: Tensor) -> Tensor:
    return q.new_tensor([1.0, 0.0, 0.0, 0.0])


# ---------------------------------------------------------------------------------------- quaternions


def quat_identity(
    shape: int | tuple[int, ...] = (), dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
) -> Tensor:
    """Identity quaternions.

    Parameters
    ----------
    shape : int | tuple of int
        Leading shape ``...``.
    dtype, device
        Of the result.

    Returns
    -------
    Tensor
        ``(..., 4)`` filled with ``(1, 0, 0, 0)``.
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    q = torch.zeros((*shape, 4), dtype=dtype, device=device)
    q[..., 0] = 1.0
    return q


@numpy_in_numpy_out
def quat_normalize(q: Tensor) -> Tensor:
    """Scale quaternions to unit length; a zero quaternion becomes the identity.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions ``(w, x, y, z)``, any length.

    Returns
    -------
    Tensor
        ``(..., 4)`` unit quaternions.
    """
    q = as_tensor(q)
    _check(q, (4,), "q")
    sq = _sum_sq(q)
    infinite = torch.isinf(sq)
    if bool(infinite.any()):  # (the finite-component test only then: it had cost half of the whole call)
        q = _scaled_past_sqrt(q, -1)
        sq = _sum_sq(q)
    ok, norm = _norm_guard(sq)
    return torch.where(ok, q / norm, _quat_id_like(q))  # on whole quaternions: few ops (ONNX graphs)


def _scaled_past_sqrt(q: Tensor, dim: int) -> Tensor:
    """``q`` with each quaternion (its components along ``dim``) whose squared length overflows (``|q|`` past the
    float's square root, 1.8e19 in float32) divided by its largest component, so that it normalises instead of
    becoming zeros; the others, and any with a component that is not finite, as they are. The overflow rule of
    :func:`quat_normalize`, :func:`_quat_normalize_parts` and forward kinematics."""
    overflow = torch.isinf((q * q).sum(dim, keepdim=True)) & torch.isfinite(q).all(dim, keepdim=True)
    return torch.where(overflow, q / q.abs().amax(dim, keepdim=True), q)


def _norm_guard(sq: Tensor) -> tuple[Tensor, Tensor]:
    """The rule of :func:`quat_normalize` for squared lengths ``sq``: where ``sq > eps^2`` (``ok``) divide by
    ``norm = sqrt(sq)``; elsewhere (``norm = 1`` there, so no NaN in either branch) take the identity. A NaN
    length counts as ``ok``, so NaN input gives NaN, never a silent identity."""
    ok = ~(sq <= _eps2(sq))
    return ok, torch.sqrt(torch.where(ok, sq, torch.ones_like(sq)))


def _quat_normalize_parts(q: Sequence[Tensor]) -> list[Tensor]:
    """:func:`quat_normalize` on the four components ``(w, x, y, z)`` (tensors of one shape): contiguous
    components make the component-wise formulas that follow faster in eager torch (:func:`quat_to_matrix`)."""
    w, x, y, z = q
    sq = w * w + x * x + y * y + z * z
    if bool(torch.isinf(sq).any()):  # |q| past the float's square root: scaled down first, as quat_normalize does
        w, x, y, z = _scaled_past_sqrt(torch.stack([w, x, y, z]), 0).unbind(0)
        sq = w * w + x * x + y * y + z * z
    ok, norm = _norm_guard(sq)
    unit = [torch.where(ok, w / norm, torch.ones_like(w))]  # a zero quaternion becomes the identity
    return unit + [torch.where(ok, c / norm, torch.zeros_like(c)) for c in (x, y, z)]


@numpy_in_numpy_out
def quat_canonical(q: Tensor) -> Tensor:
    """Flip quaternions to the hemisphere ``w >= 0`` (``q`` and ``-q`` are the same rotation).

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions.

    Returns
    -------
    Tensor
        ``(..., 4)``, not normalised.
    """
    q = as_tensor(q)
    _check(q, (4,), "q")
    sign = torch.where(q[..., :1] < 0, q.new_tensor(-1.0), q.new_tensor(1.0))  # 0-dim: keeps q's dtype
    return q * sign  # (a sign, not where(-q, q): faster in eager torch)


@numpy_in_numpy_out
def quat_multiply(a: Tensor, b: Tensor) -> Tensor:
    """Hamilton product ``a * b`` (rotation ``b`` first, then ``a``).

    Parameters
    ----------
    a, b : Tensor
        ``(..., 4)`` quaternions; leading dims broadcast.

    Returns
    -------
    Tensor
        ``(..., 4)``; not normalised.
    """
    a, b = as_tensor(a), as_tensor(b)
    _check(a, (4,), "a")
    _check(b, (4,), "b")
    _check_broadcast(("a", a, 1), ("b", b, 1))
    return torch.stack(_quat_product_parts(a.unbind(-1), b.unbind(-1)), -1)


def _quat_product_parts(a: Sequence[Tensor], b: Sequence[Tensor]) -> list[Tensor]:
    """:func:`quat_multiply` on quaternions given as their four components ``(w, x, y, z)``, each a tensor
    of any (broadcastable) shape; returns the four components of ``a * b``. Lets callers that keep the
    components in separate contiguous tensors (forward kinematics) skip the strided ``(..., 4)`` layout."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return [
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ]


@numpy_in_numpy_out
def quat_conjugate(q: Tensor) -> Tensor:
    """Conjugate ``(w, -x, -y, -z)``: the inverse rotation for unit quaternions.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions.

    Returns
    -------
    Tensor
        ``(..., 4)``.
    """
    q = as_tensor(q)
    _check(q, (4,), "q")
    return torch.cat([q[..., :1], -q[..., 1:]], -1)


@numpy_in_numpy_out
def quat_inverse(q: Tensor) -> Tensor:
    """Multiplicative inverse ``conj(q) / |q|^2``; the inverse of a zero quaternion is the identity.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions, any length.

    Returns
    -------
    Tensor
        ``(..., 4)`` with ``quat_multiply(q, quat_inverse(q)) == identity``.
    """
    q = as_tensor(q)
    _check(q, (4,), "q")
    sq = _sum_sq(q)
    ok = ~(sq <= _eps2(q))  # NaN stays NaN (see _norm_guard)
    return torch.where(ok, quat_conjugate(q) / torch.where(ok, sq, torch.ones_like(sq)), _quat_id_like(q))


@numpy_in_numpy_out
def quat_apply(q: Tensor, v: Tensor) -> Tensor:
    """Rotate vectors by quaternions (normalised first): ``quat_to_matrix(q) @ v``.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions.
    v : Tensor
        ``(..., 3)`` vectors; leading dims broadcast with ``q``'s.

    Returns
    -------
    Tensor
        ``(..., 3)`` rotated vectors.
    """
    q, v = quat_normalize(q), as_tensor(v)
    _check(v, (3,), "v")
    _check_broadcast(("q", q, 1), ("v", v, 1))
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * _cross(u, v)
    return v + w * t + _cross(u, t)


@numpy_in_numpy_out
def quat_to_matrix(q: Tensor) -> Tensor:
    """Quaternions (normalised first; zero means identity) to rotation matrices.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions ``(w, x, y, z)``.

    Returns
    -------
    Tensor
        ``(..., 3, 3)`` rotation matrices.
    """
    q = as_tensor(q)
    _check(q, (4,), "q")
    parts = _quat_normalize_parts(q.unbind(-1))
    return torch.stack(_unit_quat_matrix_parts(parts), -1).unflatten(-1, (3, 3))


def _unit_quat_matrix_parts(q: Sequence[Tensor]) -> list[Tensor]:
    """The nine entries (row-major) of the rotation matrix of unit quaternions given as their four
    components ``(w, x, y, z)``: the formula behind :func:`quat_to_matrix`."""
    w, x, y, z = q
    xx, yy, zz, xy, xz, yz, wx, wy, wz = x * x, y * y, z * z, x * y, x * z, y * z, w * x, w * y, w * z
    return [
        1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy),
        2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx),
        2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy),
    ]  # fmt: skip


@numpy_in_numpy_out
def axis_angle_to_quat(axis: Tensor, angle: Tensor | float) -> Tensor:
    """Rotation about ``axis`` (normalised here; zero means identity) by ``angle`` radians.

    Parameters
    ----------
    axis : Tensor
        ``(..., 3)`` axes, any length.
    angle : Tensor | float
        ``(...)`` angles in radians; broadcast against ``axis.shape[:-1]``.

    Returns
    -------
    Tensor
        ``(..., 4)`` unit quaternions.
    """
    axis = as_tensor(axis)
    _check(axis, (3,), "axis")
    angle = _like(angle, axis)
    _check_broadcast(("axis", axis, 1), ("angle", angle, 0))
    half = angle[..., None] / 2
    n = _safe_normalize(axis, torch.zeros_like(axis))
    sq = _sum_sq(n)
    w = torch.where(sq > 0, torch.cos(half), torch.ones_like(half))  # zero axis: identity
    w = torch.where(torch.isnan(sq), sq, w)  # a NaN axis stays NaN (not the identity's w = 1)
    return torch.cat([w, n * torch.sin(half)], -1)  # both (broadcast(axis, angle), k)


# ---------------------------------------------------------------------------------- interpolation


@numpy_in_numpy_out
def quat_continuous(q: Tensor, *, dim: int = 0) -> Tensor:
    """Make a quaternion curve sign-continuous along frames (hemisphere alignment).

    Parameters
    ----------
    q:
        ``(F, ..., 4)`` quaternions, frames first.
    dim:
        The frame axis (``1`` for a ``(B, F, J, 4)`` batch of clips); the result keeps ``q``'s layout.

    Returns
    -------
    ``(F, ..., 4)``: ``q_t`` or ``-q_t`` (the same rotation), chosen so ``q_t . q_{t-1} >= 0``; frame 0 is
    kept as it is.
    """
    if dim != 0:
        return along_frames(quat_continuous, q, dim, "q", vectors=True)
    q = as_tensor(q)
    if q.ndim < 2:
        raise ShapeError(f"q must have shape (F, ..., 4), got {tuple(q.shape)}")
    _check(q, (4,), "q")
    flips = torch.where((q[1:] * q[:-1]).sum(-1, keepdim=True) < 0, -1.0, 1.0).to(q.dtype)
    return q * torch.cat([torch.ones_like(q[:1, ..., :1]), torch.cumprod(flips, dim=0)], dim=0)


def _quat_pair(q0: Tensor, q1: Tensor, t: Tensor | float | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
    """``q0`` and ``q1`` normalised and ``t`` (optional) as a tensor like them, their shapes checked under their
    own names (leading dims broadcasting, ``t`` with them)."""
    q0, q1 = as_tensor(q0), as_tensor(q1)
    _check(q0, (4,), "q0")
    _check(q1, (4,), "q1")
    t = None if t is None else _like(t, q0)
    _check_broadcast(("q0", q0, 1), ("q1", q1, 1), *(() if t is None else (("t", t, 0),)))
    return quat_normalize(q0), quat_normalize(q1), t


@numpy_in_numpy_out
def quat_slerp(q0: Tensor, q1: Tensor, t: Tensor | float) -> Tensor:
    """Spherical linear interpolation along the shortest path.

    Inputs are normalised; ``q1`` is negated where ``q0 . q1 < 0``. When the rotations are (nearly) equal
    it falls back to normalised linear interpolation, so values and gradients stay finite.

    Parameters
    ----------
    q0, q1 : Tensor
        ``(..., 4)`` quaternions (broadcast).
    t : Tensor | float
        ``(...)`` interpolation parameter, broadcast against the quaternions' leading dims; 0 gives ``q0``,
        1 gives ``q1`` up to sign.

    Returns
    -------
    Tensor
        ``(..., 4)`` unit quaternions.
    """
    q0, q1, at = _quat_pair(q0, q1, t)
    assert at is not None
    t = at[..., None]
    q1 = torch.where((q0 * q1).sum(-1, keepdim=True) < 0, -q1, q1)
    theta = 2 * _safe_atan2(_safe_norm(q1 - q0), _safe_norm(q1 + q0))  # angle between the 4-vectors
    small = theta < 1e-5
    sin_th = torch.where(small, torch.ones_like(theta), torch.sin(theta))
    w0 = torch.where(small, 1 - t, torch.sin((1 - t) * theta) / sin_th)
    w1 = torch.where(small, t, torch.sin(t * theta) / sin_th)
    return quat_normalize(w0 * q0 + w1 * q1)


@numpy_in_numpy_out
def quat_geodesic(q0: Tensor, q1: Tensor) -> Tensor:
    """Angle of the relative rotation ``q0^-1 q1``: ``2 atan2(|xyz|, |w|)`` in ``[0, pi]``.

    Parameters
    ----------
    q0, q1 : Tensor
        ``(..., 4)`` quaternions (normalised here; broadcast).

    Returns
    -------
    Tensor
        ``(...)`` angles in radians; finite gradient at 0 and pi.
    """
    q0, q1, _ = _quat_pair(q0, q1)
    r = quat_multiply(quat_conjugate(q0), q1)
    return 2 * _safe_atan2(_safe_norm(r[..., 1:], keepdim=False), r[..., 0].abs())


@numpy_in_numpy_out
def mean_rotations(rot: Tensor, dim: int = 0) -> Tensor:
    """Chordal mean of rotation matrices over one dim (the rotation nearest their average).

    Parameters
    ----------
    rot : Tensor
        ``(N, M, 3, 3)`` (``dim`` 0), or e.g. ``(B, T, M, 3, 3)`` with ``dim=1`` for each window's mean pose.
    dim : int
        The dim averaged over (not one of the last two).

    Returns
    -------
    Tensor
        ``rot`` without ``dim``: ``(M, 3, 3)``, ``(B, M, 3, 3)``; NaN where a mean has a NaN. The gradient is finite
        also for equal rotations (see :class:`_NearestRotation`).
    """
    rot = as_tensor(rot)
    _check(rot, (3, 3), "rot")
    if not -rot.ndim <= dim < rot.ndim or dim % rot.ndim >= rot.ndim - 2:
        raise ShapeError(f"mean_rotations averages over a leading dim of (..., 3, 3), not dim {dim} of {tuple(rot.shape)}")
    if rot.shape[dim] == 0:
        raise ShapeError(f"mean_rotations has no rotations to average over dim {dim} of {tuple(rot.shape)}")
    mean = rot.double().mean(dim)
    finite = torch.isfinite(mean).all(-1).all(-1)[..., None, None]
    eye = torch.eye(3, dtype=mean.dtype, device=mean.device)
    nearest = _NearestRotation.apply(torch.where(finite, mean, eye))  # the SVD refuses NaN: it is put back below
    return torch.where(finite, nearest, torch.nan).to(rot.dtype)


class _NearestRotation(torch.autograd.Function):
    """The rotation nearest ``(..., 3, 3)`` matrices ``M = U S V^T``: ``U diag(1, 1, d) V^T``, ``d = det(U V^T)``.

    Its gradient is the polar factor's, ``dL/dM = U [(B - B^T) / (s_i + s_j)] V^T`` with ``B = U^T (dL/dR) V``
    and ``s = S diag(1, 1, d)``: finite wherever ``M`` is not singular, also where singular values repeat (a joint
    that holds still, rotations symmetric about an axis), where torch's SVD gradient divides by ``s_i^2 - s_j^2``.
    """

    @staticmethod
    def forward(ctx, mean: Tensor) -> Tensor:
        u, s, vh = torch.linalg.svd(mean)
        d = torch.sign(torch.linalg.det(u @ vh))
        u = torch.cat([u[..., :2], u[..., 2:] * d[..., None, None]], dim=-1)
        nearest = u @ vh
        ctx.save_for_backward(nearest, vh, torch.cat([s[..., :2], s[..., 2:] * d[..., None]], -1))
        return nearest

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        nearest, vh, signed = ctx.saved_tensors
        v = vh.transpose(-1, -2)
        b = vh @ nearest.transpose(-1, -2) @ grad @ v  # U^T G V, as R^T = V U^T
        sums = signed[..., :, None] + signed[..., None, :]
        c = b / torch.where(sums != 0, sums, torch.ones_like(sums))
        return nearest @ v @ (c - c.transpose(-1, -2)) @ vh


@numpy_in_numpy_out
def matrix_geodesic(r0: Tensor, r1: Tensor) -> Tensor:
    """Angle of the relative rotation ``r0^T r1``: ``atan2(|skew part|, trace - 1)`` in ``[0, pi]``.

    Parameters
    ----------
    r0, r1 : Tensor
        ``(..., 3, 3)`` rotation matrices (broadcast).

    Returns
    -------
    Tensor
        ``(...)`` angles in radians; finite gradient at 0 and pi.
    """
    r0, r1 = as_tensor(r0), as_tensor(r1)
    _check(r0, (3, 3), "r0")
    _check(r1, (3, 3), "r1")
    _check_broadcast(("r0", r0, 2), ("r1", r1, 2))
    if r0.dtype != r1.dtype:  # mixed floating dtypes: the wider one (as every rotation function)
        dtype = torch.promote_types(r0.dtype, r1.dtype)
        r0, r1 = r0.to(dtype), r1.to(dtype)
    r = r0.transpose(-1, -2) @ r1
    skew = torch.stack([r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]], -1)
    trace = r[..., 0, 0] + r[..., 1, 1] + r[..., 2, 2]
    return _safe_atan2(_safe_norm(skew, keepdim=False), trace - 1)  # (2 sin, 2 cos)


# ------------------------------------------- Euler (core/euler.py) and conversions (core/rotation_convert.py)


# Re-exported last: euler.py and rotation_convert.py build on the quaternion functions above.
from skelanim.core.euler import euler_to_matrix, euler_to_quat, matrix_to_euler, quat_to_euler
from skelanim.core.rotation_convert import (
    matrix_to_quat,
    matrix_to_rot6d,
    matrix_to_rotvec,
    quat_to_rot6d,
    quat_to_rotvec,
    rot6d_to_matrix,
    rot6d_to_quat,
    rotvec_to_matrix,
    rotvec_to_quat,
)
