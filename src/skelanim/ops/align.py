"""Dynamic time warping (DTW) of feature sequences and of motions.

:func:`dtw` aligns two sequences ``a`` ``(N, D)`` and ``b`` ``(M, D)``. With local cost
``c[i, j] = metric(a[i], b[j])`` the accumulated cost obeys the classic recurrence (steps
``(1, 1)``, ``(1, 0)`` and ``(0, 1)``, Sakoe & Chiba 1978, symmetric form without slope weights)::

    D[i, j] = c[i, j] + min(D[i-1, j-1], D[i-1, j], D[i, j-1]),    D[0, 0] = c[0, 0]

The warping path runs from ``(0, 0)`` to ``(N-1, M-1)``, both indices non-decreasing and each step
moving by at most one in each; its cost is the *sum* of local costs along it (not normalised).
The table is filled one anti-diagonal at a time (``N + M - 1`` vectorised steps), so long clips are
practical.

The optional window is a Sakoe–Chiba band: cell ``(i, j)`` is allowed when
``|i - j| <= R = max(window, |N - M|)`` (widened to ``|N - M|`` so the end cell stays reachable).

Memory: the table holds only the cells that can be on a path, 8 bytes each, stored anti-diagonal by
anti-diagonal: ``N * M`` cells without a window, about ``N * (2 R + 1)`` with one (64,000 frames against
64,000 with ``window=30``: 31 MB). With a window, local costs are computed for the band's cells only
(:func:`dtw`), so time is ``O(N R)`` too. A table larger than :data:`MAX_TABLE_BYTES` is refused with a
:class:`~skelanim.errors.ShapeError` that names the sizes (pass ``window=``) before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import torch
from scipy.spatial.distance import cdist

from skelanim.core._tensor import ArrayLike, to_numpy
from skelanim.core.motion import Motion
from skelanim.errors import ShapeError

Metric = str | Callable[[np.ndarray, np.ndarray], float]

__all__ = ["align_motions", "dtw", "dtw_from_cost"]

#: The most bytes a DTW table may take (8 per cell: ``N * M`` cells without a window, ``~N * (2 R + 1)``
#: with one); a larger request raises a :class:`~skelanim.errors.ShapeError` before allocating. 4 GiB: two
#: unbanded clips of 16,000 frames fit (2 GB), two of 64,000 (33 GB) do not.
MAX_TABLE_BYTES = 4 * 2**30
#: Local costs are computed in blocks of rows of about this many pairs (a block covers the band's columns).
COST_BLOCK_PAIRS = 2**20
# cdist metrics whose default parameters are statistics of all the rows of both inputs (computed once here,
# as cdist would on the whole matrices, so that blocks of rows give the same costs)
_SEUCLIDEAN = ("seuclidean", "se", "s")
_MAHALANOBIS = ("mahalanobis", "mahal", "mah")


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


class _Band(NamedTuple):
    """The cells of an ``N x M`` DTW table inside a Sakoe–Chiba band, stored anti-diagonal by anti-diagonal.

    Anti-diagonal ``k = i + j`` holds the cells ``lo[k+1] <= i <= hi[k+1]`` (none where ``hi < lo``), at
    positions ``first[k+1] + i - lo[k+1]`` of a flat table, with one guard position (``inf``) before and after
    each anti-diagonal's cells. Index 0 of the lists is a virtual anti-diagonal ``-1`` without cells. The bounds
    move by at most one from one anti-diagonal to the next, so a cell's predecessors ``(i-1, j-1)``, ``(i-1, j)``
    and ``(i, j-1)`` outside the band land on a guard: the recurrence needs no masks.
    """

    n: int
    m: int
    radius: int  # half-width R of the band (n + m: none)
    lo: list[int]  # (N + M,) first i of each anti-diagonal, from k = -1
    hi: list[int]  # (N + M,) last i
    first: list[int]  # (N + M,) position of each anti-diagonal's first cell
    size: int  # length of the flat table

    def position(self, i: int, j: int) -> int:
        """Flat position of cell ``(i, j)`` (inside the band)."""
        return self.first[i + j + 1] + i - self.lo[i + j + 1]


def _band(n: int, m: int, window: int | None) -> _Band:
    """The band of an ``n x m`` table for ``window`` (``None``: every cell), refused beyond :data:`MAX_TABLE_BYTES`."""
    if window is not None and window < 0:
        raise ShapeError(f"window must be >= 0, got {window}")
    radius = n + m if window is None else max(int(window), abs(n - m))
    k = np.arange(-1, n + m - 1, dtype=np.int64)
    lo = np.maximum(np.maximum(0, k - m + 1), (k - radius + 1) // 2)  # (k - R + 1) // 2 == ceil((k - R) / 2)
    hi = np.minimum(np.minimum(n - 1, k), (k + radius) // 2)
    widths = np.maximum(hi - lo + 1, 0) + 2  # the cells and two guards
    size = int(widths.sum())
    if 8 * size > MAX_TABLE_BYTES:
        band = "without a window" if window is None else f"with window={window}"
        if window is not None and abs(n - m) > window:
            band += f" (widened to |N - M| = {abs(n - m)})"
        raise ShapeError(f"DTW of {n:,} x {m:,} frames {band} needs a {8 * size / 1e9:.3g} GB table, more than "
                         f"MAX_TABLE_BYTES = {MAX_TABLE_BYTES / 1e9:.3g} GB; pass window=W (a Sakoe-Chiba band of "
                         f"W frames: about 16 * max(N, M) * W bytes) or align shorter parts")  # fmt: skip
    first = np.cumsum(widths) - widths + 1
    return _Band(n, m, radius, lo.tolist(), hi.tolist(), first.tolist(), size)


def _band_costs(band: _Band, block_costs: Callable[[int, int, int, int], np.ndarray]) -> np.ndarray:
    """The flat table with the local cost of every cell of ``band`` in place and ``inf`` at the guards.

    ``block_costs(i0, i1, j0, j1)`` gives the ``(i1 - i0, j1 - j0)`` costs of rows ``i0:i1`` against columns
    ``j0:j1``; it is asked for blocks of about :data:`COST_BLOCK_PAIRS` pairs that cover the band's cells.
    """
    n, m, radius = band.n, band.m, band.radius
    table = np.full(band.size, np.inf)
    lo, first = np.asarray(band.lo), np.asarray(band.first)
    rows_per_block = n if 2 * radius + 1 >= m else max(64, 2 * radius + 1)
    rows_per_block = max(1, min(rows_per_block, COST_BLOCK_PAIRS // min(m, rows_per_block + 2 * radius)))
    for i0 in range(0, n, rows_per_block):
        rows = np.arange(i0, min(n, i0 + rows_per_block))
        j_lo, j_hi = np.maximum(rows - radius, 0), np.minimum(rows + radius, m - 1)  # (B,) each row's band
        j0 = int(j_lo[0])
        block = block_costs(i0, int(rows[-1]) + 1, j0, int(j_hi[-1]) + 1)
        counts = j_hi - j_lo + 1
        i = np.repeat(rows, counts)
        j = np.arange(int(counts.sum())) + np.repeat(j_lo - (np.cumsum(counts) - counts), counts)
        k = i + j + 1
        table[first[k] + i - lo[k]] = block[i - i0, j - j0]
    return table


def _accumulate(table: np.ndarray, band: _Band) -> None:
    """Turn the local costs of ``table`` into accumulated costs in place, one anti-diagonal at a time.

    Each cell becomes ``c + min(diagonal, vertical, horizontal predecessor)`` (``inf`` outside the band): the same
    additions, so the same bits, as over the whole table.
    """
    lo, hi, first = band.lo, band.hi, band.first
    table[first[1]] += 0.0  # (0, 0): its only predecessor is the start, of cost 0
    for k in range(1, band.n + band.m - 1):
        i0, width = lo[k + 1], hi[k + 1] - lo[k + 1] + 1
        if width <= 0:
            continue
        diagonal = first[k - 1] + i0 - 1 - lo[k - 1]  # position of (i0 - 1, k - i0 - 1) on anti-diagonal k - 2
        vertical = first[k] + i0 - 1 - lo[k]  # (i0 - 1, k - i0) on k - 1; (i0, k - i0 - 1) follows it
        best = np.minimum(table[diagonal : diagonal + width], table[vertical : vertical + width])
        np.minimum(best, table[vertical + 1 : vertical + 1 + width], out=best)
        cells = table[first[k + 1] : first[k + 1] + width]
        np.add(cells, best, out=cells)


def _warp(table: np.ndarray, band: _Band) -> tuple[np.ndarray, float]:
    """The optimal path ``(K, 2)`` and its cost from an accumulated ``table``."""
    n, m = band.n, band.m
    total = float(table[band.position(n - 1, m - 1)])
    if not np.isfinite(total):
        raise ShapeError("no admissible warping path (infinite costs block every path)")
    lo, first = band.lo, band.first
    path = [(n - 1, m - 1)]
    i, j = n - 1, m - 1
    while (i, j) != (0, 0):
        k = i + j
        diagonal = first[k - 1] + i - 1 - lo[k - 1]
        vertical = first[k] + i - 1 - lo[k]
        # predecessors in preference order: diagonal, then vertical, then horizontal
        options = ((table[diagonal], i - 1, j - 1), (table[vertical], i - 1, j), (table[vertical + 1], i, j - 1))
        _, i, j = min(options, key=lambda o: o[0])
        path.append((i, j))
    return np.asarray(path[::-1], dtype=np.int64), total


def _checked(table: np.ndarray) -> np.ndarray:
    if np.isnan(table).any():
        raise ShapeError("cost contains NaN")
    if (table < 0).any():
        raise ShapeError(f"cost must be non-negative, got {float(table.min()):g} (a negative cost rewards long paths)")
    return table


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

    Raises
    ------
    ShapeError
        A cost that is not an ``(N, M)`` matrix, has NaN or negative values; a negative window; a table beyond
        :data:`MAX_TABLE_BYTES`.
    """
    c = np.asarray(to_numpy(cost), dtype=np.float64)
    if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
        raise ShapeError(f"cost must be an (N, M) matrix with N, M >= 1, got {c.shape}")
    band = _band(c.shape[0], c.shape[1], window)  # a table too large is refused before the costs are read
    _checked(c)
    table = _band_costs(band, lambda i0, i1, j0, j1: c[i0:i1, j0:j1])
    _accumulate(table, band)
    return _warp(table, band)


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
        ``"sqeuclidean"``, ``"cityblock"``, ``"cosine"``, ...) or a callable ``f(u, v) -> float``. ``"seuclidean"``
        and ``"mahalanobis"`` take their variances from all the frames of ``a`` and ``b``, as cdist does.
    window:
        Sakoe–Chiba band radius in frames; ``None`` for none. Only the band's local costs are computed.

    Returns
    -------
    path:
        ``(K, 2)`` int64 index pairs, ``max(N, M) <= K <= N + M - 1``.
    cost:
        Accumulated cost of the optimal path (sum of local distances).

    Raises
    ------
    ShapeError
        Features of other shapes or with non-finite values, a local cost that is NaN or negative, a negative
        window, a table beyond :data:`MAX_TABLE_BYTES` (the message names the sizes; pass ``window=``).
    """
    fa, fb = _features(a, "a"), _features(b, "b")
    if fa.shape[1] != fb.shape[1]:
        raise ShapeError(f"a and b must have the same feature size, got {fa.shape[1]} and {fb.shape[1]}")
    band = _band(fa.shape[0], fb.shape[0], window)
    kwargs = _metric_parameters(metric, fa, fb)
    table = _band_costs(band, lambda i0, i1, j0, j1: cdist(fa[i0:i1], fb[j0:j1], metric=metric, **kwargs))
    _accumulate(_checked(table), band)
    return _warp(table, band)


def _metric_parameters(metric: Metric, fa: np.ndarray, fb: np.ndarray) -> dict[str, np.ndarray]:
    """The parameters cdist would derive from all the rows of ``fa`` ``(N, D)`` and ``fb`` ``(M, D)`` for
    ``metric`` (the variances of ``seuclidean``, the inverse covariance of ``mahalanobis``), so that blocks of rows
    give the costs of the whole matrices; none for other metrics."""
    name = metric.lower() if isinstance(metric, str) else getattr(metric, "__name__", "")
    if name in _SEUCLIDEAN:
        return {"V": np.var(np.vstack([fa, fb]), axis=0, ddof=1)}
    if name in _MAHALANOBIS:
        both = np.vstack([fa, fb])
        if both.shape[0] <= both.shape[1]:
            raise ShapeError(f"the number of observations ({both.shape[0]}) is too small for the mahalanobis "
                             f"metric: with {both.shape[1]} dimensions, at least {both.shape[1] + 1} are needed")  # fmt: skip
        return {"VI": np.linalg.inv(np.atleast_2d(np.cov(both.T))).T.copy()}
    return {}


def _root_relative_features(motion: Motion, joints: Sequence[int | str] | None, normalize_height: bool,
                            heading: bool = False) -> np.ndarray:  # fmt: skip
    if motion.num_frames < 1:
        raise ShapeError("cannot align a motion without frames")
    sk = motion.skeleton
    pos = motion.positions()
    pos = pos - pos[:, sk.pelvis : sk.pelvis + 1]  # not joint 0: it may be a static dummy (Bandai-Namco's joint_Root)
    above = set(sk.path_to_root(sk.pelvis)[1:])  # such a dummy is no body joint: left out
    pos = pos[:, sk.indices(joints) if joints is not None else [j for j in range(sk.num_joints) if j not in above]]
    if heading:  # each frame in its own heading frame: side, up, forward coordinates
        from skelanim.ops._common import signed_up
        from skelanim.ops.normalize import facing_directions

        axis, sign = signed_up(motion, None)
        up = torch.zeros(3, dtype=pos.dtype)
        up[axis] = sign
        try:
            forward = facing_directions(motion).to(pos.dtype)  # (F, 3), level
        except ShapeError as err:
            raise ShapeError(f"{err.message}; heading=False aligns the world positions instead",
                             path=err.path, where=err.where) from None  # fmt: skip
        side = torch.linalg.cross(up.expand_as(forward), forward, dim=-1)
        basis = torch.stack([side, up.expand_as(forward), forward], dim=-1)  # (F, 3, 3): columns side, up, forward
        pos = pos @ basis  # (F, J, 3) @ (F, 3, 3): each frame's coordinates along its own axes
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
    heading: bool = True,
) -> tuple[np.ndarray, float]:
    """Align two motions in time by DTW on pelvis-relative joint positions.

    Features per frame are the world joint positions minus the pelvis's (:attr:`Skeleton.pelvis`), ``(J*3,)``,
    with ``heading`` in each frame's own heading frame (coordinates along the body's side, up and forward,
    :func:`~skelanim.ops.normalize.facing_directions`; world axes for both where either skeleton has no left/right
    pairs to face by), so two takes of one motion facing different ways align (world axes had put a walk turned 90
    degrees 19.5 frames off on average), divided by each motion's height (:attr:`Motion.height`) when
    ``normalize_height`` (so actors of different sizes compare). Joints above the pelvis (a dummy root such as Bandai-Namco's static
    ``joint_Root``) are left out unless ``joints`` names them. Both skeletons must have the same number of
    (selected) joints, in corresponding order.

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
    heading:
        Features in each frame's heading frame (default); ``False``: world axes, for motions whose facing is
        undefined (lying on the side) or where the direction of travel should count.

    Returns
    -------
    path:
        ``(K, 2)`` frame pairs; ``m1[path[:, 0]]`` and ``m2[path[:, 1]]`` are the aligned motions.
    cost:
        Accumulated DTW cost.
    """
    heading = heading and bool(m1.skeleton.left_right_pairs()) and bool(m2.skeleton.left_right_pairs())
    f1 = _root_relative_features(m1, joints, normalize_height, heading)
    f2 = _root_relative_features(m2, joints, normalize_height, heading)
    if f1.shape[1] != f2.shape[1]:
        raise ShapeError(
            f"motions have different joint counts ({f1.shape[1] // 3} and {f2.shape[1] // 3}); "
            "pass joints= to pick corresponding ones"
        )
    return dtw(f1, f2, metric, window=window)
