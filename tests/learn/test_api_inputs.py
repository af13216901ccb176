"""The learned models' Python entry points take what a notebook hands them: one Motion or a list, one class name or
a list, and say what is wrong with a file's path (a review: single motions were read frame by frame, names letter by
letter, paths failed with AttributeError)."""

from __future__ import annotations

import pytest
import torch

import skelanim
from skelanim.errors import SkeletonError
from skelanim.learn.forecast import predict_motion
from skelanim.learn.generate import Generator
from skelanim.learn.recognize import Recognizer

WALK = "bandai_namco_1/dataset-1_walk_angry_001.bvh"


def test_recognize_motions_takes_one_motion_and_refuses_paths_and_nothing(mocap_files):
    rec = Recognizer.load()
    walk = skelanim.load(mocap_files([WALK])[0])
    one, listed = rec.recognize_motions(walk), rec.recognize_motions([walk])
    assert torch.equal(one["probs"], listed["probs"]) and one["probs"].shape == (1, len(rec.contents))
    with pytest.raises(TypeError, match=r"motions\[0\] must be a Motion, got str \(load a file with skelanim.load"):
        rec.recognize_motions([str(mocap_files([WALK])[0])])
    with pytest.raises(ValueError, match="no motions given"):
        rec.recognize_motions([])
    cmu = skelanim.load(mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0])
    with pytest.raises(SkeletonError, match="the recogniser works on a 22-joint skeleton"):  # as the predictors raise
        rec.recognize_motions([cmu[:40]])


def test_sample_takes_one_content_and_style_as_one_motion():
    gen = Generator.load()
    one = gen.sample("walk", "angry", generator=torch.Generator().manual_seed(3))
    listed = gen.sample(["walk"], ["angry"], generator=torch.Generator().manual_seed(3))
    assert one.shape[0] == 1 and torch.equal(one, listed)


def test_predict_motion_says_a_path_is_not_a_motion():
    with pytest.raises(TypeError, match=r"motion must be a Motion, got str \(load a file with skelanim.load first\)"):
        predict_motion("walk.bvh", method="zero_velocity", rig=Recognizer.load().rig)


def test_predict_motion_without_a_model_uses_the_shipped_default_as_the_cli_does(mocap_files):
    """No method, no model: the shipped combined predictor, ``skelanim predict``'s default (it had raised "method
    'rnn' needs a rnn Predictor as model, got none"); a model alone picks its own method."""
    from skelanim.learn.predict import CombinedPredictor, Predictor

    walk = skelanim.load(mocap_files([WALK])[0])
    default = predict_motion(walk, seconds=0.4)
    combined = predict_motion(walk, seconds=0.4, method="combined", model=CombinedPredictor.shipped())
    assert torch.equal(default.rotations, combined.rotations)
    mlp = Predictor.load(None, default="predict_mlp")
    assert torch.equal(predict_motion(walk, seconds=0.4, model=mlp).rotations,
                       predict_motion(walk, seconds=0.4, method="mlp", model=mlp).rotations)  # fmt: skip


def test_predict_motion_on_another_skeleton_names_the_file(mocap_files):
    """As the recogniser's error does (the predictor's had not named it)."""
    cmu_file = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    with pytest.raises(SkeletonError, match=f"^{cmu_file}: the predictor works on a 22-joint skeleton"):
        predict_motion(skelanim.load(cmu_file)[:60], seconds=0.4)
