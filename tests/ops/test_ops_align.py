"""DTW against brute force over all warping paths and hand-worked examples."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from skelanim.errors import ShapeError
from skelanim.ops import align_motions, dtw, dtw_from_cost


def all_paths(n: int, m: int):
    """Every monotone warping path from (0, 0) to (n-1, m-1) with unit steps (brute-force enumeration)."""

    @cache
    def from_cell(i: int, j: int) -> tuple[tuple[tuple[int, int], ...], ...]:
        if (i, j) == (n - 1, m - 1):
            return (((i, j),),)
        out = []
        for di, dj in ((1, 1), (1, 0), (0, 1)):
            a, b = i + di, j + dj
            if a < n and b < m:
                out.extend(((i, j),) + rest for rest in from_cell(a, b))
        return tuple(out)

    return from_cell(0, 0)


def brute_force(cost: np.ndarray, radius: int | None = None) -> float:
    n, m = cost.shape
    best = np.inf
    for path in all_paths(n, m):
        if radius is not None and any(abs(i - j) > max(radius, abs(n - m)) for i, j in path):
            continue
        best = min(best, sum(cost[i, j] for i, j in path))
    return best


def path_is_valid(path: np.ndarray, n: int, m: int) -> bool:
    steps = np.diff(path, axis=0)
    return (
        tuple(path[0]) == (0, 0)
        and tuple(path[-1]) == (n - 1, m - 1)
        and bool(np.all((steps >= 0) & (steps <= 1)))
        and bool(np.all(steps.sum(1) >= 1))
    )


@pytest.mark.parametrize("n,m", list(itertools.product([1, 2, 3, 5], [1, 2, 4, 6])))
def test_dtw_matches_brute_force(n, m):
    rng = np.random.default_rng(n * 10 + m)
    for _ in range(3):
        cost = rng.uniform(0, 1, size=(n, m))
        path, total = dtw_from_cost(cost)
        assert path_is_valid(path, n, m)
        assert total == pytest.approx(brute_force(cost), abs=1e-12)
        assert total == pytest.approx(cost[path[:, 0], path[:, 1]].sum(), abs=1e-12)


@pytest.mark.parametrize("radius", [0, 1, 2])
def test_dtw_window_matches_brute_force(radius):
    rng = np.random.default_rng(radius)
    for n, m in [(5, 5), (4, 6), (6, 5)]:
        cost = rng.uniform(0, 1, size=(n, m))
        path, total = dtw_from_cost(cost, window=radius)
        wide = max(radius, abs(n - m))
        assert np.all(np.abs(path[:, 0] - path[:, 1]) <= wide)
        assert total == pytest.approx(brute_force(cost, radius), abs=1e-12)
    # a narrow band can only cost more than no band
    cost = rng.uniform(0, 1, size=(6, 6))
    assert dtw_from_cost(cost, window=0)[1] >= dtw_from_cost(cost)[1] - 1e-12


def test_dtw_hand_example_repeated_samples():
    # b is a with the first and last samples repeated: a perfect warp of cost 0
    a = np.array([0.0, 1.0, 2.0])
    b = np.array([0.0, 0.0, 1.0, 2.0, 2.0])
    path, total = dtw(a, b)
    assert total == 0.0
    assert path.tolist() == [[0, 0], [0, 1], [1, 2], [2, 3], [2, 4]]


def test_dtw_hand_example_with_cost():
    # |a_i - b_j| table for a = [1, 2, 3], b = [2, 2, 2, 3, 4]:
    #        2  2  2  3  4
    #   1 [  1  1  1  2  3 ]
    #   2 [  0  0  0  1  2 ]
    #   3 [  1  1  1  0  1 ]
    # Best: (0,0)=1 -> (1,1)=0 -> (1,2)=0 -> (2,3)=0 -> (2,4)=1, total 2 (by hand).
    path, total = dtw([1.0, 2.0, 3.0], [2.0, 2.0, 2.0, 3.0, 4.0], "cityblock")
    assert total == pytest.approx(2.0)
    assert tuple(path[0]) == (0, 0) and tuple(path[-1]) == (2, 4)


def test_dtw_metrics_and_inputs():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(6, 3)), rng.normal(size=(5, 3))
    diff = a[:, None] - b[None]
    for metric, local in [
        ("euclidean", np.linalg.norm(diff, axis=-1)),
        ("sqeuclidean", (diff**2).sum(-1)),
        ("cityblock", np.abs(diff).sum(-1)),
    ]:
        assert dtw(a, b, metric)[1] == pytest.approx(brute_force(local), abs=1e-10)
    custom = dtw(a, b, lambda u, v: float(np.max(np.abs(u - v))))[1]
    assert custom == pytest.approx(brute_force(np.abs(diff).max(-1)), abs=1e-10)
    # torch input and trailing dims are flattened
    p1, c1 = dtw(torch.from_numpy(a), torch.from_numpy(b))
    p2, c2 = dtw(a.reshape(6, 3, 1), b.reshape(5, 1, 3))
    assert c1 == pytest.approx(c2) and np.array_equal(p1, p2)


def test_dtw_identity_and_errors():
    x = np.random.default_rng(1).normal(size=(20, 4))
    path, total = dtw(x, x)
    assert total == 0.0 and np.array_equal(path, np.stack([np.arange(20)] * 2, 1))
    with pytest.raises(ShapeError):
        dtw(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ShapeError):
        dtw(np.zeros((3, 2)), np.full((3, 2), np.nan))
    with pytest.raises(ShapeError):
        dtw_from_cost(np.zeros((2, 2)), window=-1)


def test_align_motions_recovers_a_time_warp(motion):
    # m2 plays m1 with some frames held (a pure time warp): DTW finds it at cost 0
    idx = np.array([0, 0, 1, 2, 2, 2, 3, 4, 5, 6, 6, 7] + list(range(8, motion.num_frames)))
    m2 = motion[idx]
    path, total = align_motions(motion, m2, normalize_height=False)
    assert total == pytest.approx(0.0, abs=1e-9)
    assert np.array_equal(path[:, 0], idx[path[:, 1]])
    # root translation does not matter (root-relative features)
    shifted = m2.copy(root_positions=m2.root_positions + torch.tensor([5.0, 0.0, -3.0]))
    assert align_motions(motion, shifted, normalize_height=False)[1] == pytest.approx(0.0, abs=1e-9)
    # a different motion costs more
    other = motion[np.arange(motion.num_frames)[::-1].copy()]
    assert align_motions(motion, other)[1] > 1e-3


def test_align_motions_height_normalisation(motion):
    from skelanim.ops import scale

    big = scale(motion, 3.0)  # the same motion by a larger actor
    path, total = align_motions(motion, big)
    assert total == pytest.approx(0.0, abs=1e-9) and np.array_equal(path[:, 0], path[:, 1])
    assert align_motions(motion, big, normalize_height=False)[1] > 1.0


def test_align_motions_joint_subset_and_mismatch(motion, helpers):
    path, total = align_motions(motion, motion, joints=["LeftHand", "RightHand"], window=2)
    assert total == 0.0 and len(path) == motion.num_frames
    from skelanim.ops import collapse

    small = collapse(motion, ["Hips", "Spine", "Chest", "Head"])
    with pytest.raises(ShapeError, match="joint counts"):
        align_motions(motion, small)
    assert align_motions(motion, small, joints=["Hips", "Head"], normalize_height=False)[1] == pytest.approx(
        0.0, abs=1e-9
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.integers(1, 6).flatmap(
            lambda m: st.lists(st.floats(0, 10, allow_nan=False), min_size=n * m, max_size=n * m).map(
                lambda v: np.array(v).reshape(n, m)
            )
        )
    ),
    st.one_of(st.none(), st.integers(0, 3)),
)
def test_dtw_property_brute_force(cost, window):
    path, total = dtw_from_cost(cost, window=window)
    assert path_is_valid(path, *cost.shape)
    assert total == pytest.approx(brute_force(cost, window), abs=1e-9)


def test_align_motions_is_relative_to_the_pelvis_not_a_static_dummy_root(mocap_files):
    """Bandai-Namco's joint 0 is a static ``joint_Root``; its body travels on Hips. The same poses started 1 m
    further along align at cost 0 (with features relative to joint 0 they were world positions: cost 95)."""
    import skelanim

    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk-back_normal_001.bvh"])
    motion = skelanim.load(path)[:80]
    pelvis = motion.skeleton.pelvis
    assert pelvis != 0 and motion.joint_translations is not None
    moved = motion.joint_translations.clone()
    moved[:, pelvis, 0] += 100.0
    path_, total = align_motions(motion, motion.copy(joint_translations=moved))
    assert total == pytest.approx(0.0, abs=1e-9) and np.array_equal(path_[:, 0], path_[:, 1])


@pytest.mark.parametrize("degrees", [0, 30, 90, 180])
def test_a_time_warped_copy_facing_another_way_is_aligned_to_its_warp(degrees: float, mocap_files) -> None:
    """A Bandai walk and a copy time-warped by ``t^1.5`` (the warp known: ``ops.sample_frames`` at those times)
    and turned about the up axis: the path finds every copy frame's source time to half a frame at any turn (in
    world axes it had been 19.5 frames off on average at 90 degrees: a review); ``heading=False`` keeps world axes,
    which the turn defeats."""
    import math

    import skelanim
    from skelanim import ops

    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])
    warp = np.linspace(0.0, 1.0, 150) ** 1.5 * (walk.num_frames - 1)
    copy = ops.rotate_about_up(ops.sample_frames(walk, torch.tensor(warp), walk.fps), math.radians(degrees))

    def errors(path: np.ndarray) -> np.ndarray:  # each copy frame's nearest matched source frame, from its time
        return np.array([np.abs(path[path[:, 1] == j, 0] - warp[j]).min() for j in range(len(warp))])

    assert errors(ops.align_motions(walk, copy)[0]).max() <= 0.5 + 1e-9
    if degrees == 90:
        assert errors(ops.align_motions(walk, copy, heading=False)[0]).mean() > 5.0
