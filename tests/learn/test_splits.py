"""The named splits the learning commands share (``--split``)."""

from __future__ import annotations

import pytest

from skelanim.learn.common import split_dataset


def test_style_split_with_named_test_styles(tiny_ds):
    """``style:S1,S2`` tests on exactly those styles and trains on the rest; plain ``style`` keeps the
    shipped held-out styles (angry, elderly here)."""
    named = split_dataset(tiny_ds, "style:happy, normal")
    assert sorted(set(named["test"].labels("style"))) == ["happy", "normal"]
    assert sorted(set(named["train"].labels("style"))) == ["angry", "elderly"]
    assert named["val"] is None  # no proud or youthful clip among the six
    shipped = split_dataset(tiny_ds, "style")
    assert sorted(set(shipped["test"].labels("style"))) == ["angry", "elderly"]
    assert sorted(named["test"].names + named["train"].names) == sorted(tiny_ds.names)


def test_style_split_with_named_validation_styles_or_none(tiny_ds):
    """``style:T/V`` validates on the styles V; a bare ``/`` leaves no validation part, so every style but
    the test ones trains."""
    named = split_dataset(tiny_ds, "style:happy/normal")
    assert sorted(set(named["val"].labels("style"))) == ["normal"]
    assert sorted(set(named["train"].labels("style"))) == ["angry", "elderly"]
    bare = split_dataset(tiny_ds, "style:happy/")
    assert bare["val"] is None and sorted(set(bare["train"].labels("style"))) == ["angry", "elderly", "normal"]
    assert sorted(bare["train"].names + bare["test"].names) == sorted(tiny_ds.names)
    with pytest.raises(ValueError, match="happy cannot both test and validate"):
        split_dataset(tiny_ds, "style:happy/happy,normal")
    with pytest.raises(ValueError, match="no files of style sleepy"):
        split_dataset(tiny_ds, "style:happy/sleepy")


def test_style_split_names_a_style_without_files(tiny_ds):
    with pytest.raises(ValueError, match=r"no files of style sleepy; styles here: angry, elderly, happy, normal"):
        split_dataset(tiny_ds, "style:happy,sleepy")
    with pytest.raises(ValueError, match="none named"):
        split_dataset(tiny_ds, "style:")
    with pytest.raises(ValueError, match="unknown split"):
        split_dataset(tiny_ds, "styles")
    every = split_dataset(tiny_ds, "none")
    assert every["train"] is tiny_ds and every["test"] is tiny_ds and every["val"] is None


def test_cli_reports_a_bad_style_split_without_a_traceback(learn_files, tmp_path, capsys):
    from skelanim.cli import main

    data = [arg for f in learn_files for arg in ("--data", str(f))]
    code = main(["learn", "predict", "train", *data, "--split", "style:sleepy", "--out", str(tmp_path / "m"),
                 "--no-progress", "--threads", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "no files of style sleepy" in err and "Traceback" not in err
    assert not (tmp_path / "m").exists()


def test_training_refuses_a_style_split_with_nothing_to_validate_on(learn_files, tmp_path, capsys):
    """The six clips have no proud or youthful file: the default split left validation empty, and training then
    picked its epochs on training windows reported as validation. Training says so in one line and writes nothing;
    ``style:S1,.../`` (no validation, by choice) and evaluation are still fine."""
    from skelanim.cli import main

    out = tmp_path / "model"
    data = [arg for f in learn_files for arg in ("--data", str(f))]
    args = ["learn", "predict", "train", *data, "--arch", "mlp", "--epochs", "1", "--max-steps", "1",
            "--no-progress", "-o", str(out)]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "validates on the styles proud, youthful" in err[0] and not out.exists()
    assert main([*args, "--split", "style:angry/"]) == 0


def test_resume_refuses_other_arguments(learn_files, tmp_path, capsys):
    """A run resumed with another batch size, seed or learning rate went on without a word and recorded the new
    ones as its recipe; another architecture ended in torch's list of 200 missing keys. Both are one line now,
    and the same arguments resume (an extra --max-steps may change: it only stops the run)."""
    from skelanim.cli import main

    out = tmp_path / "model"
    data = [arg for f in learn_files for arg in ("--data", str(f))]
    base = ["learn", "predict", "train", *data, "--split", "style:angry/", "--epochs", "2", "--no-progress",
            "-o", str(out)]  # fmt: skip
    assert main([*base, "--arch", "mlp", "--batch-size", "16", "--max-steps", "1"]) == 0
    capsys.readouterr()
    for changed, said in ((["--batch-size", "32"], "batch_size 16 -> 32"), (["--batch-size", "16", "--seed", "5"],
                          "seed 0 -> 5"), (["--batch-size", "16", "--arch", "rnn"], "another model"),
                          (["--batch-size", "16", "--mirror"], "task_options.mirror false -> true"),
                          (["--batch-size", "16", "--reverse", "0.5"], "task_options.reverse 0.0 -> 0.5")):  # fmt: skip
        arch = [] if "--arch" in changed else ["--arch", "mlp"]
        assert main([*base, *arch, *changed, "--max-steps", "2", "--resume"]) == 2
        err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("note:")]
        assert len(err) == 1 and said in err[0], err
    assert main([*base, "--arch", "mlp", "--batch-size", "16", "--max-steps", "2", "--resume"]) == 0
    capsys.readouterr()  # generate train with nothing to resume from started afresh; it says so, as the others do
    assert main(["learn", "generate", "train", *data, "-o", str(tmp_path / "gen"), "--resume"]) == 2
    assert "no training state to resume from" in capsys.readouterr().err and not (tmp_path / "gen").exists()


def test_a_predictor_trained_at_another_frame_rate_predicts_one_second_of_it(learn_files, tmp_path, capsys):
    """``--fps 30`` crashed after its first epoch (IndexError: 1 s is frame 29 of a 25-frame horizon) and left an
    empty folder; the models now observe and predict one second at the frame rate given (30 frames). A frame rate
    that is not one (NaN, 0) is refused naming ``--fps`` before any data is read."""
    import json

    from skelanim.cli import main

    data = [arg for f in learn_files for arg in ("--data", str(f))]
    for arch in ("mlp", "rnn"):
        out = tmp_path / arch
        args = ["learn", "predict", "train", *data, "--arch", arch, "--fps", "30", "--split", "style:angry/",
                "--epochs", "1", "--max-steps", "1", "--batch-size", "8", "--no-progress", "-o", str(out)]  # fmt: skip
        assert main(args) == 0, capsys.readouterr().err
        config = json.loads((out / "config.json").read_text())
        assert (config["observed"], config["horizon"], config["fps"]) == (30, 30, 30.0)
    capsys.readouterr()  # the runs' notes (stderr)
    for bad in ("nan", "0"):
        assert main(["learn", "recognize", "train", *data, "--fps", bad, "-o", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--fps" in err[0] and not (tmp_path / "r").exists()
