"""The predictor's input range: each standardised channel the network sees is held inside the range of the
training windows (and their mirror images), and the prediction is moved back by what that moved the last
observed frame. Input like the training data is untouched; input far outside it (another capture source's
motion retargeted onto the rig) no longer reaches the network hundreds of deviations out."""

from __future__ import annotations

import json

import pytest
import torch

import skelanim
from skelanim.cli import main
from skelanim.learn.calibrate import MARGIN, calibrate_input_range
from skelanim.learn.mirror import mirror_frames, rig_mirror
from skelanim.learn.predict import Predictor, PredictTask, reference_windows, train_predictor
from skelanim.learn.predict_eval import evaluate_prediction
from skelanim.learn.predictors import frames_to_vectors
from skelanim.nn.checkpoint import load_model_files, save_model_files
from skelanim.nn.train import TrainConfig


def _random_weights(ds, arch: str) -> Predictor:
    """A predictor with its training statistics and random (non-trivial, non-linear) weights."""
    model = Predictor(arch, ds.rig, arch_options={"blocks": 3} if arch == "mlp" else {"hidden": 16}).eval()
    PredictTask(model, ds, None, stride=25)
    torch.manual_seed(0)
    for p in model.net.parameters():
        p.data.normal_(0.0, 0.05)
    return model


def _unguarded(model: Predictor) -> Predictor:
    """The same model without an input range."""
    twin = Predictor.from_config(model.config())
    twin.load_state_dict({**model.state_dict(), "input_low": torch.full_like(model.input_low, -torch.inf),
                          "input_high": torch.full_like(model.input_high, torch.inf)})  # fmt: skip
    return twin.eval()


def test_the_range_is_the_min_and_max_over_the_training_frames_and_their_mirror_images(tiny_ds):
    model = _random_weights(tiny_ds, "mlp")
    assert torch.isinf(model.input_low).all() and torch.isinf(model.input_high).all()  # no range until calibrated
    windows = tiny_ds.windows(50, 25, pad_short=False)
    rot, pelvis = reference_windows(tiny_ds, windows, 50, 24, model.rig)
    mirrored = frames_to_vectors(*mirror_frames(rot, pelvis, *rig_mirror(model.rig, model.mean_pose())))
    z = torch.cat([model.norm(frames_to_vectors(rot, pelvis)), model.norm(mirrored)]).flatten(0, 1)
    low, high = calibrate_input_range(model, tiny_ds, stride=25, mirror=True, margin=0.0)
    torch.testing.assert_close(low, z.amin(0), atol=1e-4, rtol=1e-5)  # the mirror by rotations, not vectors
    torch.testing.assert_close(high, z.amax(0), atol=1e-4, rtol=1e-5)
    assert torch.equal(model.input_low, low) and torch.equal(model.input_high, high)
    wide = calibrate_input_range(model, tiny_ds, stride=25, mirror=True)  # MARGIN = 0.25 of the width each side
    assert MARGIN == 0.25
    torch.testing.assert_close(wide, (low - 0.25 * (high - low), high + 0.25 * (high - low)))
    plain_low, plain_high = calibrate_input_range(model, tiny_ds, stride=25, mirror=False, margin=0.0)
    assert (plain_low >= low).all() and (plain_high <= high).all()
    assert (plain_low > low + 1e-3).any()  # the mirror images reach where the clips alone do not


@pytest.mark.parametrize("arch", ["rnn", "gcn", "mlp"])
def test_inside_the_range_nothing_changes_and_outside_the_network_sees_the_window_held_in_it(tiny_ds, arch):
    model = _random_weights(tiny_ds, arch)
    calibrate_input_range(model, tiny_ds, stride=25)
    twin = _unguarded(model)
    x = model.window_vectors(tiny_ds, tiny_ds.windows(50, 25, pad_short=False)[1:3])[:, :25]
    with torch.no_grad():
        torch.testing.assert_close(model(x), twin(x), atol=0.0, rtol=0.0)  # training input: untouched
        far = x.clone()
        far[..., 40] += 500 * model.norm.std[40] * torch.linspace(0.5, 1.0, 25)  # a channel far out, and moving
        held = model.norm.inverse(torch.minimum(torch.maximum(model.norm(far), model.input_low), model.input_high))
        want = twin(held) + (far[:, -1:] - held[:, -1:])  # the held window's prediction, from the real last frame
        got, bare = model(far), twin(far)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert float((got - bare).abs().max()) > 1e-2  # without the range it is another prediction


def test_training_stores_the_range_and_models_saved_before_it_load_without_one(tiny_ds, learn_files, tmp_path):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    train_predictor(tiny_ds, None, tmp_path / "m", arch="mlp", stride=25, loop=loop, arch_options={"blocks": 2},
                    task_options={"mirror": True})  # fmt: skip
    trained = Predictor.load(tmp_path / "m")
    low, high = trained.input_low.clone(), trained.input_high.clone()
    assert torch.isfinite(low).all() and (high > low).all()
    torch.testing.assert_close(calibrate_input_range(trained, tiny_ds, stride=25, mirror=True), (low, high))
    tensors, config = load_model_files(tmp_path / "m")  # as written before the range existed
    del tensors["input_low"], tensors["input_high"]
    config.pop("tensors")
    save_model_files(tmp_path / "old", tensors, config)
    old = Predictor.load(tmp_path / "old")
    assert torch.isinf(old.input_low).all() and torch.isinf(old.input_high).all()
    data = [a for f in learn_files for a in ("--data", str(f))]
    args = [
        "learn",
        "predict",
        "calibrate",
        str(tmp_path / "old"),
        *data,
        "--split",
        "none",
        "-o",
        str(tmp_path / "cal"),
    ]
    assert main(args) == 0  # calibrating an old model gives it the range of its training windows
    cal = Predictor.load(tmp_path / "cal")
    torch.testing.assert_close((cal.input_low, cal.input_high), (low, high))
    record = json.loads((tmp_path / "cal" / "config.json").read_text())["training"]["amplitude_calibration"]
    assert record["input_range"] == {"stride": 25, "mirror": True}
    again = [
        "learn",
        "predict",
        "calibrate",
        str(tmp_path / "cal"),
        *data,
        "--split",
        "none",
        "-o",
        str(tmp_path / "cal2"),
    ]
    assert main(again) == 0  # a second calibration keeps the first one's record
    training = json.loads((tmp_path / "cal2" / "config.json").read_text())["training"]
    assert (
        training["earlier_calibrations"] == [record]
        and "earlier_calibrations" not in json.loads((tmp_path / "cal" / "config.json").read_text())["training"]
    )


def test_the_shipped_predictors_continue_cmu_walks_better_with_the_range(mocap_dir):
    """Two CMU walks retargeted onto the Bandai rig (calibrated copy) put channels that Bandai's captures never
    move hundreds of deviations out; held in the training range, the shipped MLP's 80 ms error falls by more
    than a third and the combined predictor beats zero velocity from 80 to 400 ms (level at 560 ms, worse at 1 s)."""
    from skelanim.data import MotionDataset
    from skelanim.data.clips import clip_from_motion
    from skelanim.learn.predict import LEARNED, CombinedPredictor
    from skelanim.retarget import Retargeter

    bandai = skelanim.load(mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh")
    models = {name: Predictor.load(None, default=f"predict_{name}") for name in LEARNED}
    assert all(torch.isfinite(m.input_low).all() for m in models.values())  # shipped with the range
    clips = []
    for name in ("131_01", "131_02"):
        cmu = skelanim.load(mocap_dir / "cmu_cgspeed_max" / f"{name}.bvh")
        clips.append(clip_from_motion(Retargeter(cmu, bandai)(cmu), fps=25, name=name))
    ds = MotionDataset(clips=clips, rig=models["mlp"].rig, fps=25)
    z = models["mlp"].norm(models["mlp"].window_vectors(ds, ds.windows(50, 10, pad_short=False)))
    assert float(z.abs().max()) > 100  # the input the range is for
    guarded = {**models, "combined": CombinedPredictor(list(models.values()))}
    scores = evaluate_prediction(guarded, ds, stride=5)["methods"]
    bare = evaluate_prediction({"mlp": _unguarded(models["mlp"])}, ds, methods=("mlp",), stride=5)["methods"]["mlp"]
    assert scores["mlp"]["mpjpe"][0] < 0.67 * bare["mpjpe"][0]
    combined, zero = scores["combined"]["mpjpe"], scores["zero_velocity"]["mpjpe"]
    assert all(c < 0.97 * zv for c, zv in zip(combined[:4], zero[:4], strict=True))
