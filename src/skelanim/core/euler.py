"""Euler angles for all 12 orders; re-exported by :mod:`skelanim.core.rotations` (see its conventions).

Euler angles are *intrinsic* in the listed order, as BVH means them: ``"ZXY"`` means
``R = Rz(a[..., 0]) @ Rx(a[..., 1]) @ Ry(a[..., 2])`` (radians). Intrinsic ``ABC`` equals extrinsic ``CBA``
with the angles reversed; scipy's upper-case order strings mean the same as ours. Order strings are read in any
case; ``extrinsic=True`` reads them about the fixed axes instead, as scipy reads lower case: ``order="xyz",
extrinsic=True`` is scipy's ``"xyz"``, ``R = Rz(a[..., 2]) @ Ry(a[..., 1]) @ Rx(a[..., 0])``, and at gimbal lock
its third angle is the one set to 0, as in scipy.

Matrix/quaternion to Euler uses the direct quaternion method of Bernardes & Viollet (2022), "Quaternion
to Euler angles conversion: a direct, general and computationally efficient method", PLoS ONE 17(11),
as scipy does, uniformly for Tait-Bryan and proper Euler orders.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor

from skelanim.core._tensor import _check, _safe_atan2, _safe_norm, as_tensor, numpy_in_numpy_out
from skelanim.errors import SkelanimError

__all__ = [
    "EulerOrderError", "euler_quat_components", "euler_to_matrix", "euler_to_quat", "matrix_to_euler",
    "parse_order", "quat_to_euler",
]


class EulerOrderError(SkelanimError, ValueError):
    """An Euler order string is not one of :data:`EULER_ORDERS`."""


def parse_order(order: str) -> tuple[int, int, int]:
    """The axes (0/1/2 for X/Y/Z) of an Euler order string; :class:`EulerOrderError` if it is not one."""
    from skelanim.core.rotations import EULER_ORDERS  # (here: rotations imports this module at its end)

    if not isinstance(order, str) or order.upper() not in EULER_ORDERS:
        raise EulerOrderError(f"Euler order must be one of {', '.join(EULER_ORDERS)} (any case), got {order!r}")
    i, j, k = ("XYZ".index(c) for c in order.upper())
    return i, j, k


def _axis_matrix(axis: int, angle: Tensor) -> Tensor:
    c, s, one, zero = torch.cos(angle), torch.sin(angle), torch.ones_like(angle), torch.zeros_like(angle)
    if axis == 0:
        entries = [one, zero, zero, zero, c, -s, zero, s, c]
    elif axis == 1:
        entries = [c, zero, s, zero, one, zero, -s, zero, c]
    else:
        entries = [c, -s, zero, s, c, zero, zero, zero, one]
    return torch.stack(entries, -1).unflatten(-1, (3, 3))


_UNIT_PRODUCT = (  # Hamilton product of basis quaternions 1, i, j, k: (sign, index) of e_a * e_b
    ((1, 0), (1, 1), (1, 2), (1, 3)),
    ((1, 1), (-1, 0), (1, 3), (-1, 2)),
    ((1, 2), (-1, 3), (-1, 0), (1, 1)),
    ((1, 3), (1, 2), (-1, 1), (-1, 0)),
)


@functools.cache
def _euler_quat_terms(axes: tuple[int, int, int]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """For each quaternion component (w, x, y, z), the ``(sign, monomial)`` terms of
    ``q_a0 * q_a1 * q_a2`` with ``q_a = (cos h, sin h e_a)``; monomial bit ``i`` set = ``sin`` of angle
    ``i`` (else ``cos``). Each of the 8 monomials lands on exactly one component with sign +-1."""
    terms: list[list[tuple[int, int]]] = [[], [], [], []]
    for mono in range(8):
        sign, index = 1, 0
        for i, axis in enumerate(axes):
            if mono >> i & 1:
                s, index = _UNIT_PRODUCT[index][1 + axis]
                sign *= s
        terms[index].append((sign, mono))
    return tuple(tuple(t) for t in terms)


@numpy_in_numpy_out
def euler_to_matrix(angles: Tensor, order: str, *, degrees: bool = False, extrinsic: bool = False) -> Tensor:
    """Intrinsic (or with ``extrinsic=True``, extrinsic) Euler angles to rotation matrices.

    Parameters
    ----------
    angles : Tensor
        ``(..., 3)`` radians (degrees with ``degrees=True``); ``angles[..., i]`` is about axis ``order[i]``.
    order : str
        One of :data:`EULER_ORDERS`, any case.
    degrees : bool
        Angles in degrees (as in BVH files).
    extrinsic : bool
        About the fixed axes (module docstring).

    Returns
    -------
    Tensor
        ``(..., 3, 3)``: ``R_order[0](a0) @ R_order[1](a1) @ R_order[2](a2)`` (extrinsic: the reverse product).
    """
    if degrees:
        return euler_to_matrix(torch.deg2rad(as_tensor(angles)), order, extrinsic=extrinsic)
    if extrinsic:
        return euler_to_matrix(as_tensor(angles).flip(-1), _reversed(order))
    axes = parse_order(order)
    angles = as_tensor(angles)
    _check(angles, (3,), "angles")
    r0, r1, r2 = (_axis_matrix(ax, angles[..., i]) for i, ax in enumerate(axes))
    return r0 @ r1 @ r2


@numpy_in_numpy_out
def euler_to_quat(angles: Tensor, order: str, *, degrees: bool = False, extrinsic: bool = False) -> Tensor:
    """Intrinsic (or extrinsic) Euler angles to unit quaternions (product of the three axis rotations, not
    canonicalised).

    Parameters
    ----------
    angles : Tensor
        ``(..., 3)`` radians (degrees with ``degrees=True``); any strides.
    order : str
        One of :data:`EULER_ORDERS`, any case.
    degrees : bool
        Angles in degrees (as in BVH files): the same result as converting to radians first, bit for bit.
    extrinsic : bool
        About the fixed axes (module docstring).

    Returns
    -------
    Tensor
        ``(..., 4)`` ``(w, x, y, z)``.
    """
    if extrinsic:
        return euler_to_quat(as_tensor(angles).flip(-1), _reversed(order), degrees=degrees)
    axes = parse_order(order)
    angles = as_tensor(angles)
    _check(angles, (3,), "angles")
    # long inputs go in blocks of rows: the temporaries of a block are reused by the next one instead of
    # being fresh pages each time
    step = max(1, _BLOCK // max(1, angles[0].numel() // 3)) if angles.ndim > 1 and angles.shape[0] else 1
    if angles.ndim < 2 or angles.shape[0] <= step:
        return _euler_to_quat_block(angles, axes, degrees)
    return torch.cat([_euler_to_quat_block(angles[i : i + step], axes, degrees)
                      for i in range(0, angles.shape[0], step)])


_BLOCK = 8192  # Euler triples per block of euler_to_quat


def _euler_to_quat_block(angles: Tensor, axes: tuple[int, int, int], degrees: bool) -> Tensor:
    """:func:`euler_to_quat` of ``(..., 3)`` angles in one go."""
    # components first and contiguous (one copy), so the products below run on contiguous rows
    return torch.stack(euler_quat_components(angles.movedim(-1, 0).contiguous(), axes, degrees=degrees), -1)


def euler_quat_components(angles: Tensor, axes: tuple[int, int, int], *, degrees: bool) -> list[Tensor]:
    """The closed form behind :func:`euler_to_quat`, on components: ``(3, ...)`` angles (``angles[i]`` about
    axis ``axes[i]``, 0/1/2 for X/Y/Z; radians, or degrees with ``degrees=True``) -> the four ``(...)``
    components ``w, x, y, z`` (for callers that keep components apart, like forward kinematics)."""
    # Closed form of q_a0(angle 0) * q_a1(angle 1) * q_a2(angle 2): each component is a signed sum of
    # products cos/sin(half angle 0) * cos/sin(half 1) * cos/sin(half 2), formed as (x0 * x1) * x2.
    half = angles * (math.pi / 360.0 if degrees else 0.5)  # == radians(a) / 2
    cos, sin = torch.cos(half), torch.sin(half)
    first_two = [cos[0] * cos[1], sin[0] * cos[1], cos[0] * sin[1], sin[0] * sin[1]]  # by bits 0 and 1
    mono = [first_two[m & 3] * (sin[2] if m & 4 else cos[2]) for m in range(8)]
    parts = []
    for terms in _euler_quat_terms(axes):
        (sign_a, a), (sign_b, b) = terms  # two monomials per component for all 12 orders
        if sign_a > 0:
            parts.append(mono[a] + mono[b] if sign_b > 0 else mono[a] - mono[b])
        else:
            parts.append(mono[b] - mono[a] if sign_b > 0 else -(mono[a] + mono[b]))
    return parts


@numpy_in_numpy_out
def quat_to_euler(q: Tensor, order: str, *, degrees: bool = False, extrinsic: bool = False) -> Tensor:
    """Quaternions (any length; zero means identity) to intrinsic (or extrinsic) Euler angles.

    The middle angle is in ``[-pi/2, pi/2]`` for Tait-Bryan orders and ``[0, pi]`` for proper Euler orders;
    the others are in ``[-pi, pi]``. At gimbal lock (middle angle within ~1e-7 of its singular values) the
    third angle is set to 0 and the first carries the whole remaining rotation, as scipy does.

    Parameters
    ----------
    q : Tensor
        ``(..., 4)`` quaternions ``(w, x, y, z)``.
    order : str
        One of :data:`EULER_ORDERS`, any case.
    degrees : bool
        Give the angles in degrees (as in BVH files).
    extrinsic : bool
        About the fixed axes (module docstring); at gimbal lock the third extrinsic angle is 0.

    Returns
    -------
    Tensor
        ``(..., 3)`` radians (degrees with ``degrees=True``), with
        ``euler_to_matrix(result, order, degrees=degrees, extrinsic=extrinsic) == quat_to_matrix(q)``.
    """
    if degrees:
        return torch.rad2deg(quat_to_euler(q, order, extrinsic=extrinsic))
    if extrinsic:  # the intrinsic angles of the reversed order, reversed, with the lock's 0 moved to the last
        angles, locked = _quat_to_intrinsic(q, _reversed(order))
        moved = _lock_on_first(angles, _reversed(order))
        return torch.where(locked[..., None], moved, angles).flip(-1)
    return _quat_to_intrinsic(q, order)[0]


def _reversed(order: str) -> str:
    parse_order(order)
    return order[::-1]


def _lock_on_first(angles: Tensor, order: str) -> Tensor:
    """Angles ``(..., 3)`` at gimbal lock (third 0) rewritten with the first 0: the same rotation, the combined
    turn now on the third axis (which of its two signs is told by the matrices)."""
    first, middle = angles[..., 0], angles[..., 1]
    zero = torch.zeros_like(first)
    target = euler_to_matrix(angles, order)
    plus, minus = (torch.stack([zero, middle, sign * first], -1) for sign in (1.0, -1.0))
    gap = ((euler_to_matrix(plus, order) - target) ** 2).sum((-1, -2))
    gap_minus = ((euler_to_matrix(minus, order) - target) ** 2).sum((-1, -2))
    return torch.where((gap <= gap_minus)[..., None], plus, minus)


def _quat_to_intrinsic(q: Tensor, order: str) -> tuple[Tensor, Tensor]:
    """:func:`quat_to_euler`'s intrinsic angles ``(..., 3)`` and the ``(...)`` flags of gimbal lock."""
    from skelanim.core.rotations import quat_normalize  # (here: rotations imports this module at its end)

    a0, a1, a2 = parse_order(order)
    q = quat_normalize(q)  # the formulas are scale-invariant; this maps a zero quaternion to identity
    # Intrinsic (a0, a1, a2) is extrinsic (i, j, k) = (a2, a1, a0); Bernardes & Viollet work extrinsically.
    i, j, k = a2, a1, a0
    proper = i == k
    if proper:
        k = 3 - i - j
    sign = float((i - j) * (j - k) * (k - i) // 2)  # +1 for an even permutation of xyz, -1 for odd
    w, qi, qj, qk = q[..., 0], q[..., 1 + i], q[..., 1 + j], q[..., 1 + k] * sign
    if proper:
        a, b, c, d = w, qi, qj, qk
    else:
        a, b, c, d = w - qj, qi + qk, qj + w, qk - qi
    hypot_cd = _safe_norm(torch.stack([c, d], -1), keepdim=False)  # safe: finite gradient at c = d = 0
    middle = 2 * _safe_atan2(hypot_cd, _safe_norm(torch.stack([a, b], -1), keepdim=False))
    half_sum, half_diff = _safe_atan2(b, a), _safe_atan2(d, c)
    eps = max(1e-7, 16 * torch.finfo(q.dtype).eps)
    at_zero, at_pi = middle.abs() <= eps, (middle - math.pi).abs() <= eps
    locked = at_zero | at_pi
    first = torch.where(locked, torch.where(at_zero, 2 * half_sum, 2 * half_diff), half_sum + half_diff)
    third = torch.where(locked, torch.zeros_like(middle), half_sum - half_diff)
    if not proper:
        first = first * sign
        middle = middle - math.pi / 2
    angles = torch.stack([first, middle, third], -1)
    wrapped = torch.remainder(angles + math.pi, 2 * math.pi) - math.pi
    keep_middle = torch.tensor([False, True, False], device=q.device)
    return torch.where(keep_middle, angles, wrapped), locked


@numpy_in_numpy_out
def matrix_to_euler(m: Tensor, order: str, *, degrees: bool = False, extrinsic: bool = False) -> Tensor:
    """Rotation matrices to intrinsic (or extrinsic) Euler angles (via :func:`quat_to_euler`, same ranges and
    gimbal rule).

    Parameters
    ----------
    m : Tensor
        ``(..., 3, 3)`` rotation matrices.
    order : str
        One of :data:`EULER_ORDERS`, any case.
    degrees : bool
        Give the angles in degrees.
    extrinsic : bool
        About the fixed axes (module docstring).

    Returns
    -------
    Tensor
        ``(..., 3)`` radians (degrees with ``degrees=True``).
    """
    from skelanim.core.rotations import matrix_to_quat  # (here: rotations imports this module at its end)

    parse_order(order)
    return quat_to_euler(matrix_to_quat(m), order, degrees=degrees, extrinsic=extrinsic)
