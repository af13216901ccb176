"""Tests for skelanim.core.rotations, checked against scipy.spatial.transform.Rotation (an independent source).

scipy quaternions are (x, y, z, w) scalar-last; ours are (w, x, y, z). scipy's upper-case Euler order strings
are intrinsic, like ours.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from skelanim.core import rotations as rot
from skelanim.core.euler import EulerOrderError
from skelanim.core.rotations import (
    EULER_ORDERS,
    as_tensor,
    axis_angle_to_quat,
    euler_to_matrix,
    euler_to_quat,
    matrix_geodesic,
    matrix_to_euler,
    matrix_to_quat,
    matrix_to_rot6d,
    matrix_to_rotvec,
    quat_apply,
    quat_canonical,
    quat_conjugate,
    quat_geodesic,
    quat_identity,
    quat_inverse,
    quat_multiply,
    quat_normalize,
    quat_slerp,
    quat_to_euler,
    quat_to_matrix,
    quat_to_rot6d,
    quat_to_rotvec,
    rot6d_to_matrix,
    rot6d_to_quat,
    rotvec_to_matrix,
    rotvec_to_quat,
)
from skelanim.errors import ShapeError

TAIT_BRYAN = EULER_ORDERS[:6]
PROPER = EULER_ORDERS[6:]
BATCH = (5, 7)


# ----------------------------------------------------------------------------------------------- helpers


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def to_xyzw(q: np.ndarray) -> np.ndarray:
    return np.roll(q, -1, axis=-1)


def to_wxyz(q: np.ndarray) -> np.ndarray:
    return np.roll(q, 1, axis=-1)


def random_quats(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    q = rng.normal(size=(*shape, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def scipy_rot(q_wxyz: np.ndarray) -> Rotation:
    return Rotation.from_quat(to_xyzw(q_wxyz.reshape(-1, 4)))


def assert_same_rotation(qa: Any, qb: Any, atol: float = 1e-10) -> None:
    """Quaternions equal up to sign (q and -q are the same rotation)."""
    qa, qb = np.asarray(qa), np.asarray(qb)
    err = np.minimum(np.abs(qa - qb).max(-1), np.abs(qa + qb).max(-1))
    assert err.max() <= atol, err.max()


def wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


def assert_angles_close(a: Any, b: Any, atol: float = 1e-9) -> None:
    assert np.abs(wrap(np.asarray(a) - np.asarray(b))).max() <= atol


def assert_finite_grad(fn: Callable[..., torch.Tensor], *inputs: Any) -> list[torch.Tensor]:
    xs = [torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True) for x in inputs]
    out = fn(*xs)
    assert torch.isfinite(out).all(), out
    weights = torch.linspace(0.3, 1.7, out.numel(), dtype=out.dtype).reshape(out.shape)
    grads = torch.autograd.grad((out * weights).sum(), xs)
    for g in grads:
        assert torch.isfinite(g).all(), g
    return list(grads)


SQ = math.sqrt(1 / 3)
AXES_180 = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [SQ, SQ, SQ], [SQ, -SQ, SQ]])
QUATS_180 = np.concatenate([np.zeros((5, 1)), AXES_180], -1)
MATS_180 = 2 * AXES_180[:, :, None] * AXES_180[:, None, :] - np.eye(3)
ID_Q = np.array([1.0, 0, 0, 0])


# -------------------------------------------------------------------------------------------------- Euler


def test_euler_orders() -> None:
    assert len(EULER_ORDERS) == 12 == len(set(EULER_ORDERS))
    assert all(o[0] != o[1] != o[2] for o in EULER_ORDERS)
    assert set(PROPER) == {o for o in EULER_ORDERS if o[0] == o[2]}


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_to_matrix_and_quat_match_scipy(order: str, rng: np.random.Generator) -> None:
    angles = rng.uniform(-np.pi, np.pi, (*BATCH, 3))
    ref = Rotation.from_euler(order, angles.reshape(-1, 3))
    m = euler_to_matrix(torch.from_numpy(angles), order)
    assert isinstance(m, torch.Tensor) and m.shape == (*BATCH, 3, 3)
    np.testing.assert_allclose(m.numpy().reshape(-1, 3, 3), ref.as_matrix(), atol=1e-12)
    q = euler_to_quat(torch.from_numpy(angles), order.lower())  # our order strings are case-insensitive
    assert q.shape == (*BATCH, 4)
    assert_same_rotation(q.numpy().reshape(-1, 4), to_wxyz(ref.as_quat()), atol=1e-12)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_matrix_and_quat_to_euler_match_scipy(order: str, rng: np.random.Generator) -> None:
    q = random_quats(rng, BATCH)
    ref = scipy_rot(q)
    expected = ref.as_euler(order).reshape(*BATCH, 3)
    assert_angles_close(quat_to_euler(torch.from_numpy(q), order).numpy(), expected, atol=1e-9)
    got = matrix_to_euler(torch.from_numpy(ref.as_matrix().reshape(*BATCH, 3, 3)), order.lower())
    assert got.shape == (*BATCH, 3)
    assert_angles_close(got.numpy(), expected, atol=1e-9)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_round_trip_and_ranges(order: str, rng: np.random.Generator) -> None:
    n = 200
    outer = rng.uniform(-np.pi + 1e-3, np.pi - 1e-3, (n, 2))
    middle = rng.uniform(-1.5, 1.5, n) if order in TAIT_BRYAN else rng.uniform(0.05, np.pi - 0.05, n)
    angles = np.stack([outer[:, 0], middle, outer[:, 1]], -1)
    np.testing.assert_allclose(matrix_to_euler(euler_to_matrix(angles, order), order), angles, atol=1e-9)
    np.testing.assert_allclose(quat_to_euler(euler_to_quat(angles, order), order), angles, atol=1e-9)

    e = quat_to_euler(random_quats(rng, (500,)), order)
    assert np.all(np.abs(e[:, [0, 2]]) <= np.pi)
    lo, hi = (-np.pi / 2, np.pi / 2) if order in TAIT_BRYAN else (0.0, np.pi)
    assert np.all((e[:, 1] >= lo) & (e[:, 1] <= hi))


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_gimbal_lock(order: str, rng: np.random.Generator) -> None:
    n = 50
    singular = [-np.pi / 2, np.pi / 2] if order in TAIT_BRYAN else [0.0, np.pi]
    middle = np.array(singular)[rng.integers(0, 2, n)]
    angles = np.stack([rng.uniform(-3, 3, n), middle, rng.uniform(-3, 3, n)], -1)
    m = euler_to_matrix(angles, order)
    e = matrix_to_euler(m, order)
    np.testing.assert_allclose(euler_to_matrix(e, order), m, atol=1e-6)
    np.testing.assert_array_equal(e[:, 2], 0.0)  # third angle set to zero, as scipy does
    np.testing.assert_allclose(np.abs(e[:, 1]), np.abs(middle), atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = Rotation.from_matrix(m).as_euler(order)
    assert_angles_close(e, expected, atol=1e-6)
    assert_finite_grad(lambda x: matrix_to_euler(x, order), m)
    assert_finite_grad(lambda x: quat_to_euler(x, order), matrix_to_quat(m))


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_gradients_finite_at_special_rotations(order: str) -> None:
    assert_finite_grad(lambda x: quat_to_euler(x, order), np.concatenate([ID_Q[None], QUATS_180]))
    assert_finite_grad(lambda x: matrix_to_euler(x, order), np.concatenate([np.eye(3)[None], MATS_180]))
    assert_finite_grad(lambda x: quat_to_euler(x, order), np.zeros(4))
    np.testing.assert_array_equal(quat_to_euler(np.zeros(4), order), np.zeros(3))
    assert_finite_grad(lambda x: euler_to_matrix(x, order), np.zeros(3))


@pytest.mark.parametrize("bad", ["XXY", "XY", "XYZX", "ABC", "", 3])
def test_bad_euler_order(bad: Any) -> None:
    with pytest.raises(EulerOrderError):
        euler_to_matrix(np.zeros(3), bad)
    with pytest.raises(ValueError):
        quat_to_euler(np.array([1.0, 0, 0, 0]), bad)


# ------------------------------------------------------------------------------------ quaternions/matrices


def test_quat_to_matrix_and_back_match_scipy(rng: np.random.Generator) -> None:
    q = random_quats(rng, BATCH)
    ref = scipy_rot(q)
    m = quat_to_matrix(torch.from_numpy(q * 3.0))  # non-unit input is normalised
    assert m.shape == (*BATCH, 3, 3)
    np.testing.assert_allclose(m.numpy().reshape(-1, 3, 3), ref.as_matrix(), atol=1e-12)
    back = matrix_to_quat(torch.from_numpy(ref.as_matrix().reshape(*BATCH, 3, 3)))
    assert back.shape == (*BATCH, 4)
    expected = to_wxyz(ref.as_quat(canonical=True)).reshape(*BATCH, 4)
    np.testing.assert_allclose(back.numpy(), expected, atol=1e-12)
    assert np.all(back.numpy()[..., 0] >= 0)


def test_matrix_to_quat_at_180_degrees(rng: np.random.Generator) -> None:
    q = matrix_to_quat(MATS_180)
    assert_same_rotation(q, QUATS_180, atol=1e-12)
    # Close to 180 degrees about random axes.
    axes = rng.normal(size=(100, 3))
    rv = axes / np.linalg.norm(axes, axis=-1, keepdims=True) * (np.pi - rng.uniform(0, 1e-6, (100, 1)))
    m = Rotation.from_rotvec(rv).as_matrix()
    assert_same_rotation(matrix_to_quat(m), to_wxyz(Rotation.from_rotvec(rv).as_quat()), atol=1e-12)


def test_quat_multiply_is_matrix_product(rng: np.random.Generator) -> None:
    a, b = random_quats(rng, (5, 1)), random_quats(rng, (1, 7))
    ab = quat_multiply(torch.from_numpy(a), torch.from_numpy(b))
    assert ab.shape == (5, 7, 4)
    np.testing.assert_allclose(quat_to_matrix(ab), quat_to_matrix(a) @ quat_to_matrix(b), atol=1e-12)
    a2, b2 = np.broadcast_to(a, (5, 7, 4)).reshape(-1, 4), np.broadcast_to(b, (5, 7, 4)).reshape(-1, 4)
    expected = to_wxyz((scipy_rot(a2) * scipy_rot(b2)).as_quat())
    assert_same_rotation(ab.numpy().reshape(-1, 4), expected, atol=1e-12)


def test_quat_apply_matches_matrix_and_scipy(rng: np.random.Generator) -> None:
    q, v = random_quats(rng, BATCH) * 0.5, rng.normal(size=(*BATCH, 3))
    out = quat_apply(torch.from_numpy(q), torch.from_numpy(v))
    np.testing.assert_allclose(out, (quat_to_matrix(q) @ v[..., None])[..., 0], atol=1e-12)
    np.testing.assert_allclose(out.numpy().reshape(-1, 3), scipy_rot(q).apply(v.reshape(-1, 3)), atol=1e-12)
    # Broadcasting one rotation over many vectors.
    np.testing.assert_allclose(quat_apply(q[0, 0], v), scipy_rot(q[0, 0]).apply(v.reshape(-1, 3)).reshape(v.shape))


def test_conjugate_inverse_normalize_canonical(rng: np.random.Generator) -> None:
    q = rng.normal(size=(20, 4)) * 2.5
    np.testing.assert_allclose(quat_multiply(q, quat_inverse(q)), np.tile(ID_Q, (20, 1)), atol=1e-12)
    np.testing.assert_allclose(quat_multiply(quat_inverse(q), q), np.tile(ID_Q, (20, 1)), atol=1e-12)
    qn = quat_normalize(q)
    np.testing.assert_allclose(np.linalg.norm(qn, axis=-1), 1.0, atol=1e-15)
    np.testing.assert_allclose(quat_conjugate(qn), quat_inverse(qn), atol=1e-15)
    expected_inv = to_wxyz(scipy_rot(qn).inv().as_quat())
    assert_same_rotation(quat_conjugate(qn), expected_inv, atol=1e-12)
    c = quat_canonical(q)
    assert np.all(c[:, 0] >= 0)
    assert_same_rotation(c, q)
    # Zero quaternion means identity.
    np.testing.assert_array_equal(quat_normalize(np.zeros(4)), ID_Q)
    np.testing.assert_array_equal(quat_inverse(np.zeros(4)), ID_Q)
    np.testing.assert_array_equal(quat_to_matrix(np.zeros((2, 4))), np.tile(np.eye(3), (2, 1, 1)))
    np.testing.assert_allclose(quat_apply(np.zeros(4), np.array([1.0, 2, 3])), [1.0, 2, 3])


def test_quat_identity() -> None:
    q = quat_identity((2, 3))
    assert q.shape == (2, 3, 4) and q.dtype == torch.float64
    np.testing.assert_array_equal(q.numpy(), np.tile(ID_Q, (2, 3, 1)))
    assert quat_identity(4, dtype=torch.float32).shape == (4, 4)
    assert quat_identity().shape == (4,)


# -------------------------------------------------------------------------------------------------- 6D


def test_rot6d_layout_and_round_trip(rng: np.random.Generator) -> None:
    m = Rotation.from_quat(rng.normal(size=(35, 4))).as_matrix().reshape(*BATCH, 3, 3)
    d6 = matrix_to_rot6d(torch.from_numpy(m))
    assert d6.shape == (*BATCH, 6)
    expected = np.stack([m[..., 0, 0], m[..., 1, 0], m[..., 2, 0], m[..., 0, 1], m[..., 1, 1], m[..., 2, 1]], -1)
    np.testing.assert_array_equal(d6.numpy(), expected)
    np.testing.assert_allclose(rot6d_to_matrix(d6), m, atol=1e-12)
    q = to_wxyz(Rotation.from_matrix(m.reshape(-1, 3, 3)).as_quat()).reshape(*BATCH, 4)
    np.testing.assert_allclose(quat_to_rot6d(q), expected, atol=1e-12)
    assert_same_rotation(rot6d_to_quat(expected), q, atol=1e-12)


def test_rot6d_gram_schmidt_matches_qr(rng: np.random.Generator) -> None:
    d6 = rng.normal(size=(50, 6)) * rng.uniform(0.1, 10, (50, 1))
    a = np.stack([d6[:, :3], d6[:, 3:]], -1)  # (50, 3, 2) columns a1, a2
    qmat, r = np.linalg.qr(a)
    qmat = qmat * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[:, None, :]  # Gram-Schmidt = QR with R_ii > 0
    m = rot6d_to_matrix(d6)
    np.testing.assert_allclose(m[..., :2], qmat, atol=1e-12)
    np.testing.assert_allclose(m[..., 2], np.cross(qmat[..., 0], qmat[..., 1]), atol=1e-12)


def assert_is_rotation(m: np.ndarray, atol: float = 1e-12) -> None:
    m = np.asarray(m)
    assert np.all(np.isfinite(m))
    np.testing.assert_allclose(np.swapaxes(m, -1, -2) @ m, np.broadcast_to(np.eye(3), m.shape), atol=atol)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=atol)


DEGENERATE_6D = np.array(
    [
        [0.0, 0, 0, 0, 0, 0],
        [1.0, 0, 0, 0, 0, 0],
        [0.0, 0, 0, 0, 1, 0],
        [1.0, 2, 3, 2, 4, 6],  # parallel
        [1.0, 2, 3, -0.5, -1, -1.5],  # anti-parallel
        [0.0, 1, 0, 0, 3, 0],  # parallel, along y
        [0.0, 0, 2, 0, 0, 0],
        [1.0, 1e-7, 1, 1, 0, 1],  # nearly parallel: one Gram-Schmidt pass loses orthogonality here
        [1.0, 2, 3, 1 + 1e-9, 2, 3],
    ]
)


def test_rot6d_degenerate_inputs() -> None:
    m = rot6d_to_matrix(DEGENERATE_6D)
    assert_is_rotation(m)
    np.testing.assert_array_equal(m[0], np.eye(3))
    np.testing.assert_array_equal(m[1], np.eye(3))
    for k in range(1, len(DEGENERATE_6D)):  # the first column's direction is kept when it is nonzero
        a1 = DEGENERATE_6D[k, :3]
        if np.any(a1):
            np.testing.assert_allclose(m[k][:, 0], a1 / np.linalg.norm(a1), atol=1e-15)
    grads = assert_finite_grad(rot6d_to_matrix, DEGENERATE_6D)
    assert grads[0].shape == DEGENERATE_6D.shape


# ------------------------------------------------------------------------------------------ rotation vectors


def test_rotvec_matches_scipy(rng: np.random.Generator) -> None:
    axes = rng.normal(size=(*BATCH, 3))
    rv = axes / np.linalg.norm(axes, axis=-1, keepdims=True) * rng.uniform(0, np.pi, (*BATCH, 1))
    ref = Rotation.from_rotvec(rv.reshape(-1, 3))
    q = rotvec_to_quat(torch.from_numpy(rv))
    assert q.shape == (*BATCH, 4)
    np.testing.assert_allclose(q.numpy().reshape(-1, 4), to_wxyz(ref.as_quat(canonical=True)), atol=1e-12)
    np.testing.assert_allclose(rotvec_to_matrix(rv).reshape(-1, 3, 3), ref.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(quat_to_rotvec(q), rv, atol=1e-10)
    np.testing.assert_allclose(matrix_to_rotvec(ref.as_matrix().reshape(*BATCH, 3, 3)), rv, atol=1e-10)
    # quat_to_rotvec on arbitrary (non-unit, either sign) quaternions.
    qq = rng.normal(size=(100, 4)) * 3
    np.testing.assert_allclose(quat_to_rotvec(qq), scipy_rot(qq).as_rotvec(), atol=1e-12)


@pytest.mark.parametrize("scale", [0.0, 1e-12, 1e-8, 1e-5, 1e-3, 1e-2])
def test_rotvec_small_angles_match_scipy(scale: float, rng: np.random.Generator) -> None:
    rv = rng.normal(size=(20, 3)) * scale
    ref = Rotation.from_rotvec(rv)
    np.testing.assert_allclose(rotvec_to_quat(rv), to_wxyz(ref.as_quat()), rtol=1e-14, atol=1e-17)
    np.testing.assert_allclose(quat_to_rotvec(to_wxyz(ref.as_quat())), rv, rtol=1e-12, atol=1e-17)


def test_rotvec_at_180_degrees() -> None:
    rv = quat_to_rotvec(QUATS_180)
    np.testing.assert_allclose(np.linalg.norm(rv, axis=-1), np.pi, atol=1e-15)
    np.testing.assert_allclose(np.abs(rv), np.abs(AXES_180) * np.pi, atol=1e-15)
    np.testing.assert_allclose(rotvec_to_matrix(matrix_to_rotvec(MATS_180)), MATS_180, atol=1e-12)


def test_axis_angle_to_quat(rng: np.random.Generator) -> None:
    axis = rng.normal(size=(10, 3)) * 4
    angle = rng.uniform(-4, 4, 10)
    unit = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    expected = to_wxyz(Rotation.from_rotvec(unit * angle[:, None]).as_quat())
    assert_same_rotation(axis_angle_to_quat(axis, angle), expected, atol=1e-12)
    q = axis_angle_to_quat(torch.from_numpy(axis), 0.5)  # scalar angle broadcasts
    assert q.shape == (10, 4)
    assert_same_rotation(q.numpy(), to_wxyz(Rotation.from_rotvec(unit * 0.5).as_quat()), atol=1e-12)
    assert axis_angle_to_quat(torch.from_numpy(axis[:1]), torch.zeros(6, 1)).shape == (6, 1, 4)
    np.testing.assert_array_equal(axis_angle_to_quat(np.zeros(3), np.array(1.0)), ID_Q)  # zero axis: identity


# ----------------------------------------------------------------------------------- slerp and geodesics


def test_slerp_endpoints_midpoint_and_scipy(rng: np.random.Generator) -> None:
    q0, q1 = random_quats(rng, (20,)), random_quats(rng, (20,))
    assert_same_rotation(quat_slerp(q0, q1, 0.0), q0, atol=1e-12)
    assert_same_rotation(quat_slerp(q0, q1, 1.0), q1, atol=1e-12)
    mid = quat_slerp(q0, q1, 0.5)
    np.testing.assert_allclose(quat_geodesic(q0, mid), quat_geodesic(q0, q1) / 2, atol=1e-12)
    np.testing.assert_allclose(quat_geodesic(mid, q1), quat_geodesic(q0, q1) / 2, atol=1e-12)
    # Shortest path: the sign of q1 does not matter.
    assert_same_rotation(quat_slerp(q0, -q1, 0.3), quat_slerp(q0, q1, 0.3), atol=1e-12)
    # Against scipy's Slerp, for several t at once (t broadcasts as (T, 1) against (20,)).
    ts = np.linspace(0, 1, 7)
    out = quat_slerp(torch.from_numpy(q0), torch.from_numpy(q1), torch.from_numpy(ts[:, None]))
    assert out.shape == (7, 20, 4)
    for n in range(20):
        ref = Slerp([0.0, 1.0], scipy_rot(np.stack([q0[n], q1[n]])))(ts).as_quat()
        assert_same_rotation(out[:, n].numpy(), to_wxyz(ref), atol=1e-12)


def test_slerp_nearly_equal_quaternions(rng: np.random.Generator) -> None:
    q0 = random_quats(rng, (10,))
    for delta in (0.0, 1e-14, 1e-9, 1e-6):
        q1 = quat_normalize(q0 + delta * rng.normal(size=q0.shape))
        out = quat_slerp(q0, q1, 0.25)
        assert np.all(np.isfinite(out))
        expected = quat_normalize(0.75 * q0 + 0.25 * q1)
        np.testing.assert_allclose(out, expected, atol=1e-13)
        assert_finite_grad(lambda a, b, t: quat_slerp(a, b, t), q0, q1, np.full(10, 0.25))
    assert_finite_grad(lambda a, b: quat_slerp(a, b, 0.5), q0, -q0)


def test_geodesics_match_scipy(rng: np.random.Generator) -> None:
    q0, q1 = random_quats(rng, BATCH), random_quats(rng, BATCH)
    expected = (scipy_rot(q0).inv() * scipy_rot(q1)).magnitude().reshape(BATCH)
    g = quat_geodesic(torch.from_numpy(q0), torch.from_numpy(q1 * 2))
    assert g.shape == BATCH
    np.testing.assert_allclose(g.numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(quat_geodesic(q0, -q1), expected, atol=1e-12)
    m0, m1 = quat_to_matrix(q0), quat_to_matrix(q1)
    np.testing.assert_allclose(matrix_geodesic(m0, m1), expected, atol=1e-12)
    # Edge values: identical rotations and half turns.
    np.testing.assert_allclose(quat_geodesic(q0, q0), 0.0, atol=1e-15)
    np.testing.assert_allclose(matrix_geodesic(m0, m0), 0.0, atol=1e-12)
    np.testing.assert_allclose(quat_geodesic(ID_Q, QUATS_180), np.pi, atol=1e-15)
    np.testing.assert_allclose(matrix_geodesic(np.eye(3), MATS_180), np.pi, atol=1e-15)
    tiny = Rotation.from_rotvec([[1e-9, 0, 0], [0, 2e-12, 0]])
    np.testing.assert_allclose(quat_geodesic(ID_Q, to_wxyz(tiny.as_quat())), [1e-9, 2e-12], rtol=1e-6)
    np.testing.assert_allclose(matrix_geodesic(np.eye(3), tiny.as_matrix()), [1e-9, 2e-12], rtol=1e-3)


# ----------------------------------------------------------------------------------------------- gradients


GRAD_CASES: list[tuple[str, Callable[..., torch.Tensor], tuple[np.ndarray, ...]]] = [
    ("quat_to_matrix identity", quat_to_matrix, (ID_Q,)),
    ("quat_to_matrix 180", quat_to_matrix, (QUATS_180,)),
    ("quat_to_matrix zero q", quat_to_matrix, (np.zeros(4),)),
    ("quat_to_matrix non-unit", quat_to_matrix, (np.array([2.0, -1, 0.5, 3]),)),
    ("quat_apply zero q", quat_apply, (np.zeros(4), np.array([1.0, 2, 3]))),
    ("quat_inverse zero q", quat_inverse, (np.zeros(4),)),
    ("quat_normalize zero q", quat_normalize, (np.zeros((2, 4)),)),
    ("matrix_to_quat identity", matrix_to_quat, (np.eye(3),)),
    ("matrix_to_quat 180", matrix_to_quat, (MATS_180,)),
    ("rotvec_to_quat zero", rotvec_to_quat, (np.zeros(3),)),
    ("rotvec_to_matrix zero", rotvec_to_matrix, (np.zeros(3),)),
    ("rotvec_to_matrix 180", rotvec_to_matrix, (AXES_180 * np.pi,)),
    ("quat_to_rotvec identity", quat_to_rotvec, (ID_Q,)),
    ("quat_to_rotvec 180", quat_to_rotvec, (QUATS_180,)),
    ("quat_to_rotvec zero q", quat_to_rotvec, (np.zeros(4),)),
    ("quat_to_rotvec non-unit", quat_to_rotvec, (np.array([-3.0, 0.1, 0.2, 0.3]),)),
    ("matrix_to_rotvec identity", matrix_to_rotvec, (np.eye(3),)),
    ("matrix_to_rotvec 180", matrix_to_rotvec, (MATS_180,)),
    ("rot6d_to_matrix identity", rot6d_to_matrix, (np.array([1.0, 0, 0, 0, 1, 0]),)),
    ("rot6d_to_quat degenerate", rot6d_to_quat, (DEGENERATE_6D,)),
    ("quat_to_rot6d zero q", quat_to_rot6d, (np.zeros(4),)),
    ("axis_angle zero axis", axis_angle_to_quat, (np.zeros(3), np.array(0.7))),
    ("axis_angle zero angle", axis_angle_to_quat, (np.array([0.0, 0, 2]), np.array(0.0))),
    ("quat_geodesic identical", quat_geodesic, (QUATS_180, QUATS_180)),
    ("quat_geodesic 180 apart", quat_geodesic, (np.tile(ID_Q, (5, 1)), QUATS_180)),
    ("quat_geodesic zero q", quat_geodesic, (np.zeros(4), np.zeros(4))),
    ("matrix_geodesic identical", matrix_geodesic, (MATS_180, MATS_180)),
    ("matrix_geodesic identity", matrix_geodesic, (np.eye(3), np.eye(3))),
    ("matrix_geodesic 180 apart", matrix_geodesic, (np.eye(3), MATS_180)),
    ("slerp identical", lambda a, b: quat_slerp(a, b, 0.3), (QUATS_180, QUATS_180)),
    ("slerp 180 apart", lambda a, b: quat_slerp(a, b, 0.3), (np.tile(ID_Q, (5, 1)), QUATS_180)),
    ("slerp zero q", lambda a, b: quat_slerp(a, b, 0.3), (np.zeros(4), np.zeros(4))),
]


@pytest.mark.parametrize(("name", "fn", "inputs"), GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_finite(name: str, fn: Callable[..., torch.Tensor], inputs: tuple[np.ndarray, ...]) -> None:
    assert_finite_grad(fn, *inputs)


def test_gradient_values_at_degenerate_points() -> None:
    # d(rotvec_to_quat)/dv at 0 is [0; I/2]: the Taylor branch must carry the true derivative.
    jac = torch.autograd.functional.jacobian(rotvec_to_quat, torch.zeros(3, dtype=torch.float64))
    np.testing.assert_allclose(jac.numpy(), np.vstack([np.zeros((1, 3)), np.eye(3) / 2]), atol=1e-15)
    # quat_to_rotvec at identity: d(rotvec)/d(xyz) = 2 I.
    jac = torch.autograd.functional.jacobian(quat_to_rotvec, torch.tensor(ID_Q))
    np.testing.assert_allclose(jac.numpy()[:, 1:], 2 * np.eye(3), atol=1e-15)
    # The geodesic grows at unit rate away from a half turn.
    angle = torch.tensor(np.pi - 0.1, dtype=torch.float64, requires_grad=True)
    q = torch.cat([torch.cos(angle / 2)[None], torch.sin(angle / 2)[None], torch.zeros(2, dtype=torch.float64)])
    (g,) = torch.autograd.grad(matrix_geodesic(torch.eye(3, dtype=torch.float64), quat_to_matrix(q)), angle)
    assert abs(float(g) - 1.0) < 1e-9


@pytest.mark.parametrize(
    ("fn", "shape"),
    [
        (quat_to_matrix, (3, 4)),
        (matrix_to_quat, None),
        (rot6d_to_matrix, (3, 6)),
        (rotvec_to_quat, (3, 3)),
        (quat_to_rotvec, (3, 4)),
        (lambda q: quat_to_euler(q, "ZXY"), (3, 4)),
        (lambda q: quat_to_euler(q, "YZY"), (3, 4)),
        (lambda a: euler_to_quat(a, "XZY"), (3, 3)),
        (lambda q: quat_geodesic(q[:1], q), (3, 4)),
        (lambda q: quat_slerp(q[0], q[1], q[2, 0] * 0.2 + 0.4), (3, 4)),
        (lambda q: quat_apply(q, q[:, 1:] * 2), (3, 4)),
        (lambda q: quat_inverse(q), (3, 4)),
    ],
)
def test_gradcheck(fn: Callable[..., torch.Tensor], shape: tuple[int, ...] | None) -> None:
    gen = torch.Generator().manual_seed(7)
    if shape is None:  # a matrix input
        x = quat_to_matrix(torch.randn(3, 4, generator=gen, dtype=torch.float64))
    else:
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
    assert torch.autograd.gradcheck(fn, (x.requires_grad_(True),))


def test_matrix_geodesic_gradcheck(rng: np.random.Generator) -> None:
    m0, m1 = (quat_to_matrix(torch.from_numpy(random_quats(rng, (4,)))) for _ in range(2))
    assert torch.autograd.gradcheck(matrix_geodesic, (m0.requires_grad_(True), m1.requires_grad_(True)))


# ------------------------------------------------------------------------------------- NumPy and dtypes


def _public_calls(rng: np.random.Generator) -> list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]]:
    q, q2 = random_quats(rng, (2, 3)), random_quats(rng, (2, 3))
    m, v, a = quat_to_matrix(q), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 3, 3))
    return [
        ("quat_normalize", quat_normalize, (q,)),
        ("quat_canonical", quat_canonical, (q,)),
        ("quat_continuous", rot.quat_continuous, (q,)),
        ("quat_multiply", quat_multiply, (q, q2)),
        ("quat_conjugate", quat_conjugate, (q,)),
        ("quat_inverse", quat_inverse, (q,)),
        ("quat_apply", quat_apply, (q, v)),
        ("quat_to_matrix", quat_to_matrix, (q,)),
        ("matrix_to_quat", matrix_to_quat, (m,)),
        ("matrix_to_rot6d", matrix_to_rot6d, (m,)),
        ("rot6d_to_matrix", rot6d_to_matrix, (rng.normal(size=(2, 3, 6)),)),
        ("quat_to_rot6d", quat_to_rot6d, (q,)),
        ("rot6d_to_quat", rot6d_to_quat, (rng.normal(size=(2, 3, 6)),)),
        ("rotvec_to_quat", rotvec_to_quat, (v,)),
        ("quat_to_rotvec", quat_to_rotvec, (q,)),
        ("rotvec_to_matrix", rotvec_to_matrix, (v,)),
        ("matrix_to_rotvec", matrix_to_rotvec, (m,)),
        ("axis_angle_to_quat", axis_angle_to_quat, (v, a[..., 0])),
        ("euler_to_matrix", lambda x: euler_to_matrix(x, "ZXY"), (a,)),
        ("matrix_to_euler", lambda x: matrix_to_euler(x, "ZXY"), (m,)),
        ("euler_to_quat", lambda x: euler_to_quat(x, "zyz"), (a,)),
        ("quat_to_euler", lambda x: quat_to_euler(x, "zyz"), (q,)),
        ("quat_slerp", quat_slerp, (q, q2, a[..., 0])),
        ("quat_geodesic", quat_geodesic, (q, q2)),
        ("matrix_geodesic", matrix_geodesic, (m, quat_to_matrix(q2))),
    ]


def test_numpy_in_numpy_out_and_dtypes(rng: np.random.Generator) -> None:
    calls = _public_calls(rng)
    assert {c[0] for c in calls} | {"EULER_ORDERS", "as_tensor", "numpy_in_numpy_out", "quat_identity"} == set(
        rot.__all__
    )
    for name, fn, args in calls:
        out_np = fn(*args)
        assert isinstance(out_np, np.ndarray) and out_np.dtype == np.float64, name
        out_t = fn(*(torch.from_numpy(x) for x in args))
        assert isinstance(out_t, torch.Tensor) and out_t.dtype == torch.float64, name
        np.testing.assert_array_equal(out_np, out_t.numpy(), err_msg=name)
        out32 = fn(*(torch.from_numpy(x).float() for x in args))
        assert out32.dtype == torch.float32, name
        np.testing.assert_allclose(out32.numpy(), out_np, atol=2e-4, err_msg=name)
        assert fn(*(x.astype(np.float32) for x in args)).dtype == np.float32, name
    # Mixed numpy + torch gives torch; integer input becomes float64.
    q, v = random_quats(rng, (3,)), rng.normal(size=(3, 3))
    assert isinstance(quat_apply(torch.from_numpy(q), v), torch.Tensor)
    assert rotvec_to_quat(np.zeros((2, 3), dtype=np.int64)).dtype == np.float64
    assert as_tensor([1, 2]).dtype == torch.float64
    assert as_tensor(np.ones(2, np.float32)).dtype == torch.float32


def test_shape_errors() -> None:
    with pytest.raises(ShapeError):
        quat_to_matrix(np.zeros(3))
    with pytest.raises(ShapeError):
        matrix_to_quat(np.zeros((3, 4)))
    with pytest.raises(ShapeError):
        rot6d_to_matrix(np.zeros((2, 5)))
    with pytest.raises(ValueError):  # ShapeError is a ValueError
        euler_to_matrix(np.zeros(4), "XYZ")


def test_euler_reexported_from_rotations() -> None:
    from skelanim.core import euler

    assert rot.matrix_to_euler is euler.matrix_to_euler
    assert rot.quat_to_euler is euler.quat_to_euler
    assert {"euler_to_matrix", "quat_to_euler"} <= set(dir(rot))
    with pytest.raises(AttributeError):
        _ = rot.not_a_function  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------- properties

quat_strategy = st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4).filter(
    lambda v: sum(x * x for x in v) > 1e-4
)


@settings(max_examples=200, deadline=None)
@given(q=quat_strategy, order=st.sampled_from(EULER_ORDERS))
def test_property_quat_euler_round_trip(q: list[float], order: str) -> None:
    qa = np.array(q)
    e = quat_to_euler(qa, order)
    np.testing.assert_allclose(euler_to_matrix(e, order), quat_to_matrix(qa), atol=1e-6)
    assert_same_rotation(euler_to_quat(e, order), quat_normalize(qa), atol=1e-6)
    np.testing.assert_allclose(euler_to_matrix(e, order), scipy_rot(qa).as_matrix()[0], atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(d6=st.lists(st.floats(-10, 10, allow_nan=False), min_size=6, max_size=6))
def test_property_rot6d_always_rotation(d6: list[float]) -> None:
    m = rot6d_to_matrix(np.array(d6))
    assert_is_rotation(m, atol=1e-9)
    np.testing.assert_allclose(rot6d_to_matrix(matrix_to_rot6d(m)), m, atol=1e-12)
    q = matrix_to_quat(m)
    assert q[0] >= 0 and abs(np.linalg.norm(q) - 1) < 1e-12
    np.testing.assert_allclose(quat_to_matrix(q), m, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(q0=quat_strategy, q1=quat_strategy)
def test_property_geodesics_agree(q0: list[float], q1: list[float]) -> None:
    a, b = np.array(q0), np.array(q1)
    g = quat_geodesic(a, b)
    assert 0.0 <= g <= np.pi
    np.testing.assert_allclose(matrix_geodesic(quat_to_matrix(a), quat_to_matrix(b)), g, atol=1e-7)
    np.testing.assert_allclose(g, (scipy_rot(a).inv() * scipy_rot(b)).magnitude()[0], atol=1e-7)


def test_quat_continuous_flips_signs_and_keeps_single_frames():
    from skelanim.core.rotations import quat_continuous

    q = torch.tensor([[1.0, 0, 0, 0], [-1.0, 0, 0, 0], [0.9, 0.1, 0, 0], [-0.8, -0.2, 0, 0]], dtype=torch.float64)
    out = quat_continuous(q)
    assert torch.equal(out[:, 0].sign(), torch.ones(4, dtype=torch.float64))
    assert torch.equal(quat_continuous(q[:1]), q[:1])
    assert np.array_equal(quat_continuous(q.numpy()[::-1].copy())[:, 0] > 0, np.array([False] * 4))
