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
  velocity ``log(q̂_{t-1}^{-1} q_t) * fps`` (rad/s, in the tangent space at ``q̂_{t-1}``). For rotations
  about one fixed axis this is exactly the scalar 1€ filter applied to the angle.

:func:`smooth` applies one method to a :class:`~skelanim.core.motion.Motion`: root positions, animated
joint translations and every joint's local rotation.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from skelanim.core._tensor import along_frames, as_tensor, numpy_in_numpy_out
from skelanim.core.motion import Motion
from skelanim.core.rotations import (
    quat_continuous,
    quat_inverse,
    quat_multiply,
    quat_normalize,
    quat_slerp,
    quat_to_rotvec,
)
from skelanim.errors import ShapeError
from skelanim.ops.filters import alpha, butterworth, check_one_euro, default_savgol_window, one_euro, savgol

__all__ = ["quat_continuous", "smooth", "smooth_rotations"]

Method = Literal["savgol", "butterworth", "one_euro"]


# ------------------------------------------------------------------------------------------ rotations
def _one_euro_quat(q: torch.Tensor, fps: float, min_cutoff: float, beta: float, d_cutoff: float) -> torch.Tensor:
    a_d = alpha(d_cutoff, fps)
    out = torch.empty_like(q)
    out[0] = q[0]
    prev = q[0]
    dprev = torch.zeros(q.shape[1:-1] + (3,), dtype=q.dtype, device=q.device)
    for i in range(1, q.shape[0]):
        omega = quat_to_rotvec(quat_multiply(quat_inverse(prev), q[i])) * fps
        dprev = dprev + a_d * (omega - dprev)
        step = alpha(min_cutoff + beta * dprev.norm(dim=-1), fps)
        prev = quat_slerp(prev, q[i], step)
        out[i] = prev
    return out


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
