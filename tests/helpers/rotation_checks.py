"""Checks shared by the rotation tests: scipy conversions (scipy is x, y, z, w; we are w, x, y, z), equality up to
sign, finite gradients, and the 180-degree cases. ``tests/helpers`` is on ``sys.path`` (``tests/conftest.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from scipy.spatial.transform import Rotation


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
