"""Test-time playback-speed votes of recognisers: windows read faster or slower, resampled to the window
length, their content probabilities averaged."""

from __future__ import annotations

import json

import pytest
import torch

from skelanim.cli import main
from skelanim.errors import FormatError
from skelanim.learn.ensemble import combine_recognizers
from skelanim.learn.joints import IN_CHANNELS, RATE_CHANNELS, resample_features
from skelanim.learn.recognize import Recognizer
from skelanim.learn.recognize_train import train_recognizer
from skelanim.nn.checkpoint import save_model_files
from skelanim.nn.train import TrainConfig


def test_resampling_a_steady_motion_reads_it_faster():
    """Every channel linear in time (slope ``b``), rates constant: read 2T - 1 frames into T, frame k is input
    frame 2k, so values follow ``a + 2 b k`` and the rates double."""
    frames, joints = 16, 3
    t = torch.arange(2 * frames - 1, dtype=torch.float64)
    a = torch.randn(joints, IN_CHANNELS, dtype=torch.float64)
    b = torch.randn(joints, IN_CHANNELS, dtype=torch.float64)
    x = (a + b * t[:, None, None])[None]  # (1, 2T - 1, M, C)
    rate = list(RATE_CHANNELS)
    x[..., rate] = b[:, rate]  # the per-frame change of a steady motion
    out = resample_features(x, frames)
    k = torch.arange(frames, dtype=torch.float64)[:, None, None]
    want = a + 2 * b * k
    want[..., rate] = 2 * b[:, rate]
    assert out.shape == (1, frames, joints, IN_CHANNELS)
    torch.testing.assert_close(out[0], want.expand(frames, joints, IN_CHANNELS))
    torch.testing.assert_close(resample_features(x[:, :frames], frames), x[:, :frames])  # same length: unchanged


@pytest.fixture(scope="module")
def pair(tiny_ds, tmp_path_factory):
    root = tmp_path_factory.mktemp("speeds")
    options = {"channels": (8, 8), "strides": (1, 2)}
    for seed in (0, 1):
        torch.manual_seed(seed)
        loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, seed=seed)
        train_recognizer(tiny_ds, None, root / f"m{seed}", window=32, stride=16, loop=loop, arch_options=options)
    return root / "m0", root / "m1"


def test_speed_votes_average_the_probabilities_of_each_speed_and_keep_the_features(tiny_ds, pair):
    model = Recognizer.load(pair[0])
    model.label_spaces = None  # the votes alone (label spaces restrict the voted probabilities: test_label_spaces)
    plain = model.embed_dataset(tiny_ds, stride=16)
    by_speed = {}
    for speeds in ((0.5,), (1.6,), (0.5, 1.6)):
        model.test_speeds = speeds
        by_speed[speeds] = model.embed_dataset(tiny_ds, stride=16)
        torch.testing.assert_close(by_speed[speeds]["features"], plain["features"])  # the window's own
    torch.testing.assert_close(model.embed_dataset(tiny_ds, stride=16, speed_votes=False)["probs"], plain["probs"])
    mean = 0.5 * (by_speed[(0.5,)]["probs"] + by_speed[(1.6,)]["probs"])
    torch.testing.assert_close(by_speed[(0.5, 1.6)]["probs"], mean)
    assert float((by_speed[(0.5,)]["probs"] - plain["probs"]).abs().max()) > 1e-4  # another reading, another vote
    with pytest.raises(ValueError, match="positive"):
        Recognizer.from_config({**model.config(), "test_speeds": [0.0, 1.0]})


def test_combine_sets_the_speeds_members_must_share_them(pair, tmp_path, capsys):
    assert main(["learn", "recognize", "combine", str(pair[0]), str(pair[1]), "-o", str(tmp_path / "e"),
                 "--test-speed", "0.8", "--test-speed", "1", "--test-speed", "1.25"]) == 0  # fmt: skip
    assert json.loads((tmp_path / "e" / "config.json").read_text())["test_speeds"] == [0.8, 1.0, 1.25]
    assert Recognizer.load(tmp_path / "e").test_speeds == (0.8, 1.0, 1.25)
    fast = Recognizer.load(pair[1])
    fast.test_speeds = (1.5,)
    save_model_files(tmp_path / "fast", fast.state_dict(), fast.config())
    with pytest.raises(FormatError, match="test_speeds"):
        combine_recognizers([pair[0], tmp_path / "fast"], tmp_path / "x")
    capsys.readouterr()
    assert main(["learn", "recognize", "combine", str(pair[0]), str(pair[1]), "-o", str(tmp_path / "y"),
                 "--test-speed", "-1"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "positive" in err and "Traceback" not in err and not (tmp_path / "y").exists()
