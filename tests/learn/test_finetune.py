"""Fine-tuning (``--init``): a predictor or recogniser trained further starts from its folder's weights, keeps its
input statistics, calibration and test-time settings, learns the new data, and an ensemble is fine-tuned member by
member; the options the model keeps, another skeleton, rate or kind are refused in one line before any training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from skelanim.cli import main
from skelanim.data import MotionDataset
from skelanim.learn.calibrate import calibrate_input_range
from skelanim.learn.common import pretrained_dir
from skelanim.learn.ensemble import combine_predictors, combine_recognizers
from skelanim.learn.predict import Predictor, PredictTask, train_predictor
from skelanim.learn.recognize import Recognizer
from skelanim.learn.recognize_train import train_recognizer
from skelanim.nn.checkpoint import read_model_config
from skelanim.nn.train import TrainConfig

GRU = {"hidden": 16, "attention": 8}
TINY = {"channels": (8, 8), "strides": (1, 2)}
STATISTICS = ("norm.mean", "norm.std", "step_scale")


def on_rig(ds: MotionDataset, model: Predictor | Recognizer) -> MotionDataset:
    """``ds``'s clips on the model's rig (as the CLI reads a fine-tuning's data): a rig measured on other clips has
    another height."""
    return MotionDataset(clips=ds.clips, rig=model.rig, fps=ds.fps)


def loop(seed: int = 0, lr: float = 1e-3, epochs: int = 1, max_steps: int | None = None) -> TrainConfig:
    return TrainConfig(epochs=epochs, batch_size=8, lr=lr, warmup_steps=1, progress=False, seed=seed, max_steps=max_steps)


@pytest.fixture(scope="module")
def halves(tiny_ds: MotionDataset) -> tuple[MotionDataset, MotionDataset]:
    """The walks and bows (first training), and the runs with one walk (fine-tuning): other statistics."""
    return tiny_ds.subset([0, 1, 2, 3]), tiny_ds.subset([0, 4, 5])


@pytest.fixture(scope="module")
def gru(halves, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gru") / "p"
    train_predictor(halves[0], None, out, arch="rnn", stride=25, loop=loop(), arch_options=GRU)
    return out


@pytest.fixture(scope="module")
def gru_pair(gru, halves, tmp_path_factory) -> Path:
    """An ensemble of the GRU and a second seed of it."""
    root = tmp_path_factory.mktemp("pair")
    train_predictor(halves[0], None, root / "p1", arch="rnn", stride=25, loop=loop(seed=1), arch_options=GRU)
    combine_predictors([gru, root / "p1"], root / "ens")
    return root / "ens"


def test_a_finetuned_predictor_starts_from_its_init_and_keeps_its_statistics(gru, halves, tmp_path):
    init = Predictor.load(gru)
    before = {k: v.clone() for k, v in init.state_dict().items()}
    fresh = tmp_path / "fresh"  # the same data from scratch: other statistics, so keeping them can be seen
    train_predictor(halves[1], None, fresh, arch="rnn", stride=25, loop=loop(max_steps=1), arch_options=GRU)
    out = tmp_path / "tuned"
    train_predictor(on_rig(halves[1], init), None, out, stride=25, loop=loop(lr=1e-9, max_steps=2), init=init,
                    init_record={"folder": str(gru)})  # fmt: skip
    tuned, scratch = Predictor.load(out).state_dict(), Predictor.load(fresh).state_dict()
    for key in STATISTICS:
        assert torch.equal(tuned[key], before[key]), key
        assert not torch.allclose(scratch[key], before[key], rtol=1e-3), key
    for key, value in before.items():  # two steps at lr 1e-9: the init's weights
        if key.startswith("net."):
            torch.testing.assert_close(tuned[key], value, atol=1e-6, rtol=0)
    # the input range covers the first training's and the new data's (a fine-tuning set alone is narrower)
    assert bool((tuned["input_low"] <= before["input_low"]).all() and (tuned["input_high"] >= before["input_high"]).all())
    low, high = calibrate_input_range(Predictor.load(gru), on_rig(halves[1], init), stride=25, mirror=False)  # the new data's
    assert bool((tuned["input_low"] <= low).all() and (tuned["input_high"] >= high).all())
    assert not bool((low <= before["input_low"]).all() and (high >= before["input_high"]).all())  # not one of them
    assert not bool((before["input_low"] <= low).all() and (before["input_high"] >= high).all())
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["init"] == {"folder": str(gru)}
    assert config["arch_options"] == Predictor.load(gru).config()["arch_options"]


def test_finetuning_a_predictor_lowers_its_loss_on_the_new_data(gru, halves, tmp_path):
    init = Predictor.load(gru)
    new_data = on_rig(halves[1], init)
    probe = PredictTask(Predictor.load(gru), new_data, None, stride=25, statistics=False)
    batch = probe.batch(torch.arange(probe.num_samples()), torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = float(probe.loss(init.eval(), batch)[0])
    train_predictor(new_data, None, tmp_path / "tuned", stride=25, loop=loop(lr=3e-3, epochs=6), init=init)
    with torch.no_grad():
        after = float(probe.loss(Predictor.load(tmp_path / "tuned"), batch)[0])
    assert after < 0.9 * before, (before, after)


def test_the_predictor_keeps_its_own_statistics_only(gru, halves, tmp_path):
    new_data = on_rig(halves[1], Predictor.load(gru))
    with pytest.raises(ValueError, match="amplitude"):
        PredictTask(Predictor.load(gru), new_data, None, stride=25, statistics=False, amplitude_norm=True)
    with pytest.raises(ValueError, match="ensemble"):
        pair = combine_predictors([gru, gru], tmp_path / "twice")
        train_predictor(new_data, None, tmp_path / "x", stride=25, loop=loop(), init=pair)
    at_30 = MotionDataset([c.path for c in halves[1].clips], fps=30.0, rig=new_data.rig)
    with pytest.raises(ValueError, match="30 fps, the predictor at 25"):
        train_predictor(at_30, None, tmp_path / "y", stride=25, loop=loop(), init=Predictor.load(gru))
    assert not (tmp_path / "y").exists()


def test_cli_finetunes_an_ensemble_member_by_member_and_resumes(gru_pair, learn_files, tmp_path, capsys):
    out = tmp_path / "ens"
    args = ["learn", "predict", "train", "--data", str(learn_files[4]), "--data", str(learn_files[5]),
            "--data", str(learn_files[0]), "--split", "none", "--init", str(gru_pair), "--stride", "25",
            "--batch-size", "8", "--epochs", "2", "--lr", "1e-9", "--no-progress", "-o", str(out)]  # fmt: skip
    assert main([*args, "--max-steps", "1"]) == 0
    assert all((out / "members" / str(i) / "train_state.safetensors").is_file() for i in (0, 1))
    assert main(args) == 2  # a new run over them is refused (it would replace the members' states)
    assert "--resume" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "the 2 fine-tuned members combined" in printed and str(out / "members" / "1") in printed
    tuned, init = Predictor.load(out), Predictor.load(gru_pair)  # finished: loads without a warning
    assert tuned.members == 2 and tuned.config()["arch_options"] == init.config()["arch_options"]
    state, start = tuned.state_dict(), init.state_dict()
    for i in (0, 1):  # each member from its own weights (the two differ), seed + i
        member = [k for k in start if k.startswith(f"net.members.{i}.") and start[k].is_floating_point()]
        for key in member:
            torch.testing.assert_close(state[key], start[key], atol=1e-5, rtol=0)
        record = json.loads((out / "members" / str(i) / "config.json").read_text())["training"]
        assert record["init"]["member"] == i and record["seed"] == i
    first = [k for k in start if k.startswith("net.members.0.") and start[k].is_floating_point()]
    assert any(not torch.allclose(start[k], start[k.replace(".0.", ".1.", 1)], atol=1e-3) for k in first)


@pytest.mark.parametrize(
    ("extra", "words"),
    [(["--hidden", "8"], "--hidden"), (["--test-mirror"], "--test-mirror"), (["--arch", "gcn"], "--arch"),
     (["--fps", "30"], "25 fps"), (["--amplitude-norm"], "--amplitude-norm")],
)
def test_cli_refuses_what_the_init_model_keeps(gru, learn_files, tmp_path, capsys, extra, words):
    out = tmp_path / "x"
    code = main(["learn", "predict", "train", "--data", str(learn_files[4]), "--split", "none", "--init", str(gru),
                 "-o", str(out), *extra])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_cli_refuses_another_kind_and_another_skeleton(gru, learn_files, mocap_dir, tmp_path, capsys):
    code = main(["learn", "recognize", "train", "--data", str(learn_files[4]), "--split", "none", "--init", str(gru),
                 "-o", str(tmp_path / "x")])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "skelanim-recognizer" in err and str(gru) in err and len(err.strip().splitlines()) == 1
    xia = min((mocap_dir / "xia_style").glob("*.bvh"))
    code = main(["learn", "predict", "train", "--data", str(xia), "--labels", "none", "--split", "none", "--init",
                 "shipped", "--arch", "mlp", "--no-progress", "-o", str(tmp_path / "y")])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and xia.name in err and "--init" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.fixture(scope="module")
def walk_bow(halves, tmp_path_factory) -> Path:
    """A tiny ST-GCN that knows walk and bow."""
    out = tmp_path_factory.mktemp("rec") / "r"
    train_recognizer(halves[0], None, out, window=32, stride=16, loop=loop(), arch_options=TINY)
    return out


@pytest.mark.filterwarnings("ignore:.*unfinished training run")
def test_a_finetuned_recogniser_takes_the_datas_classes_keeping_the_rows_it_knows(walk_bow, tiny_ds, tmp_path):
    init = Recognizer.load(walk_bow)
    before = init.state_dict()
    out = tmp_path / "tuned"
    torch.manual_seed(0)
    train_recognizer(on_rig(tiny_ds, init), None, out, stride=16, loop=loop(lr=1e-9, max_steps=1), init=init)
    tuned = Recognizer.load(out)
    assert tuned.contents.names == ("bow", "run", "walk") and init.contents.names == ("bow", "walk")
    assert tuned.window == init.window == 32 and tuned.arch_options == init.arch_options
    state = tuned.state_dict()
    for key in ("norm.mean", "norm.std"):
        assert torch.equal(state[key], before[key])
    for head in ("content_head.weight", "content_head.bias"):
        new, old = state[f"net.{head}"], before[f"net.{head}"]
        torch.testing.assert_close(new[[0, 2]], old, atol=1e-6, rtol=0)  # bow and walk: the init's rows
        assert not torch.allclose(new[1], old[0], atol=1e-3) and not torch.allclose(new[1], old[1], atol=1e-3)
    for key, value in before.items():  # the body of the network is the init's (batch norms' running statistics
        if "head" not in key and "running_" not in key and value.is_floating_point():  # follow the new data)
            torch.testing.assert_close(state[key], value, atol=1e-6, rtol=0)


def test_finetuning_a_recogniser_ensemble_keeps_each_members_options(walk_bow, halves, tmp_path, capsys):
    centred = tmp_path / "centred"
    train_recognizer(halves[0], None, centred, window=32, stride=16, loop=loop(seed=1),
                     arch_options={**TINY, "centre": True})  # fmt: skip
    pair = tmp_path / "pair"
    combine_recognizers([walk_bow, centred], pair, test_speeds=[0.8, 1.0, 1.25])
    out = tmp_path / "tuned"
    files = [str(c.path) for c in halves[0].clips]
    assert main(["learn", "recognize", "train", *[a for f in files for a in ("--data", f)], "--split", "none",
                 "--init", str(pair), "--stride", "16", "--batch-size", "8", "--epochs", "1", "--no-progress",
                 "-o", str(out)]) == 0  # fmt: skip
    tuned = Recognizer.load(out)
    assert tuned.members == 2 and tuned.member_options == [{}, {"centre": True}]
    assert tuned.test_speeds == (0.8, 1.0, 1.25) and tuned.window == 32
    assert main(["learn", "recognize", "train", "--data", files[0], "--split", "none", "--init", str(pair),
                 "--window", "64", "-o", str(tmp_path / "x")]) == 2  # fmt: skip
    assert "--window" in capsys.readouterr().err and not (tmp_path / "x").exists()


@pytest.mark.filterwarnings("ignore:.*unfinished training run")
def test_the_shipped_predictor_and_recogniser_can_be_finetuned(learn_files, tmp_path, capsys):
    data = [a for f in learn_files[:2] + learn_files[4:] for a in ("--data", str(f))]
    common = ["--split", "none", "--init", "shipped", "--epochs", "1", "--max-steps", "1", "--batch-size", "4",
              "--no-progress"]  # fmt: skip
    assert main(["learn", "predict", "train", *data, *common, "--arch", "mlp", "-o", str(tmp_path / "mlp")]) == 0
    shipped, tuned = Predictor.load(None, default="predict_mlp"), Predictor.load(tmp_path / "mlp")
    assert tuned.members == shipped.members == 4 and tuned.amplitude_votes == shipped.amplitude_votes
    assert tuned.amplitude_reference == shipped.amplitude_reference and tuned.test_mirror
    for key in STATISTICS:
        assert torch.equal(tuned.state_dict()[key], shipped.state_dict()[key].float())
    assert tuned.net.members[0].fc_in.weight.dtype == torch.float32  # shipped float16, trained in float32
    # the calibration it keeps is named in each member's record (the combined record had dropped it)
    calibrated = read_model_config(pretrained_dir("predict_mlp") / "config.json")["training"]["amplitude_calibration"]
    record = read_model_config(tmp_path / "mlp" / "config.json")["training"]
    assert [m["init"]["amplitude_calibration"] for m in record["members"]] == [calibrated] * 4
    assert main(["learn", "recognize", "train", *data, *common, "-o", str(tmp_path / "rec")]) == 0
    rec = Recognizer.load(tmp_path / "rec")
    assert rec.members == 2 and rec.contents.names == ("run", "walk") and rec.test_speeds == (0.8, 1.0, 1.25)


@pytest.fixture(scope="module")
def turning_root(learn_files, tmp_path_factory) -> Path:
    """Two Bandai takes whose static ``joint_Root`` turns 0.05 degrees a frame about up: a rig measured on them has
    its body root at 0, the models' at 1 (``Hips``)."""
    import math

    import skelanim
    from skelanim.core.rotations import axis_angle_to_quat, quat_multiply

    folder = tmp_path_factory.mktemp("turning")
    for path in (learn_files[0], learn_files[4]):
        motion = skelanim.load(path)
        angle = torch.arange(motion.num_frames, dtype=torch.float64) * math.radians(0.05)
        turn = axis_angle_to_quat(torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64).expand(len(angle), 3), angle)
        rotations = motion.rotations.clone()
        rotations[:, 0] = quat_multiply(turn, rotations[:, 0])
        skelanim.save(motion.copy(rotations=rotations), folder / path.name)
    return folder


@pytest.mark.filterwarnings("ignore:.*unfinished training run")
def test_the_data_is_read_on_the_init_models_rig(gru, turning_root, tmp_path, capsys):
    measured = MotionDataset(turning_root, fps=25.0, label_parser=None, cache=False)
    assert measured.rig.root == 0 and Predictor.load(gru).rig.root == 1
    with pytest.raises(ValueError, match=r"body root 0 against 1.*rig=model.rig"):  # the API says how
        train_predictor(measured, None, tmp_path / "api", stride=25, loop=loop(), init=Predictor.load(gru))
    out = tmp_path / "cli"  # the CLI reads it on the model's rig (it had been a size-mismatch traceback)
    assert main(["learn", "predict", "train", "--data", str(turning_root), "--labels", "none", "--split", "none",
                 "--init", str(gru), "--stride", "25", "--batch-size", "4", "--max-steps", "2", "--no-progress",
                 "-o", str(out)]) == 0  # fmt: skip
    assert Predictor.load(out).rig.root == 1


def test_overwrite_clears_an_earlier_fine_tuning_so_that_resume_cannot_mix_it_in(gru, gru_pair, learn_files, tmp_path,
                                                                                  capsys):  # fmt: skip
    out = tmp_path / "out"
    base = ["learn", "predict", "train", "--data", str(learn_files[4]), "--data", str(learn_files[5]), "--split", "none",
            "--stride", "25", "--batch-size", "8", "--epochs", "1", "--no-progress", "-o", str(out)]  # fmt: skip
    assert main([*base, "--init", str(gru_pair), "--max-steps", "1"]) == 0  # an unfinished ensemble fine-tuning
    assert (out / "members" / "1" / "train_state.safetensors").is_file()
    assert main([*base, "--init", str(gru), "--overwrite"]) == 0  # one network over it: the members go
    assert not (out / "members").exists() and (out / "train_state.safetensors").is_file()
    assert main([*base, "--init", str(gru_pair), "--overwrite"]) == 0  # an ensemble over a single run: its state goes
    assert not (out / "train_state.safetensors").exists() and Predictor.load(out).members == 2
    assert main([*base, "--init", str(gru), "--resume"]) != 0  # nothing of a single run's to resume
    capsys.readouterr()
    assert main([*base, "--init", "shipped", "--arch", "rnn", "--resume"]) == 2  # not the start of the run here
    assert f"started from {gru_pair}, not from --init shipped" in capsys.readouterr().err
    fresh = tmp_path / "fresh"
    assert main([*base[:-1], str(fresh), "--init", str(gru_pair), "--resume"]) != 0
    err = capsys.readouterr().err
    assert "no fine-tuned member to resume" in err and len(err.strip().splitlines()) == 1


def test_the_init_model_settings_are_checked_before_the_data(learn_files, halves, tmp_path, capsys):
    with_path = tmp_path / "path"
    train_recognizer(halves[0], None, with_path, window=32, stride=16, loop=loop(), arch="cnn", path=True)
    code = main(["learn", "recognize", "train", "--data", str(learn_files[0]), "--split", "none", "--init",
                 str(with_path), "--turn", "0.5", "-o", str(tmp_path / "x")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--init model's" in err and "Traceback" not in err and not (tmp_path / "x").exists()
    code = main(["learn", "recognize", "train", "--data", str(learn_files[0]), "--split", "none", "--init",
                 str(with_path), "-o", str(with_path), "--resume"])  # fmt: skip
    assert code == 2 and "is the output folder" in capsys.readouterr().err


def test_a_generators_gan_stage_init_reads_the_data_on_its_rig(learn_files, turning_root, tmp_path):
    """The generator's ``--init`` (its GAN stage from a trained generator) reads the data on the generator's rig as
    well: on the turning-root takes it had been a size-mismatch traceback."""
    common = ["--split", "none", "--window", "16", "--stride", "16", "--vae-epochs", "1", "--gan-epochs", "1",
              "--batch-size", "4", "--threads", "1", "--no-progress"]  # fmt: skip
    first = tmp_path / "first"
    assert main(["learn", "generate", "train", "--data", str(learn_files[0]), "--data", str(learn_files[4]),
                 *common, "-o", str(first)]) == 0  # fmt: skip
    assert main(["learn", "generate", "train", "--data", str(turning_root), *common, "--init", str(first),
                 "-o", str(tmp_path / "second")]) == 0  # fmt: skip
