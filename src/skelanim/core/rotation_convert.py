"""Conversions between rotation matrices, quaternions, the 6D representation and rotation vectors.

Part of :mod:`skelanim.core.rotations` (which re-exports every function here and states the conventions:
quaternions ``(w, x, y, z)``, matrices acting on column vectors, 6D = the first two columns of ``R`` laid out
``[R00, R10, R20, R01, R11, R21]``, rotation vectors ``axis * angle``). Same backend rules: torch, any
leading dims, dtype and device kept, NumPy in and out at the edges, finite values and gradients at 0 and 180
degrees and for degenerate input.

Few, large operations
---------------------
:func:`matrix_to_quat` and :func:`rot6d_to_matrix` run inside exported ONNX graphs (the IK network at batch
1), where every node costs time, so they are written with few, large operations: the 16 Shepperd candidates
``4 q_i q_j`` are one matrix product of the 9 entries with a constant ``(9, 16)`` table plus a constant (the
table is derived at import from the formula written out in :func:`_shepperd_parts`, so the math stays
written once), the best candidate is picked by one gather, and Gram-Schmidt works on whole 3-vectors, with
the cross product as four gathers and three products (:func:`skelanim.core._tensor._cross`). They are also no slower in
eager torch than the component-wise forms they replace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from skelanim.core._tensor import _check, _cross, _safe_normalize, _sum_sq, as_tensor, numpy_in_numpy_out
from skelanim.core.rotations import quat_canonical, quat_normalize, quat_to_matrix
from skelanim.errors import ShapeError

__all__ = [
    "matrix_to_quat", "matrix_to_rot6d", "matrix_to_rotvec", "quat_to_rot6d", "quat_to_rotvec",
    "rot6d_to_matrix", "rot6d_to_quat", "rotvec_to_matrix", "rotvec_to_quat",
]  # fmt: skip


# ------------------------------------------------------------------------------- constant tables


def _shepperd_parts(m: Sequence[Tensor]) -> list[Tensor]:
    """The 16 entries (row-major) of the symmetric ``4 q q^T`` of the unit quaternion ``q`` of a rotation
    matrix given as its 9 entries (row-major): diagonal ``4 q_i^2`` from the trace terms, the rest from
    sums and differences of off-diagonal entries (Shepperd 1978). Affine in the entries."""
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = m
    d = [1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22]  # 4 q_i^2
    wx, wy, wz = m21 - m12, m02 - m20, m10 - m01
    xy, xz, yz = m10 + m01, m02 + m20, m12 + m21
    return [d[0], wx, wy, wz, wx, d[1], xy, xz, wy, xy, d[2], yz, wz, xz, yz, d[3]]


def _affine_table(formula: Callable[[list[Tensor]], list[Tensor]], size: int) -> tuple[Tensor, Tensor]:
    """``(size, K)`` coefficients ``T`` and ``(K,)`` constant ``c`` with ``formula(x) == x @ T + c`` for a
    formula that is affine in the ``size`` components of ``x``: from its values at zero and the basis."""
    zero = torch.zeros(size, 1, dtype=torch.float64)
    const = torch.cat(formula(list(zero)))
    eye = torch.eye(size, dtype=torch.float64)
    return torch.stack([torch.cat(formula(list(eye[i].reshape(size, 1)))) - const for i in range(size)]), const


_SHEPPERD = _affine_table(_shepperd_parts, 9)  # (9, 16) and (16,): 4 q q^T from the 9 matrix entries
_TABLES: dict[tuple[str, torch.dtype, torch.device], tuple[Tensor, ...]] = {}


def _tables(name: str, like: Tensor) -> tuple[Tensor, ...]:
    """The constants ``name`` (``"shepperd"``: the table and constant of :func:`_shepperd_parts`) on ``like``'s
    device, in its dtype (converted once, then cached)."""
    key = (name, like.dtype, like.device)
    if key not in _TABLES:
        with torch.inference_mode(False):  # cached for every later call: never an inference-mode tensor
            _TABLES[key] = tuple(t.to(dtype=like.dtype, device=like.device) for t in _SHEPPERD)
    return _TABLES[key]


# ------------------------------------------------------------------------------------- matrices


#: Matrices converted at a time by :func:`matrix_to_quat` (eager mode): 4M at once had taken 1.5 GB of
#: temporaries and 1.55 s, in blocks 0.16 GB and 0.58 s, the same bits.
_MATRIX_BLOCK = 65536


@numpy_in_numpy_out
def matrix_to_quat(m: Tensor, *, check: bool = True) -> Tensor:
    """Rotation matrices to unit quaternions with ``w >= 0``.

    Branchless Shepperd-style method: the four candidates ``4 q_i q`` are built from sums and differences
    of entries (no square roots; all 16 numbers in one matrix product, :func:`_shepperd_parts`) and the one
    with the largest ``|q_i|`` is normalised, so the result is accurate and differentiable everywhere,
    including at 180 degrees. (At exactly 180 degrees ``q`` and ``-q`` both have ``w = 0``; which of the two
    comes back depends on rounding.)

    Parameters
    ----------
    m : Tensor
        ``(..., 3, 3)`` rotation matrices (slightly non-orthogonal input gives a nearby rotation, a uniformly
        scaled one its rotation; a reflection, determinant < 0, is a :class:`~skelanim.errors.ShapeError`).
    check : bool
        Refuse reflections. ``False`` converts any matrix, as a traced or exported graph does: for a network's
        own output, which for a degenerate input may be no rotation (a unit quaternion comes back all the same).

    Returns
    -------
    Tensor
        ``(..., 4)`` unit quaternions, ``w >= 0``.
    """
    m = as_tensor(m)
    _check(m, (3, 3), "m")
    traced = torch.jit.is_tracing() or torch.onnx.is_in_onnx_export()
    if not traced and m.numel() > 9 * _MATRIX_BLOCK:  # in blocks: the whole batch's temporaries took ~500 B a matrix
        flat = m.reshape(-1, 3, 3)
        parts = [matrix_to_quat(block, check=check) for block in flat.split(_MATRIX_BLOCK)]
        return torch.cat(parts).reshape(*m.shape[:-2], 4)
    if check and not traced and m.numel() and bool(((m[..., 0] * _cross(m[..., 1], m[..., 2])).sum(-1) < 0).any()):
        raise ShapeError("m holds a reflection (determinant < 0), not a rotation: no quaternion stands for it")
    table, const = _tables("shepperd", m)
    # a scaled rotation s R is R's: the constant 1 of the diagonal candidates 1 +- m00 +- m11 +- m22 scaled by s,
    # ||s R||_F / sqrt(3) (1 for a rotation); the 9 entries by size, not flatten's -1: an exported ONNX Reshape
    # cannot infer -1 for an empty batch
    scale = m.square().sum((-2, -1)).div(3.0).sqrt()[..., None]
    cand = m.reshape(*m.shape[:-2], 9) @ table + const * scale  # (..., 16): row i (entries 4i .. 4i+3) = 4 q_i q
    best = cand[..., ::5].max(-1, keepdim=True).indices  # (..., 1): the largest diagonal 4 q_i^2 (first if tied)
    row = cand.gather(-1, best * 4 + torch.arange(4, device=m.device))  # (..., 4)
    return quat_canonical(quat_normalize(row))


@numpy_in_numpy_out
def matrix_to_rot6d(m: Tensor) -> Tensor:
    """Rotation matrices to the 6D representation (first two columns).

    Parameters
    ----------
    m : Tensor
        ``(..., 3, 3)`` rotation matrices.

    Returns
    -------
    Tensor
        ``(..., 6)`` as ``[R00, R10, R20, R01, R11, R21]``.
    """
    m = as_tensor(m)
    _check(m, (3, 3), "m")
    return m[..., :2].transpose(-1, -2).flatten(-2)


@numpy_in_numpy_out
def rot6d_to_matrix(d6: Tensor, *, guarded: bool = True) -> Tensor:
    """6D representation to rotation matrices by Gram-Schmidt (Zhou et al. 2019).

    ``b1 = a1 / |a1|``, ``b2`` = normalised part of ``a2`` orthogonal to ``b1``, ``b3 = b1 x b2``. Each column
    is first scaled by the power of two that brings its largest absolute entry into ``[1, 2)`` (exactly: the
    result is unchanged where no square overflowed or underflowed), so any finite scale works, from the dtype's
    smallest normal number (``1.2e-38`` in float32) to its largest, and the two columns' scales need not match.
    A zero first column is taken as the x axis; a second column that is zero or parallel to the first (its part
    orthogonal to ``b1`` at most 9 to 32 ``eps`` of its length) is replaced by the y axis (the z axis if ``b1``
    is close to y) made orthogonal to ``b1``, so the output is always a rotation; only an exactly zero column
    counts as zero. NaN or infinite entries give NaN.

    Parameters
    ----------
    d6 : Tensor
        ``(..., 6)`` two 3D columns ``a1, a2``, any finite scale.
    guarded : bool
        ``False`` drops the fallbacks and the rescaling above and the second projection (half the graph nodes,
        for a network's single-pose ONNX call): the same rotation wherever ``a1`` and ``a2`` are far from zero
        and from parallel and their norms lie between ``1e-12`` (the clamp of the divisions) and the square root
        of the dtype's largest number (about ``1.8e19`` in float32, ``1.3e154`` in float64); finite but not a
        rotation (zero columns, or zero matrix entries past that root) where they do not.

    Returns
    -------
    Tensor
        ``(..., 3, 3)`` rotation matrices with columns ``b1, b2, b3``.
    """
    d6 = as_tensor(d6)
    _check(d6, (6,), "d6")
    a1, a2 = d6[..., :3], d6[..., 3:]
    if not guarded:
        b1 = a1 / a1.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        u = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
        b2 = u / u.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return torch.stack([b1, b2, _cross(b1, b2)], -1)
    # each column times the power of two 2^-e that brings its largest |entry| into [1, 2) (a zero column stays
    # zero, a NaN stays NaN): its squared norm is 0 or in [1, 12), so squares neither overflow nor underflow, and
    # every test below is of directions, not sizes. A power of two scales exactly, so where the columns were of
    # a fine size already the result is the same to the last bit as without it (callers compare rest frames
    # exactly). The largest |entry| by two maximums: half the time of amax.
    cols = d6.unflatten(-1, (2, 3))
    size = cols.abs()
    size = torch.maximum(torch.maximum(size[..., :1], size[..., 1:2]), size[..., 2:])  # (..., 2, 1)
    a1, a2 = (cols * torch.exp2(-torch.floor(torch.log2(size.clamp_min(torch.finfo(d6.dtype).tiny))))).unbind(-2)
    eye = torch.eye(3, dtype=d6.dtype, device=d6.device)
    b1 = _safe_normalize(a1, eye[0])  # unit
    # Fallback for b2: e = y (or z when b1 is near y) made orthogonal to b1, v = e - (b1.e) b1; its squared norm
    # 1 - (b1.e)^2 is >= 1/2, so it needs no guard, and b1.e is a component of b1: no sums (their cost pays for
    # the rescaling above)
    far_y = b1[..., 1:2] ** 2 < 0.5
    be = torch.where(far_y, b1[..., 1:2], b1[..., 2:])  # b1.e
    fallback = (torch.where(far_y, eye[1], eye[2]) - be * b1) * torch.rsqrt(1 - be * be)
    u = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
    u = u - (b1 * u).sum(-1, keepdim=True) * b1  # project twice: keeps b2 orthogonal when a2 is nearly parallel
    b2 = _safe_normalize(u, fallback, ref_sq=3.0, rel=16.0)  # |u| <= 32 eps (|a2| in [1, 3.5)): a2 ~ b1
    return torch.stack([b1, b2, _cross(b1, b2)], -1)


@numpy_in_numpy_out
def quat_to_rot6d(q: Tensor) -> Tensor:
    """Quaternions to the 6D representation.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions.

    Returns
    -------
    Tensor
        ``(..., 6)``.
    """
    return matrix_to_rot6d(quat_to_matrix(q))


@numpy_in_numpy_out
def rot6d_to_quat(d6: Tensor) -> Tensor:
    """6D representation to unit quaternions (``w >= 0``).

    Parameters
    ----------
    d6 : Tensor
        ``(..., 6)``.

    Returns
    -------
    Tensor
        ``(..., 4)``.
    """
    return matrix_to_quat(rot6d_to_matrix(d6))


# ------------------------------------------------------------------------------------- axis-angle


@numpy_in_numpy_out
def rotvec_to_quat(v: Tensor) -> Tensor:
    """Rotation vectors (``axis * angle``) to unit quaternions; Taylor series near zero.

    Parameters
    ----------
    v : Tensor
        ``(..., 3)`` rotation vectors, angle ``|v|`` in radians.

    Returns
    -------
    Tensor
        ``(..., 4)`` unit quaternions ``(cos(|v|/2), sin(|v|/2) v/|v|)``.
    """
    v = as_tensor(v)
    _check(v, (3,), "v")
    th2 = _sum_sq(v)
    small = th2 < 1e-6
    th = torch.sqrt(torch.where(small, torch.ones_like(th2), th2))
    w = torch.where(small, 1 - th2 / 8 + th2 * th2 / 384, torch.cos(th / 2))
    s = torch.where(small, 0.5 - th2 / 48 + th2 * th2 / 3840, torch.sin(th / 2) / th)
    return torch.cat([w, v * s], -1)


@numpy_in_numpy_out
def quat_to_rotvec(q: Tensor) -> Tensor:
    """Quaternions (normalised first) to rotation vectors with angle in ``[0, pi]``.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions.

    Returns
    -------
    Tensor
        ``(..., 3)`` rotation vectors ``axis * angle``; angle ``= 2 atan2(|xyz|, |w|)``.
    """
    q = quat_canonical(quat_normalize(q))
    w, u = q[..., :1], q[..., 1:]
    s2 = _sum_sq(u)
    small = s2 < 1e-6  # then w > 0.99
    s = torch.sqrt(torch.where(small, torch.ones_like(s2), s2))
    ws = torch.where(small, w, torch.ones_like(w))
    r2 = s2 / (ws * ws)
    f_small = (2 / ws) * (1 - r2 / 3 + r2 * r2 / 5)  # 2 atan(s/w)/s
    return u * torch.where(small, f_small, 2 * torch.atan2(s, w) / s)


@numpy_in_numpy_out
def rotvec_to_matrix(v: Tensor) -> Tensor:
    """Rotation vectors to rotation matrices.

    Parameters
    ----------
    v : Tensor
        ``(..., 3)`` rotation vectors.

    Returns
    -------
    Tensor
        ``(..., 3, 3)``.
    """
    return quat_to_matrix(rotvec_to_quat(v))


@numpy_in_numpy_out
def matrix_to_rotvec(m: Tensor) -> Tensor:
    """Rotation matrices to rotation vectors (angle in ``[0, pi]``).

    Parameters
    ----------
    m : Tensor
        ``(..., 3, 3)``.

    Returns
    -------
    Tensor
        ``(..., 3)``.
    """
    return quat_to_rotvec(matrix_to_quat(m))
