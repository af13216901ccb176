"""Hand-checked values for prediction, its scores and continuations, recognition votes, ensembles and generation:
closed forms on hand-built motion (a body that slides and an elbow that bends at known rates), the docstrings'
formulas and boundaries; no recorded outputs. The rig is the shipped predictor's (read from its ``config.json``,
no weights); the motion is built here, so no capture data is needed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from replaying import replaying  # tests/helpers

import skelanim.learn
from skelanim.data.clips import clip_from_motion
from skelanim.data.dataset import MotionDataset
from skelanim.data.rig import Rig

FPS = 25.0
#: Pelvis step per frame across the floor (fraction of the rig height), elbow bend per frame (rad).
STEP, BEND = 0.01, 0.03


@pytest.fixture(scope="module")
def rig() -> Rig:
    config = json.loads(
        (Path(skelanim.learn.__file__).parent / "pretrained" / "predict_rnn" / "config.json").read_text()
    )
    return Rig.from_dict(config["rig"])


def _sliding_bend(rig: Rig, frames: int = 60, step: float = STEP, bend: float = BEND, drop: float = 0.0):
    """Model-joint rotations ``(F, M, 3, 3)`` and pelvis ``(F, 3)``: the rest pose, the pelvis sliding ``step``
    heights a frame along the first horizontal axis (and sinking ``drop`` heights a frame), the left elbow
    (``LowerArm_L``) turning ``bend`` rad a frame about its local z axis, standing: every velocity constant."""
    from skelanim.core.rotations import rotvec_to_matrix

    m = rig.num_joints
    t = torch.arange(frames, dtype=torch.float64)
    rot = torch.eye(3, dtype=torch.float64).expand(frames, m, 3, 3).clone()
    axis = torch.zeros(frames, 3, dtype=torch.float64)
    axis[:, 2] = bend * t
    rot[:, rig.names.index("LowerArm_L")] = rotvec_to_matrix(axis)
    # the rig's bones lie along their joints' local x: the spine turned up, the left leg and arm turned down
    for joint, angle in (("Hips", math.pi / 2), ("UpperLeg_L", math.pi), ("UpperArm_L", math.pi)):
        rot[:, rig.names.index(joint)] = rotvec_to_matrix(torch.tensor([0.0, 0.0, angle], dtype=torch.float64))
    side = 0 if rig.up != 0 else 2
    pelvis = torch.zeros(frames, 3, dtype=torch.float64)
    pelvis[:, rig.up] = (0.7 - drop * t) * rig.height
    pelvis[:, side] = step * t * rig.height
    return rot, pelvis


def _dataset(rig: Rig, rot: torch.Tensor, pelvis: torch.Tensor, **labels: str) -> MotionDataset:
    motion = rig.to_motion(rot, pelvis, FPS)
    clip = clip_from_motion(motion, fps=FPS, up=rig.up, labels=dict(labels) or None)
    return MotionDataset(clips=[clip], rig=rig, fps=FPS)


# ---------------------------------------------------------------------------------------------- prediction scores


def test_baseline_scores_of_a_sliding_body_with_a_bending_elbow_are_the_closed_forms(rig):
    """Every velocity is constant, so constant velocity is exact (all four scores 0) and zero velocity, at future
    frame ``k`` (0-based; ``horizon_frames``: 80 ms is frame 1 at 25 fps), is off by the slide ``(k + 1) STEP``
    for every joint with root motion (``mpjpe_global``, in heights) and, with the elbow still, by nothing else;
    with the elbow bending, by its angle ``(k + 1) BEND`` averaged over the ``M`` joints in ``angle_deg``."""
    from skelanim.learn.predict import HORIZONS_MS
    from skelanim.learn.predict_eval import evaluate_prediction

    rot, pelvis = _sliding_bend(rig, bend=0.0)
    res = evaluate_prediction({}, _dataset(rig, rot, pelvis), rig=rig, stride=5)["methods"]
    ks = [round(h * FPS / 1000) - 1 for h in HORIZONS_MS]  # 80 ms -> frame 1, 1000 ms -> frame 24
    slide = [(k + 1) * STEP for k in ks]
    for key in ("mpjpe", "mpjpe_pose", "angle_deg"):
        assert res["zero_velocity"][key] == pytest.approx([0.0] * 6, abs=1e-6), key
    assert res["zero_velocity"]["mpjpe_global"] == pytest.approx(slide, rel=1e-4)
    for key in ("mpjpe", "mpjpe_pose", "mpjpe_global", "angle_deg"):
        assert res["constant_velocity"][key] == pytest.approx([0.0] * 6, abs=1e-5), key

    rot, pelvis = _sliding_bend(rig)  # the elbow bends too
    res = evaluate_prediction({}, _dataset(rig, rot, pelvis), rig=rig, stride=5)["methods"]
    angle = [math.degrees((k + 1) * BEND) / rig.num_joints for k in ks]
    assert res["zero_velocity"]["angle_deg"] == pytest.approx(angle, rel=1e-3)
    assert res["constant_velocity"]["angle_deg"] == pytest.approx([0.0] * 6, abs=1e-3)
    assert res["constant_velocity"]["mpjpe_global"] == pytest.approx([0.0] * 6, abs=1e-5)
    assert all(z > 0 for z in res["zero_velocity"]["mpjpe"])  # the swinging forearm moves root-relative


class _Recorder:
    """A predictor that records what it is given and holds the last observed frame."""

    def __init__(self, rig: Rig) -> None:
        self.rig, self.observed, self.horizon, self.fps = rig, 25, 25, FPS
        self.seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def predict(self, rot: torch.Tensor, pelvis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        from skelanim.learn.predictors import zero_velocity

        self.seen.append((rot.clone(), pelvis.clone()))
        return zero_velocity(rot, pelvis, self.horizon)


def test_a_learned_predictor_is_given_the_window_relative_to_its_last_observed_frame(rig):
    """``evaluate_prediction`` hands a model the observed second relative to its *last observed* frame (predict
    module docstring): that frame's pelvis is over the origin (the one before it one step behind), and holding it
    scores zero velocity's error exactly."""
    from skelanim.learn.predict_eval import evaluate_prediction

    rot, pelvis = _sliding_bend(rig, bend=0.0)
    model = _Recorder(rig)
    res = evaluate_prediction({"held": model}, _dataset(rig, rot, pelvis), stride=5)["methods"]
    obs_rot, obs_pel = torch.cat([r for r, _ in model.seen]), torch.cat([p for _, p in model.seen])
    assert obs_rot.shape[1] == obs_pel.shape[1] == 25
    floor_axes = [a for a in range(3) if a != rig.up]
    assert float(obs_pel[:, -1, floor_axes].abs().max()) < 1e-6
    assert float((obs_pel[:, -2, floor_axes].norm(dim=-1) - STEP).abs().max()) < 1e-5  # one step behind it
    assert res["held"]["mpjpe_global"] == pytest.approx(res["zero_velocity"]["mpjpe_global"], rel=1e-6)


def test_periodic_continuation_needs_more_than_the_shortest_lag_of_frames():
    """The lags tried are ``shortest <= L < T``: with ``T == shortest`` there is none, and that is refused as the
    docstring's ``ValueError``, not a failure inside."""
    from skelanim.learn.predictors import periodic_continuation

    seq = torch.sin(torch.arange(9, dtype=torch.float64))[None, :, None]
    assert periodic_continuation(seq, 3, shortest=8).shape == (1, 3, 1)  # T = 9: lag 8 only
    with pytest.raises(ValueError, match="more than 8 observed frames, got 8"):
        periodic_continuation(seq[:, :8], 3, shortest=8)


# ---------------------------------------------------------------------------------------------- predictors


def test_an_amplitude_reference_that_is_not_a_number_is_refused(rig):
    """``amplitude_reference must be >= 0``: NaN is not, and would turn on normalisation (it is truthy) and make
    every prediction NaN."""
    from skelanim.learn.predict import Predictor

    with pytest.raises(ValueError, match="amplitude_reference"):
        Predictor("mlp", rig, arch_options={"blocks": 1}, amplitude_reference=float("nan"))
    with pytest.raises(ValueError, match="amplitude_reference"):
        Predictor("mlp", rig, arch_options={"blocks": 1}, amplitude_reference=-0.1)


def test_a_combined_predictor_refuses_models_of_another_frame_rate(rig):
    """``CombinedPredictor`` averages frame vectors frame by frame: models at 25 and 30 fps predict other instants,
    so they are refused (``same_setting``: same skeleton, lengths *and* fps)."""
    from skelanim.learn.predict import CombinedPredictor, Predictor, same_setting

    a = Predictor("mlp", rig, arch_options={"blocks": 1}, fps=25.0)
    b = Predictor("mlp", rig, arch_options={"blocks": 1}, fps=30.0)
    assert same_setting(a, Predictor("gcn", rig, arch_options={"hidden": 4, "blocks": 1}, fps=25.0))
    assert not same_setting(a, b)
    with pytest.raises(ValueError, match="fps"):
        CombinedPredictor([a, b])


# ---------------------------------------------------------------------------------------------- recognition


def _recognizer(rig: Rig, **options):
    from skelanim.learn.recognize import Recognizer

    torch.manual_seed(0)
    return Recognizer("cnn", rig, ["walk", "bow"], [], window=16, fps=FPS,
                      arch_options={"channels": (8, 8), "strides": (1, 2), "dropout": 0.0}, **options).eval()  # fmt: skip


def _labelled(rig: Rig) -> MotionDataset:
    """Three 40-frame files, two ``walk`` and one ``bow``: four 16-frame windows each at stride 8."""
    clips = []
    for i, content in enumerate(("walk", "walk", "bow")):
        rot, pelvis = _sliding_bend(rig, frames=40, step=0.004 * (i + 1), bend=0.02 * (i + 1))
        motion = rig.to_motion(rot, pelvis, FPS)
        clips.append(clip_from_motion(motion, fps=FPS, up=rig.up, name=f"c{i}", labels={"content": content}))
    return MotionDataset(clips=clips, rig=rig, fps=FPS)


def test_per_class_scores_count_files_and_the_file_vote_is_the_mean_of_its_windows(rig):
    """``evaluate_recognizer``: ``per_class[c]["files"]`` is the number of *files* of content ``c`` (2 walks, 1
    bow; each has 4 windows); a file's answer is the arg-max of its windows' mean probability, and the accuracies
    are shares of right answers, counted here by hand."""
    from skelanim.learn.recognize import evaluate_recognizer

    model, ds = _recognizer(rig), _labelled(rig)
    res = evaluate_recognizer(model, ds, stride=8)
    assert res["files"] == 3 and res["windows"] == 12
    assert res["per_class"]["walk"]["files"] == 2 and res["per_class"]["bow"]["files"] == 1
    out = model.embed_dataset(ds, stride=8)
    truth = [0, 0, 1]
    votes = [int(out["probs"][out["windows"][:, 0] == f].mean(0).argmax()) for f in range(3)]
    assert res["top1_files"] == pytest.approx(sum(v == t for v, t in zip(votes, truth)) / 3)
    assert res["per_class"]["walk"]["top1_files"] == pytest.approx(sum(v == 0 for v in votes[:2]) / 2)
    window_truth = torch.tensor(truth)[out["windows"][:, 0]]
    assert res["top1_windows"] == pytest.approx(float((out["probs"].argmax(-1) == window_truth).float().mean()))


def test_a_speed_vote_reads_the_window_speed_times_as_many_frames(rig):
    """``test_speeds=(s,)``: each window's probabilities are those of ``round(window * s)`` frames read from its
    first frame and resampled to the window (``Recognizer`` docstring); ``s = 1.5`` reads 24 frames into 16."""
    from skelanim.learn.joints import resample_features

    model, ds = _recognizer(rig, test_speeds=(1.5,)), _labelled(rig)
    out = model.embed_dataset(ds, stride=8)
    keys = ("rot", "pelvis", "yaw", "positions")
    g = ds.gather(out["windows"], 24, keys=keys)
    read = resample_features(model.inputs(*(g[k].float() for k in keys)), 16)
    torch.testing.assert_close(out["probs"], model.classify(read)[0])
    plain = model.embed_dataset(ds, stride=8, speed_votes=False)["probs"]
    assert float((out["probs"] - plain).abs().max()) > 1e-5  # the vote is another reading (the test can fail)


# ---------------------------------------------------------------------------------------------- continuation


def test_a_continuation_has_round_seconds_times_fps_frames(rig):
    """``predict_motion`` returns ``round(seconds * motion.fps)`` new frames: 0.39 s at 25 fps is 9.75, so 10."""
    from skelanim.learn.forecast import predict_motion

    rot, pelvis = _sliding_bend(rig, frames=40)
    motion = rig.to_motion(rot, pelvis, FPS)
    for seconds, new in ((0.39, 10), (0.41, 10), (0.2, 5)):
        out = predict_motion(motion, method="zero_velocity", rig=rig, seconds=seconds, ground=False)
        assert out.num_frames == 40 + new, seconds


def test_the_floor_lift_of_a_motion_in_other_units_is_in_its_units(rig):
    """A body that sinks at a constant rate, continued at constant velocity, sinks below its input's floor and is
    lifted. The same motion in metres (the rig is in centimetres, size factor 100) is read at the rig's size, so its
    continuation is the centimetre one scaled by 1/100, and so is ``metadata["lift"]`` (the motion's units)."""
    from skelanim.learn.forecast import predict_motion
    from skelanim.ops.normalize import scale

    rot, pelvis = _sliding_bend(rig, frames=40, drop=0.002)
    motion = rig.to_motion(rot, pelvis, FPS)
    out = predict_motion(motion, method="constant_velocity", rig=rig, seconds=0.4)
    lift = torch.tensor(out.metadata["lift"], dtype=torch.float64)
    assert len(lift) == 10 and float(lift[-1]) > 0.01 * rig.height  # it sank: the test can fail
    small = predict_motion(scale(motion, 0.01), method="constant_velocity", rig=rig, seconds=0.4)
    torch.testing.assert_close(torch.tensor(small.metadata["lift"], dtype=torch.float64), lift / 100,
                               rtol=1e-4, atol=1e-6 * rig.height)  # fmt: skip
    torch.testing.assert_close(small.root_positions[40:], out.root_positions[40:] / 100, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------- generation


def test_latent_draws_scale_their_noise_by_the_temperature(rig):
    """``draw_latent``: ``mean_c + L_c (temperature * eps)``; with one seed, the draw at temperature ``t`` is the
    mean plus ``t`` times the draw's offset at 1, and at 0 the mean itself."""
    from skelanim.learn.generate import Generator

    gen = Generator(rig, ["walk", "bow"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    with torch.no_grad():
        gen.latent_mean.copy_(torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0]]))
        gen.latent_chol[0] = torch.tensor([[2.0, 0, 0, 0], [0.5, 1.0, 0, 0], [0, 0, 0.3, 0], [0, 0, 1.0, 1.0]])
    content = torch.tensor([0, 0, 1])

    def draw(t: float) -> torch.Tensor:
        return gen.draw_latent(content, torch.Generator().manual_seed(7), t)

    eps = torch.randn(3, 4, generator=torch.Generator().manual_seed(7))
    want = gen.latent_mean[content] + (gen.latent_chol[content] @ eps[:, :, None])[:, :, 0]
    torch.testing.assert_close(draw(1.0), want)
    torch.testing.assert_close(draw(0.0), gen.latent_mean[content])
    torch.testing.assert_close(draw(0.4) - gen.latent_mean[content], 0.4 * (want - gen.latent_mean[content]))
    # sample(): the decoded draw, so at temperature 0 the decoded prior means
    cold = gen.sample(["walk", "walk", "bow"], ["happy"] * 3, temperature=0.0)
    with torch.no_grad():
        means = gen.norm.inverse(
            gen.vae.decode(gen.latent_mean[content], gen.condition(["walk", "walk", "bow"], ["happy"] * 3))
        )
    torch.testing.assert_close(cold, means)
    warm = gen.sample(
        ["walk", "walk", "bow"], ["happy"] * 3, temperature=1.0, generator=torch.Generator().manual_seed(7)
    )
    assert float((warm - cold).abs().max()) > 1e-4  # the noise reaches the samples (the test can fail)


def test_interpolation_runs_from_the_first_motions_latent_and_condition_to_the_seconds(rig):
    """``interpolate``: step ``i`` of ``n`` decodes ``(1 - t) z_a + t z_b`` under ``(1 - t) c_a + t c_b``,
    ``t = i / (n - 1)``: the first step is motion ``a``'s own reconstruction, the last ``b``'s, the middle the
    midpoint of both the latents and the conditions."""
    from skelanim.learn.generate import Generator

    torch.manual_seed(0)
    gen = Generator(rig, ["walk", "bow"], ["happy", "sad"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    gen.eval()
    rot_a, pel_a = _sliding_bend(rig, frames=20)
    rot_b, pel_b = _sliding_bend(rig, frames=20, step=0.0, bend=-0.05)
    a, b = rig.to_motion(rot_a, pel_a, FPS), rig.to_motion(rot_b, pel_b, FPS)
    steps = gen.interpolate(a, b, ("walk", "happy"), ("bow", "sad"), 3)
    with torch.no_grad():
        za, zb = gen.encode_motion(a, "walk", "happy"), gen.encode_motion(b, "bow", "sad")
        ca, cb = gen.condition(["walk"], ["happy"]), gen.condition(["bow"], ["sad"])
        z = torch.stack([za, 0.5 * (za + zb), zb])
        c = torch.cat([ca, 0.5 * (ca + cb), cb])
        want = gen.to_motions(gen.norm.inverse(gen.vae.decode(z, c)))
    assert [m.metadata["interpolation"] for m in steps] == [0.0, 0.5, 1.0]
    for got, expected in zip(steps, want, strict=True):
        torch.testing.assert_close(got.rotations, expected.rotations, atol=1e-5, rtol=0)
    assert float((steps[0].rotations - steps[2].rotations).abs().max()) > 1e-3  # the ends differ (it can fail)


def test_a_motion_in_other_units_has_the_latent_of_its_original(rig):
    """``encode_motion`` reads motion in other units at the rig's size: a metres copy of a centimetre motion (size
    factor 100) has the original's posterior mean."""
    from skelanim.learn.generate import Generator
    from skelanim.ops.normalize import scale

    torch.manual_seed(0)
    gen = Generator(rig, ["walk"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2}).eval()
    gen.norm.set(torch.zeros(gen.norm.mean.shape), torch.full(gen.norm.std.shape, 0.05))  # features that tell
    motion = rig.to_motion(*_sliding_bend(rig, frames=20), FPS)
    z = gen.encode_motion(motion, "walk", "happy")
    torch.testing.assert_close(gen.encode_motion(scale(motion, 0.01), "walk", "happy"), z, atol=1e-4, rtol=1e-4)
    far = gen.encode_motion(rig.to_motion(*_sliding_bend(rig, frames=20, step=0.02, bend=-0.05), FPS), "walk", "happy")
    assert float((far - z).abs().max()) > 1e-3  # another motion, another latent (the test can fail)


def _replaying_generator(rig: Rig, ds: MotionDataset, length: int):
    """A generator that 'samples' ``ds``'s windows (their raw frame vectors) in turn, whatever is asked for."""
    from skelanim.learn.generate import Generator

    gen = Generator(rig, ["walk"], ["happy"], length=length, options={"latent": 4, "hidden": 8, "embed": 2})
    return replaying(gen, ds, ds.windows(length, 8))

def _distances(rot, pelvis, yaw, positions):
    """Recogniser stand-in: each window's mean hand-to-foot distances, and always the first content."""
    d = torch.stack([(positions[..., 8, :] - positions[..., f, :]).norm(dim=-1) for f in (15, 19)], -1).float()
    return torch.nn.functional.one_hot(torch.zeros(len(d), dtype=torch.long), 1).float(), d.mean(1)


def test_generation_limb_speed_and_skating_are_the_closed_forms_whatever_the_set_sizes(rig):
    """The sliding body with the bending elbow: relative to the pelvis only the left hand moves, on a circle of
    radius ``r`` (the forearm) at ``BEND`` rad a frame, so the mean joint speed is ``2 r sin(BEND / 2) fps / M``
    heights a second; the feet stay at their lowest and slide ``STEP`` heights a frame, so foot skating is
    ``STEP fps``. Both hold for the training set (7 windows, replayed as samples) and the test set (3 windows):
    each score is a mean over its own set's windows."""
    from skelanim.learn.generate_eval import evaluate_generation

    train = _dataset(rig, *_sliding_bend(rig, frames=64), content="walk", style="happy")
    test = _dataset(rig, *_sliding_bend(rig, frames=32), content="walk", style="happy")
    gen = _replaying_generator(rig, train, 16)
    res = evaluate_generation(gen, _distances, train, test, stride=8)
    assert res["samples"] == 7 and res["real_windows"] == 3
    pos = test.gather(test.windows(16, 8), 16, keys=("positions",))["positions"]
    r = float((pos[0, 0, rig.names.index("Hand_L")] - pos[0, 0, rig.names.index("LowerArm_L")]).norm()) / rig.height
    speed = 2 * r * math.sin(BEND / 2) * FPS / rig.num_joints
    assert res["limb_speed_real"] == pytest.approx(speed, rel=1e-3)
    assert res["limb_speed"] == pytest.approx(speed, rel=1e-3)
    assert res["foot_skating_real"] == pytest.approx(STEP * FPS, rel=1e-3)
    assert res["foot_skating"] == pytest.approx(STEP * FPS, rel=1e-3)
    assert res["contact_share_real"] == pytest.approx(1.0) and res["contact_share"] == pytest.approx(1.0)


def test_a_plan_conditions_each_window_on_the_segment_holding_the_middle_of_its_new_frames(rig):
    """``sample_plan`` with 16-frame windows overlapping by 7: the first window adds frames 0-15 (middle 7.5), the
    second frames 16-24 (middle 20), the third 25-33 (middle 29). With ``walk`` for frames 0-19 and ``bow`` from
    frame 20 on, frame 20 is the bow's first: the windows ask for walk, bow, bow."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.generate_long import sample_plan

    torch.manual_seed(0)
    gen = Generator(rig, ["walk", "bow"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    asked: list[list[int]] = []
    draw = gen.draw_latent

    def recording(content, generator=None, temperature=1.0):
        asked.append(content.tolist())
        return draw(content, generator, temperature)

    gen.draw_latent = recording  # type: ignore[method-assign]
    x = sample_plan(gen, [("walk", "happy", 20), ("bow", "happy", 10)], overlap=7, steps=1,
                    generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert x.shape[:2] == (1, 30)
    assert asked == [[0], [1], [1]]


def test_the_reference_motion_stands_at_the_training_mean_in_file_units(rig):
    """``model_reference_motion``: one frame in the normaliser's mean pose, the pelvis at the mean frame vector's
    last three numbers, which are in heights, so at ``0.7 * rig.height`` file units for a mean height of 0.7."""
    from skelanim.learn.forecast import model_reference_motion
    from skelanim.learn.predict import Predictor
    from skelanim.learn.predictors import frames_to_vectors

    model = Predictor("mlp", rig, arch_options={"blocks": 1})
    rot, pelvis = _sliding_bend(rig, frames=1)
    pelvis = pelvis / rig.height  # (0, 0.7, 0) in heights
    model.norm.set(frames_to_vectors(rot, pelvis)[0].float(), torch.ones(6 * rig.num_joints + 3))
    reference = model_reference_motion(model)
    assert reference.num_frames == 1
    hips = reference.positions()[0, rig.skeleton.names.index("Hips")].double()
    torch.testing.assert_close(hips, pelvis[0] * rig.height, atol=1e-3, rtol=1e-5)


def test_the_floor_lift_through_the_models_skeleton_is_in_the_motions_units(rig):
    """``predict_retargeted`` of the sinking body in metres, through the model's skeleton (here its own, in
    centimetres): the continuation and its ``metadata["lift"]`` are the direct centimetre ones divided by 100
    (the lift on the model's skeleton is scaled by the heights, :func:`predict_motion`'s docstring)."""
    from skelanim.learn.forecast import predict_motion, predict_retargeted
    from skelanim.learn.predict import Predictor
    from skelanim.learn.predictors import frames_to_vectors
    from skelanim.ops.normalize import scale

    rot, pelvis = _sliding_bend(rig, frames=40, drop=0.002)
    motion = rig.to_motion(rot, pelvis, FPS)
    model = Predictor("mlp", rig, arch_options={"blocks": 1})  # the baseline runs; the model gives its skeleton
    model.norm.set(frames_to_vectors(rot[:1], pelvis[:1] / rig.height)[0].float(), torch.ones(6 * rig.num_joints + 3))
    direct = predict_motion(motion, method="constant_velocity", rig=rig, seconds=0.4)
    lift = torch.tensor(direct.metadata["lift"], dtype=torch.float64)
    assert float(lift[-1]) > 0.01 * rig.height  # it sank and was lifted (the test can fail)
    through = predict_retargeted(scale(motion, 0.01), method="constant_velocity", model=model, seconds=0.4)
    torch.testing.assert_close(torch.tensor(through.metadata["lift"], dtype=torch.float64), lift / 100,
                               rtol=1e-4, atol=1e-6 * rig.height)  # fmt: skip
    torch.testing.assert_close(through.positions()[40:] * 100, direct.positions()[40:], rtol=0, atol=1e-3)


def test_the_contact_skating_term_is_a_mean_over_every_foot_step(rig: Rig) -> None:
    """``Generator.skating`` with the real window's contacts: every foot slides 0.01 heights a frame along x (0.25
    heights/s at 25 fps), planted in the first 5 of 9 frames only: 4 planted steps of 8 per foot, so the term is
    0.25 * 4 / 8 = 0.125 (a mean over all steps, the unplanted counting 0; over the planted ones only it would be
    0.25). Feet moving straight up while planted cost nothing."""
    from skelanim.learn.generate import Generator

    gen = Generator(rig, ["walk"], ["happy"], length=16, options={"latent": 4, "hidden": 8, "embed": 2})
    frames, joints, feet = 9, rig.num_joints, len(rig.feet)
    pos = torch.zeros(1, frames, joints, 3, dtype=torch.float64)
    pos[..., 0] = 0.01 * torch.arange(frames, dtype=torch.float64)[None, :, None]
    contacts = torch.zeros(1, frames, feet)
    contacts[:, :5] = 1.0
    assert float(gen.skating(pos, contacts)) == pytest.approx(0.25 * 4 / 8, abs=1e-12)
    upward = torch.zeros_like(pos)
    upward[..., rig.up] = 0.01 * torch.arange(frames, dtype=torch.float64)[None, :, None]
    assert float(gen.skating(upward, contacts)) == 0.0
