"""Dynamic time warping (DTW) of feature sequences and of motions.

:func:`dtw` aligns two sequences ``a`` ``(N, D)`` and ``b`` ``(M, D)``. With local cost
``c[i, j] = metric(a[i], b[j])`` the accumulated cost obeys the classic recurrence (steps
``(1, 1)``, ``(1, 0)`` and ``(0, 1)``, Sakoe & Chiba 1978, symmetric form without slope weights)::

    D[i, j] = c[i, j] + min(D[i-1, j-1], D[i-1, j], D[i, j-1]),    D[0, 0] = c[0, 0]

The warping path runs from ``(0, 0)`` to ``(N-1, M-1)``, both indices non-decreasing and each step
moving by at most one in each; its cost is the *sum* of local costs along it (not normalised).
The table is filled one anti-diagonal at a time (``N + M - 1`` vectorised steps), so long clips are
practical; memory is ``O(N M)``.

The optional window is a Sakoe–Chiba band: cell ``(i, j)`` is allowed when
``|i - j| <= max(window, |N - M|)`` (widened to ``|N - M|`` so the end cell stays reachable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.spatial.distance import cdist

from skelanim.core._tensor import ArrayLike, to_numpy
from skelanim.core.motion import Motion
from skelanim.errors import ShapeError

Metric = str | Callable[[np.ndarray, np.ndarray], float]

__all__ = ["align_motions", "dtw", "dtw_from_cost"]


def _features(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(to_numpy(x), dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim < 1 or arr.shape[0] < 1:
        raise ShapeError(f"{name} must have shape (F, D) with F >= 1, got {arr.shape}")
    arr = arr.reshape(arr.shape[0], -1)
    if not np.isfinite(arr).all():
        raise ShapeError(f"{name} contains NaN or infinite values")
    return arr


def dtw_from_cost(cost: ArrayLike, *, window: int | None = None) -> tuple[np.ndarray, float]:
    """DTW over a precomputed local-cost matrix.

    Parameters
    ----------
    cost:
        ``(N, M)`` non-negative local costs ``c[i, j]``.
    window:
        Sakoe–Chiba band radius (see the module docstring); ``None`` for no constraint.

    Returns
    -------
    path:
        ``(K, 2)`` int64 array of index pairs ``(i, j)`` from ``(0, 0)`` to ``(N-1, M-1)``.
    cost:
        Sum of ``c`` along the path (the minimum over all admissible paths).
    """
    c = np.asarray(to_numpy(cost), dtype=np.float64)
    if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
        raise ShapeError(f"cost must be an (N, M) matrix with N, M >= 1, got {c.shape}")
    if np.isnan(c).any():
        raise ShapeError("cost contains NaN")
    if (c < 0).any():
        raise ShapeError(f"cost must be non-negative, got {float(c.min()):g} (a negative cost rewards long paths)")
    n, m = c.shape
    if window is not None:
        if window < 0:
            raise ShapeError(f"window must be >= 0, got {window}")
        radius = max(int(window), abs(n - m))
        ii, jj = np.ogrid[:n, :m]
        c = np.where(np.abs(ii - jj) <= radius, c, np.inf)

    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    # Diagonal k (0-based cell indices i + j = k); in the padded table cell (i, j) is acc[i + 1, j + 1].
    for k in range(n + m - 1):
        i = np.arange(max(0, k - m + 1), min(n - 1, k) + 1)
        j = k - i
        best = np.minimum(np.minimum(acc[i, j], acc[i, j + 1]), acc[i + 1, j])
        acc[i + 1, j + 1] = c[i, j] + best
    total = float(acc[n, m])
    if not np.isfinite(total):
        raise ShapeError("no admissible warping path (infinite costs block every path)")

    path = [(n - 1, m - 1)]
    i, j = n, m
    while (i, j) != (1, 1):
        # predecessors in preference order: diagonal, then vertical, then horizontal
        options = ((acc[i - 1, j - 1], i - 1, j - 1), (acc[i - 1, j], i - 1, j), (acc[i, j - 1], i, j - 1))
        _, i, j = min(options, key=lambda o: o[0])
        path.append((i - 1, j - 1))
    return np.asarray(path[::-1], dtype=np.int64), total


def dtw(
    a: ArrayLike,
    b: ArrayLike,
    metric: Metric = "euclidean",
    *,
    window: int | None = None,
) -> tuple[np.ndarray, float]:
    """Dynamic time warping between two feature sequences.

    Parameters
    ----------
    a:
        ``(N, D)`` features (``(N,)`` or ``(N, ...)`` are flattened to ``(N, D)``); numpy or torch.
    b:
        ``(M, D)`` features with the same ``D``.
    metric:
        Local distance: any metric name :func:`scipy.spatial.distance.cdist` knows (``"euclidean"``,
        ``"sqeuclidean"``, ``"cityblock"``, ``"cosine"``, ...) or a callable ``f(u, v) -> float``.
    window:
        Sakoe–Chiba band radius in frames; ``None`` for none.

    Returns
    -------
    path:
        ``(K, 2)`` int64 index pairs, ``max(N, M) <= K <= N + M - 1``.
    cost:
        Accumulated cost of the optimal path (sum of local distances).
    """
    fa, fb = _features(a, "a"), _features(b, "b")
    if fa.shape[1] != fb.shape[1]:
        raise ShapeError(f"a and b must have the same feature size, got {fa.shape[1]} and {fb.shape[1]}")
    return dtw_from_cost(cdist(fa, fb, metric=metric), window=window)


def _root_relative_features(motion: Motion, joints: Sequence[int | str] | None, normalize_height: bool) -> np.ndarray:
    if motion.num_frames < 1:
        raise ShapeError("cannot align a motion without frames")
    sk = motion.skeleton
    pos = motion.positions()
    pos = pos - pos[:, sk.pelvis : sk.pelvis + 1]  # not joint 0: it may be a static dummy (Bandai-Namco's joint_Root)
    above = set(sk.path_to_root(sk.pelvis)[1:])  # such a dummy is no body joint: left out
    pos = pos[:, sk.indices(joints) if joints is not None else [j for j in range(sk.num_joints) if j not in above]]
    if normalize_height:
        h = motion.height
        if h > 0:
            pos = pos / h
    return pos.reshape(pos.shape[0], -1).detach().numpy()


def align_motions(
    m1: Motion,
    m2: Motion,
    *,
    metric: Metric = "euclidean",
    window: int | None = None,
    joints: Sequence[int | str] | None = None,
    normalize_height: bool = True,
) -> tuple[np.ndarray, float]:
    """Align two motions in time by DTW on pelvis-relative joint positions.

    Features per frame are the world joint positions minus the pelvis's (:attr:`Skeleton.pelvis`), ``(J*3,)``,
    divided by each motion's height (:attr:`Motion.height`) when ``normalize_height`` (so actors of different
    sizes compare). Joints above the pelvis (a dummy root such as Bandai-Namco's static ``joint_Root``) are left
    out unless ``joints`` names them. Both skeletons must have the same number of (selected) joints, in
    corresponding order.

    Parameters
    ----------
    m1, m2:
        Motions of ``N`` and ``M`` frames.
    metric, window:
        As in :func:`dtw`.
    joints:
        Names or indices of the joints to compare (looked up in each skeleton); when ``None``, all but those above
        the pelvis.
    normalize_height:
        Divide each motion's features by its :attr:`Motion.height`.

    Returns
    -------
    path:
        ``(K, 2)`` frame pairs; ``m1[path[:, 0]]`` and ``m2[path[:, 1]]`` are the aligned motions.
    cost:
        Accumulated DTW cost.
    """
    f1 = _root_relative_features(m1, joints, normalize_height)
    f2 = _root_relative_features(m2, joints, normalize_height)
    if f1.shape[1] != f2.shape[1]:
        raise ShapeError(
            f"motions have different joint counts ({f1.shape[1] // 3} and {f2.shape[1] // 3}); "
            "pass joints= to pick corresponding ones"
        )
    return dtw(f1, f2, metric, window=window)
