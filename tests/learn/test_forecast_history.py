"""Each step of ``predict_motion`` computes the headings of the frames it reads (the last ``observed``), not of the
whole history (the input and everything predicted so far: quadratic in the predicted length). Headings are per
frame, so the continuation is the same, bit for bit, as with the whole history's headings, on real and on randomly
perturbed input, for the baselines and a shipped network."""

from __future__ import annotations

import pytest
import torch

import skelanim
from skelanim.core.rotations import quat_multiply, rotvec_to_quat
from skelanim.data import MotionDataset
from skelanim.data.clips import clip_from_motion
from skelanim.learn import forecast
from skelanim.learn.forecast import predict_motion
from skelanim.ops.normalize import facing_directions


def _rig(motion):
    return MotionDataset(clips=[clip_from_motion(motion, fps=25.0)], fps=25.0).rig


def _perturbed(motion, seed: int, amplitude: float = 0.3):
    """``motion`` with every joint's rotation turned by a random rotation vector of up to ``amplitude`` radians."""
    gen = torch.Generator().manual_seed(seed)
    turn = rotvec_to_quat(amplitude * (2 * torch.rand(*motion.rotations.shape[:2], 3, generator=gen,
                                                      dtype=torch.float64) - 1))  # fmt: skip
    return motion.copy(rotations=quat_multiply(motion.rotations, turn))


def _whole_history_yaw(rig, rot, pelvis, fps, start):
    """How each step had found its headings: those of every frame so far, then the last ones taken."""
    return forecast._yaw_of(rig, rot, pelvis, fps)[start:]


@pytest.fixture(scope="module")
def walk(learn_files):
    return skelanim.load(learn_files[0])  # Bandai walk, 30 fps, a static dummy root


def test_facing_directions_are_per_frame(walk):
    """What the window relies on: ``facing_directions`` smooths nothing over time, so a part of a motion has the
    whole motion's headings there."""
    for motion in (walk, _perturbed(walk, 1, 1.0)):
        whole = facing_directions(motion, up_axis=1)
        for first, last in ((0, 1), (5, 30), (77, 78), (100, motion.num_frames)):
            torch.testing.assert_close(facing_directions(motion[first:last], up_axis=1), whole[first:last],
                                       rtol=0, atol=1e-12)  # fmt: skip


def test_a_windows_headings_are_the_whole_historys_bits(walk):
    for motion in (walk, _perturbed(walk, 1, 1.0)):
        rig = _rig(motion)
        frames = MotionDataset(clips=[clip_from_motion(motion, fps=25.0, name="")], rig=rig, fps=25.0).frames()
        rot, pelvis = frames["rot"], frames["pelvis"]
        for n in range(1, rot.shape[0] + 1, 3):
            everything = forecast._yaw_of(rig, rot[:n], pelvis[:n], 25.0)
            for start in {0, max(0, n - 25), n - 1, n // 2}:
                assert torch.equal(forecast._yaw_from(rig, rot[:n], pelvis[:n], 25.0, start), everything[start:])


@pytest.mark.parametrize("method", ["zero_velocity", "constant_velocity", "gcn"])
def test_the_continuation_is_the_one_from_the_whole_historys_headings(monkeypatch, walk, method):
    from skelanim.learn.predict import Predictor

    model = Predictor.load(None, default="predict_gcn") if method == "gcn" else None
    inputs = {"walk": walk[:100], "short": walk[:20], "perturbed": _perturbed(walk, 2)[:130]}  # short: < 25 frames
    for name, motion in inputs.items():
        rig = None if model is not None else _rig(motion)
        windowed = predict_motion(motion, method=method, model=model, rig=rig, seconds=4.0)
        with monkeypatch.context() as patch:
            patch.setattr(forecast, "_yaw_from", _whole_history_yaw, raising=False)
            whole = predict_motion(motion, method=method, model=model, rig=rig, seconds=4.0)
        assert windowed.num_frames == motion.num_frames + 120, name
        assert torch.equal(windowed.rotations, whole.rotations), name
        assert torch.equal(windowed.root_positions, whole.root_positions), name
        assert torch.equal(windowed.joint_translations, whole.joint_translations), name
        assert windowed.metadata == whole.metadata, name


def test_each_step_computes_headings_of_a_bounded_window_only(monkeypatch, walk):
    """6 predicted seconds: each of the 6 steps had turned the whole history (the input's 177 model frames, then
    25 more each step) into a Motion and its headings; now at most ``observed + YAW_ALIGN - 1`` frames."""
    sizes: list[int] = []
    yaw_of = forecast._yaw_of

    def counted(rig, rot, pelvis, fps):
        sizes.append(rot.shape[0])
        return yaw_of(rig, rot, pelvis, fps)

    monkeypatch.setattr(forecast, "_yaw_of", counted)
    predict_motion(walk, method="constant_velocity", rig=_rig(walk), seconds=6.0)
    assert len(sizes) == 6
    assert max(sizes) <= 25 + getattr(forecast, "YAW_ALIGN", 1) - 1, sizes
