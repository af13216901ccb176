"""Options of the learning commands checked up front, and the corner cases a user audit found: one line naming the
option or the file, exit 2, no traceback and no empty output folder; generators with a short window or without
styles usable by ``skelanim generate``; notes on stderr."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import skelanim
from skelanim.cli import main
from skelanim.learn.common import pretrained_dir
from skelanim.learn.generate import Generator
from skelanim.nn.checkpoint import save_model_files

SMALL = {"latent": 8, "hidden": 16, "embed": 4}


def _one_line(code: int, capsys, *needles: str) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.strip().splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _generator(folder: Path, contents, styles, *, length: int = 16, options: dict | None = None) -> Path:
    """An untrained generator folder on the shipped generator's rig (its prior the standard normal)."""
    torch.manual_seed(0)
    gen = Generator(Generator.load().rig, contents, styles, length=length, options=SMALL if options is None else options)
    save_model_files(folder, gen.state_dict(), gen.config())
    return folder


@pytest.mark.parametrize(("args", "option", "said"), [
    (["--decoder", "foo"], "--decoder", "expected 'conv' or 'transformer', got 'foo'"),
    (["--padding", "foo"], "--padding", "expected 'zeros' or 'replicate', got 'foo'"),
    (["--window", "60"], "--window", "must be a multiple of 8"),
    (["--decoder", "transformer", "--padding", "replicate"], "--padding", "transformer decoder has none"),
    (["--decoder", "transformer", "--z-first"], "--z-first", "transformer decoder has none"),
    (["--decoder", "transformer", "--z-every"], "--z-every", "transformer decoder has none"),
    (["--beta", "nan"], "--beta", "nan is not a number"),  # a CLI audit: NaN had reached config.json
    (["--adversarial", "-1"], "--adversarial", "greater than or equal to 0"),
    (["--init", "INIT", "--gan-epochs", "0"], "--init", "--gan-epochs 0"),
    (["--init", "INIT", "--window", "16"], "--init", "--padding 'replicate', this run has 'zeros'"),
])  # fmt: skip
def test_generate_train_checks_its_options_before_the_data(tmp_path, capsys, args, option, said):
    """These had been ValueError tracebacks after the data was read (or, for the transformer decoder's, options
    ignored without a word); now one line naming the option, before any data (here: none exists)."""
    init = _generator(tmp_path / "init", ["walk"], ["happy"], options={"padding": "replicate", "z_every": True})
    out = tmp_path / "out"
    argv = ["learn", "generate", "train", "--data", str(tmp_path / "no-such-data"), "-o", str(out), "--no-progress"]
    line = _one_line(main([*argv, *[str(init) if a == "INIT" else a for a in args]]), capsys, option, said)
    assert "no-such-data" not in line and not out.exists()


def test_generate_train_refuses_an_init_of_other_classes_naming_them(learn_files, tmp_path, capsys):
    init = _generator(tmp_path / "init", ["fly", "walk"], ["happy"], length=64, options={})
    out = tmp_path / "out"
    data = [arg for f in learn_files[:4] for arg in ("--data", str(f))]
    code = main(["learn", "generate", "train", *data, "--split", "none", "--init", str(init), "--z-first",
                 "-o", str(out), "--no-progress"])  # fmt: skip
    _one_line(code, capsys, "--init", "content classes fly, walk", "has bow, walk")
    assert not out.exists()


def test_recognize_train_checks_the_architecture_before_the_data(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["learn", "recognize", "train", "--data", str(tmp_path / "none"), "--arch", "foo", "-o", str(out)])
    _one_line(code, capsys, "--arch", "unknown architecture 'foo'; choose from stgcn, cnn")
    assert not out.exists()


def test_generate_with_a_16_frame_generator_writes_one_window_and_chains_more(tmp_path, capsys):
    """A generator trained with ``--window 16`` had failed every time: "overlap must be between 1 and 15 frames,
    got 16", the CLI's default overlap."""
    model = _generator(tmp_path / "g16", ["walk"], ["normal"])
    assert main(["generate", "--model", str(model), "--content", "walk", "-n", "1", "-o", str(tmp_path / "a")]) == 0
    assert skelanim.load(tmp_path / "a" / "walk_normal_00.bvh").num_frames == 16
    assert main(["generate", "--model", str(model), "--content", "walk", "--seconds", "2", "-n", "1",
                 "-o", str(tmp_path / "b")]) == 0  # fmt: skip
    assert skelanim.load(tmp_path / "b" / "walk_normal_00.bvh").num_frames == 50


def test_a_generator_without_styles_generates_without_one(learn_files, tmp_path, capsys):
    """A content-only label pattern trains a generator whose one style is "": ``skelanim generate`` had asked for
    style 'normal' ("unknown style 'normal'; known: ") and refused ``--style ""``; it needs no style now."""
    model = _generator(tmp_path / "plain", ["bow", "walk"], [""])
    out = tmp_path / "out"
    assert main(["generate", "--model", str(model), "--content", "walk", "-n", "2", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["walk_nostyle_00.bvh", "walk_nostyle_01.bvh"]
    _one_line(main(["generate", "--model", str(model), "--content", "walk", "--style", "happy", "-o", str(tmp_path / "x")]),
              capsys, "--style", "trained without styles")  # fmt: skip
    assert not (tmp_path / "x").exists()
    walk, bow = tmp_path / "my walk.bvh", tmp_path / "take.bvh"
    shutil.copy(learn_files[0], walk)
    shutil.copy(learn_files[2], bow)
    assert main(["generate", "--model", str(model), "--interpolate", str(walk), "--interpolate", str(bow),
                 "--content", "walk", "-n", "2", "-o", str(tmp_path / "i")]) == 0  # fmt: skip
    assert len(list((tmp_path / "i").glob("interp_*.bvh"))) == 2


def test_a_generator_without_the_style_normal_asks_for_a_style_naming_its_own(tmp_path, capsys):
    """A generator of styles 1, 2, 3 (a regex over numbered subjects): without ``--style`` the default 'normal' had
    been refused as "unknown style 'normal'", a word the user never typed; the message now says it is the default
    and names the generator's styles, and nothing is written."""
    model = _generator(tmp_path / "numbered", ["walk"], ["1", "2", "3"])
    out = tmp_path / "out"
    _one_line(main(["generate", "--model", str(model), "--content", "walk", "-o", str(out)]), capsys, "--style",
              "this generator has no style 'normal', the default; give one of 1, 2, 3")  # fmt: skip
    assert not out.exists()
    assert main(["generate", "--model", str(model), "--content", "walk", "--style", "2", "-n", "1", "-o", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["walk_2_00.bvh"]


def test_generate_train_on_one_short_clip_skips_the_fid_and_leaves_no_empty_folder(learn_files, tmp_path, capsys,
                                                                                    monkeypatch):  # fmt: skip
    """One 40-frame clip: one window, too few for the validation FID, had failed after a full epoch ("features
    must be (N >= 2, D), got (1, 256)") and left an empty output folder."""
    data = tmp_path / "short"
    data.mkdir()
    skelanim.save(skelanim.load(learn_files[0])[:40], data / learn_files[0].name)
    out = tmp_path / "out"
    argv = ["learn", "generate", "train", "--data", str(data), "--split", "none", "--batch-size", "1", "--window", "64",
            "--vae-epochs", "1", "--gan-epochs", "0", "--no-progress"]  # fmt: skip
    assert main([*argv, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "too few for the validation FID" in err and (out / "model.safetensors").is_file()
    assert json.loads((out / "config.json").read_text())["training"]["best"].get("val_fid") is None

    def failing(*args, **kwargs):  # a run that fails after creating its stage folder, before writing into it
        (tmp_path / "out2" / "vae").mkdir(parents=True)
        raise skelanim.errors.TrainingDataError("no good")

    monkeypatch.setattr("skelanim.learn.generate_train.train_generator", failing)
    _one_line(main([*argv, "-o", str(tmp_path / "out2")]), capsys, "no good")
    assert not (tmp_path / "out2").exists()


def test_a_baseline_on_another_skeleton_is_not_called_trained(mocap_files, tmp_path, capsys):
    cmu = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    line = _one_line(main(["predict", str(cmu), "--method", "constant_velocity", "-o", str(tmp_path / "p.bvh")]),
                     capsys, "works on a 22-joint skeleton", "--retarget")  # fmt: skip
    assert "trained" not in line


def test_combining_predictors_of_other_frame_rates_names_the_rates(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(pretrained_dir("predict_mlp"), a)
    shutil.copytree(pretrained_dir("predict_mlp"), b)
    config = json.loads((b / "config.json").read_text())
    (b / "config.json").write_text(json.dumps({**config, "fps": 120.0}))
    _one_line(main(["learn", "predict", "combine", str(a), str(b), "-o", str(tmp_path / "c")]), capsys,
              str(b), "'fps' differs", "(120.0 against 25.0)")  # fmt: skip
    assert not (tmp_path / "c").exists()


def test_the_no_validation_note_goes_to_stderr(capsys):
    from skelanim.learn.common import keep_without_validation
    from skelanim.nn.train import TrainConfig

    loop = keep_without_validation(TrainConfig(epochs=1, batch_size=1, lr=1e-3), validated=False)
    captured = capsys.readouterr()
    assert loop.keep == "last" and captured.out == "" and "note: no validation windows" in captured.err


@pytest.mark.parametrize("args", [["--arch", "gcn", "--half-period"], ["--arch", "gcn", "--gcn-pad", "velocity",
                                  "--half-period"], ["--arch", "rnn", "--half-period"]])  # fmt: skip
def test_predict_train_refuses_a_half_period_without_a_periodic_continuation(tmp_path, capsys, args):
    """`--half-period` with the DCT-GCN's default velocity pad, or a GRU without `--anchor`, had been stored as
    true and not used; the shipped recipes (rnn with --anchor, gcn with --gcn-pad periodic) pass this check."""
    code = main(["learn", "predict", "train", "--data", str(tmp_path / "none"), "-o", str(tmp_path / "out"), *args])
    _one_line(code, capsys, "--half-period", "needs --anchor (rnn) or --gcn-pad periodic (gcn)")
    assert not (tmp_path / "out").exists()


def test_recognize_train_refuses_a_window_longer_than_every_clip(learn_files, tmp_path, capsys):
    """A CLI audit: --window 100000 was padded out of every clip until memory ran out (2,000 frames took 1.67 GB)."""
    code = main(["learn", "recognize", "train", "--data", str(learn_files[0]), "--data", str(learn_files[1]),
                 "--split", "none", "-o", str(tmp_path / "r"), "--window", "100000", "--no-progress"])  # fmt: skip
    _one_line(code, capsys, "--window", "100000 frames is longer than every training clip")
    assert not (tmp_path / "r").exists()


def test_recognize_eval_notes_content_labels_the_model_does_not_know(learn_files, tmp_path, capsys):
    """A learning audit: a label pattern that read the dataset name as the content scored every file 0 without a
    word; they still count as wrong (as the library defines), and the command now says why."""
    args = ["learn", "recognize", "eval", "--data", str(learn_files[0]), "--split", "none", "--json"]
    assert main([*args, "--labels", "(?P<content>[^_]+)_(?P<style>[^_]+)"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["top1_files"] == 0.0
    assert "note: 1 content label(s) of the test files are not the model's (dataset-1)" in captured.err
    assert main(args) == 0 and "not the model's" not in capsys.readouterr().err
