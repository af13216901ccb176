"""Filters: closed-form responses, scipy, a scalar One-Euro reference, and rotation smoothing on S^3."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.signal import lfilter
from scipy.spatial.transform import Rotation

from skelanim.core.rotations import quat_geodesic, quat_multiply, quat_normalize, rotvec_to_quat
from skelanim.errors import ShapeError
from skelanim.ops import (
    butterworth,
    mirror_quat,
    one_euro,
    quat_continuous,
    root_relative,
    savgol,
    smooth,
    smooth_rotations,
)
from skelanim.ops.filters import default_savgol_window


# ----------------------------------------------------------------------------- reference One-Euro (paper)
class ScalarOneEuro:
    """Straight transcription of the 1€ filter (Casiez et al. 2012) as the authors' reference code computes it
    (``dx`` from the last raw value, ``lastRawValue``), one scalar signal."""

    def __init__(self, freq: float, mincutoff: float, beta: float, dcutoff: float) -> None:
        self.freq, self.mincutoff, self.beta, self.dcutoff = freq, mincutoff, beta, dcutoff
        self.x_prev: float | None = None
        self.raw_prev = 0.0
        self.dx_prev = 0.0

    def alpha(self, cutoff: float) -> float:
        te = 1.0 / self.freq
        tau = 1.0 / (2 * math.pi * cutoff)
        return 1.0 / (1.0 + tau / te)

    def __call__(self, x: float) -> float:
        if self.x_prev is None:
            self.x_prev = self.raw_prev = x
            return x
        dx = (x - self.raw_prev) * self.freq
        self.raw_prev = x
        a_d = self.alpha(self.dcutoff)
        edx = a_d * dx + (1 - a_d) * self.dx_prev
        self.dx_prev = edx
        a = self.alpha(self.mincutoff + self.beta * abs(edx))
        self.x_prev = a * x + (1 - a) * self.x_prev
        return self.x_prev


def reference_one_euro(x: np.ndarray, **kw) -> np.ndarray:
    f = ScalarOneEuro(**kw)
    return np.array([f(float(v)) for v in x])


# ----------------------------------------------------------------------------- positions
def test_savgol_keeps_polynomials_and_types():
    t = np.linspace(-1, 1, 31)
    cubic = np.stack([1 + 2 * t - t**2 + 0.5 * t**3, t**3], -1)
    out = savgol(cubic, window=7, polyorder=3)
    assert isinstance(out, np.ndarray) and np.allclose(out, cubic, atol=1e-12)
    out_t = savgol(torch.from_numpy(cubic), window=7, polyorder=3)
    assert isinstance(out_t, torch.Tensor) and torch.allclose(out_t, torch.from_numpy(cubic), atol=1e-12)
    # a quartic is NOT kept by a cubic fit: the test can fail
    assert not np.allclose(savgol(t**4, window=7, polyorder=3), t**4, atol=1e-6)
    # short clip: window shrinks; tiny clip returned as is
    assert np.allclose(savgol(cubic[:5], window=7, polyorder=3), cubic[:5], atol=1e-12)
    assert np.array_equal(savgol(cubic[:3], window=7, polyorder=3), cubic[:3])
    with pytest.raises(ShapeError):
        savgol(cubic, window=4)
    assert default_savgol_window(30) == 5 and default_savgol_window(120) == 19
    # an even polyorder: polyorder + 1 points would be fitted exactly, so the window is at least polyorder + 2
    for fps in (10, 24, 30):
        window = default_savgol_window(fps, polyorder=4)
        assert window >= 6 and window % 2 == 1
        assert not np.allclose(savgol(t**5, window=window, polyorder=4), t**5, atol=1e-6)


@pytest.mark.parametrize("order", [2, 4])
def test_butterworth_matches_closed_form_gain(order):
    fps, cutoff = 100.0, 5.0
    t = np.arange(2000) / fps
    for f in (1.0, 5.0, 15.0):
        x = np.sin(2 * np.pi * f * t)
        y = butterworth(x[:, None], fps=fps, cutoff=cutoff, order=order)[:, 0]
        mid = slice(500, 1500)
        # digital Butterworth (bilinear transform): |H|^2 = 1 / (1 + (tan(pi f / fs) / tan(pi fc / fs))^(2n));
        # forward-backward filtering applies it twice, with zero phase
        ratio = math.tan(math.pi * f / fps) / math.tan(math.pi * cutoff / fps)
        gain = 1.0 / (1.0 + ratio ** (2 * order))
        assert np.allclose(y[mid], gain * x[mid], atol=2e-3)


def test_butterworth_edges_and_errors():
    x = torch.linspace(0, 1, 8)[:, None].double()  # shorter than the default padding
    y = butterworth(x, fps=30, cutoff=5)
    assert isinstance(y, torch.Tensor) and y.shape == x.shape
    # a short clip is filtered like a stretch of a long one: a ramp stays a ramp about as well (scipy: 0.27 off at 2 frames)
    long_ramp = np.arange(60.0)[:, None]
    accuracy = np.abs(butterworth(long_ramp, fps=30, cutoff=6) - long_ramp).max()
    for frames in (2, 3, 5, 9):
        ramp = np.arange(float(frames))[:, None]
        assert np.abs(butterworth(ramp, fps=30, cutoff=6) - ramp).max() <= 2 * accuracy
    assert scipy_padded_equals(np.sin(np.arange(40.0))[:, None])
    const = np.full((50, 2, 3), 4.2)
    assert np.allclose(butterworth(const, fps=30, cutoff=3), const, atol=1e-12)
    with pytest.raises(ShapeError):
        butterworth(const, fps=30, cutoff=15)
    with pytest.raises(ShapeError):
        butterworth(const, fps=0, cutoff=1)


def scipy_padded_equals(x: np.ndarray) -> bool:
    """Beyond the padding, butterworth is scipy's sosfiltfilt with its default padding, to rounding."""
    from scipy.signal import butter, sosfiltfilt

    return np.allclose(butterworth(x, fps=30, cutoff=6), sosfiltfilt(butter(4, 6, fs=30, output="sos"), x, axis=0),
                       atol=1e-12)  # fmt: skip


def test_one_euro_matches_scalar_reference():
    rng = np.random.default_rng(0)
    t = np.arange(300) / 60.0
    x = np.stack([np.sin(3 * t), np.cumsum(rng.normal(size=300)) * 0.05, (t > 2) * 1.0], -1)
    x = x + rng.normal(scale=0.02, size=x.shape)
    kw = {"min_cutoff": 1.2, "beta": 0.7, "d_cutoff": 1.5}
    ours = one_euro(x, fps=60.0, isotropic=False, **kw)
    ref = np.stack([reference_one_euro(x[:, d], freq=60.0, mincutoff=1.2, beta=0.7, dcutoff=1.5) for d in range(3)], -1)
    assert np.allclose(ours, ref, atol=1e-12)
    # isotropic on a 1-D point is the same as per component
    iso = one_euro(x[:, :1], fps=60.0, isotropic=True, **kw)
    assert np.allclose(iso[:, 0], ref[:, 0], atol=1e-12)
    # isotropic on 3-D uses one cutoff per point: differs from per-component when beta > 0
    assert not np.allclose(one_euro(x, fps=60.0, **kw), ref, atol=1e-6)


def test_one_euro_beta_zero_is_exponential_smoothing_and_causal():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(120, 4, 3))
    fps, fc = 30.0, 2.0
    alpha = 1.0 / (1.0 + fps / (2 * math.pi * fc))
    # y_t = alpha x_t + (1 - alpha) y_{t-1}, y_0 = x_0: scipy's lfilter with the matching initial state
    expected = lfilter([alpha], [1, alpha - 1], x[1:], axis=0, zi=((1 - alpha) * x[0])[None])[0]
    out = one_euro(x, fps=fps, min_cutoff=fc, beta=0.0)
    assert np.allclose(out[1:], expected, atol=1e-12) and np.array_equal(out[0], x[0])
    # causal: changing the future leaves the past alone
    x2 = x.copy()
    x2[60:] += 5.0
    out2 = one_euro(x2, fps=fps, min_cutoff=fc, beta=0.5)
    assert np.array_equal(one_euro(x, fps=fps, min_cutoff=fc, beta=0.5)[:60], out2[:60])
    assert isinstance(one_euro(torch.from_numpy(x), fps=fps), torch.Tensor)


def test_one_euro_adapts_to_speed():
    # with a large beta a fast ramp lags less than with beta = 0
    t = np.arange(200) / 100.0
    ramp = (5 * t)[:, None]
    slow = one_euro(ramp, fps=100.0, min_cutoff=0.5, beta=0.0)
    fast = one_euro(ramp, fps=100.0, min_cutoff=0.5, beta=2.0)
    assert np.abs(fast - ramp)[-1, 0] < 0.25 * np.abs(slow - ramp)[-1, 0]


# ----------------------------------------------------------------------------- rotations
def smooth_curve(frames: int, joints: int, seed: int = 0, fmax: float = 0.8, amp: float = 1.5) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    t = np.arange(frames)[:, None, None] / 60.0
    freq = rng.uniform(0.1, fmax, size=(1, joints, 3))
    rv = amp * np.sin(2 * np.pi * freq * t + rng.uniform(0, 6, size=(1, joints, 3)))
    return rotvec_to_quat(torch.from_numpy(rv))


def noisy(q: torch.Tensor, sigma: float, seed: int = 1, flip: bool = True) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    noise = rotvec_to_quat(torch.from_numpy(rng.normal(scale=sigma, size=q.shape[:-1] + (3,))))
    out = quat_multiply(q, noise)
    if flip:  # random antipodal signs: the same rotations, a discontinuous 4-vector curve
        out = out * torch.from_numpy(rng.choice([-1.0, 1.0], size=q.shape[:-1] + (1,)))
    return out


OPTIONS = {
    "savgol": {"window": 15, "polyorder": 2},
    "butterworth": {"cutoff": 4.0},
    "one_euro": {"min_cutoff": 1.0, "beta": 1.0},
}
# The causal One-Euro filter trades jitter for lag; it is tested in its design regime (slower motion).
SLOW = {"savgol": False, "butterworth": False, "one_euro": True}


@pytest.mark.parametrize("method", ["savgol", "butterworth", "one_euro"])
def test_rotation_smoothing_constant_unit_and_denoises(method):
    fps = 60.0
    const = rotvec_to_quat(torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)).expand(50, 3, 4).clone()
    const[::3] *= -1  # sign flips of the same rotation
    out = smooth_rotations(const, method=method, fps=fps, **OPTIONS[method])
    assert float(quat_geodesic(out, const).max()) < 1e-7

    truth = smooth_curve(240, 5, fmax=0.15, amp=0.5) if SLOW[method] else smooth_curve(240, 5)
    noisy_q = noisy(truth, 0.05)
    out = smooth_rotations(noisy_q, method=method, fps=fps, **OPTIONS[method])
    assert torch.allclose(out.norm(dim=-1), torch.ones(out.shape[:-1], dtype=torch.float64), atol=1e-12)
    before = float(quat_geodesic(noisy_q, truth).mean())
    after = float(quat_geodesic(out, truth).mean())
    assert after < 0.6 * before, (before, after)
    # sign-continuous output
    assert float((out[1:] * out[:-1]).sum(-1).min()) > 0


@pytest.mark.parametrize("method", ["savgol", "butterworth"])
def test_linear_rotation_smoothing_is_bi_invariant(method):
    q = noisy(smooth_curve(100, 2, seed=4), 0.05, seed=5)
    a = rotvec_to_quat(torch.tensor([1.0, 2.0, -0.5], dtype=torch.float64))
    b = rotvec_to_quat(torch.tensor([-0.3, 0.1, 2.5], dtype=torch.float64))
    left = smooth_rotations(quat_multiply(quat_multiply(a, q), b), method=method, fps=60.0, **OPTIONS[method])
    right = quat_multiply(quat_multiply(a, smooth_rotations(q, method=method, fps=60.0, **OPTIONS[method])), b)
    assert float(quat_geodesic(left, right).max()) < 1e-9


def test_one_euro_rotation_about_fixed_axis_equals_scalar_filter_on_angle():
    fps = 50.0
    rng = np.random.default_rng(2)
    angle = np.cumsum(rng.normal(scale=0.05, size=200)) + np.sin(np.arange(200) / 15)
    axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    q = torch.from_numpy(Rotation.from_rotvec(angle[:, None] * axis).as_quat(scalar_first=True))
    out = smooth_rotations(q[:, None], method="one_euro", fps=fps, min_cutoff=1.0, beta=0.3, d_cutoff=1.0)[:, 0]
    ref = reference_one_euro(angle, freq=fps, mincutoff=1.0, beta=0.3, dcutoff=1.0)
    expected = torch.from_numpy(Rotation.from_rotvec(ref[:, None] * axis).as_quat(scalar_first=True))
    assert float(quat_geodesic(out, expected).max()) < 1e-9


def test_quat_continuous():
    q = smooth_curve(30, 2)
    signs = torch.from_numpy(np.random.default_rng(0).choice([-1.0, 1.0], size=(30, 2, 1)))
    fixed = quat_continuous(q * signs)
    assert float((fixed[1:] * fixed[:-1]).sum(-1).min()) > 0
    assert torch.equal(fixed[0], (q * signs)[0])
    assert torch.allclose(fixed.abs(), q.abs())
    assert isinstance(quat_continuous(q.numpy()), np.ndarray)
    with pytest.raises(ShapeError):
        quat_continuous(torch.zeros(3, 3))


# ----------------------------------------------------------------------------- motions
@pytest.mark.parametrize("method", ["savgol", "butterworth", "one_euro"])
def test_smooth_motion(method, helpers, check_unchanged):
    freqs = (0.05, 0.2) if SLOW[method] else (0.3, 2.0)
    clean = helpers.random_motion(helpers.body_skeleton(), 90, fps=60.0, translations=True, freq_range=freqs)
    rng = np.random.default_rng(3)
    dirty = clean.copy(
        rotations=noisy(clean.rotations, 0.04, seed=9),
        root_positions=clean.root_positions + torch.from_numpy(rng.normal(scale=0.01, size=(90, 3))),
        joint_translations=clean.joint_translations + torch.from_numpy(rng.normal(scale=0.005, size=(90, 21, 3))),
    )
    done = check_unchanged(dirty)
    out = smooth(dirty, method, **({"cutoff": 4.0} if method == "butterworth" else {}))
    assert done()
    assert out.num_frames == 90 and out.fps == 60.0 and out.skeleton == dirty.skeleton

    def jitter(m):  # mean norm of the second difference of FK positions
        p = m.positions()
        return float((p[2:] - 2 * p[1:-1] + p[:-2]).norm(dim=-1).mean())

    assert jitter(out) < 0.3 * jitter(dirty)
    if not SLOW[method]:  # the zero-phase filters also get closer to the truth (no lag)
        err_before = (dirty.positions() - clean.positions()).norm(dim=-1).mean()
        err_after = (out.positions() - clean.positions()).norm(dim=-1).mean()
        assert err_after < 0.7 * err_before
    assert quat_geodesic(out.rotations, clean.rotations).mean() < quat_geodesic(dirty.rotations, clean.rotations).mean()
    only_pos = smooth(dirty, method, rotations=False)
    assert torch.equal(only_pos.rotations, dirty.rotations)
    assert not torch.equal(only_pos.root_positions, dirty.root_positions)
    with pytest.raises(ShapeError, match="unknown smoothing method"):
        smooth(dirty, "gaussian")


def test_smooth_rotations_needs_fps():
    q = quat_normalize(torch.randn(10, 4, dtype=torch.float64))
    for method in ("savgol", "butterworth", "one_euro"):
        with pytest.raises(ShapeError):
            smooth_rotations(q, method=method)
    assert smooth_rotations(q, method="savgol", window=5).shape == q.shape


# ----------------------------------------------------------------------------- numpy and torch at the edges
@pytest.mark.parametrize(
    "op",
    [
        lambda x: savgol(x, window=5),
        lambda x: butterworth(x, fps=30.0, cutoff=4.0),
        lambda x: one_euro(x, fps=30.0, beta=0.5),
        lambda x: smooth_rotations(x, fps=30.0),
        lambda x: smooth_rotations(x, method="one_euro", fps=30.0, beta=0.1),
        lambda x: mirror_quat(x, axis="z"),
        lambda x: root_relative(x[..., :3], root=1),
    ],
    ids=["savgol", "butterworth", "one_euro", "rotations_savgol", "rotations_one_euro", "mirror_quat", "root_relative"],
)
def test_array_ops_give_back_the_kind_they_get(op) -> None:
    """numpy in, numpy out; a tensor in, a tensor of the same dtype out; the numbers agree."""
    x = quat_normalize(torch.from_numpy(np.random.default_rng(3).normal(size=(20, 3, 4))))
    from_numpy = op(x.numpy())
    assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float64
    from_tensor = op(x)
    assert isinstance(from_tensor, torch.Tensor) and from_tensor.dtype == torch.float64
    np.testing.assert_array_equal(from_tensor.numpy(), from_numpy)
    single = op(x.float())
    assert isinstance(single, torch.Tensor) and single.dtype == torch.float32
    np.testing.assert_allclose(single.numpy(), from_numpy, atol=1e-5)


def test_whole_number_parameters():
    """A whole float window or order is the integer; a fractional one, a bool or a negative order is refused with
    a skelanim error (they gave scipy's or torch's TypeError)."""
    x = torch.randn(20, 3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(savgol(x, window=5.0, polyorder=2.0), savgol(x, window=5, polyorder=2))
    assert torch.equal(butterworth(x, fps=30, cutoff=5, order=np.int64(2)), butterworth(x, fps=30, cutoff=5, order=2))
    for call, message in [(lambda: savgol(x, window=5.5), "window must be a whole number"),
                          (lambda: savgol(x, window=True), "window must be a whole number"),
                          (lambda: savgol(x, window=5, polyorder=-1), "polyorder must be >= 0"),
                          (lambda: butterworth(x, fps=30, cutoff=5, order=2.5), "order must be a whole number"),
                          (lambda: butterworth(x, fps=30, cutoff=5, order=0), "order must be >= 1")]:  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            call()


def test_scipy_filters_say_they_pass_no_gradient():
    import torch

    from skelanim.ops import butterworth, one_euro, savgol

    x = torch.randn(40, 3, dtype=torch.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="savgol runs in SciPy and passes no gradient back"):
        assert not savgol(x, window=5).requires_grad
    with pytest.warns(UserWarning, match="butterworth runs in SciPy"):
        assert not butterworth(x, fps=30, cutoff=5).requires_grad
    assert one_euro(x, fps=30).requires_grad  # torch throughout


# ----------------------------------------------------------------------------- batches of clips (dim=)
_FILTERS = {
    "savgol": lambda x, **kw: savgol(x, window=9, **kw),
    "butterworth": lambda x, **kw: butterworth(x, fps=30, cutoff=4.0, **kw),
    "one_euro": lambda x, **kw: one_euro(x, fps=30, beta=0.5, **kw),
    "one_euro per component": lambda x, **kw: one_euro(x, fps=30, beta=0.5, isotropic=False, **kw),
}
_ROTATION_FILTERS = {
    "quat_continuous": lambda q, **kw: quat_continuous(q, **kw),
    "smooth_rotations savgol": lambda q, **kw: smooth_rotations(q, window=9, **kw),
    "smooth_rotations butterworth": lambda q, **kw: smooth_rotations(q, method="butterworth", fps=30, **kw),
    "smooth_rotations one_euro": lambda q, **kw: smooth_rotations(q, method="one_euro", fps=30, beta=0.3, **kw),
}


def _noisy_batch(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(3, 40, 5, 3)`` positions and ``(3, 40, 5, 4)`` quaternions with random signs (three clips)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.linspace(0, 2, 40, dtype=torch.float64)[None, :, None, None]
    pos = torch.sin(3 * t + torch.rand(3, 1, 5, 3, generator=g, dtype=torch.float64)) + 0.05 * torch.randn(
        3, 40, 5, 3, generator=g, dtype=torch.float64)  # fmt: skip
    q = rotvec_to_quat(pos)
    signs = torch.where(torch.rand(3, 40, 5, 1, generator=g) < 0.5, -1.0, 1.0).to(q.dtype)
    return pos, q * signs


@pytest.mark.parametrize("name", list(_FILTERS) + list(_ROTATION_FILTERS))
def test_a_batch_of_clips_filtered_along_dim_is_each_clip_filtered_alone(name):
    """The frame-axis filters took axis 0 as frames whatever was given: a ``(B, F, J, 4)`` batch had its clips
    filtered into one another (2,150 sign jumps left by quat_continuous, 10.8 degrees and 3.97 cm off the
    per-clip result, an audit's measures). ``dim=`` names the frame axis; the result keeps the batch layout,
    numpy stays numpy, and a frame axis that is not one is a one-line error."""
    pos, q = _noisy_batch(0)
    fn, x = (_FILTERS[name], pos) if name in _FILTERS else (_ROTATION_FILTERS[name], q)
    each = torch.stack([fn(clip) for clip in x])
    for dim in (1, -3):
        got = fn(x, dim=dim)
        assert got.shape == x.shape
        torch.testing.assert_close(got, each, rtol=0, atol=1e-12)
    torch.testing.assert_close(fn(x.movedim(1, 2), dim=2), each.movedim(1, 2), rtol=0, atol=1e-12)
    np.testing.assert_allclose(fn(x.numpy(), dim=1), each.numpy(), rtol=0, atol=1e-12)
    assert float((fn(x) - each).abs().max()) > 1e-3  # frames first, the same batch is not per clip
    with pytest.raises(ShapeError, match="dim=4"):
        fn(x, dim=4)
    if name not in ("savgol", "butterworth", "one_euro per component"):  # the last axis holds each sample
        with pytest.raises(ShapeError, match="not a frame axis"):
            fn(x, dim=-1)


def test_smooth_one_euro_rotations_are_smooth_rotations_at_its_own_beta_default(motion):
    """An API review: ``smooth(m, "one_euro")`` and ``smooth_rotations(m.rotations, "one_euro")`` gave rotations 25°
    apart with their defaults (``beta`` 1.0 against 0); the docstrings now say so. Pinned: the motion-level call is
    the rotation-level one at ``beta=1.0``, and not at the rotation-level default."""
    got = smooth(motion, "one_euro", positions=False).rotations
    same = smooth_rotations(motion.rotations, method="one_euro", fps=motion.fps, beta=1.0)
    assert torch.equal(got, same)
    default = smooth_rotations(motion.rotations, method="one_euro", fps=motion.fps)
    assert not torch.allclose(got, default, atol=1e-6)
