"""Rotation functions at their edges: finite values and gradients at 0 and 180 degrees and for degenerate input,
NumPy in and out, dtypes, and properties (hypothesis). Checked against scipy where a value is compared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rotation_checks import (  # tests/helpers
    AXES_180,
    DEGENERATE_6D,
    ID_Q,
    MATS_180,
    QUATS_180,
    assert_finite_grad,
    assert_is_rotation,
    assert_same_rotation,
    random_quats,
    scipy_rot,
)

from skelanim.core import rotations as rot
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


@pytest.mark.parametrize("rotvecs", [
    [[0.3, 0.2, 0.1]] * 4,  # a joint that holds still: three equal singular values
    [[0.3, 0.2, 0.1]],  # one rotation
    [[0.0, 0.0, 0.5], [0.0, 0.0, -0.5]],  # symmetric about z: two equal singular values
    [[3.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 3.0]],  # a mean matrix with det < 0
    [[0.4, -1.1, 0.2], [0.9, 0.3, -0.5], [-0.2, 0.6, 1.3]],  # generic
])
def test_mean_rotations_gradient_is_finite_and_right_where_singular_values_repeat(rotvecs: list[list[float]]) -> None:
    stack = rot.rotvec_to_matrix(torch.tensor(rotvecs, dtype=torch.float64)).requires_grad_(True)
    assert torch.autograd.gradcheck(rot.mean_rotations, (stack,))  # against finite differences
    weights = torch.randn(3, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    (grad,) = torch.autograd.grad((rot.mean_rotations(stack) * weights).sum(), stack)
    assert torch.isfinite(grad).all()


def test_mean_rotations_gradient_matches_the_svd_gradient_where_that_one_is_defined(rng: np.random.Generator) -> None:
    stack = quat_to_matrix(torch.from_numpy(random_quats(rng, (6, 2)))).requires_grad_(True)
    weights = torch.from_numpy(rng.normal(size=(2, 3, 3)))
    (ours,) = torch.autograd.grad((rot.mean_rotations(stack) * weights).sum(), stack)
    u, _, vh = torch.linalg.svd(stack.mean(0))  # the plain SVD route, generic singular values
    d = torch.sign(torch.linalg.det(u @ vh))
    nearest = torch.cat([u[..., :2], u[..., 2:] * d[..., None, None]], -1) @ vh
    (svd,) = torch.autograd.grad((nearest * weights).sum(), stack)
    assert torch.allclose(ours, svd, atol=1e-12)


def test_nan_stays_nan_in_axis_angle_and_the_mean() -> None:
    q = axis_angle_to_quat(torch.tensor([float("nan"), 0.0, 0.0]), 0.3)
    assert torch.isnan(q).all()  # w was 1: a NaN axis read as a zero axis
    assert torch.isnan(rot.mean_rotations(torch.full((2, 3, 3), float("nan")))).all()  # the SVD had raised
    mixed = torch.stack([torch.eye(3).expand(2, 3, 3), torch.full((2, 3, 3), float("nan"))], 1)  # (2, 2, 3, 3)
    mean = rot.mean_rotations(mixed)
    assert torch.equal(mean[0], torch.eye(3)) and torch.isnan(mean[1]).all()  # one NaN joint spoils only itself


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
        ("mean_rotations", rot.mean_rotations, (m,)),
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
