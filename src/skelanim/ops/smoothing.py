"""Smoothing rotations on the manifold, and whole motions.

Rotations (the method, stated)
------------------------------
Quaternion curves ``(F, ..., 4)`` are never filtered per Euler angle. Two manifold-aware methods:

* Linear filters (Savitzky–Golay, Butterworth): the quaternions are first made **sign-continuous**
  (:func:`quat_continuous`: ``q_t`` is negated when ``q_t . q_{t-1} < 0``, so the curve on ``S^3`` has no
  antipodal jumps), the four components are filtered, and the result is **re-normalised**. Each output is
  thus the normalised weighted arithmetic mean of nearby quaternions, the chordal (``L2`` in ``R^4``)
  approximation of the weighted Fréchet mean, which agrees with the geodesic mean to second order in
  the spread of the window. Because left and right multiplication by a fixed unit quaternion are
  orthogonal linear maps of ``R^4``, the method is **bi-invariant**: filtering ``a q_t b`` gives
  ``a filter(q)_t b``; the output is a unit quaternion by construction, and a constant rotation is
  returned unchanged (the filters have unit DC gain).
* One-Euro: the filter's update ``x̂_t = x̂_{t-1} + α (x_t - x̂_{t-1})`` becomes the geodesic step
  ``q̂_t = slerp(q̂_{t-1}, q_t, α) = q̂_{t-1} exp(α log(q̂_{t-1}^{-1} q_t))`` and the speed is the angular
  velocity of the input, ``log(q_{t-1}^{-1} q_t) * fps`` (rad/s, in the body's frame), from the previous raw
  sample as the positions' ``dx`` is (:func:`~skelanim.ops.filters.one_euro`). For rotations about one fixed axis
  this is exactly the scalar 1€ filter applied to the angle.

:func:`smooth` applies one method to a :class:`~skelanim.core.motion.Motion`: root positions, animated
joint translations and every joint's local rotation.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from torch import Tensor

from skelanim.core._tensor import along_frames, as_tensor, numpy_in_numpy_out
from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_conjugate, quat_continuous, quat_multiply, quat_normalize
from skelanim.errors import ShapeError
from skelanim.ops.filters import (
    A,
    FrameOps,
    alpha,
    butterworth,
    check_one_euro,
    default_savgol_window,
    frame_arrays,
    from_frame_array,
    one_euro,
    savgol,
)

__all__ = ["quat_continuous", "smooth", "smooth_rotations"]

Method = Literal["savgol", "butterworth", "one_euro"]


# ------------------------------------------------------------------------------------------ rotations
#: ``(16, 4)``: ``(a[:, :, None] * b[:, None, :]).reshape(-1, 16) @ _CONJ_PRODUCT`` is ``conj(a) * b``.
_CONJ_PRODUCT = quat_multiply(quat_conjugate(torch.eye(4, dtype=torch.float64))[:, None],
                              torch.eye(4, dtype=torch.float64)).reshape(16, 4).numpy()  # fmt: skip


def _one_euro_quat(q: Tensor, fps: float, min_cutoff: float, beta: float, d_cutoff: float) -> Tensor:
    """The geodesic One-Euro filter (module docstring) of ``q`` ``(F, ..., 4)``, unit and sign-continuous along
    frames; returns ``(F, ..., 4)`` unit quaternions. NumPy runs the frame loop unless ``q`` needs a gradient
    (:func:`~skelanim.ops.filters.frame_arrays`)."""
    flat = q.reshape(q.shape[0], -1, 4)
    arr, ops = frame_arrays(flat)
    if isinstance(arr, np.ndarray):
        out = np.empty_like(arr)
        _one_euro_quat_frames(arr, out, _CONJ_PRODUCT.astype(arr.dtype), np.ones((), arr.dtype), fps, min_cutoff, beta,
                              d_cutoff, ops)  # fmt: skip
        return from_frame_array(out, q).reshape(q.shape)
    out_t = torch.empty_like(arr)
    conj_product = torch.from_numpy(_CONJ_PRODUCT).to(dtype=arr.dtype, device=arr.device)
    _one_euro_quat_frames(arr, out_t, conj_product, arr.new_ones(()), fps, min_cutoff, beta, d_cutoff, ops)
    return out_t.reshape(q.shape)


def _one_euro_quat_frames(q: A, out: A, conj_product: A, one: A, fps: float, min_cutoff: float, beta: float,
                          d_cutoff: float, ops: FrameOps) -> None:  # fmt: skip
    """The frame loop of :func:`_one_euro_quat` on ``q`` ``(F, N, 4)`` (NumPy or torch), written into ``out``
    ``(F, N, 4)``; ``conj_product`` is :data:`_CONJ_PRODUCT` and ``one`` a 0-d 1, both of ``q``'s kind and dtype.

    The input's angular velocities, :func:`quat_to_rotvec` of ``q_{t-1}^-1 q_t`` (:func:`_relative_log`), are
    computed for every frame before the loop; each step is then, for all ``N`` rotations at once, what
    :func:`quat_slerp` computes, without its checks and renormalisations of inputs that are unit already: with
    ``r = q̂^-1 q_t`` flipped to ``w >= 0`` (the sign that picks slerp's shorter path), ``theta = atan2(|r_xyz|,
    r_w)`` is slerp's angle between ``q̂`` and ``±q_t`` in ``R^4``; the small-angle branches and thresholds are
    theirs."""
    a_d = alpha(d_cutoff, fps)
    frames, n = q.shape[0], q.shape[1]
    prev = q[0]
    out[0] = prev
    # the input's angular velocity ω_t = log(q_{t-1}^-1 q_t) * fps, of every frame at once (no filter state in it)
    pairs = (q[:-1, :, :, None] * q[1:, :, None, :]).reshape((frames - 1) * n, 16) @ conj_product
    turns = _relative_log(pairs, one, ops).reshape(frames - 1, n, 3) * fps
    dprev = prev[:, 1:] * 0.0  # (N, 3) filtered angular velocity (q is finite)
    for i in range(1, frames):
        x = q[i]
        theta, sign = _relative_angle((prev[:, :, None] * x[:, None, :]).reshape(n, 16) @ conj_product, one, ops)
        dprev = dprev + a_d * (turns[i - 1] - dprev)
        step = alpha(min_cutoff + beta * ops.sqrt0((dprev * dprev).sum(1)), fps)
        tiny = theta < 1e-5  # quat_slerp's normalised-lerp branch
        sin_th = ops.where(tiny, 1.0, ops.sin(theta))
        rest = 1.0 - step
        w0 = ops.where(tiny, rest, ops.sin(rest * theta) / sin_th)
        w1 = ops.where(tiny, step, ops.sin(step * theta) / sin_th) * sign
        blend = w0[:, None] * prev + w1[:, None] * x
        prev = blend / ops.sqrt((blend * blend).sum(1))[:, None]
        out[i] = prev


def _relative_angle(r: A, one: A, ops: FrameOps) -> tuple[A, A]:
    """For relative rotations ``r`` ``(N, 4)`` (unit): ``theta`` ``(N,)``, the angle ``atan2(|r_xyz|, |r_w|)``
    (half the turn, and slerp's angle in ``R^4``), and ``sign`` ``(N,)``, the sign that puts ``r`` in ``w >= 0``
    (and picks slerp's shorter path)."""
    sign = ops.where(r[:, 0] < 0, -one, one)
    return ops.atan2(ops.sqrt0((r[:, 1:] * r[:, 1:]).sum(1)), r[:, 0] * sign), sign


def _relative_log(r: A, one: A, ops: FrameOps) -> A:
    """``log(r)`` ``(N, 3)``, the rotation vectors of relative rotations ``r`` ``(N, 4)`` (unit):
    :func:`quat_to_rotvec`'s formulas and small-angle branch without its checks."""
    sign = ops.where(r[:, 0] < 0, -one, one)
    w, u = r[:, 0] * sign, r[:, 1:]  # (u's sign is folded into the rotation vector below)
    s2 = (u * u).sum(1)
    s = ops.sqrt0(s2)
    theta = ops.atan2(s, w)
    small = s2 < 1e-6  # quat_to_rotvec's Taylor branch: log(r) = u * 2 atan(s / w) / s
    ws = ops.where(small, w, 1.0)
    r2 = s2 / (ws * ws)
    scale = ops.where(small, (2.0 / ws) * (1.0 - r2 / 3.0 + r2 * r2 / 5.0),
                      2.0 * theta / ops.where(small, 1.0, s))  # fmt: skip
    return u * (scale * sign)[:, None]


@numpy_in_numpy_out
def smooth_rotations(
    q: Tensor,
    *,
    method: Method = "savgol",
    fps: float | None = None,
    window: int | None = None,
    polyorder: int = 3,
    cutoff: float = 6.0,
    order: int = 4,
    min_cutoff: float = 1.0,
    beta: float = 0.0,
    d_cutoff: float = 1.0,
    dim: int = 0,
) -> Tensor:
    """Smooth a quaternion curve on the rotation manifold (see the module docstring for the method).

    Parameters
    ----------
    q:
        ``(F, ..., 4)`` quaternions (w, x, y, z), any length; frames first.
    method:
        ``"savgol"``, ``"butterworth"`` or ``"one_euro"``.
    fps:
        Sampling rate; needed for ``"butterworth"`` and ``"one_euro"`` (and for the default window).
    window, polyorder:
        Savitzky–Golay options (window defaults to :func:`default_savgol_window`).
    cutoff, order:
        Butterworth options (Hz, single-pass order).
    min_cutoff, beta, d_cutoff:
        One-Euro options; ``beta`` in Hz per (rad/s) of angular speed. Its default, 0 (a fixed low-pass at
        ``min_cutoff``, where Casiez et al.'s tuning starts, as in :func:`~skelanim.ops.filters.one_euro`), is not
        :func:`smooth`'s 1.0: ``smooth(motion, "one_euro")`` calls this with ``beta=1.0`` unless told otherwise,
        so pass ``beta`` explicitly to get the same rotations from both.
    dim:
        The frame axis (``1`` for a ``(B, F, J, 4)`` batch of clips); the result keeps ``q``'s layout.

    Returns
    -------
    ``(F, ..., 4)`` unit quaternions, sign-continuous along frames.
    """
    if dim != 0:
        return along_frames(smooth_rotations, q, dim, "q", vectors=True, method=method, fps=fps, window=window,
                            polyorder=polyorder, cutoff=cutoff, order=order, min_cutoff=min_cutoff, beta=beta,
                            d_cutoff=d_cutoff)  # fmt: skip
    t = as_tensor(q)
    if t.ndim < 2 or t.shape[-1] != 4 or t.shape[0] < 1:
        raise ShapeError(f"q must have shape (F, ..., 4), got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ShapeError("q contains NaN or infinite values")
    cont = quat_continuous(quat_normalize(t))
    if method == "savgol":
        if window is None:
            if fps is None:
                raise ShapeError("savgol needs window= or fps= (for the default window)")
            window = default_savgol_window(fps, polyorder=polyorder)
        out = quat_normalize(savgol(cont, window=window, polyorder=polyorder))
    elif method == "butterworth":
        if fps is None:
            raise ShapeError("butterworth needs fps=")
        out = quat_normalize(butterworth(cont, fps=fps, cutoff=cutoff, order=order))
    elif method == "one_euro":
        if fps is None:
            raise ShapeError("one_euro needs fps=")
        out = _one_euro_quat(cont, check_one_euro(fps, min_cutoff, beta, d_cutoff), min_cutoff, beta, d_cutoff)
    else:
        raise ShapeError(f"unknown smoothing method {method!r}; expected 'savgol', 'butterworth' or 'one_euro'")
    return quat_continuous(out)


# ------------------------------------------------------------------------------------------ motions
def smooth(
    motion: Motion,
    method: Method = "savgol",
    *,
    window: int | None = None,
    polyorder: int = 3,
    cutoff: float = 6.0,
    order: int = 4,
    min_cutoff: float = 1.0,
    beta: float = 1.0,
    d_cutoff: float = 1.0,
    positions: bool = True,
    rotations: bool = True,
) -> Motion:
    """Smooth a motion: root positions, animated joint translations and all local rotations.

    Parameters
    ----------
    motion:
        The motion (not modified).
    method:
        ``"savgol"`` (default window about 0.15 s), ``"butterworth"`` (zero-phase, ``cutoff`` Hz, default 6)
        or ``"one_euro"`` (causal, adaptive).
    window, polyorder, cutoff, order, min_cutoff, d_cutoff:
        As in :func:`savgol`, :func:`butterworth`, :func:`one_euro`.
    beta:
        One-Euro speed coefficient (default 1.0, where :func:`smooth_rotations` and
        :func:`~skelanim.ops.filters.one_euro` default to 0: a whole motion is smoothed with less lag unless told
        otherwise). For positions it is in Hz per (body heights per second), so one value suits any unit; for
        rotations in Hz per (rad/s).
    positions, rotations:
        Which parts to smooth.

    Returns
    -------
    Motion
        A new motion with the same skeleton, fps and frame count.
    """
    if method not in ("savgol", "butterworth", "one_euro"):
        raise ShapeError(f"unknown smoothing method {method!r}; expected 'savgol', 'butterworth' or 'one_euro'")
    if motion.num_frames == 0:  # nothing to smooth: empty, as the other ops give it back
        return motion.copy(metadata=dict(motion.metadata))
    fps = motion.fps
    window = default_savgol_window(fps, polyorder=polyorder) if window is None else window
    height = motion.height if method == "one_euro" and positions else 1.0

    def pos_filter(x: torch.Tensor) -> torch.Tensor:
        if method == "savgol":
            return savgol(x, window=window, polyorder=polyorder)
        if method == "butterworth":
            return butterworth(x, fps=fps, cutoff=cutoff, order=order)
        h = height if height > 0 else 1.0
        return one_euro(x / h, fps=fps, min_cutoff=min_cutoff, beta=beta, d_cutoff=d_cutoff) * h

    changes: dict = {"metadata": dict(motion.metadata)}
    if positions:
        changes["root_positions"] = pos_filter(motion.root_positions)
        if motion.joint_translations is not None:
            changes["joint_translations"] = pos_filter(motion.joint_translations)
    if rotations:
        changes["rotations"] = smooth_rotations(
            motion.rotations,
            method=method,
            fps=fps,
            window=window,
            polyorder=polyorder,
            cutoff=cutoff,
            order=order,
            min_cutoff=min_cutoff,
            beta=beta,
            d_cutoff=d_cutoff,
        )
    return motion.copy(**changes)
