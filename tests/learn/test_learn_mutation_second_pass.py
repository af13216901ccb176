"""Second-pass mutation audit of ``skelanim.learn``: rules the first audit's tests left open, each checked against a
closed form on hand-built motion, a docstring's rule computed another way, or numpy. Most survivors were in
batched loops (a score or a range computed 256 or 512 windows at a time) and at thresholds. The rig is the
shipped predictor's (its ``config.json``, no weights); the motion is built here, so no capture data is needed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from replaying import replaying  # tests/helpers
from torch import Tensor

import skelanim.learn
from skelanim.core.rotations import rotvec_to_matrix
from skelanim.data.clips import clip_from_motion
from skelanim.data.dataset import MotionDataset
from skelanim.data.rig import Rig

FPS = 25.0


@pytest.fixture(scope="module")
def rig() -> Rig:
    config = json.loads(
        (Path(skelanim.learn.__file__).parent / "pretrained" / "predict_rnn" / "config.json").read_text()
    )
    return Rig.from_dict(config["rig"])


def _standing(rig: Rig, frames: int) -> tuple[Tensor, Tensor]:
    """Model-joint rotations ``(F, M, 3, 3)`` and pelvis ``(F, 3)`` (file units) of a body standing still in a
    plausible pose (the rig's bones lie along local x: spine turned up, left leg and arm turned down), its pelvis
    0.7 heights up and over the origin."""
    m = rig.num_joints
    rot = torch.eye(3, dtype=torch.float64).expand(frames, m, 3, 3).clone()
    for joint, angle in (("Hips", math.pi / 2), ("UpperLeg_L", math.pi), ("UpperArm_L", math.pi)):
        rot[:, rig.names.index(joint)] = rotvec_to_matrix(torch.tensor([0.0, 0.0, angle], dtype=torch.float64))
    pelvis = torch.zeros(frames, 3, dtype=torch.float64)
    pelvis[:, rig.up] = 0.7 * rig.height
    return rot, pelvis


def _side(rig: Rig) -> int:
    """A floor axis (not the up axis)."""
    return 0 if rig.up != 0 else 2


def _dataset(rig: Rig, rot: Tensor, pelvis: Tensor, **labels: str) -> MotionDataset:
    motion = rig.to_motion(rot, pelvis, FPS)
    clip = clip_from_motion(motion, fps=FPS, up=rig.up, labels=dict(labels) or None)
    return MotionDataset(clips=[clip], rig=rig, fps=FPS)


def _accelerating(rig: Rig, frames: int, accel: float) -> MotionDataset:
    """The standing body, its pelvis sliding along a floor axis from rest with a constant acceleration of
    ``accel`` heights per frame²: at frame ``t`` it is ``accel t² / 2`` heights from where it started."""
    rot, pelvis = _standing(rig, frames)
    t = torch.arange(frames, dtype=torch.float64)
    pelvis[:, _side(rig)] = 0.5 * accel * t**2 * rig.height
    return _dataset(rig, rot, pelvis)


# ---------------------------------------------------------------------------------------------- prediction scores


def test_scores_over_more_than_one_batch_of_windows_are_the_mean_over_every_window(rig: Rig) -> None:
    """``evaluate_prediction`` scores windows 256 at a time; its scores are means over *all* ``W`` windows
    (docstring: the score of the set), so 261 windows in batches of 256 and 5 weigh every window alike.

    Closed forms for a pelvis sliding with constant acceleration ``a`` (heights/frame²), every joint moving with
    it: window ``s`` (stride 1) observes up to frame ``t0 = s + 24``; holding that frame (zero velocity) misses
    frame ``t0 + n`` by ``a ((t0 + n)² - t0²) / 2 = a n (2 t0 + n) / 2`` heights, whose mean over the windows is
    that at the mean ``t0``; constant velocity (the step ``a (t0 - 1/2)``) misses it by ``a (n² + n) / 2`` in
    every window. ``n = k + 1`` for the horizon's frame ``k`` (80 ms is frame 1 at 25 fps)."""
    from skelanim.learn.predict import HORIZONS_MS
    from skelanim.learn.predict_eval import evaluate_prediction

    accel, windows = 1e-4, 261
    ds = _accelerating(rig, 50 + windows - 1, accel)
    res = evaluate_prediction({}, ds, rig=rig, stride=1)
    assert res["windows"] == windows
    mean_t0 = (windows - 1) / 2 + 24
    ns = [round(h * FPS / 1000) for h in HORIZONS_MS]
    zero = [accel * n * (2 * mean_t0 + n) / 2 for n in ns]
    constant = [accel * (n * n + n) / 2 for n in ns]
    assert res["methods"]["zero_velocity"]["mpjpe_global"] == pytest.approx(zero, rel=2e-3)
    assert res["methods"]["constant_velocity"]["mpjpe_global"] == pytest.approx(constant, rel=2e-3)


# ---------------------------------------------------------------------------------------------- calibration


def test_the_input_range_reads_every_window_when_there_are_more_than_one_batch(rig: Rig) -> None:
    """``calibrate_input_range``: "the smallest and largest standardised value of each channel over every frame
    of ``ds``'s windows ... widened on each side by ``margin`` times their difference" (docstring), computed here
    over all windows at once. The windows are read 512 at a time; with 512 windows the last one, whose pelvis
    has moved farthest from its last observed frame (the pelvis accelerates), alone holds the largest value."""
    from skelanim.learn.calibrate import MARGIN, calibrate_input_range
    from skelanim.learn.predict import Predictor

    model = Predictor("mlp", rig, observed=10, horizon=10, arch_options={"blocks": 1}).eval()
    ds = _accelerating(rig, 20 + 512 - 1, 1e-4)
    windows = ds.windows(20, 1, pad_short=False)
    assert len(windows) == 512
    z = model.norm(model.window_vectors(ds, windows)).flatten(0, 1)
    low, high = z.amin(0), z.amax(0)
    without_last = model.norm(model.window_vectors(ds, windows[:-1])).flatten(0, 1).amax(0)
    assert bool((without_last < high).any())  # the last window matters (the test can fail)
    got_low, got_high = calibrate_input_range(model, ds, stride=1, mirror=False)
    torch.testing.assert_close(got_low, low - MARGIN * (high - low))
    torch.testing.assert_close(got_high, high + MARGIN * (high - low))


# ---------------------------------------------------------------------------------------------- recognition


def test_classify_returns_one_row_per_window_whatever_the_batch_size(rig: Rig) -> None:
    """``Recognizer.classify``: "Content probabilities ``(B, C)`` and features ``(B, D)`` of raw windows
    ``(B, T, M, C)``" (docstring), computed ``batch`` windows at a time: 5 windows in batches of 2 (2, 2, 1) give
    5 rows, each the one computed with the window alone (eval mode: no batch statistics), probabilities summing
    to 1."""
    from skelanim.learn.recognize import Recognizer

    torch.manual_seed(0)
    model = Recognizer("cnn", rig, ["walk", "run", "bow"], [], window=8,
                       arch_options={"channels": (8,), "strides": (1,)}).eval()  # fmt: skip
    x = torch.randn(5, 8, rig.num_joints, 16)
    probs, feats = model.classify(x, batch=2)
    assert probs.shape == (5, 3) and feats.shape[0] == 5
    alone = torch.cat([model.classify(x[i : i + 1])[0] for i in range(5)])
    torch.testing.assert_close(probs, alone, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(probs.sum(-1), torch.ones(5))


# ---------------------------------------------------------------------------------------------- generation scores


def _distances(rot: Tensor, pelvis: Tensor, yaw: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
    """Recogniser stand-in: each window's mean hand-to-foot distances, and always the first content."""
    d = torch.stack([(positions[..., 8, :] - positions[..., f, :]).norm(dim=-1) for f in (15, 19)], -1).float()
    return torch.nn.functional.one_hot(torch.zeros(len(d), dtype=torch.long), 1).float(), d.mean(1)


def test_a_foot_lifted_less_than_the_threshold_counts_as_a_contact(rig: Rig) -> None:
    """``contact_share``: "share of foot frames within the skating threshold of the foot's lowest point in its
    window" (``evaluate_generation`` docstring; ``SKATE_THRESHOLD`` = 0.02 heights). The whole body bobs through
    0, 0.01, 0.03, 0.01 heights above its lowest, every four frames: three frames in four are within the
    threshold, for the real test windows and for a generator that replays the training windows."""
    from skelanim.learn.generate import SKATE_THRESHOLD, Generator
    from skelanim.learn.generate_eval import evaluate_generation

    assert SKATE_THRESHOLD == 0.02

    def bobbing(frames: int) -> MotionDataset:
        rot, pelvis = _standing(rig, frames)
        t = torch.arange(frames, dtype=torch.float64)
        elbow = torch.zeros(frames, 3, dtype=torch.float64)
        elbow[:, 2] = 0.03 * t  # the elbow bends, so the stand-in's features vary
        rot[:, rig.names.index("LowerArm_L")] = rotvec_to_matrix(elbow)
        pelvis[:, rig.up] += torch.tensor([0.0, 0.01, 0.03, 0.01], dtype=torch.float64).repeat(frames // 4) * rig.height
        return _dataset(rig, rot, pelvis, content="walk", style="happy")

    train, test = bobbing(64), bobbing(32)
    gen = Generator(rig, ["walk"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    gen = replaying(gen, train, train.windows(16, 8))
    res = evaluate_generation(gen, _distances, train, test, stride=8)
    assert res["contact_share_real"] == pytest.approx(0.75, abs=1e-6)
    assert res["contact_share"] == pytest.approx(0.75, abs=1e-6)


def test_real_window_scores_over_more_than_one_batch_are_means_over_every_window(rig: Rig) -> None:
    """``evaluate_generation`` reads real windows 256 at a time; ``foot_skating_real`` and ``limb_speed_real``
    are means over all of ``B``'s windows (docstring). Closed forms for a body whose pelvis slides ``STEP``
    heights a frame (feet planted at their lowest: skating ``STEP fps``) while the left elbow bends ``BEND`` rad a
    frame (only the hand moves relative to the pelvis, on a circle of radius ``r``, the forearm: mean joint speed
    ``2 r sin(BEND / 2) fps / M``), the same in each of the 257 test windows."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.generate_eval import evaluate_generation

    step, bend = 0.001, 0.03

    def sliding(frames: int) -> MotionDataset:
        rot, pelvis = _standing(rig, frames)
        t = torch.arange(frames, dtype=torch.float64)
        elbow = torch.zeros(frames, 3, dtype=torch.float64)
        elbow[:, 2] = bend * t
        rot[:, rig.names.index("LowerArm_L")] = rotvec_to_matrix(elbow)
        pelvis[:, _side(rig)] = step * t * rig.height
        return _dataset(rig, rot, pelvis, content="walk", style="happy")

    train, test = sliding(64), sliding(16 + 8 * 256)
    gen = Generator(rig, ["walk"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    res = evaluate_generation(replaying(gen, train, train.windows(16, 8)), _distances, train, test, stride=8)
    assert res["real_windows"] == 257
    pos = test.gather(test.windows(16, 8)[:1], 16, keys=("positions",))["positions"][0, 0]
    r = float((pos[rig.names.index("Hand_L")] - pos[rig.names.index("LowerArm_L")]).norm()) / rig.height
    assert res["foot_skating_real"] == pytest.approx(step * FPS, rel=1e-4)
    speed = 2 * r * math.sin(bend / 2) * FPS / rig.num_joints  # float32 positions: 2e-4 off; one window of 257
    assert res["limb_speed_real"] == pytest.approx(speed, rel=1e-3)  # missed would be 4e-3 off


# ---------------------------------------------------------------------------------------------- augmentation


def test_a_window_relabelled_as_straight_sweeps_either_way_up_to_ten_degrees() -> None:
    """``turn_relabel``: "a sweep of ``U(40°, 100°)`` ... to the drawn side for a turn, ``U(-10°, 10°)``
    (:data:`STRAIGHT_DEGREES`) for the straight class" (docstring); the sway about the window's mean is kept. Of
    600 windows relabelled (probability 1), those drawn straight sweep both ways, within 10°; left turns (sign
    +1 here) sweep +40° to +100°, right turns -100° to -40°."""
    from skelanim.learn.augment import TurnClasses, turn_relabel

    classes = TurnClasses(torch.tensor([0]), torch.tensor([1]), torch.tensor([2]), 1.0)
    t = 16
    sway = 0.01 * torch.sin(torch.arange(t, dtype=torch.float32))[None].expand(600, t)
    turning, label = turn_relabel(sway + 0.3, torch.zeros(600, dtype=torch.long), classes, 1.0,
                                  torch.Generator().manual_seed(0))  # fmt: skip
    sweep = torch.rad2deg(turning.sum(1))  # the sway sums to t times its mean, which is replaced
    torch.testing.assert_close(turning - turning.mean(1, keepdim=True), sway - sway.mean(1, keepdim=True))
    straight, left, right = sweep[label == 0], sweep[label == 1], sweep[label == 2]
    assert min(len(straight), len(left), len(right)) > 150
    assert float(straight.abs().max()) <= 10.0 + 1e-3
    assert float(straight.min()) < -5.0 and float(straight.max()) > 5.0  # both ways, not one side only
    assert 40.0 - 1e-3 <= float(left.min()) and float(left.max()) <= 100.0 + 1e-3
    assert -100.0 - 1e-3 <= float(right.min()) and float(right.max()) <= -40.0 + 1e-3


# ---------------------------------------------------------------------------------------------- shared pieces


def test_a_statistics_sample_is_spread_evenly_from_the_first_item_to_the_last() -> None:
    """``spread_sample``: "Up to ``size`` of ``items`` (first dim), evenly spread from the first to the last"
    (docstring). Of 10 items, 4 are items 0, 3, 6, 9 (a step of 9 / 3); of 7 items, 4 are 0, 2, 4, 6; asking
    for more than there are gives every item once."""
    from skelanim.learn.common import spread_sample

    assert spread_sample(torch.arange(10) * 10, 4).tolist() == [0, 30, 60, 90]
    assert spread_sample(torch.arange(7), 4).tolist() == [0, 2, 4, 6]
    assert spread_sample(torch.arange(5), 9).tolist() == [0, 1, 2, 3, 4]
    rows = torch.arange(12.0).reshape(6, 2)
    torch.testing.assert_close(spread_sample(rows, 2), rows[[0, 5]])


def test_split_none_trains_and_tests_on_every_clip_and_validates_on_none(rig: Rig) -> None:
    """``split_dataset(ds, "none")``: "every clip trains and tests, none validates" (docstring); with no validation
    part the training keeps its last epoch and names its score for training windows
    (``keep_without_validation``), which a validation part equal to the training data would hide."""
    from skelanim.learn.common import split_dataset

    ds = _dataset(rig, *_standing(rig, 8), content="walk", style="happy")
    parts = split_dataset(ds, "none")
    assert parts["val"] is None
    assert parts["train"] is ds and parts["test"] is ds


def test_the_self_weighted_skating_term_is_the_foot_skating_metric(rig: Rig) -> None:
    """``Generator.skating`` without contacts weighs the horizontal foot speed by "the elevation above each foot's
    lowest point, as :func:`skelanim.metrics.kinematic.foot_skating` measures" (module docstring): on feet that
    rise and fall by up to twice the threshold while they slide, it is the metric's value (the metric's own
    implementation: each step's elevation at the mean of its two frames, weight ``2 - 2^(e / H)`` in ``[0, 1]``)."""
    from skelanim.learn.generate import SKATE_THRESHOLD, Generator
    from skelanim.metrics.kinematic import foot_skating

    gen = Generator(rig, ["walk"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    g = torch.Generator().manual_seed(0)
    pos = 0.05 * torch.randn(2, 9, rig.num_joints, 3, generator=g, dtype=torch.float64).cumsum(1)
    pos[..., rig.up] = 2 * SKATE_THRESHOLD * torch.rand(2, 9, rig.num_joints, generator=g, dtype=torch.float64)
    expected = foot_skating(pos, rig.feet, gen.fps, up_axis=rig.up, threshold=SKATE_THRESHOLD)
    assert expected > 0.0
    assert float(gen.skating(pos)) == pytest.approx(expected, rel=1e-9)


# ---------------------------------------------------------------------------------------------- long generation


def test_a_plan_window_is_conditioned_on_the_middle_of_its_new_frames_not_of_the_whole_window(rig: Rig) -> None:
    """``sample_plan`` conditions each window "on the segment holding the middle of its new frames"
    (``_sample_windows``). 16-frame windows overlapping by 7: the second window adds frames 16-24 (middle 20), the
    third frames 25-33 (middle 29). Walk for frames 0-21, bow from 22: the second window's new frames centre on
    walk (frame 20), although 16 + 7.5 = 23.5 (the middle of a whole window laid from its new frames' start) is
    bow; the windows ask for walk, walk, bow."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.generate_long import sample_plan

    torch.manual_seed(0)
    gen = Generator(rig, ["walk", "bow"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    asked: list[list[int]] = []
    draw = gen.draw_latent

    def recording(content: Tensor, generator: torch.Generator | None = None, temperature: float = 1.0) -> Tensor:
        asked.append(content.tolist())
        return draw(content, generator, temperature)

    gen.draw_latent = recording  # type: ignore[method-assign]
    x = sample_plan(gen, [("walk", "happy", 22), ("bow", "happy", 10)], overlap=7, steps=1,
                    generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert x.shape[:2] == (1, 32)
    assert asked == [[0], [0], [1]]
