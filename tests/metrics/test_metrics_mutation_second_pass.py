"""Second-pass mutation audit of skelanim.metrics: behaviour no earlier test pinned, each checked against an
independent source (closed forms, numpy/scipy computed here, hand-built motions and hand-worked values)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.data.samples import sample_path
from skelanim.metrics import gait
from skelanim.metrics.compare import compare_sets
from skelanim.metrics.distribution import diversity, fid, multimodality
from skelanim.metrics.gait import GaitError, find_legs, gait_analysis, side_contacts
from skelanim.metrics.kinematic import (
    angle_error_at,
    bone_length_error,
    foot_skating,
    ground_penetration,
    jerk,
    mpjpe_at,
)

#: the ``mocap_files`` fixture (tests/conftest.py): paths in the shared data, a skip (or a CI failure) when absent
MocapFiles = Callable[[list[str]], list[Path]]

# a 3-4-5 triangle and a point 8 above the origin: the distinct pairs are 5, 8 and 5 apart
THREE = torch.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 8.0]], dtype=torch.float64)


# ------------------------------------------------------------------------------------------ distribution
def test_fid_of_a_set_with_itself_is_never_negative() -> None:
    """The docstring: the Fréchet distance is >= 0, tiny negative round-off clamped. Scaled features make the
    round-off of Tr(S) + Tr(S) - 2 Tr(S) about 1e-10, of either sign depending on the set; none may come out
    below 0 (a squared distance), and all are 0 up to that round-off."""
    values = []
    for seed in range(10):
        x = torch.randn(50, 16, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 100
        values += [fid(x, x), fid(x, x.flip(0))]  # the same set, rows in another order: the same Gaussian
    assert min(values) >= 0.0
    assert max(values) < 1e-6


def test_diversity_of_a_single_row_is_zero() -> None:
    """The docstring: 0 when N < 2 (there is no pair of distinct rows to draw)."""
    assert diversity(torch.ones(1, 3)) == 0.0
    assert diversity(np.zeros((1, 5)), pairs=10, seed=3) == 0.0


def test_diversity_seed_picks_the_pairs() -> None:
    """One pair (pairs=1) is one distance between two distinct rows of THREE: 5 or 8 (scipy's pdist), never
    anything else; the seed picks which, so over 20 seeds both distances turn up (a seed that was ignored gave
    the same pair every time). The same seed gives the same value."""
    exact = sorted(set(pdist(THREE.numpy()).round(12)))
    assert exact == [5.0, 8.0]
    drawn = [diversity(THREE, pairs=1, seed=s) for s in range(20)]
    assert set(drawn) == {5.0, 8.0}
    assert all(diversity(THREE, pairs=1, seed=s) == v for s, v in enumerate(drawn))
    # many pairs: the mean over distinct pairs (5 + 8 + 5) / 3 = 6, whatever the seed
    for s in (0, 1, 2):
        assert diversity(THREE, pairs=20000, seed=s) == pytest.approx(float(pdist(THREE.numpy()).mean()), abs=0.05)


def test_multimodality_draws_the_pairs_it_is_given() -> None:
    """``pairs`` random pairs per class: with one pair per class each class scores a single distance, 5 or 8
    (two copies of THREE as classes 0 and 1), so the mean over the two classes is 5, 6.5 or 8 exactly; a count
    of pairs that was not passed on (20 drawn instead) gave means such as 5.9."""
    feats = torch.cat([THREE, THREE + 100.0])
    labels = [0, 0, 0, 1, 1, 1]
    for seed in range(6):
        assert multimodality(feats, labels, pairs=1, seed=seed) in (5.0, 6.5, 8.0)
    assert multimodality(feats, labels, pairs=20000) == pytest.approx(6.0, abs=0.05)


# ------------------------------------------------------------------------------------------ kinematic
def test_foot_skating_of_a_single_frame_is_zero() -> None:
    """One frame holds no step from t to t + 1, so no foot slides: 0.0 (as jerk is 0 under 4 frames), not the
    nan of a mean over no steps."""
    pose = np.zeros((1, 2, 3))
    pose[0, 0, 1] = 1.0
    assert foot_skating(pose, [1], 30.0, threshold=0.05) == 0.0
    assert foot_skating(np.zeros((3, 1, 2, 3)), [1], 30.0, threshold=0.05) == 0.0  # batch of 3 one-frame clips


def test_bone_length_error_reference_is_the_mean_length() -> None:
    """Without offsets the reference L is the bone's mean length over the frames (module docstring). One bone
    measured 1, 1 and 4 long: L = 2, errors |1-2|/2, |1-2|/2, |4-2|/2 = 0.5, 0.5, 1.0, mean 2/3 (the median, 1,
    had given 0, 0, 3: a mean of 1)."""
    p = np.zeros((3, 2, 3))
    p[:, 1, 1] = [1.0, 1.0, 4.0]
    assert bone_length_error(p, [-1, 0]) == pytest.approx(2.0 / 3.0, abs=1e-12)


def test_bone_length_error_leaves_out_zero_length_bones() -> None:
    """A joint at its parent's place (an end site or a dummy: offset 0) has no length to be relative to: left out
    (module docstring: the mean over bones of non-zero reference length). Chain 0 -> 1 -> 2, joint 2 at joint 1,
    bone 1 of length 2 stretched to 3 in the second frame: the errors of bone 1 are 0 and 0.5, mean 0.25, with
    the offsets and (mean length 2.5: errors 0.2, 0.2) without them."""
    offsets = np.array([[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    p = np.zeros((2, 3, 3))
    p[:, 1, 1] = [2.0, 3.0]
    p[:, 2] = p[:, 1]
    assert bone_length_error(p, [-1, 0, 1], offsets) == pytest.approx(0.25, abs=1e-12)
    assert bone_length_error(p, [-1, 0, 1]) == pytest.approx(0.2, abs=1e-12)


def test_bone_length_reference_from_a_slanted_offset_is_its_euclidean_length() -> None:
    """The reference length of a bone is the norm of its offset: (3, 4, 0) is 5 long (a 3-4-5 triangle; its
    L1 length, 7, would read the bone 2/7 too short). Measured 5 then 6: errors 0 and 0.2, mean 0.1."""
    offsets = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    p = np.zeros((2, 2, 3))
    p[0, 1] = [3.0, 4.0, 0.0]
    p[1, 1] = [0.0, 0.0, 6.0]
    assert bone_length_error(p, [-1, 0], offsets) == pytest.approx(0.1, abs=1e-12)


def test_mpjpe_at_averages_over_the_sequences() -> None:
    """MPJPE at a horizon is averaged over the sequences (module docstring). Two sequences at 10 fps whose one
    joint is off by t + 1 and by 3 (t + 1) at predicted frame t: 500 ms is the fifth frame (index 4), errors 5
    and 15, mean 10; 100 ms the first, (1 + 3) / 2 = 2."""
    pred = np.zeros((2, 8, 1, 3))
    target = np.zeros((2, 8, 1, 3))
    target[0, :, 0, 2] = np.arange(1, 9)
    target[1, :, 0, 2] = 3 * np.arange(1, 9)
    assert mpjpe_at(pred, target, [500, 100], 10.0) == pytest.approx([10.0, 2.0], abs=1e-12)


def test_angle_error_is_the_mean_over_joints() -> None:
    """Per frame, the mean over joints of the geodesic angle (module docstring): joints turned 10 and 30 degrees
    about z (rotation matrices built here with cos/sin) against the identity: 20 degrees."""

    def rot_z(deg: float) -> np.ndarray:
        c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    pred = np.stack([rot_z(10.0), rot_z(30.0)])[None, None].repeat(4, axis=1)  # (1, 4, 2, 3, 3)
    target = np.broadcast_to(np.eye(3), pred.shape).copy()
    assert angle_error_at(pred, target, [100], 10.0) == pytest.approx([20.0], abs=1e-9)


@pytest.mark.parametrize("fps", [24.0, 50.0, 120.0])
def test_jerk_is_the_euclidean_norm_of_numpy_third_differences(fps: float) -> None:
    """Jerk: the mean over frames and joints of |third finite difference| * fps^3 (module docstring), checked
    against numpy's ``diff(n=3)`` on a 3-D path that is no polynomial (helix and drift, two joints), and against
    the closed form 6 a of a cubic along a slanted direction (3, 4, 0) / 5, at several frame rates."""
    t = np.arange(30) / fps
    p = np.zeros((30, 2, 3))
    p[:, 0] = np.stack([np.cos(3 * t), np.sin(3 * t), 0.2 * t**2], axis=1)
    p[:, 1] = np.stack([0.1 * t, np.sin(5 * t), np.cos(2 * t)], axis=1)
    by_numpy = np.linalg.norm(np.diff(p, n=3, axis=0), axis=-1).mean() * fps**3
    assert jerk(p, fps) == pytest.approx(by_numpy, rel=1e-9)
    assert jerk(p, fps, height=2.0) == pytest.approx(by_numpy / 2, rel=1e-9)
    a = 0.7
    cubic = (a * t**3)[:, None, None] * np.array([0.6, 0.8, 0.0])
    assert jerk(cubic, fps) == pytest.approx(6 * a, rel=1e-6)


def test_foot_skating_floor_per_foot_goes_with_its_foot() -> None:
    """``floor`` of K values: one resting height per foot joint, in the order of ``feet``. Foot 1 slides at
    0.5/s on floor 0, foot 2 at 0.3/s resting on 0.1: both planted (weight 1), mean (0.5 + 0.3) / 2 = 0.4.
    Floors swapped, foot 2 is 0.1 above a floor of 0 (weight 0 at a threshold of 0.05): 0.25."""
    fps = 20.0
    p = np.zeros((10, 3, 3))
    p[:, 0, 1] = 1.0
    p[:, 1, 0] = 0.5 * np.arange(10) / fps
    p[:, 2, 2] = 0.3 * np.arange(10) / fps
    p[:, 2, 1] = 0.1
    assert foot_skating(p, [1, 2], fps, threshold=0.05, floor=[0.0, 0.1]) == pytest.approx(0.4, abs=1e-12)
    assert foot_skating(p, [1, 2], fps, threshold=0.05, floor=[0.1, 0.0]) == pytest.approx(0.25, abs=1e-12)


def test_foot_skating_and_penetration_along_a_z_up_axis() -> None:
    """Z up: heights are z, the floor the x-y plane. A pelvis at z = 1 and a foot on the floor (z = 0) sliding
    0.5/s along y (horizontal here): it skates 0.5 per second at full weight. The foot 0.02 below the floor in the
    first half of the frames penetrates 0.02 / 2 = 0.01 on average (against a floor at 0.01: depths 0.03 and 0.01,
    mean 0.02, over a height of 2: 0.01). The Y-up copy (y and z swapped) gives the same with up_axis 'y'."""
    fps, frames = 20.0, 20
    z_up = np.zeros((frames, 2, 3))
    z_up[:, 0] = [0.0, 0.3, 1.0]
    z_up[:, 1, 1] = 0.3 + 0.5 * np.arange(frames) / fps
    assert foot_skating(z_up, [1], fps, up_axis="z", threshold=0.05) == pytest.approx(0.5, abs=1e-12)
    assert foot_skating(z_up, [1], fps, up_axis=2, threshold=0.05, floor=0.0) == pytest.approx(0.5, abs=1e-12)
    sunk = z_up.copy()
    sunk[: frames // 2, 1, 2] = -0.02
    assert ground_penetration(sunk, up_axis="z") == pytest.approx(0.01, abs=1e-12)
    assert ground_penetration(sunk, up_axis=2, floor=0.01, height=2.0) == pytest.approx((0.03 + 0.01) / 2 / 2)
    y_up = sunk[..., [0, 2, 1]]
    assert ground_penetration(y_up, up_axis="y") == pytest.approx(0.01, abs=1e-12)
    assert foot_skating(z_up[..., [0, 2, 1]], [1], fps, up_axis="y", threshold=0.05) == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------ gait
def _runs_to_mask(frames: int, runs: list[tuple[int, int]]) -> np.ndarray:
    mask = np.zeros(frames, dtype=bool)
    for start, end in runs:  # end exclusive
        mask[start:end] = True
    return mask


def test_side_contacts_keep_phases_exactly_min_phase_long(
    looped_walk: Callable[[int], Motion], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module docstring: gaps and contacts *shorter* than ``min_phase`` seconds are flicker. At 30 fps and
    min_phase 0.1 s that is under 3 frames: a gap or a contact of exactly 3 frames stays, one of 2 goes (the gap
    filled, the contact dropped). The raw contacts are given by hand (``foot_contacts`` replaced), so the cleaned
    ones are known by the rule alone. Gaps touching either end are kept whatever their length (the right foot:
    up for the first 2 and the last 2 frames), as their true length is unknown."""
    walk = looped_walk(2)[:60]
    assert round(0.1 * walk.fps) == 3
    raw = _runs_to_mask(60, [(0, 10), (13, 23), (25, 35), (45, 48), (53, 55)])  # gaps 3, 2, 10, 5; contacts 3, 2
    want = _runs_to_mask(60, [(0, 10), (13, 35), (45, 48)])
    right = _runs_to_mask(60, [(2, 58)])
    left_ankle = find_legs(walk.skeleton)["left"].ankle

    def fake(motion: Motion, *, joints: list[int], **kwargs: object) -> np.ndarray:
        column = raw if joints[0] == left_ankle else right
        return np.stack([column] * len(joints), axis=1)

    monkeypatch.setattr(gait, "foot_contacts", fake)
    got = side_contacts(walk, min_phase=0.1)
    np.testing.assert_array_equal(got[:, 0], want)
    np.testing.assert_array_equal(got[:, 1], right)


def _contacts(frames: int, strikes: list[int], stance: int, lead: int = 0) -> np.ndarray:
    """``(F,)`` bool: down for ``stance`` frames from each strike (and ``lead`` frames at the start)."""
    c = _runs_to_mask(frames, [(s, s + stance) for s in strikes])
    c[:lead] = True
    return c


def _played(monkeypatch: pytest.MonkeyPatch, rise: float) -> tuple[Motion, torch.Tensor]:
    """The bundled walk (one 38-frame stride, Y up) played 5 times in a row, each play shifted by the clip's
    horizontal displacement and ``rise`` up, with heel strikes given by hand (``side_contacts`` replaced): left at
    17, 55, ..., right at 36, 74, ... (half a stride apart), so 4 cycles per foot of exactly 38 frames. Returns the
    motion and the shift of one play."""
    walk = skelanim.load(sample_path("walk"))
    n = walk.num_frames - 1
    assert n == 38
    step = walk.root_positions[-1] - walk.root_positions[0]
    step[1] = rise
    played = walk.copy(rotations=torch.cat([walk.rotations[:n]] * 5),
                       root_positions=torch.cat([walk.root_positions[:n] + i * step for i in range(5)]))  # fmt: skip
    f = played.num_frames
    table = np.stack([_contacts(f, [17, 55, 93, 131, 169], 22), _contacts(f, [36, 74, 112, 150, 188], 22, lead=20)],
                     axis=1)  # fmt: skip
    monkeypatch.setattr(gait, "side_contacts", lambda *args, **kwargs: table.copy())
    return played, step


def test_stride_length_on_a_slope_is_horizontal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stride length is the *horizontal* distance between the ankle's positions at the two strikes (module
    docstring). Each play of the walk 0.25 higher than the last (a walk up a ramp): every stride's ankle moves by
    exactly one play's shift, so the stride length is the shift's horizontal length, not its 3-D one; the
    walking speed (the pelvis') is horizontal too."""
    ramp, step = _played(monkeypatch, 0.25)
    report = gait_analysis(ramp)
    horizontal = float(np.hypot(float(step[0]), float(step[2])))
    assert report.num_cycles == 8
    for c in report.cycles:
        assert c.stride_length == pytest.approx(horizontal, rel=1e-9)
        assert c.speed == pytest.approx(horizontal / (38 / ramp.fps), rel=1e-9)  # pelvis: horizontal too


def test_find_legs_skips_a_roll_joint_a_rounding_error_from_the_knee() -> None:
    """The knee is the ankle's first ancestor at a distance, the hip the same above the knee (module docstring).
    A roll joint 1e-9 below the knee (a file's rounding of 0) is the knee's place, not a bone: the hip above it
    is the UpLeg 0.45 away, not the knee itself (which had given a thigh of length 0)."""
    names = ["Hips", "Head", "LeftUpLeg", "LeftLeg", "LeftLegRoll", "LeftFoot",
             "RightUpLeg", "RightLeg", "RightLegRoll", "RightFoot"]  # fmt: skip
    offsets = torch.tensor([[0, 1.0, 0], [0, 0.7, 0], [0.1, 0, 0], [0, -0.45, 0], [0, -1e-9, 0], [0, -0.45, 0],
                            [-0.1, 0, 0], [0, -0.45, 0], [0, -1e-9, 0], [0, -0.45, 0]], dtype=torch.float64)  # fmt: skip
    skeleton = Skeleton(names, [-1, 0, 0, 2, 3, 4, 0, 6, 7, 8], offsets)
    legs = find_legs(skeleton)
    assert (legs["left"].hip, legs["left"].ankle) == (2, 5)
    assert (legs["right"].hip, legs["right"].ankle) == (6, 9)
    rest = Motion.rest(skeleton, 1).positions()[0]
    for leg in legs.values():  # whichever of knee and roll joint is taken, it is 0.45 below the hip
        assert float((rest[leg.knee] - rest[leg.hip]).norm()) == pytest.approx(0.45, abs=1e-6)


def test_a_cycle_lasting_exactly_a_bound_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gait cycle counts when it lasts min_cycle to max_cycle seconds (module docstring: "0.3-3 s"), bounds
    included. The walk played 5 times strides every 38 frames: with both bounds at exactly 38 frames' time all 8
    cycles count; a frame's time off either way, none does."""
    played, _ = _played(monkeypatch, 0.0)
    stride = 38 / played.fps
    assert gait_analysis(played, min_cycle=stride, max_cycle=stride).num_cycles == 8
    for low, high in ((stride + 1 / played.fps, 3.0), (0.3, stride - 1 / played.fps)):
        with pytest.raises(GaitError, match="no gait cycles found"):
            gait_analysis(played, min_cycle=low, max_cycle=high)


# ------------------------------------------------------------------------------------------ compare
def _legs(scale: float = 1.0) -> Skeleton:
    """Hips 1 above the origin, a head 0.7 above them, feet 1 below them at +-0.2: 1.7 tall, feet at 0."""
    names = ["Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]]) * scale
    return Skeleton(names, [-1, 0, 0, 0], offsets)


def test_a_set_of_two_takes_the_mean_of_the_middle_height_and_floor() -> None:
    """The median of an even count is the mean of the two middle values (compare.py's ``_median``). Set A holds
    two standing figures, 1.7 and 1.785 tall (5 % apart: one size), the second 0.01 above the floor: the set's
    height is (1.7 + 1.785) / 2 = 1.7425 and its floor (0 + 0.01) / 2 = 0.005, for A and for B measured on A's
    ground (the lower middle value had given 1.7 and 0)."""
    short = Motion.rest(_legs(), 10, fps=30.0)
    tall = Motion.rest(_legs(1.05), 10, fps=30.0)
    tall = tall.copy(root_positions=tall.root_positions + torch.tensor([0.0, 0.01, 0.0]))
    assert (short.height, tall.height) == (pytest.approx(1.7), pytest.approx(1.785))
    res = compare_sets([short, tall], [short])
    assert res["height"] == pytest.approx(1.7425, abs=1e-6) and res["floor"] == pytest.approx(0.005, abs=1e-6)
    for side in ("a", "b"):
        assert res[side]["height"] == pytest.approx(1.7425, abs=1e-6)
        assert res[side]["floor"] == pytest.approx(0.005, abs=1e-6)
    # B's feet at 0 are 0.005 below A's floor in every frame: penetration 0.005 / 1.7425 heights
    assert res["b"]["ground_penetration"] == pytest.approx(0.005 / 1.7425, rel=1e-5)


def test_paired_measures_leave_out_a_dummy_root_static_in_either_set() -> None:
    """Paired measures run over the body's joints, from one joint for both: the hips where *either* motion has a
    static dummy root above them (compare.py). B stands under a static ``joint_Root``; A is the same figure with
    that root turned 180 degrees about Y (so not static, and its feet swap sides). Over the 4 body joints only
    the feet differ, by 0.4 each: mpjpe 0.8 / 4 = 0.2 in lengths, and every body joint's local rotation is the
    same: angle 0 (the root counted had given 0.8 / 5 = 0.16 and 180 / 5 = 36 degrees)."""
    names = ["joint_Root", "Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.5, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    b = Motion.rest(Skeleton(names, [-1, 0, 1, 1, 1], offsets), 10, fps=30.0)
    rotations = b.rotations.clone()
    rotations[:, 0] = torch.tensor([0.0, 0.0, 1.0, 0.0])  # w, x, y, z: half a turn about Y
    a = b.copy(rotations=rotations)
    res = compare_sets([a], [b])
    assert res["paired"]["mpjpe"] * res["height"] == pytest.approx(0.2, abs=1e-6)
    assert res["paired"]["angle_deg"] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("windows", [4, 5])
def test_fid_from_as_many_windows_as_dimensions_is_noted_as_biased(windows: int) -> None:
    """N feature rows give a covariance of rank N - 1 at most (numpy's rank, below): with N = D = 4 it is
    singular, the case the note on a biased FID is for (compare.py: "a covariance of lower rank than its size");
    with N = 5 > D it has full rank and no note."""
    rows = np.random.default_rng(windows).normal(size=(windows, 4))
    singular = np.linalg.matrix_rank(np.cov(rows, rowvar=False)) < 4
    assert singular == (windows == 4)

    def embed(motions: list[Motion]) -> tuple[torch.Tensor, list[str]]:
        return torch.as_tensor(rows), ["stand"] * len(motions)

    standing = Motion.rest(_legs(), 10, fps=30.0)
    notes = compare_sets([standing], [standing], embed=embed)["notes"]
    biased = [n for n in notes if "feature dimensions: fid from so few samples is biased" in n]
    assert len(biased) == (2 if singular else 0), notes


# ------------------------------------------------------------------------------------------ skelanim evaluate
def test_evaluate_reads_names_the_labels_pattern_misses_by_the_known_schemes(
    mocap_files: MocapFiles, tmp_path: Path, capsys
) -> None:
    """``--labels``' help: names the pattern does not match are read by the first two schemes (the datasets'
    names, skelanim generate's). Set A's file has a Bandai name the pattern misses (content 'walk' by the
    dataset scheme), set B's a name the pattern reads ('walk'): both sets carry contents, so both get a
    'recognised' share and no note says a set's names carry no label."""
    from skelanim.cli import main

    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])[:70]
    for folder, name in (("a", "dataset-1_walk_normal_001.bvh"), ("b", "take-walk.bvh")):
        (tmp_path / folder).mkdir()
        skelanim.save(walk, tmp_path / folder / name)
    capsys.readouterr()
    code = main(["evaluate", str(tmp_path / "a"), str(tmp_path / "b"), "--labels", r"^take-(?P<content>[a-z]+)",
                 "--json"])  # fmt: skip
    assert code == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["a"]["recognised"] is not None and obj["b"]["recognised"] is not None
    assert obj["a"]["recognised"] == obj["b"]["recognised"]  # the same clip, the same expected content
    assert not any("carry no content label" in note for note in obj["notes"]), obj["notes"]


def test_evaluate_leaves_recognised_out_for_a_set_with_an_unlabelled_name(
    mocap_files: MocapFiles, tmp_path: Path, capsys
) -> None:
    """'recognised' needs the content of every motion of a set: set B holds a Bandai-named file and one whose name
    carries no content (``take.bvh``), so B has no 'recognised' (null) and a note says why; set A, all named,
    has one."""
    from skelanim.cli import main

    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])[:70]
    for folder, names in (("a", ["dataset-1_walk_normal_001.bvh"]), ("b", ["dataset-1_walk_normal_002.bvh",
                                                                          "take.bvh"])):  # fmt: skip
        (tmp_path / folder).mkdir()
        for name in names:
            skelanim.save(walk, tmp_path / folder / name)
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["a"]["recognised"] is not None and obj["b"]["recognised"] is None
    assert any(note.startswith("set b: its file names carry no content label") for note in obj["notes"])
    assert not any(note.startswith("set a: its file names") for note in obj["notes"])
