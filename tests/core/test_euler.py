"""euler_to_quat's closed form: the same bits as the product of the three axis quaternions it replaces (built
here with quat_multiply), for all 12 orders; degrees in gives the same bits as radians; and scipy agrees
(the independent check; tests/core/test_rotations.py covers the rest of the Euler functions)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from skelanim.core.rotations import (
    EULER_ORDERS,
    euler_to_matrix,
    euler_to_quat,
    matrix_to_euler,
    quat_multiply,
    quat_to_euler,
)


def _axis_quat(axis: str, angle: torch.Tensor) -> torch.Tensor:
    half = angle / 2
    parts = [torch.cos(half), torch.zeros_like(half), torch.zeros_like(half), torch.zeros_like(half)]
    parts[1 + "XYZ".index(axis)] = torch.sin(half)
    return torch.stack(parts, -1)


def _angles() -> torch.Tensor:
    rng = np.random.default_rng(0)
    a = rng.uniform(-7, 7, size=(500, 3))
    a[:20] = 0.0
    a[20:40, 1] = np.pi / 2
    a[40:60] = np.pi
    a[60:80] = -np.pi / 2
    return torch.from_numpy(a)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_closed_form_is_the_axis_quaternion_product_bit_for_bit(order: str) -> None:
    a = _angles()
    product = quat_multiply(quat_multiply(_axis_quat(order[0], a[:, 0]), _axis_quat(order[1], a[:, 1])),
                            _axis_quat(order[2], a[:, 2]))
    assert torch.equal(euler_to_quat(a, order), product)
    scipy = Rotation.from_euler(order, a.numpy()).as_quat(scalar_first=True)
    q = euler_to_quat(a, order).numpy()
    assert np.minimum(np.abs(q - scipy).max(-1), np.abs(q + scipy).max(-1)).max() < 1e-15


@pytest.mark.parametrize("order", ["ZXY", "ZYX", "XYZ", "ZXZ"])
def test_degrees_give_the_same_bits_as_radians(order: str) -> None:
    deg = np.round(np.random.default_rng(1).uniform(-400, 400, size=(2000, 3)), 4)
    deg[:3] = [[90, -180, 45], [0, 0, 0], [359.9999, -0.0001, 180]]
    from_radians = euler_to_quat(torch.from_numpy(np.radians(deg)), order)
    assert torch.equal(euler_to_quat(torch.from_numpy(deg), order, degrees=True), from_radians)
    as_numpy = euler_to_quat(deg, order, degrees=True)
    assert isinstance(as_numpy, np.ndarray) and np.array_equal(as_numpy, from_radians.numpy())


def test_strided_views_and_gradients() -> None:
    values = torch.from_numpy(np.random.default_rng(2).uniform(-180, 180, size=(10, 3 + 3 * 4)))
    view = values[:, 3:].reshape(10, 4, 3)  # a view into channel columns, as the BVH reader passes it
    assert torch.equal(euler_to_quat(view, "ZXY", degrees=True), euler_to_quat(view.contiguous(), "ZXY", degrees=True))
    a = torch.tensor([[0.0, math.pi / 2, 0.0], [math.pi, 0.0, -math.pi]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: euler_to_quat(x, "YXY"), (a,))


def test_blocks_of_rows_give_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    from skelanim.core import euler

    a = torch.from_numpy(np.random.default_rng(3).uniform(-7, 7, size=(50, 7, 3)))
    whole = euler_to_quat(a, "ZXY")
    monkeypatch.setattr(euler, "_BLOCK", 7 * 6)  # 9 blocks of 6 rows, the last one short
    assert torch.equal(euler_to_quat(a, "ZXY"), whole)
    assert euler_to_quat(a[:0], "ZXY").shape == (0, 7, 4)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_extrinsic_angles_are_scipys_lower_case(order: str) -> None:
    """``extrinsic=True`` reads an order about the fixed axes, as scipy reads lower case: the same rotations
    (matrix and quaternion), and back from them the same angles, gimbal lock included (scipy sets the third angle
    to 0 there, and so does the extrinsic conversion; the intrinsic one keeps setting its own third to 0)."""
    import warnings

    lower = order.lower()
    a = _angles()
    if order[0] == order[2]:  # proper Euler: lock at a middle of 0 and pi
        a[20:40, 1], a[60:80, 1] = 0.0, np.pi
    scipy = Rotation.from_euler(lower, a.numpy())
    torch.testing.assert_close(euler_to_matrix(a, order, extrinsic=True), torch.from_numpy(scipy.as_matrix()),
                               atol=1e-12, rtol=0)  # fmt: skip
    q = euler_to_quat(a, order, extrinsic=True)
    assert torch.allclose(q, torch.from_numpy(scipy.as_quat(scalar_first=True)), atol=1e-12) or (
        float((q.abs() - torch.from_numpy(np.abs(scipy.as_quat(scalar_first=True)))).abs().max()) < 1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's gimbal-lock warning
        expected = torch.from_numpy(scipy.as_euler(lower))
    got = quat_to_euler(q, order, extrinsic=True)
    assert float((got - expected).abs().max()) < 1e-6
    back = matrix_to_euler(euler_to_matrix(a, order, extrinsic=True), order, extrinsic=True)
    assert float((back - expected).abs().max()) < 1e-6
    # the lower-case string alone stays intrinsic (as documented): extrinsic "xyz" is intrinsic "ZYX" reversed
    torch.testing.assert_close(euler_to_matrix(a, lower), euler_to_matrix(a, order), atol=0, rtol=0)
    torch.testing.assert_close(euler_to_matrix(a.flip(-1), order[::-1]), euler_to_matrix(a, order, extrinsic=True),
                               atol=1e-12, rtol=0)  # fmt: skip


@pytest.mark.parametrize("extrinsic", [False, True])
@pytest.mark.parametrize("order", ["ZXY", "ZYX", "XYZ", "ZXZ"])
def test_every_euler_function_takes_degrees_as_scipy_does(order: str, extrinsic: bool) -> None:
    """Only ``euler_to_quat`` had ``degrees=``; BVH angles are degrees, and scipy takes them both ways."""
    rng = np.random.default_rng(11)
    deg = rng.uniform(-170, 170, size=(50, 3))
    deg[:, 1] = rng.uniform(10, 80, size=50)  # away from gimbal lock for both families of orders
    seq = order.lower() if extrinsic else order.upper()
    r = Rotation.from_euler(seq, deg, degrees=True)
    np.testing.assert_allclose(euler_to_matrix(deg, order, degrees=True, extrinsic=extrinsic), r.as_matrix(), atol=1e-12)
    q = euler_to_quat(deg, order, degrees=True, extrinsic=extrinsic)
    np.testing.assert_allclose(quat_to_euler(q, order, degrees=True, extrinsic=extrinsic), r.as_euler(seq, degrees=True),
                               atol=1e-9)  # fmt: skip
    np.testing.assert_allclose(matrix_to_euler(r.as_matrix(), order, degrees=True, extrinsic=extrinsic),
                               r.as_euler(seq, degrees=True), atol=1e-9)  # fmt: skip
