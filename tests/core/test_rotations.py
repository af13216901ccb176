"""Tests for skelanim.core.rotations, checked against scipy.spatial.transform.Rotation (an independent source).

scipy quaternions are (x, y, z, w) scalar-last; ours are (w, x, y, z). scipy's upper-case Euler order strings
are intrinsic, like ours.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
from rotation_checks import (  # tests/helpers
    AXES_180,
    DEGENERATE_6D,
    ID_Q,
    MATS_180,
    QUATS_180,
    assert_angles_close,
    assert_finite_grad,
    assert_is_rotation,
    assert_same_rotation,
    random_quats,
    scipy_rot,
    to_wxyz,
)
from scipy.spatial.transform import Rotation, Slerp

from skelanim.core.euler import EulerOrderError
from skelanim.core.rotations import (
    EULER_ORDERS,
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

TAIT_BRYAN = EULER_ORDERS[:6]
PROPER = EULER_ORDERS[6:]
BATCH = (5, 7)


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


def test_normalize_scales_quaternions_past_the_floats_square_root() -> None:
    """An audit: in float32 the squared length of |q| > 1.8e19 overflows, and such a quaternion became zeros (or the
    identity); it is scaled down first now, in float64 too (1e300), and NaN stays NaN."""
    half = np.sqrt(0.5)
    for dtype, big in ((torch.float32, 1e20), (torch.float32, 3e38), (torch.float64, 1e300)):
        q = torch.tensor([[big, big, 0.0, 0.0], [0.0, 0.0, 0.6, 0.8], [big, 0.0, 0.0, float("nan")]], dtype=dtype)
        out = quat_normalize(q)
        assert out.dtype == dtype
        np.testing.assert_allclose(out[0].double().numpy(), [half, half, 0, 0], atol=1e-6)
        np.testing.assert_array_equal(out[1].numpy(), q[1].numpy())  # an ordinary one as before
        assert bool(torch.isnan(out[2]).any())


def test_forward_kinematics_and_matrices_scale_such_quaternions_as_normalize_does() -> None:
    """A review: forward kinematics and quat_to_matrix normalise in their own loops, without quat_normalize's
    overflow branch: float32 (3e19, 0, 4e19, 0) became a zero matrix there, the joint's subtree collapsed (FK
    0.276 off). Both give what the normalised quaternion gives now."""
    from skelanim.core.kinematics import forward_kinematics

    for dtype, big in ((torch.float32, 1e19), (torch.float64, 1e300)):
        q = torch.tensor([[3 * big, 0.0, 4 * big, 0.0]], dtype=dtype)
        unit = quat_normalize(q)
        np.testing.assert_allclose(quat_to_matrix(q).numpy(), quat_to_matrix(unit).numpy(), atol=1e-6)
        rotations = torch.cat([torch.tensor([[1.0, 0, 0, 0]], dtype=dtype), q])[None]  # (1, 2, 4): root, then q
        offsets = torch.tensor([[[0.0, 0, 0], [0.0, 1, 0]]], dtype=dtype)
        child = torch.tensor([[[0.0, 0, 0], [0.0, 0, 1]]], dtype=dtype)  # a grandchild's offset through q
        three = torch.cat([rotations, rotations[:, 1:]], 1), torch.cat([offsets, child[:, 1:]], 1)
        got = forward_kinematics(*three, [-1, 0, 1])
        want = forward_kinematics(torch.cat([rotations[:, :1], unit[None], unit[None]], 1), three[1], [-1, 0, 1])
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), atol=1e-5)


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
