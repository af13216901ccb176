"""Inference options of predictors. Amplitude normalisation: an observed window that moves less than the
training windows' median is continued as if it moved that much, and the prediction is shrunk back by the same
factor. Test-time mirror: the prediction is averaged with the mirrored-back prediction of the mirror image."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from skelanim.cli import main
from skelanim.errors import FormatError
from skelanim.learn.calibrate import calibrate_amplitude
from skelanim.learn.ensemble import combine_predictors
from skelanim.learn.mirror import mirror_frames, rig_mirror
from skelanim.learn.predict import Predictor, PredictTask, reference_windows, train_predictor
from skelanim.learn.predictors import AMPLITUDE_FLOOR, amplitude_factor, window_amplitude
from skelanim.nn.checkpoint import save_model_files
from skelanim.nn.train import TrainConfig


def test_window_amplitude_is_the_rms_distance_from_the_mean_frame():
    z = torch.randn(3, 7, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    centre, size = window_amplitude(z)
    a = z.numpy()
    for b in range(3):  # a loop over windows in numpy
        mean = a[b].mean(axis=0)
        assert np.allclose(centre[b, 0].numpy(), mean)
        assert size[b, 0, 0].item() == pytest.approx(np.sqrt(((a[b] - mean) ** 2).mean()))
    assert centre.shape == (3, 1, 5) and size.shape == (3, 1, 1)


def test_amplitude_factor_shrinks_only_smaller_windows_and_at_most_tenfold():
    size = torch.tensor([0.0, 0.01, 0.2, 0.5, 2.0])
    assert AMPLITUDE_FLOOR == 0.1
    assert torch.allclose(amplitude_factor(size, 0.5), torch.tensor([0.1, 0.1, 0.4, 1.0, 1.0]))


def _trained_statistics(ds, arch: str) -> Predictor:
    """A predictor with its training statistics and random (non-trivial, non-linear) weights."""
    options = {"blocks": 3} if arch == "mlp" else {"hidden": 16}
    model = Predictor(arch, ds.rig, arch_options=options).eval()
    PredictTask(model, ds, None, stride=25)
    torch.manual_seed(0)
    for p in model.net.parameters():
        p.data.normal_(0.0, 0.05)
    return model


@pytest.mark.parametrize("arch", ["rnn", "gcn", "mlp"])
def test_a_shrunk_window_is_predicted_as_the_full_window_shrunk(tiny_ds, arch):
    """With the reference at a window's own amplitude, the window shrunk about its mean frame by ``a`` is
    predicted as the window's prediction shrunk by ``a`` about that frame; a window that moves as much or more
    is predicted as without normalisation."""
    model = _trained_statistics(tiny_ds, arch)
    x = model.window_vectors(tiny_ds, tiny_ds.windows(50, 25, pad_short=False)[1:2])[:, :25]
    centre = x.mean(1, keepdim=True)
    small = centre + 0.3 * (x - centre)
    with torch.no_grad():
        plain_full, plain_small = model(x), model(small)
        model.amplitude_reference = float(window_amplitude(model.norm(x))[1])
        full, got = model(x), model(small)
        larger = centre + 2.0 * (x - centre)
        torch.testing.assert_close(model(larger), Predictor.forward(_off(model), larger))
    want = centre + 0.3 * (full - centre)
    torch.testing.assert_close(full, plain_full)  # factor 1: the window itself is predicted as before
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    assert float((plain_small - want).abs().max()) > 1e-3  # without normalisation it is not (the test can fail)


def _off(model: Predictor) -> Predictor:
    """The same network without amplitude normalisation."""
    twin = Predictor.from_config({**model.config(), "amplitude_reference": 0.0})
    twin.load_state_dict(model.state_dict())
    return twin.eval()


def test_calibration_is_the_median_window_amplitude_and_training_sets_the_same(tiny_ds):
    model = _trained_statistics(tiny_ds, "rnn")
    assert model.amplitude_reference == 0.0
    reference = calibrate_amplitude(model, tiny_ds, stride=25)
    windows = tiny_ds.windows(50, 25, pad_short=False)
    assert len(windows) < 2000  # every window is in the sample
    x = model.window_vectors(tiny_ds, windows)[:, :25].double().numpy()
    z = (x - model.norm.mean.double().numpy()) / model.norm.std.double().numpy()
    sizes = np.sort([np.sqrt(((w - w.mean(axis=0)) ** 2).mean()) for w in z])
    assert reference == pytest.approx(sizes[(len(sizes) - 1) // 2], rel=1e-5)  # the (lower) median
    trained = Predictor("rnn", tiny_ds.rig, arch_options={"hidden": 16})
    PredictTask(trained, tiny_ds, None, stride=25, amplitude_norm=True)
    assert trained.amplitude_reference == pytest.approx(reference, rel=1e-6)


def test_reference_is_saved_and_members_must_share_it(tiny_ds, tmp_path):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    for name, on in (("a", True), ("b", True), ("c", False)):
        train_predictor(tiny_ds, None, tmp_path / name, stride=25, loop=loop, arch_options={"hidden": 8},
                        task_options={"amplitude_norm": on})  # fmt: skip
    a = Predictor.load(tmp_path / "a")
    assert a.amplitude_reference > 0 and Predictor.load(tmp_path / "c").amplitude_reference == 0
    assert combine_predictors([tmp_path / "a", tmp_path / "b"], tmp_path / "ab").amplitude_reference == a.amplitude_reference
    with pytest.raises(FormatError, match="amplitude_reference"):
        combine_predictors([tmp_path / "a", tmp_path / "c"], tmp_path / "ac")


def test_cli_calibrates_a_copy_and_keeps_the_training_record(tiny_ds, learn_files, tmp_path, capsys):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    train_predictor(tiny_ds, None, tmp_path / "m", stride=25, loop=loop, arch_options={"hidden": 8}, command="train it")
    data = [a for f in learn_files for a in ("--data", str(f))]
    args = ["learn", "predict", "calibrate", str(tmp_path / "m"), *data, "--split", "none", "--stride", "25"]
    assert main([*args, "-o", str(tmp_path / "cal")]) == 0
    config = json.loads((tmp_path / "cal" / "config.json").read_text())
    expected = calibrate_amplitude(Predictor.load(tmp_path / "m"), tiny_ds, stride=25)
    assert config["amplitude_reference"] == pytest.approx(expected, rel=1e-6)
    assert config["training"]["command"] == "train it" and config["training"]["amplitude_calibration"]["files"] == 6
    assert json.loads((tmp_path / "m" / "config.json").read_text())["amplitude_reference"] == 0.0  # source untouched
    capsys.readouterr()
    long = Predictor("rnn", tiny_ds.rig, horizon=2000, arch_options={"hidden": 8})  # longer than every clip
    save_model_files(tmp_path / "long", long.state_dict(), long.config())
    assert main(["learn", "predict", "calibrate", str(tmp_path / "long"), *data, "--split", "none", "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "no clip is 2025 frames long" in err and "Traceback" not in err and not (tmp_path / "x").exists()


@pytest.mark.parametrize("arch", ["rnn", "gcn", "mlp"])
def test_test_mirror_makes_the_prediction_of_a_mirror_image_the_mirror_image_of_the_prediction(tiny_ds, arch):
    model = _trained_statistics(tiny_ds, arch)
    model.amplitude_reference = 0.4
    index, sign = model.frame_mirror()
    x = model.window_vectors(tiny_ds, tiny_ds.windows(50, 25, pad_short=False)[:3])[:, :25]
    assert torch.equal(x[..., index][..., index] * sign[index] * sign, x)  # an involution
    windows = tiny_ds.windows(50, 25, pad_short=False)[:3]
    rot, pelvis = reference_windows(tiny_ds, windows, 50, 24, tiny_ds.rig)
    reflection = rig_mirror(model.rig, model.mean_pose())
    m_rot, m_pel = mirror_frames(rot[:, :25], pelvis[:, :25], *reflection)  # rotations mirrored, not vectors
    for on in (False, True):
        model.test_mirror = on
        direct = model.predict_vectors(rot[:, :25], pelvis[:, :25])
        mirrored = model.predict_vectors(m_rot, m_pel)
        gap = float((mirrored - direct[..., index] * sign).abs().max())
        assert (gap < 1e-4) if on else (gap > 1e-3)  # equivariant with it, not without (random weights)


def test_calibrate_sets_test_mirror_and_members_must_share_it(tiny_ds, learn_files, tmp_path):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    for name in ("a", "b"):
        train_predictor(tiny_ds, None, tmp_path / name, stride=25, loop=loop, arch_options={"hidden": 8},
                        test_mirror=name == "a")  # fmt: skip
    assert Predictor.load(tmp_path / "a").test_mirror and not Predictor.load(tmp_path / "b").test_mirror
    with pytest.raises(FormatError, match="test_mirror"):
        combine_predictors([tmp_path / "a", tmp_path / "b"], tmp_path / "ab")
    data = [a for f in learn_files for a in ("--data", str(f))]
    base = ["learn", "predict", "calibrate", str(tmp_path / "b"), *data, "--split", "none", "--stride", "25"]
    assert main([*base, "-o", str(tmp_path / "on"), "--test-mirror"]) == 0
    assert main([*base, "-o", str(tmp_path / "same")]) == 0
    assert Predictor.load(tmp_path / "on").test_mirror and not Predictor.load(tmp_path / "same").test_mirror


def test_cli_calibrates_with_the_models_own_stride_and_seed(tiny_ds, learn_files, tmp_path):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, seed=3)
    train_predictor(tiny_ds, None, tmp_path / "m", stride=25, loop=loop, arch_options={"hidden": 8})
    data = [a for f in learn_files for a in ("--data", str(f))]
    assert main(["learn", "predict", "calibrate", str(tmp_path / "m"), *data, "--split", "none", "-o", str(tmp_path / "c")]) == 0
    config = json.loads((tmp_path / "c" / "config.json").read_text())
    record = config["training"]["amplitude_calibration"]
    assert record["stride"] == 25 and record["seed"] == 3  # read from the model's training record
    model = Predictor.load(tmp_path / "m")
    assert config["amplitude_reference"] == pytest.approx(calibrate_amplitude(model, tiny_ds, stride=25), rel=1e-6)
    assert config["amplitude_reference"] != pytest.approx(calibrate_amplitude(model, tiny_ds, stride=4), rel=1e-6)


@pytest.mark.parametrize("arch", ["gcn", "mlp"])
def test_amplitude_votes_average_the_scaled_predictions_scaled_back(tiny_ds, arch):
    model = _trained_statistics(tiny_ds, arch)
    model.amplitude_reference, model.test_mirror = 0.4, True
    rot, pelvis = reference_windows(tiny_ds, tiny_ds.windows(50, 25, pad_short=False)[:3], 50, 24, tiny_ds.rig)
    obs_rot, obs_pel = rot[:, :25], pelvis[:, :25]
    plain = model.predict_vectors(obs_rot, obs_pel)
    model.amplitude_votes = (0.8, 1.25)
    voted = model.predict_vectors(obs_rot, obs_pel)
    # by hand: the observed frame vectors scaled about their mean frame, each predicted (with its mirror image)
    # and scaled back, then the three averaged
    from skelanim.learn.predictors import frames_to_vectors

    x = frames_to_vectors(obs_rot.float(), obs_pel.float())
    c = x.mean(1, keepdim=True)
    assert torch.equal(frames_to_vectors(*x_to_frames(x)), x)  # the helper below inverts frames_to_vectors
    model.amplitude_votes = ()
    by_hand = [plain]
    for s in (0.8, 1.25):
        scaled_rot, scaled_pel = x_to_frames(c + s * (x - c))
        by_hand.append(c + (model.predict_vectors(scaled_rot, scaled_pel) - c) / s)
    torch.testing.assert_close(voted, torch.stack(by_hand).mean(0), atol=1e-5, rtol=0)
    assert float((voted - plain).abs().max()) > 1e-3  # the votes change the prediction (random weights)
    model.amplitude_votes = (0.8, 1.25)
    again = Predictor.from_config(json.loads(json.dumps(model.config())))
    assert again.amplitude_votes == (0.8, 1.25)
    with pytest.raises(ValueError, match="positive scales"):
        Predictor("mlp", tiny_ds.rig, amplitude_votes=(0.0,))


def x_to_frames(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Frame vectors back to the (rotation, pelvis) arguments of ``predict_vectors``, without Gram-Schmidt, so
    that ``frames_to_vectors`` inside gives ``x`` back exactly (scaled 6D vectors are no rotations)."""
    b, t, d = x.shape
    m = (d - 3) // 6
    six = x[..., : 6 * m].reshape(b, t, m, 6)
    rot = torch.stack([six[..., :3], six[..., 3:], torch.zeros_like(six[..., :3])], -1)  # columns a1, a2, 0
    return rot, x[..., 6 * m :]


def test_calibrate_sets_amplitude_votes_and_members_must_share_them(tiny_ds, learn_files, tmp_path):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    for name in ("a", "b"):
        train_predictor(tiny_ds, None, tmp_path / name, stride=25, loop=loop, arch_options={"hidden": 8})
    data = [a for f in learn_files for a in ("--data", str(f))]
    base = ["learn", "predict", "calibrate", str(tmp_path / "a"), *data, "--split", "none", "--stride", "25"]
    assert main([*base, "-o", str(tmp_path / "voted"), "--amplitude-vote", "0.85", "--amplitude-vote", "1.1765"]) == 0
    assert Predictor.load(tmp_path / "voted").amplitude_votes == (0.85, 1.1765)
    assert main([*base, "-o", str(tmp_path / "same")]) == 0
    assert Predictor.load(tmp_path / "same").amplitude_votes == ()
    with pytest.raises(FormatError, match="amplitude_votes"):
        combine_predictors([tmp_path / "voted", tmp_path / "same"], tmp_path / "mixed")
