"""DTW with a window stores and computes only its Sakoe–Chiba band: the same path and the same cost, bit for bit,
as the whole-matrix computation (written out here as the masked full table the band replaced), on random inputs
of many sizes and windows and on real clips; a table too large to hold is refused by its size, up front."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from skelanim.errors import ShapeError
from skelanim.ops import align_motions, dtw, dtw_from_cost


def full_table_dtw(cost: np.ndarray, window: int | None) -> tuple[np.ndarray | None, float]:
    """The whole ``(N + 1, M + 1)`` accumulated table, cells outside the band masked to ``inf``, filled cell by
    cell; backtracked preferring the diagonal, then the vertical, then the horizontal step (no path: ``None``)."""
    n, m = cost.shape
    c = cost.astype(np.float64).copy()
    if window is not None:
        radius = max(window, abs(n - m))
        ii, jj = np.ogrid[:n, :m]
        c[np.abs(ii - jj) > radius] = np.inf
    inf = float("inf")
    acc = [[0.0] + [inf] * m] + [[inf] * (m + 1) for _ in range(n)]  # Python floats: IEEE doubles, as numpy's
    rows = c.tolist()
    for i in range(n):
        above, here, row = acc[i], acc[i + 1], rows[i]
        for j in range(m):
            here[j + 1] = row[j] + min(above[j], above[j + 1], here[j])
    if not np.isfinite(acc[n][m]):
        return None, acc[n][m]
    path = [(n - 1, m - 1)]
    i, j = n, m
    while (i, j) != (1, 1):
        options = ((acc[i - 1][j - 1], i - 1, j - 1), (acc[i - 1][j], i - 1, j), (acc[i][j - 1], i, j - 1))
        _, i, j = min(options, key=lambda o: o[0])
        path.append((i - 1, j - 1))
    return np.asarray(path[::-1], dtype=np.int64), acc[n][m]


def assert_same(got: tuple[np.ndarray, float], want: tuple[np.ndarray | None, float]) -> None:
    assert want[0] is not None and np.array_equal(got[0], want[0]), "paths differ"
    assert got[1] == want[1], f"costs differ: {got[1]!r} != {want[1]!r}"  # bit for bit


SIZES = [(1, 1), (1, 7), (7, 1), (2, 3), (12, 12), (13, 29), (40, 17), (64, 64), (65, 90)]


@pytest.mark.parametrize("n,m", SIZES)
@pytest.mark.parametrize("window", [None, 0, 1, 3, 10, 100])
def test_banded_dtw_equals_the_full_table_on_random_features(n, m, window):
    rng = np.random.default_rng(1000 * n + m)
    a, b = rng.normal(size=(n, 4)), rng.normal(size=(m, 4))
    b[: min(n, m) // 3] = a[: min(n, m) // 3]  # zero costs: ties between paths
    assert_same(dtw(a, b, window=window), full_table_dtw(cdist(a, b), window))


@pytest.mark.parametrize("n,m", SIZES)
@pytest.mark.parametrize("window", [None, 0, 2, 5])
def test_banded_dtw_from_cost_equals_the_full_table_with_ties_and_blocked_cells(n, m, window):
    rng = np.random.default_rng(7 * n + m)
    cost = rng.integers(0, 3, size=(n, m)).astype(np.float64)  # small integers: many equal sums
    cost[rng.random((n, m)) < 0.08] = np.inf  # blocked cells (the corners stay open)
    cost[0, 0] = cost[-1, -1] = 1.0
    want = full_table_dtw(cost, window)
    if want[0] is None:
        with pytest.raises(ShapeError, match="no admissible warping path"):
            dtw_from_cost(cost, window=window)
    else:
        assert_same(dtw_from_cost(cost, window=window), want)


@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock", "cosine", "seuclidean", "mahalanobis", "chebyshev"])
def test_banded_dtw_gives_each_metrics_whole_matrix_costs(metric):
    """Costs are computed in blocks of rows; seuclidean's variances and mahalanobis's covariance still come from
    every frame of both inputs, as cdist takes them from the whole matrices."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(70, 3)), 2.0 * rng.normal(size=(55, 3)) + 1.0
    for window in (None, 4, 20):
        assert_same(dtw(a, b, metric, window=window), full_table_dtw(cdist(a, b, metric), window))
    def chebyshev(u: np.ndarray, v: np.ndarray) -> float:  # a callable metric
        return float(np.max(np.abs(u - v)))

    assert_same(dtw(a, b, chebyshev, window=6), full_table_dtw(cdist(a, b, chebyshev), 6))


def test_cost_blocks_smaller_than_the_band_give_the_same_bits(monkeypatch):
    from skelanim.ops import align

    rng = np.random.default_rng(9)
    a, b = rng.normal(size=(300, 5)), rng.normal(size=(260, 5))
    want = full_table_dtw(cdist(a, b), 45)
    for pairs in (1, 97, 5000):
        monkeypatch.setattr(align, "COST_BLOCK_PAIRS", pairs, raising=False)
        assert_same(dtw(a, b, window=45), want)
        assert_same(dtw_from_cost(cdist(a, b), window=45), want)


def test_banded_alignment_of_two_real_clips_equals_the_full_table(mocap_files):
    import skelanim
    from skelanim.ops.align import _root_relative_features

    first, second = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh",
                                 "bandai_namco_1/dataset-1_walk_happy_001.bvh"])  # fmt: skip
    m1, m2 = skelanim.load(first)[:180], skelanim.load(second)[:150]
    features = [_root_relative_features(m, None, True, True) for m in (m1, m2)]  # align_motions: heading frames
    cost = cdist(*features)
    for window in (None, 10, 40):
        want = full_table_dtw(cost, window)
        assert_same(align_motions(m1, m2, window=window), want)
        assert_same(dtw_from_cost(cost, window=window), want)
    (cmu,) = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])
    walk = skelanim.load(cmu)
    m1, m2 = walk[:200], walk[40:260:2]  # the same walk, later and twice as fast
    cost = cdist(*(_root_relative_features(m, None, True, True) for m in (m1, m2)))
    for window in (None, 5, 90):
        assert_same(align_motions(m1, m2, window=window), full_table_dtw(cost, window))


def test_a_banded_alignment_of_long_clips_holds_only_its_band():
    """6,000 frames against 6,000 with window=30: the band's ~370,000 cells (3 MB), where the whole table had
    taken 36 million (288 MB, three times over: the costs, their masked copy and the accumulated table)."""
    t = np.linspace(0, 40 * np.pi, 6000)
    a = np.stack([np.sin(t), np.cos(t), np.sin(3 * t)], 1)
    warped = t + 0.4 * np.sin(t / 9)
    b = np.stack([np.sin(warped), np.cos(warped), np.sin(3 * warped)], 1)
    tracemalloc.start()
    try:
        path, total = dtw(a, b, window=30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24e6, f"{peak / 1e6:.0f} MB traced"
    assert path[0].tolist() == [0, 0] and path[-1].tolist() == [5999, 5999]
    assert np.all(np.abs(path[:, 0] - path[:, 1]) <= 30)
    assert total == pytest.approx(float(np.linalg.norm(a[path[:, 0]] - b[path[:, 1]], axis=1).sum()), rel=1e-12)


def test_a_table_too_large_to_hold_is_refused_by_its_size():
    """64,000 frames against 64,000 without a window need a 33 GB table: refused, naming the sizes and window=,
    before anything is allocated (it had been numpy's MemoryError traceback); with window=30 the same clips align."""
    a = np.zeros((64_000, 1))
    with pytest.raises(ShapeError, match=r"64,000 x 64,000 frames without a window needs a 32\.\d GB table.*window="):
        dtw(a, a)
    with pytest.raises(ShapeError, match="window="):
        dtw_from_cost(np.broadcast_to(np.float64(1.0), (64_000, 64_000)))
    path, total = dtw(a, a, window=30)
    assert total == 0.0 and len(path) == 64_000


def test_the_size_limit_counts_the_band_widened_to_the_length_difference(monkeypatch):
    from skelanim.ops import align

    cost = np.ones((50, 10))
    monkeypatch.setattr(align, "MAX_TABLE_BYTES", 8 * 300)
    with pytest.raises(ShapeError, match=r"50 x 10 frames with window=2 \(widened to \|N - M\| = 40\)"):
        dtw_from_cost(cost, window=2)
    monkeypatch.setattr(align, "MAX_TABLE_BYTES", 8 * (500 + 2 * 60))  # the cells and a guard each side per diagonal
    assert dtw_from_cost(cost, window=2)[1] == 50.0
