"""``compare_sets`` set means weighted by duration (not native frame count), raw numbers in file units beside the
height-normalised ones, and the metrics' shape errors (an audit's reproductions, 2026-12)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.errors import ShapeError
from skelanim.metrics import bone_length_error, diversity, fid, foot_skating, ground_penetration, jerk, multimodality
from skelanim.metrics.compare import compare_sets, set_summary
from skelanim.metrics.distribution import frechet_distance, gaussian_stats, nearest_distances
from skelanim.ops import resample

MEANS = ("jerk", "foot_skating", "ground_penetration", "bone_length_error")


def _legs(size: float = 1.0) -> Skeleton:
    names = ["Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]]) * size
    return Skeleton(names, [-1, 0, 0, 0], offsets)


def _moving(x_of_t, frames: int = 31, fps: float = 30.0, size: float = 1.0) -> Motion:
    """The 1.7-tall legs (times ``size``) standing on the floor, the whole body at ``x_of_t(t)`` along X."""
    m = Motion.rest(_legs(size), frames, fps=fps)
    root = m.root_positions.clone()
    root[:, 0] += x_of_t(torch.arange(frames, dtype=torch.float64) / fps)
    return m.copy(root_positions=root)


# --- 3: set means weighted by duration -------------------------------------------------------------------------


def test_a_clip_at_120_fps_weighs_in_a_set_mean_as_the_same_clip_at_30(mocap_files):
    """Set A holds a walk and a bow at 30 fps, set B the same with the walk resampled to 120 fps. Each measure of a
    motion is its own (jerk and skating taken at the common 30 fps), so each set mean is the hand mean of the two
    motions' own values weighted by their durations, as frame counts at 30 fps (91 : 46 for the walk at either
    rate). Weighted by native frames the 120 fps walk had counted 4 times (361 : 46; set B's jerk 105 against A's
    82 on the whole clips)."""
    walk, bow = (skelanim.load(p) for p in mocap_files(["bandai_namco_1/dataset-1_walk_happy_001.bvh",
                                                         "bandai_namco_1/dataset-1_bow_active_001.bvh"]))  # fmt: skip
    walk, bow = walk[:91], bow[:46]  # 3 s and 1.5 s: 91 and 46 frames at 30 fps
    walk120 = resample(walk, 120.0)
    assert walk120.num_frames == 361 and walk120.duration == pytest.approx(walk.duration)
    res = compare_sets([walk, bow], [walk120, bow])
    h, floor = res["height"], res["floor"]
    assert h is not None and floor is not None
    alone = {name: set_summary([m], up_axis=1, height=h, floor=floor, jerk_fps=30.0)
             for name, m in (("walk", walk), ("walk120", walk120), ("bow", bow))}  # fmt: skip
    for key in MEANS:
        for side, first in (("a", "walk"), ("b", "walk120")):
            want = (91 * alone[first][key] + 46 * alone["bow"][key]) / 137  # frames at 30 fps
            assert res[side][key] == pytest.approx(want, rel=1e-9, abs=1e-15), (side, key)
    # jerk and skating of the walk at 120 fps are taken at 30: its own values agree, and so do the set means
    for key in ("jerk", "foot_skating"):
        assert alone["walk120"][key] == pytest.approx(alone["walk"][key], rel=1e-6)
        assert res["b"][key] == pytest.approx(res["a"][key], rel=1e-6), key
    assert res["b"]["frames"] == 361 + 46  # the frame count stays the files' own


def test_a_single_frame_motion_still_counts_as_one_frame():
    """A motion of one frame weighs one frame at the common rate (its duration is 0 s)."""
    still = Motion.rest(_legs(), 1, fps=30.0)
    sunk = still.copy(root_positions=still.root_positions - torch.tensor([0.0, 0.1, 0.0], dtype=torch.float64))
    out = set_summary([still, sunk], up_axis=1, height=1.7, floor=0.0)
    assert out["ground_penetration"] == pytest.approx(0.1 / 1.7 / 2, rel=1e-9)


# --- 4: raw values in the files' units -------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "unit"), [(1.0, "m"), (100.0, "cm")])
def test_raw_values_are_the_files_lengths(size, unit):
    """A body gliding as ``x = 0.5 s t^3`` (``s`` the size: metres, or centimetres for the copy 100 times as
    large) has a jerk of exactly ``3 s`` units/s^3 at every joint (third differences are exact for cubics); one
    gliding at ``0.6 s`` units/s with its feet on the floor skates ``0.6 s`` units/s; one sunk ``0.15 s`` below
    the reference floor penetrates ``0.15 s`` units. Normalised, each is that over the 1.7 s height."""
    cubic = _moving(lambda t: 0.5 * size * t**3, size=size)
    glide = _moving(lambda t: 0.6 * size * t, size=size)
    sunk = glide.copy(root_positions=glide.root_positions - torch.tensor([0.0, 0.15 * size, 0.0], dtype=torch.float64))
    height = 1.7 * size
    res = compare_sets([cubic], [cubic])
    assert res["a"]["units"] == unit and res["units"] == unit and res["a"]["height"] == pytest.approx(height)
    assert res["a"]["jerk_raw"] == pytest.approx(3 * size, rel=1e-6)
    assert res["a"]["jerk"] == pytest.approx(3 * size / height, rel=1e-6)
    res = compare_sets([glide], [sunk])
    assert res["b"]["foot_skating_raw"] == pytest.approx(0.6 * size, rel=1e-6)
    assert res["a"]["ground_penetration_raw"] == pytest.approx(0.0, abs=1e-12)
    assert res["b"]["ground_penetration_raw"] == pytest.approx(0.15 * size, rel=1e-6)
    assert res["b"]["ground_penetration"] == pytest.approx(0.15 / 1.7, rel=1e-6)
    assert res["paired_raw"]["mpjpe"] == pytest.approx(0.15 * size, rel=1e-6)  # every joint 0.15 s lower
    assert res["paired"]["mpjpe"] == pytest.approx(0.15 / 1.7, rel=1e-6)


def test_a_set_mixing_units_has_no_raw_values_and_says_so():
    """Metres and centimetres in one set: no mean of their raw values means anything, so they are ``None``, with a
    note, while the other set keeps its own."""
    glide = _moving(lambda t: 0.6 * t)
    res = compare_sets([glide, _moving(lambda t: 60.0 * t, size=100.0)], [glide])
    assert res["a"]["units"] is None and res["b"]["units"] == "m"
    assert all(res["a"][f"{k}_raw"] is None for k in ("jerk", "foot_skating", "ground_penetration"))
    assert res["b"]["foot_skating_raw"] == pytest.approx(0.6, rel=1e-6)
    assert any("set a mixes length units (cm, m): no raw values" in n for n in res["notes"])
    assert res["paired_raw"] is None


# --- 5: shape errors that name the argument ---------------------------------------------------------------------


_RNG = np.random.default_rng(0)
_MU, _SIGMA = gaussian_stats(_RNG.normal(size=(10, 8)))
_PATH = _RNG.normal(size=(10, 3))  # one point's path, without the joint axis
SHAPE_ERRORS = {
    "fid of 8 against 9 features": (lambda: fid(_RNG.normal(size=(10, 8)), _RNG.normal(size=(10, 9))),
                                    r"features_b must be \(N, 8\).*\(10, 9\)"),  # had been a bare RuntimeError
    "fid of a 1-D set": (lambda: fid(_RNG.normal(size=10), _RNG.normal(size=(10, 9))), r"features_a must be \(N, D\)"),
    "frechet_distance of 8 against 9": (lambda: frechet_distance(_MU, _SIGMA, *gaussian_stats(_RNG.normal(size=(10, 9)))),
                                        r"mu_b must be \(8,\).*got \(9,\)"),
    "frechet_distance of a smaller covariance": (lambda: frechet_distance(_MU, _SIGMA, _MU, _SIGMA[:7, :7]),
                                                 r"sigma_b must be \(8, 8\)"),
    "multimodality of 10 rows, 3 labels": (lambda: multimodality(_RNG.normal(size=(10, 4)), [0, 1, 0]),
                                           r"labels must be \(10,\), one per row of features \(10, 4\), got \(3,\)"),
    "diversity of a 1-D array": (lambda: diversity(_RNG.normal(size=10)), r"features must be \(N, D\).*\(10,\)"),
    "nearest_distances of 3 against 4": (lambda: nearest_distances(_RNG.normal(size=(5, 3)), _RNG.normal(size=(5, 4))),
                                         r"reference must be \(N, 3\)"),
    "jerk of (F, 3)": (lambda: jerk(_PATH, 30), r"positions must be \(\.\.\., F, J, 3\).*\(10, 3\)"),
    "foot_skating of (F, 3)": (lambda: foot_skating(_PATH, [0], 30, threshold=0.1),
                               r"positions must be \(\.\.\., F, J, 3\).*\(10, 3\)"),
    "ground_penetration of (F, 3)": (lambda: ground_penetration(_PATH), r"positions must be \(\.\.\., F, J, 3\)"),
    "bone_length_error of (F, 3)": (lambda: bone_length_error(_PATH, [-1, 0, 1]),
                                    r"positions must be \(\.\.\., F, J, 3\)"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(SHAPE_ERRORS))
def test_metrics_refuse_arrays_of_the_wrong_shape_naming_the_argument(case):
    """An audit's reproductions: a bare RuntimeError (fid of 8 against 9 features), an IndexError (multimodality with
    3 labels for 10 rows, jerk or foot skating of an ``(F, 3)`` path), or a wrong number without a word (diversity
    of 10 scalars read as one 10-vector: 29.3 where ``|xi - xj|`` is about 1.1)."""
    call, pattern = SHAPE_ERRORS[case]
    with pytest.raises(ShapeError, match=pattern):
        call()


def test_the_shapes_the_metrics_take_still_work():
    """The same scalars as ``(N, 1)`` rows give the mean distance of distinct pairs; a path as ``(F, 1, 3)`` its jerk
    (a cubic ``x = t^3`` has jerk 6)."""
    x = _RNG.normal(size=(10, 1))
    pairs = np.abs(x - x.T)[~np.eye(10, dtype=bool)].mean()
    assert diversity(x, pairs=20000) == pytest.approx(pairs, rel=0.03)
    t = np.arange(10) / 30.0
    path = np.stack([t**3, 0 * t, 0 * t], axis=-1)[:, None]  # (F, 1, 3)
    assert jerk(path, 30) == pytest.approx(6.0, rel=1e-6)
    assert multimodality(_RNG.normal(size=(10, 4)), torch.tensor([0, 1] * 5)) > 0
