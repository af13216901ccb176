"""Smoothing filters for positions and other real-valued signals, frames first.

Positions
---------
Arrays ``(F, ..., D)`` (frames first, e.g. ``(F, J, 3)``) are filtered along the frame axis:

* :func:`savgol` — Savitzky–Golay (local polynomial least squares), :func:`scipy.signal.savgol_filter`.
* :func:`butterworth` — zero-phase Butterworth low-pass: :func:`scipy.signal.butter` as second-order
  sections, run forward and backward by :func:`scipy.signal.sosfiltfilt` (the magnitude response is
  squared, the phase is zero, so the effective order is doubled). Cutoff in Hz given ``fps``.
* :func:`one_euro` — the 1€ filter (Casiez, Roussel & Vogel, CHI 2012): causal exponential smoothing
  whose cutoff adapts per sample, ``fc = min_cutoff + beta * |dx̂|`` where ``dx̂`` is the derivative
  low-passed at ``d_cutoff``. With ``isotropic=True`` (the default) ``|dx̂|`` is the Euclidean norm of the
  derivative over the last axis, so a 3-D point gets one cutoff per sample whatever the orientation of
  the world axes; ``isotropic=False`` filters every scalar component on its own exactly as in the paper.

Rotations and whole motions are smoothed by :mod:`skelanim.ops.smoothing`, built on these. :func:`savgol` and
:func:`butterworth` run in SciPy, so their results carry no gradient (a tensor that needs one gets a warning);
:func:`one_euro` is differentiable: its frame-by-frame recursion, written once (:class:`FrameOps`), runs in NumPy
(five times faster per frame than torch's eager dispatch) unless the input needs a gradient, and then in torch, with
the same results to rounding.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np
import torch
from scipy.signal import butter, savgol_filter, sosfiltfilt
from torch import Tensor

from skelanim.core._tensor import along_frames, as_tensor, numpy_in_numpy_out
from skelanim.errors import ShapeError

__all__ = ["butterworth", "default_savgol_window", "one_euro", "savgol"]

#: What a recursive filter's frame loop runs on: NumPy arrays, or tensors where a gradient is needed.
A = TypeVar("A", np.ndarray, Tensor)


# ------------------------------------------------------------------------------------------ helpers
def _frames_first(x: Tensor, name: str) -> Tensor:
    """``x`` as a floating tensor, checked to have a leading frame axis with at least one frame."""
    t = as_tensor(x)
    if t.ndim < 1 or t.shape[0] < 1:
        raise ShapeError(f"{name} must have shape (F, ...) with F >= 1, got {tuple(t.shape)}")
    return t


def _finite_numpy(t: Tensor, name: str, filter_name: str) -> np.ndarray:
    """``t`` as a float64 numpy array for scipy, refusing NaN and infinities; a warning when ``t`` needs a
    gradient, which a SciPy filter cannot pass back."""
    if not torch.isfinite(t).all():
        raise ShapeError(f"{name} contains NaN or infinite values")
    if t.requires_grad:
        warnings.warn(f"{filter_name} runs in SciPy and passes no gradient back: its result is detached (one_euro "
                      "keeps the graph)", stacklevel=4)  # fmt: skip
    return t.detach().cpu().numpy().astype(np.float64, copy=False)


def _like(arr: np.ndarray, t: Tensor) -> Tensor:
    """A scipy result back as a tensor with ``t``'s dtype and device."""
    return torch.from_numpy(np.ascontiguousarray(arr)).to(dtype=t.dtype, device=t.device)


class FrameOps(NamedTuple):
    """The elementwise functions of one array library that a recursive filter's frame loop calls.

    The One-Euro loops (:func:`one_euro`, :func:`skelanim.ops.smoothing.smooth_rotations`) cannot be vectorised over
    frames, so each is written once, on arrays of one frame's joints, and run on NumPy arrays (about 1 us an
    operation on a few dozen joints, against 4-6 us through torch's dispatcher and autograd bookkeeping) unless a
    gradient is needed (:func:`frame_arrays`); then on the tensors themselves."""

    sqrt: Callable[[Any], Any]
    sqrt0: Callable[[Any], Any]  # sqrt with gradient 0 (not infinite) at 0: norms of vectors at rest, for torch
    sin: Callable[[Any], Any]
    atan2: Callable[[Any, Any], Any]
    where: Callable[[Any, Any, Any], Any]


def _torch_sqrt0(x: Tensor) -> Tensor:
    ok = x > 0
    return torch.where(ok, torch.sqrt(torch.where(ok, x, torch.ones_like(x))), torch.zeros_like(x))


NUMPY_OPS = FrameOps(np.sqrt, np.sqrt, np.sin, np.arctan2, np.where)
TORCH_OPS = FrameOps(torch.sqrt, _torch_sqrt0, torch.sin, torch.atan2, torch.where)


def frame_arrays(t: Tensor) -> tuple[np.ndarray | Tensor, FrameOps]:
    """What a frame loop runs on for ``t``: a C-contiguous NumPy array (``t``'s dtype, shared memory where it can)
    and :data:`NUMPY_OPS`, unless ``t`` needs a gradient (or has a dtype NumPy lacks): then ``t`` and
    :data:`TORCH_OPS`. Give the loop's result back with :func:`from_frame_array`."""
    if (t.requires_grad and torch.is_grad_enabled()) or t.dtype == torch.bfloat16:
        return t, TORCH_OPS
    return np.ascontiguousarray(t.detach().cpu().numpy()), NUMPY_OPS


def from_frame_array(out: np.ndarray | Tensor, like: Tensor) -> Tensor:
    """A frame loop's result as a tensor with ``like``'s dtype and device."""
    return out if isinstance(out, Tensor) else torch.from_numpy(out).to(dtype=like.dtype, device=like.device)


def _whole(value: object, name: str) -> int:
    """``value`` as an ``int`` when it is a whole number (``5``, ``5.0``, a numpy integer); else ``ShapeError``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    raise ShapeError(f"{name} must be a whole number, got {value!r}")


def check_fps(fps: float) -> float:
    """``fps`` as a float if it is a positive finite number; else :class:`ShapeError` (also for a non-number)."""
    try:
        value = float(fps)
    except (TypeError, ValueError):
        raise ShapeError(f"fps must be a positive number, got {fps!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise ShapeError(f"fps must be a positive number, got {value}")
    return value


def check_one_euro(fps: float, min_cutoff: float, beta: float, d_cutoff: float) -> float:
    """Check the One-Euro options (:func:`one_euro`); return ``fps`` as a float."""
    fps = check_fps(fps)
    if min_cutoff <= 0 or d_cutoff <= 0 or beta < 0:
        raise ShapeError("one_euro needs min_cutoff > 0, d_cutoff > 0 and beta >= 0")
    return fps


def default_savgol_window(fps: float, *, polyorder: int = 3, seconds: float = 0.15) -> int:
    """An odd Savitzky–Golay window of about ``seconds`` at ``fps``, at least ``polyorder + 2``.

    Returns
    -------
    int
        Odd window length in frames (e.g. 5 at 30 fps, 9 at 60 fps, 19 at 120 fps).
    """
    n = max(round(seconds * check_fps(fps)), polyorder + 2)  # polyorder + 1 points fit the polynomial exactly
    return n if n % 2 == 1 else n + 1


def alpha(cutoff: torch.Tensor | float, fps: float) -> torch.Tensor | float:
    """Smoothing factor of a first-order low-pass at ``cutoff`` Hz sampled at ``fps``: ``1 / (1 + tau / Te)``."""
    r = 2.0 * math.pi * cutoff / fps
    return r / (r + 1.0)


# ------------------------------------------------------------------------------------------ positions
@numpy_in_numpy_out
def savgol(
    x: Tensor,
    *,
    window: int,
    polyorder: int = 3,
    mode: str = "interp",
    dim: int = 0,
) -> Tensor:
    """Savitzky–Golay smoothing along the frame axis.

    Parameters
    ----------
    x:
        ``(F, ...)`` signal (numpy or torch; the result has the same type).
    window:
        Odd window length in frames, ``> polyorder``. Clips shorter than the window are filtered with
        the longest odd window that fits; clips of at most ``polyorder + 1`` frames are returned as they are
        (a polynomial of that order fits them exactly).
    polyorder:
        Order of the local polynomial.
    mode:
        Edge handling passed to :func:`scipy.signal.savgol_filter` (``"interp"`` fits the edge windows).
    dim:
        The frame axis (``1`` for a ``(B, F, ...)`` batch of clips); the result keeps ``x``'s layout.

    Returns
    -------
    ``(F, ...)`` smoothed signal.
    """
    if dim != 0:
        return along_frames(savgol, x, dim, "x", window=window, polyorder=polyorder, mode=mode)
    t = _frames_first(x, "x")
    arr = _finite_numpy(t, "x", "savgol")
    window, polyorder = _whole(window, "window"), _whole(polyorder, "polyorder")
    if polyorder < 0:
        raise ShapeError(f"polyorder must be >= 0, got {polyorder}")
    if window < 1 or window % 2 == 0 or window <= polyorder:
        raise ShapeError(f"window must be an odd number > polyorder ({polyorder}), got {window}")
    f = arr.shape[0]
    w = window if window <= f else (f if f % 2 == 1 else f - 1)
    if w <= polyorder:
        return t.clone()
    return _like(savgol_filter(arr, w, polyorder, axis=0, mode=mode), t)


@numpy_in_numpy_out
def butterworth(
    x: Tensor,
    *,
    fps: float,
    cutoff: float,
    order: int = 4,
    dim: int = 0,
) -> Tensor:
    """Zero-phase Butterworth low-pass along the frame axis (``sosfiltfilt``).

    Parameters
    ----------
    x:
        ``(F, ...)`` signal sampled at ``fps``.
    fps:
        Sampling rate in Hz.
    cutoff:
        Cutoff frequency in Hz, ``0 < cutoff < fps / 2``.
    order:
        Order of the single-pass filter (the forward-backward result has twice the attenuation in dB).
    dim:
        The frame axis (``1`` for a ``(B, F, ...)`` batch of clips); the result keeps ``x``'s layout.

    Returns
    -------
    ``(F, ...)`` filtered signal. The edges are padded as :func:`scipy.signal.sosfiltfilt` pads them (odd
    extension); a clip shorter than that padding is extended by repeated odd reflection, so that a short
    clip is filtered like the same stretch of a long one.
    """
    fps = check_fps(fps)
    if not 0 < cutoff < fps / 2:
        raise ShapeError(f"cutoff must be between 0 and the Nyquist frequency {fps / 2} Hz, got {cutoff}")
    order = _whole(order, "order")
    if order < 1:
        raise ShapeError(f"order must be >= 1, got {order}")
    if dim != 0:
        return along_frames(butterworth, x, dim, "x", fps=fps, cutoff=cutoff, order=order)
    t = _frames_first(x, "x")
    arr = _finite_numpy(t, "x", "butterworth")
    if arr.shape[0] < 2:
        return t.clone()
    sos = butter(order, cutoff, btype="low", fs=fps, output="sos")
    pad = 3 * (2 * len(sos) + 1 - min((sos[:, 2] == 0).sum(), (sos[:, 5] == 0).sum()))  # scipy's default padlen
    # scipy's odd extension, repeated for clips shorter than the padding (scipy would shorten the padding and
    # leave the start-up transient in the output: a 2-frame ramp came out at -0.19, -0.03)
    extended = np.pad(arr, [(pad, pad)] + [(0, 0)] * (arr.ndim - 1), mode="reflect", reflect_type="odd")
    return _like(sosfiltfilt(sos, extended, axis=0, padlen=0)[pad:-pad], t)


@numpy_in_numpy_out
def one_euro(
    x: Tensor,
    *,
    fps: float,
    min_cutoff: float = 1.0,
    beta: float = 0.0,
    d_cutoff: float = 1.0,
    isotropic: bool = True,
    dim: int = 0,
) -> Tensor:
    """The One-Euro filter (Casiez et al. 2012), causal, vectorised over everything but frames.

    For each sample ``t >= 1`` (``x̂_0 = x_0``, ``dx̂_0 = 0``)::

        dx   = (x_t - x_{t-1}) * fps
        dx̂_t = dx̂_{t-1} + α(d_cutoff) (dx - dx̂_{t-1})
        fc   = min_cutoff + beta * |dx̂_t|
        x̂_t  = x̂_{t-1} + α(fc) (x_t - x̂_{t-1}),      α(fc) = 1 / (1 + fps / (2 π fc))

    ``dx`` is the raw signal's speed, from the previous sample, as in the authors' reference implementations
    (``OneEuroFilter.cc``/``.py``, ``lastRawValue``). Taken from the previous estimate instead (the CHI paper's
    pseudo-code reads so), it adds the filter's lag times ``fps``, so ``beta`` meant more the higher the rate: one
    signal sampled at 30 and at 240 fps came out 0.176 apart at common times (``beta`` 1; the filtering moves it by
    0.19-0.27), from the raw sample 0.048 (a review's finding; tested).

    Parameters
    ----------
    x:
        ``(F, ..., D)`` signal sampled at ``fps``.
    fps:
        Sampling rate in Hz.
    min_cutoff:
        Cutoff in Hz at zero speed (less jitter when lower).
    beta:
        Speed coefficient, in Hz per (unit of ``x`` per second) (less lag when higher).
    d_cutoff:
        Cutoff in Hz of the derivative's low-pass.
    isotropic:
        ``|dx̂|`` is the norm over the last axis (one cutoff per point); ``False``: per component.
    dim:
        The frame axis (``1`` for a ``(B, F, ...)`` batch of clips); the result keeps ``x``'s layout.

    Returns
    -------
    ``(F, ..., D)`` filtered signal.
    """
    fps = check_one_euro(fps, min_cutoff, beta, d_cutoff)
    if dim != 0:
        return along_frames(one_euro, x, dim, "x", vectors=isotropic, fps=fps, min_cutoff=min_cutoff, beta=beta,
                            d_cutoff=d_cutoff, isotropic=isotropic)  # fmt: skip
    t = _frames_first(x, "x")
    if not torch.isfinite(t).all():  # as savgol and butterworth: a NaN would spread to every later frame
        raise ShapeError("x contains NaN or infinite values")
    arr, ops = frame_arrays(t)
    iso = isotropic and t.ndim > 1
    if isinstance(arr, np.ndarray):
        out = np.empty_like(arr)
        _one_euro_frames(arr, out, fps, min_cutoff, beta, d_cutoff, iso, ops)
        return from_frame_array(out, t)
    out_t = torch.empty_like(arr)
    _one_euro_frames(arr, out_t, fps, min_cutoff, beta, d_cutoff, iso, ops)
    return out_t


def _one_euro_frames(x: A, out: A, fps: float, min_cutoff: float, beta: float, d_cutoff: float, isotropic: bool,
                     ops: FrameOps) -> None:  # fmt: skip
    """:func:`one_euro`'s recursion on ``x`` ``(F, ...)`` (NumPy or torch, :class:`FrameOps`), written into ``out``
    (same shape; every frame is written). ``isotropic``: one speed per vector over the last axis."""
    a_d = alpha(d_cutoff, fps)
    prev = x[0]
    out[0] = prev
    dprev = prev * 0.0  # (x is finite)
    for i in range(1, x.shape[0]):
        diff = x[i] - prev
        dprev = dprev + a_d * ((x[i] - x[i - 1]) * fps - dprev)
        speed = ops.sqrt0((dprev * dprev).sum(-1))[..., None] if isotropic else abs(dprev)
        prev = prev + alpha(min_cutoff + beta * speed, fps) * diff
        out[i] = prev
