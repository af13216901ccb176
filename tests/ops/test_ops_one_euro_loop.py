"""The One-Euro frame loops (rotations and positions) against references written here from the published equations
(Casiez, Roussel & Vogel, CHI 2012; the rotations' geodesic step as :mod:`skelanim.ops.smoothing` states it), by
hand-checked cases, and their NumPy (default) and torch (gradient) runs against each other."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from skelanim.core.rotations import quat_continuous, rotvec_to_quat
from skelanim.ops import one_euro, smooth_rotations


def _alpha(cutoff: float, fps: float) -> float:
    """The paper's smoothing factor ``1 / (1 + tau / Te)``, ``tau = 1 / (2 pi fc)``, ``Te = 1 / fps``."""
    return 1.0 / (1.0 + (1.0 / (2.0 * math.pi * cutoff)) / (1.0 / fps))


def _reference_rotations(q: np.ndarray, fps: float, min_cutoff: float, beta: float, d_cutoff: float) -> np.ndarray:
    """``(F, J, 4)`` (w, x, y, z) -> ``(F, J, 4)``: one joint and one frame at a time, in float64, with scipy's
    ``log``/``exp`` (rotation vectors): ``ω = log(q_{t-1}^-1 q_t) fps``, ``ω̂ += α(d_cutoff) (ω - ω̂)``,
    ``q̂ = q̂ exp(α(min_cutoff + beta |ω̂|) log(q̂^-1 q_t))``."""
    out = np.empty_like(q, dtype=np.float64)
    for j in range(q.shape[1]):
        rot = [Rotation.from_quat(q[f, j], scalar_first=True) for f in range(q.shape[0])]
        est, d_est = rot[0], np.zeros(3)
        out[0, j] = est.as_quat(scalar_first=True)
        for f in range(1, q.shape[0]):
            log = (est.inv() * rot[f]).as_rotvec()
            d_est = d_est + _alpha(d_cutoff, fps) * ((rot[f - 1].inv() * rot[f]).as_rotvec() * fps - d_est)
            est = est * Rotation.from_rotvec(_alpha(min_cutoff + beta * float(np.linalg.norm(d_est)), fps) * log)
            out[f, j] = est.as_quat(scalar_first=True)
    return out


def _reference_scalar(x: np.ndarray, fps: float, min_cutoff: float, beta: float, d_cutoff: float) -> np.ndarray:
    """The scalar filter (``dx`` from the previous raw sample, as the authors' reference code), one sample at a time."""
    out = np.empty_like(x, dtype=np.float64)
    out[0], dx_hat = x[0], 0.0
    for t in range(1, len(x)):
        dx_hat += _alpha(d_cutoff, fps) * ((x[t] - x[t - 1]) * fps - dx_hat)
        out[t] = out[t - 1] + _alpha(min_cutoff + beta * abs(dx_hat), fps) * (x[t] - out[t - 1])
    return out


def _walk(frames: int, joints: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``(F, J, 4)`` sign-continuous quaternions of a random walk: joint 1 constant, joint 2 still for frames 20-39
    (the loop's small-angle branches), the others at up to ~10 degrees a frame."""
    g = torch.Generator().manual_seed(seed)
    steps = torch.randn(frames, joints, 3, generator=g, dtype=torch.float64) * 0.08
    steps[:, 1] = 0.0
    steps[20:40, 2] = 0.0
    start = torch.randn(1, joints, 3, generator=g, dtype=torch.float64)
    return quat_continuous(rotvec_to_quat(start + steps.cumsum(0))).to(dtype)


def _same_rotations(a: np.ndarray, b: np.ndarray, atol: float) -> None:
    err = np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1))
    assert err.max() <= atol, (err.max(), np.unravel_index(err.argmax(), err.shape))


# ----------------------------------------------------------------------------- rotations
@pytest.mark.parametrize(("min_cutoff", "beta", "d_cutoff", "fps"), [(1.0, 0.0, 1.0, 30.0), (0.7, 1.5, 2.0, 120.0),
                                                                     (3.0, 0.3, 0.5, 60.0)])  # fmt: skip
def test_rotations_match_the_published_filter_with_the_geodesic_step(min_cutoff, beta, d_cutoff, fps):
    q = _walk(60, 5, seed=1)
    ours = smooth_rotations(q, method="one_euro", fps=fps, min_cutoff=min_cutoff, beta=beta, d_cutoff=d_cutoff)
    want = _reference_rotations(q.numpy(), fps, min_cutoff, beta, d_cutoff)
    _same_rotations(ours.numpy(), want, 1e-10)
    ours32 = smooth_rotations(q.float(), method="one_euro", fps=fps, min_cutoff=min_cutoff, beta=beta,
                              d_cutoff=d_cutoff)  # fmt: skip
    assert ours32.dtype == torch.float32
    _same_rotations(ours32.double().numpy(), want, 2e-6)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_spin_the_filter_lags_by_more_than_half_a_turn_is_followed_the_shorter_way(dtype):
    # 0.8 rad a frame at 30 fps with a 1 Hz cutoff: the estimate falls ~4 rad behind, so q̂^-1 q_t has w < 0 and
    # both the velocity's log and the slerp must take the other sign of q_t (the rotation the shorter way round)
    fps, frames = 30.0, 40
    axis = torch.tensor([0.0, 0.6, 0.8], dtype=torch.float64)
    wobble = 0.05 * torch.sin(torch.arange(frames, dtype=torch.float64))[:, None] * torch.tensor([1.0, 0.0, 0.0])
    rv = 0.8 * torch.arange(frames, dtype=torch.float64)[:, None] * axis + wobble
    q = quat_continuous(rotvec_to_quat(rv))[:, None]
    want = _reference_rotations(q.numpy(), fps, 1.0, 0.0, 1.0)
    est = quat_continuous(torch.from_numpy(want)).numpy()  # the estimate's quaternions, continuous from q_0
    assert ((est[:-1] * q.numpy()[1:]).sum(-1) < 0).sum() >= 5  # q̂^-1 q_t with w < 0 on several frames
    ours = smooth_rotations(q.to(dtype), method="one_euro", fps=fps, min_cutoff=1.0, beta=0.0, d_cutoff=1.0)
    _same_rotations(ours.double().numpy(), want, 1e-9 if dtype == torch.float64 else 2e-5)


def test_rotations_keep_any_leading_layout_and_numpy_in_numpy_out():
    q = _walk(30, 6, seed=2)
    flat = smooth_rotations(q, method="one_euro", fps=30, beta=1.0)
    grid = smooth_rotations(q.reshape(30, 2, 3, 4).numpy(), method="one_euro", fps=30, beta=1.0)
    assert isinstance(grid, np.ndarray) and grid.shape == (30, 2, 3, 4)
    np.testing.assert_array_equal(grid.reshape(30, 6, 4), flat.numpy())
    single = smooth_rotations(q[:, 4], method="one_euro", fps=30, beta=1.0)  # (F, 4): one rotation
    np.testing.assert_allclose(single.numpy(), flat[:, 4].numpy(), atol=1e-15)


def test_a_constant_rotation_stays_constant():
    q = _walk(1, 7, seed=3).expand(50, 7, 4).contiguous()
    for dtype, tol in [(torch.float64, 1e-15), (torch.float32, 3e-7)]:  # a few units in the last place
        out = smooth_rotations(q.to(dtype), method="one_euro", fps=60, min_cutoff=0.5, beta=2.0)
        _same_rotations(out.double().numpy(), q.to(dtype).double().numpy(), tol)


@pytest.mark.parametrize("beta", [0.0, 0.8])
def test_a_constant_speed_about_one_axis_is_the_scalar_filter_of_the_angle(beta):
    fps, speed = 60.0, 2.5  # rad/s: the filter lags, so the output angle is not the input's
    axis = np.array([1.0, -2.0, 2.0]) / 3.0
    theta = speed * np.arange(90) / fps - 1.0
    q = rotvec_to_quat(torch.from_numpy(theta[:, None] * axis))
    out = smooth_rotations(q, method="one_euro", fps=fps, min_cutoff=1.2, beta=beta, d_cutoff=1.5).numpy()
    off_axis = out[:, 1:] - (out[:, 1:] @ axis)[:, None] * axis
    np.testing.assert_allclose(off_axis, 0.0, atol=1e-12)  # about the same axis
    angle = 2.0 * np.arctan2(out[:, 1:] @ axis, out[:, 0])
    want = _reference_scalar(theta, fps, 1.2, beta, 1.5)
    np.testing.assert_allclose(angle, want, atol=1e-12)
    assert np.abs(angle - theta)[30:].min() > 0.05  # it did filter (a lag of more than 0.05 rad)


def test_rotations_that_need_a_gradient_run_the_same_loop_in_torch():
    q = _walk(40, 4, seed=5)
    fast = smooth_rotations(q, method="one_euro", fps=30, min_cutoff=0.8, beta=1.2)
    leaf = q.clone().requires_grad_(True)
    graph = smooth_rotations(leaf, method="one_euro", fps=30, min_cutoff=0.8, beta=1.2)
    assert graph.requires_grad and not fast.requires_grad
    np.testing.assert_allclose(graph.detach().numpy(), fast.numpy(), atol=1e-14)
    (graph * torch.linspace(-1, 1, 4 * 4 * 40, dtype=q.dtype).reshape(40, 4, 4)).sum().backward()
    assert leaf.grad is not None and torch.isfinite(leaf.grad).all() and leaf.grad.abs().sum() > 0
    with torch.no_grad():  # no graph wanted: the NumPy loop
        np.testing.assert_array_equal(smooth_rotations(leaf, method="one_euro", fps=30, min_cutoff=0.8,
                                                       beta=1.2).numpy(), fast.numpy())  # fmt: skip


def test_the_gradient_of_the_rotation_filter_is_right():
    g = torch.Generator().manual_seed(6)
    q = (torch.randn(8, 2, 4, generator=g, dtype=torch.float64) * 0.1 + torch.tensor([1.0, 0.0, 0.0, 0.0],
         dtype=torch.float64)).requires_grad_(True)  # fmt: skip

    def run(x: torch.Tensor) -> torch.Tensor:
        return smooth_rotations(x, method="one_euro", fps=30, min_cutoff=1.0, beta=0.7)

    assert torch.autograd.gradcheck(run, (q,), eps=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- positions
@pytest.mark.parametrize("isotropic", [True, False])
def test_positions_match_the_published_filter(isotropic):
    rng = np.random.default_rng(7)
    x = np.cumsum(rng.normal(0.0, 0.05, (80, 4, 3)), 0)
    fps, min_cutoff, beta, d_cutoff = 50.0, 0.9, 1.7, 1.3
    ours = one_euro(x, fps=fps, min_cutoff=min_cutoff, beta=beta, d_cutoff=d_cutoff, isotropic=isotropic)
    want = np.empty_like(x)
    want[0], d_hat = x[0], np.zeros_like(x[0])
    for t in range(1, len(x)):  # the paper's update with |dx̂| the norm per point (isotropic) or per component
        d_hat = d_hat + _alpha(d_cutoff, fps) * ((x[t] - x[t - 1]) * fps - d_hat)
        speed = np.linalg.norm(d_hat, axis=-1, keepdims=True) if isotropic else np.abs(d_hat)
        want[t] = want[t - 1] + np.vectorize(lambda s: _alpha(min_cutoff + beta * s, fps))(speed) * (x[t] - want[t - 1])
    np.testing.assert_allclose(ours, want, atol=1e-12)
    ours32 = one_euro(x.astype(np.float32), fps=fps, min_cutoff=min_cutoff, beta=beta, d_cutoff=d_cutoff,
                      isotropic=isotropic)  # fmt: skip
    assert ours32.dtype == np.float32
    np.testing.assert_allclose(ours32, want, atol=1e-5)


def test_positions_that_need_a_gradient_run_the_same_loop_in_torch():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(50, 3, 3, generator=g, dtype=torch.float64).cumsum(0) * 0.1
    x[10:20] = x[9]  # at rest: the speed's norm at 0 must pass a finite gradient
    fast = one_euro(x, fps=30, beta=0.9)
    leaf = x.clone().requires_grad_(True)
    graph = one_euro(leaf, fps=30, beta=0.9)
    assert graph.requires_grad and not fast.requires_grad
    np.testing.assert_allclose(graph.detach().numpy(), fast.numpy(), atol=1e-14)
    graph[-1].sum().backward()
    assert leaf.grad is not None and torch.isfinite(leaf.grad).all() and leaf.grad[0].abs().sum() > 0
    small = (torch.randn(7, 2, 3, generator=g, dtype=torch.float64)).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: one_euro(t, fps=30, beta=0.9), (small,), eps=1e-6, atol=1e-6)
    assert torch.autograd.gradcheck(lambda t: one_euro(t, fps=30, beta=0.9, isotropic=False), (small,), eps=1e-6,
                                    atol=1e-6)  # fmt: skip


def test_the_same_signal_filtered_at_another_rate_comes_out_alike():
    """A review: the speed taken from the previous estimate carries the filter's lag times the rate, so ``beta``
    meant more at 240 fps than at 30 (outputs 0.176 apart at common times, the filtering itself 0.19-0.27); from the
    previous raw sample as the authors' code takes it, 0.048."""
    out = {}
    for fps in (30, 240):
        t = np.arange(int(4 * fps) + 1) / fps
        x = np.stack([np.sin(2 * np.pi * 0.7 * t) + 0.3 * np.sin(2 * np.pi * 3 * t), np.cos(2 * np.pi * 1.3 * t), 0.5 * t], -1)
        out[fps] = (x, one_euro(x, fps=fps, min_cutoff=1.0, beta=1.0))
    apart = np.abs(out[240][1][::8] - out[30][1]).max()
    assert apart < 0.06 and apart < 0.25 * np.abs(out[30][1] - out[30][0]).max(), apart
