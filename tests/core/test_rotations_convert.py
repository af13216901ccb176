"""The table forms of skelanim.core.rotation_convert (matrix_to_quat, rot6d_to_matrix) against independent
references: scipy for rotations, a per-matrix Shepperd loop with ``if`` branches for non-orthogonal input,
numpy's QR for Gram-Schmidt, hand-derived values for degenerate 6D input; float64 to 1e-12, random and edge
inputs, leading dims, dtypes, NumPy in and out, and the re-exports from skelanim.core.rotations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rotation_checks import AXES_180, to_wxyz  # tests/helpers
from scipy.spatial.transform import Rotation

import skelanim.core.rotation_convert as conv
from skelanim.core import rotations as rot
from skelanim.core._tensor import _cross
from skelanim.core.rotation_convert import matrix_to_quat, rot6d_to_matrix
from skelanim.errors import ShapeError


def _edge_matrices(rng: np.random.Generator) -> np.ndarray:
    """(K, 3, 3): 180 degrees about axes and diagonals, just below 180, tiny angles, the identity."""
    axes = np.concatenate([AXES_180, [[1, 1, 0], [1, -1, 0], [0, 1, -1], [-1, 0, 1]]], 0).astype(np.float64)
    axes = np.concatenate([axes, rng.normal(size=(20, 3))], 0)
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    angles = [np.pi, np.pi - 1e-7, np.pi - 1e-3, 1e-9, 0.0]
    return np.concatenate([Rotation.from_rotvec(axes * a).as_matrix() for a in angles], 0)


def _scipy_quat(m: np.ndarray) -> np.ndarray:
    q = to_wxyz(Rotation.from_matrix(m).as_quat())
    return np.where(q[:, :1] < 0, -q, q)


def test_matrix_to_quat_matches_scipy_on_random_and_edge_rotations(rng: np.random.Generator) -> None:
    m = np.concatenate([Rotation.random(3000, random_state=1).as_matrix(), _edge_matrices(rng)], 0)
    got, want = matrix_to_quat(m), _scipy_quat(m)
    assert got.shape == want.shape and got.dtype == np.float64
    assert (got[:, 0] >= 0).all()
    # q and -q are one rotation; w >= 0 fixes the sign except where w == 0 (exactly 180 degrees)
    sign = np.where(np.abs(want[:, :1]) < 1e-12, np.sign((got * want).sum(-1, keepdims=True)), 1.0)
    np.testing.assert_allclose(got * sign, want, rtol=0, atol=1e-12)


def _shepperd_loop(m: np.ndarray) -> np.ndarray:
    """Shepperd's method one matrix at a time, with ``if`` branches on the largest ``4 q_i^2``; its constant 1 is the
    matrix's scale ``||r||_F / sqrt(3)``, so that ``s R`` gives ``R``'s quaternion."""
    out = []
    for r in m:
        c = np.linalg.norm(r) / np.sqrt(3.0)
        d = [c + r[0, 0] + r[1, 1] + r[2, 2], c + r[0, 0] - r[1, 1] - r[2, 2],
             c - r[0, 0] + r[1, 1] - r[2, 2], c - r[0, 0] - r[1, 1] + r[2, 2]]  # fmt: skip
        i = int(np.argmax(d))
        if i == 0:
            row = [d[0], r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]]
        elif i == 1:
            row = [r[2, 1] - r[1, 2], d[1], r[1, 0] + r[0, 1], r[0, 2] + r[2, 0]]
        elif i == 2:
            row = [r[0, 2] - r[2, 0], r[1, 0] + r[0, 1], d[2], r[1, 2] + r[2, 1]]
        else:
            row = [r[1, 0] - r[0, 1], r[0, 2] + r[2, 0], r[1, 2] + r[2, 1], d[3]]
        q = np.array(row) / np.linalg.norm(row)
        out.append(-q if q[0] < 0 else q)
    return np.array(out)


def test_matrix_to_quat_on_non_orthogonal_input_matches_a_branching_loop(rng: np.random.Generator) -> None:
    m = Rotation.random(500, random_state=2).as_matrix() + 0.05 * rng.normal(size=(500, 3, 3))
    m = np.concatenate([m, 3.0 * m[:5], 1e-3 * m[5:10]], 0)
    np.testing.assert_allclose(matrix_to_quat(m), _shepperd_loop(m), rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [1.001, 1.01, 0.5, 0.01, 100.0])
def test_a_scaled_rotation_is_its_rotation_and_a_reflection_is_refused(scale: float) -> None:
    """``s R`` is ``R`` (scipy orthogonalises first; the constant 1 of Shepperd's candidates made 0.01 Rz(2) a turn
    of 3.1 rad, and a 1 % scale cost 0.4 degrees); a reflection has no quaternion (it came back as a rotation)."""
    r = Rotation.random(300, random_state=3)
    np.testing.assert_allclose(matrix_to_quat(scale * r.as_matrix()), _scipy_quat(r.as_matrix()), rtol=0, atol=1e-12)
    with pytest.raises(ShapeError, match="reflection"):
        matrix_to_quat(-scale * r.as_matrix())
    converted = matrix_to_quat(-scale * r.as_matrix(), check=False)  # as an exported graph: unit quaternions
    np.testing.assert_allclose(np.linalg.norm(converted, axis=-1), 1.0, rtol=0, atol=1e-12)


def _qr_gram_schmidt(d6: np.ndarray) -> np.ndarray:
    """Gram-Schmidt by numpy's QR of the 3x2 matrix ``[a1 a2]`` (signs made so that R's diagonal is > 0)."""
    a = np.stack([d6[:, :3], d6[:, 3:]], -1)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[:, None, :]
    return np.concatenate([q, np.cross(q[..., 0], q[..., 1])[..., None]], -1)


@pytest.mark.parametrize("scale", [1.0, 1e-6, 1e6])
def test_rot6d_to_matrix_matches_qr(rng: np.random.Generator, scale: float) -> None:
    d6 = rng.normal(size=(3000, 6)) * scale
    d6[:, 3:] *= rng.uniform(0.1, 10.0, size=(3000, 1))  # columns of different lengths
    np.testing.assert_allclose(rot6d_to_matrix(d6), _qr_gram_schmidt(d6), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("dtype", "scales"), [
    (np.float32, [1e-37, 1e-30, 1e-8, 1e20, 1e30, 1e37]),
    (np.float64, [1e-307, 1e-200, 1e-17, 1e155, 1e300, 1e307]),
])  # fmt: skip
def test_rot6d_to_matrix_takes_any_finite_scale(rng: np.random.Generator, dtype: type, scales: list[float]) -> None:
    """Each column is first scaled by a power of two that brings its largest |entry| into [1, 2): float32 columns
    times 1e20 had squared norms of inf (det 0, not a rotation), of norm 1e-8 been taken as zero (the identity's
    columns); float64 past 1e154 and below 1e-17 alike. Each column at its own scale too (a1 tiny, a2 huge and the
    reverse). The scaling is exact: a column times a power of two gives the same matrix to the last bit (callers
    compare rest frames built from it exactly)."""
    d6 = rng.normal(size=(200, 6))
    want = _qr_gram_schmidt(d6)
    atol = 1e-6 if dtype == np.float32 else 1e-12
    for s in scales:
        got = rot6d_to_matrix((d6 * s).astype(dtype)).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=0, atol=atol, err_msg=f"scale {s:g}")
    low, high = scales[0], scales[-1]
    for s1, s2 in ((low, high), (high, low)):
        mixed = np.concatenate([d6[:, :3] * s1, d6[:, 3:] * s2], -1).astype(dtype)
        np.testing.assert_allclose(rot6d_to_matrix(mixed).astype(np.float64), want, rtol=0, atol=atol)
    for k in (-60, -3, 5, 60):
        np.testing.assert_array_equal(rot6d_to_matrix((d6 * 2.0**k).astype(dtype)), rot6d_to_matrix(d6.astype(dtype)))
    zero = np.zeros((1, 6), dtype)  # only an exactly zero column is zero: the identity
    np.testing.assert_array_equal(rot6d_to_matrix(zero)[0], np.eye(3, dtype=dtype))


def test_rot6d_to_matrix_gradient_scales_as_the_columns_do(rng: np.random.Generator) -> None:
    """The result does not change with a column's scale, so the gradient at ``s d6`` is the one at ``d6`` over ``s``:
    the rescaling by a power of two adds nothing to it, at 1e-100 and 1e100 too."""
    d6 = torch.from_numpy(rng.normal(size=(50, 6)))
    weights = torch.from_numpy(rng.normal(size=(50, 3, 3)))

    def grad(x: torch.Tensor) -> torch.Tensor:
        x = x.clone().requires_grad_(True)
        (rot6d_to_matrix(x) * weights).sum().backward()
        assert x.grad is not None
        return x.grad

    base = grad(d6)
    for s in (1e-100, 1e-3, 1e3, 1e100):
        torch.testing.assert_close(grad(d6 * s) * s, base, rtol=1e-9, atol=1e-12)


def test_rot6d_to_matrix_unguarded_matches_qr_and_stays_finite(rng: np.random.Generator) -> None:
    d6 = rng.normal(size=(3000, 6))
    np.testing.assert_allclose(rot6d_to_matrix(d6, guarded=False), _qr_gram_schmidt(d6), rtol=0, atol=1e-12)
    degenerate = np.array([[0, 0, 0, 0, 0, 0], [1, 2, 3, 2, 4, 6], [0, 0, 0, 1, 0, 0]], dtype=np.float64)
    assert np.isfinite(rot6d_to_matrix(degenerate, guarded=False)).all()


def test_rot6d_to_matrix_degenerate_columns_hand_checked() -> None:
    s, r = np.sqrt(0.5), np.sqrt(0.2)
    d6 = np.array([
        [0, 0, 0, 0, 0, 0],  # nothing: x, then y
        [2, 0, 0, 0, 0, 0],  # zero a2: y made orthogonal to x = y
        [0, 3, 0, 0, -1, 0],  # a2 parallel to a1 = y: z
        [1, 2, 0, -2, -4, 0],  # parallel, b1 = (1, 2, 0)/sqrt 5 is near y (b1_y^2 = 0.8): z
        [1, 0, 1, 0, 0, 0],  # zero a2, b1 = (1, 0, 1)/sqrt 2: y
        [0, 0, 0, 0, 5, 0],  # zero a1: x, then a2 = y
    ], dtype=np.float64)  # fmt: skip
    want = np.array([
        [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        [[0, 0, 1], [1, 0, 0], [0, 1, 0]],
        [[r, 0, 2 * r], [2 * r, 0, -r], [0, 1, 0]],
        [[s, 0, -s], [0, 1, 0], [s, 0, s]],
        [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
    ], dtype=np.float64)  # fmt: skip
    np.testing.assert_allclose(rot6d_to_matrix(d6), want, rtol=0, atol=1e-15)


def test_tables_reproduce_their_formulas(rng: np.random.Generator) -> None:
    """The Shepperd table equals the formula it is derived from (random, non-basis input); the cross product
    (the one of the whole package) equals torch's, broadcasting included."""
    m = torch.from_numpy(rng.normal(size=(50, 9)))
    table, const = conv._SHEPPERD
    want = torch.stack(conv._shepperd_parts(list(m.T)), -1)
    torch.testing.assert_close(m @ table + const, want, rtol=0, atol=1e-13)
    a, b = torch.from_numpy(rng.normal(size=(2, 50, 3)))
    torch.testing.assert_close(_cross(a, b), torch.linalg.cross(a, b), rtol=0, atol=1e-13)
    torch.testing.assert_close(_cross(a[:1], b), torch.linalg.cross(a[:1].expand_as(b), b), rtol=0, atol=1e-13)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_leading_dims_and_reexports(dtype: torch.dtype, rng: np.random.Generator) -> None:
    d6 = torch.from_numpy(rng.normal(size=(2, 3, 4, 6))).to(dtype)
    m = rot.rot6d_to_matrix(d6)
    q = rot.matrix_to_quat(m)
    assert m.shape == (2, 3, 4, 3, 3) and q.shape == (2, 3, 4, 4) and m.dtype == q.dtype == dtype
    want = _qr_gram_schmidt(d6.double().reshape(-1, 6).numpy()).reshape(2, 3, 4, 3, 3)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(m.double().numpy(), want, rtol=0, atol=tol)
    np.testing.assert_allclose(q.double().numpy().reshape(-1, 4), _scipy_quat(want.reshape(-1, 3, 3)), atol=tol)
    for name in conv.__all__:
        assert getattr(rot, name) is getattr(conv, name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_keeps_dtype(dtype: torch.dtype, rng: np.random.Generator) -> None:
    d6 = torch.from_numpy(rng.normal(size=(10, 6)))
    m = rot6d_to_matrix(d6.to(dtype))
    q = matrix_to_quat(m)
    assert m.dtype == q.dtype == rot.quat_canonical(q).dtype == dtype
    want = _scipy_quat(_qr_gram_schmidt(d6.numpy()))
    np.testing.assert_allclose(q.double().numpy(), want, atol=0.05)  # 8-bit (bfloat16) mantissas


def test_constants_cached_under_inference_mode_still_serve_autograd() -> None:
    """The tables and index permutations are cached on first use; a first use under ``inference_mode`` must
    not leave inference tensors behind that a later differentiable call would save for backward."""
    conv._TABLES.clear()
    import skelanim.core._tensor as tensor_module

    tensor_module._CYCLES.clear()
    m = torch.from_numpy(Rotation.random(4, random_state=3).as_matrix())
    d6 = torch.randn(4, 6, dtype=torch.float64)
    with torch.inference_mode():
        matrix_to_quat(m), rot6d_to_matrix(d6)
    m.requires_grad_(True)
    d6.requires_grad_(True)
    (matrix_to_quat(m).sum() + rot6d_to_matrix(d6).sum()).backward()
    assert torch.isfinite(m.grad).all() and torch.isfinite(d6.grad).all()


def test_matrix_to_quat_of_a_large_batch_is_converted_in_blocks_with_the_same_bits(monkeypatch):
    """4M matrices at once had taken 1.5 GB of temporaries; in blocks of _MATRIX_BLOCK they take a tenth, and
    the quaternions, the reflection check and the gradients are those of the whole batch."""
    from skelanim.core import rotation_convert

    rng = np.random.default_rng(5)
    q = torch.from_numpy(rng.normal(size=(7, 143, 4)))
    m = rot.quat_to_matrix(q / q.norm(dim=-1, keepdim=True)).requires_grad_()
    whole = matrix_to_quat(m)
    (grad_whole,) = torch.autograd.grad(whole.sum(), m)
    calls = []
    shepperd = rotation_convert._tables
    monkeypatch.setattr(rotation_convert, "_MATRIX_BLOCK", 100)  # 11 blocks, the last one short
    monkeypatch.setattr(rotation_convert, "_tables", lambda *a: calls.append(1) or shepperd(*a))
    blocks = matrix_to_quat(m)
    (grad_blocks,) = torch.autograd.grad(blocks.sum(), m)
    assert len(calls) == 11 and blocks.shape == (7, 143, 4)
    assert torch.equal(blocks, whole) and torch.equal(grad_blocks, grad_whole)
    flipped = m.detach().clone()
    flipped[3, 120] *= -1.0  # a reflection in the 5th block
    with pytest.raises(ShapeError, match="reflection"):
        matrix_to_quat(flipped)
