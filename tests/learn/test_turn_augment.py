"""Turn relabelling: triples found in a vocabulary, the left-turn sign read from data, sweeps set per label."""

from __future__ import annotations

import math

import pytest
import torch

from skelanim.learn.augment import STRAIGHT_DEGREES, TURN_DEGREES, turn_classes, turn_relabel

CONTENTS = ["bow", "walk", "walk-turn-left", "walk-turn-right"]


def test_turn_classes_find_the_triple_and_read_the_sign_from_the_data():
    labels = torch.tensor([1, 2, 2, 3, 0])
    left_positive = turn_classes(CONTENTS, labels, torch.tensor([0.0, 0.02, 0.03, -0.02, 0.0]))
    assert left_positive is not None and left_positive.sign == 1.0
    assert (left_positive.base.tolist(), left_positive.left.tolist(), left_positive.right.tolist()) == ([1], [2], [3])
    left_negative = turn_classes(CONTENTS, labels, torch.tensor([0.0, -0.02, -0.03, 0.02, 0.0]))
    assert left_negative is not None and left_negative.sign == -1.0
    assert turn_classes(["bow", "walk", "walk-left"], torch.tensor([0, 1]), torch.zeros(2)) is None
    assert turn_classes(CONTENTS, torch.tensor([1, 2]), torch.zeros(2)) is None  # no right turn to compare


def test_turn_relabel_gives_each_label_its_sweep_and_keeps_the_sway():
    classes = turn_classes(CONTENTS, torch.tensor([2, 3]), torch.tensor([0.02, -0.02]))
    assert classes is not None
    b, t = 600, 64
    generator = torch.Generator().manual_seed(0)
    content = torch.randint(0, 4, (b,), generator=generator)
    turning = 0.01 * torch.randn(b, t, generator=generator) + 0.02 * (content == 2)[:, None]
    rate, label = turn_relabel(turning, content, classes, 1.0, generator)
    bow = content == 0
    assert torch.equal(rate[bow], turning[bow]) and torch.equal(label[bow], content[bow])  # other contents untouched
    assert set(label[~bow].tolist()) == {1, 2, 3}  # all three drawn
    sway = rate - rate.mean(1, keepdim=True)
    assert torch.allclose(sway, turning - turning.mean(1, keepdim=True), atol=1e-6)
    sweep = torch.rad2deg(rate.sum(1))
    lo, hi = TURN_DEGREES
    assert ((sweep[label == 2] >= lo - 1e-3) & (sweep[label == 2] <= hi + 1e-3)).all()  # left: positive here
    assert ((sweep[label == 3] <= -lo + 1e-3) & (sweep[label == 3] >= -hi - 1e-3)).all()
    assert (sweep[(label == 1) & ~bow].abs() <= STRAIGHT_DEGREES + 1e-3).all()
    none, kept = turn_relabel(turning, content, classes, 0.0, generator)
    assert torch.equal(none, turning) and torch.equal(kept, content)
    half = turn_relabel(turning, content, classes, 0.5, generator)[0]
    changed = (half - turning).abs().amax(1) > 0
    assert 0.3 < float(changed[~bow].float().mean()) < 0.7 and not changed[bow].any()
    assert math.isclose(classes.sign, 1.0)


def test_recognize_task_turns_real_walks_through_the_turning_rate_channel(mocap_files, tmp_path):
    """On real clips (a straight walk and the two turns of one style): the side of a left turn is read from
    the data, and every relabelled batch window's turning-rate channel sweeps to its label's side."""
    from skelanim.data import MotionDataset
    from skelanim.learn.joints import TURN_CHANNEL
    from skelanim.learn.recognize import Recognizer
    from skelanim.learn.recognize_train import RecognizeTask

    names = [f"bandai_namco_2/dataset-2_{c}_normal_001.bvh" for c in ("walk", "walk-turn-left", "walk-turn-right")]
    ds = MotionDataset(mocap_files(names), fps=25.0, cache=tmp_path)
    contents = sorted(set(ds.labels("content")))
    model = Recognizer("stgcn", ds.rig, contents, sorted(set(ds.labels("style"))), window=32)
    task = RecognizeTask(model, ds, None, stride=4, mirror=False, turn=1.0)
    assert task.turns is not None and task.turns.sign == 1.0  # the Bandai turns to the left turn +90°
    batch = task.batch(torch.arange(task.num_samples()), torch.Generator().manual_seed(0))
    sweep = torch.rad2deg(batch["x"][:, :, 0, TURN_CHANNEL].sum(1))
    label = [contents[int(c)] for c in batch["content"]]
    left = torch.tensor([n == "walk-turn-left" for n in label])
    right = torch.tensor([n == "walk-turn-right" for n in label])
    assert left.any() and right.any() and (~left & ~right).any()
    assert (sweep[left] > 30).all() and (sweep[right] < -30).all() and (sweep[~left & ~right].abs() < 15).all()


def test_turn_relabelling_refuses_the_window_path_features(tiny_ds):
    """The path features carry the heading's sweep as well; relabelling only rewrites the turning rate."""
    from skelanim.learn.recognize import Recognizer
    from skelanim.learn.recognize_train import RecognizeTask

    model = Recognizer("stgcn", tiny_ds.rig, sorted(set(tiny_ds.labels("content"))), [], window=32, path=True)
    with pytest.raises(ValueError, match="path"):
        RecognizeTask(model, tiny_ds, None, stride=16, turn=0.5)
