"""Learning commands given motion of another skeleton than the model's, or a model of another kind than the option
names: one line naming the file or the option, exit 2, nothing written (a user-workflow audit found tracebacks from
``predict calibrate`` and ``generate eval``, and ``predict eval --rnn MLP_FOLDER`` scoring an MLP as the GRU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skelanim.cli import main
from skelanim.learn.common import pretrained_dir

XIA_LABELS = r"(?P<style>[a-z]+)_(?P<content>\d+)_\d+$"


def _one_line(code: int, capsys, *needles: str) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.strip().splitlines() if line.startswith("error:")]  # (progress bars)
    assert code == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert captured.out == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_calibrating_a_predictor_on_another_skeletons_motion_is_refused(mocap_dir: Path, tmp_path: Path, capsys):
    out = tmp_path / "cal"
    code = main(["learn", "predict", "calibrate", str(pretrained_dir("predict_mlp")), "--data",
                 str(mocap_dir / "xia_style"), "--labels", "none", "--split", "none", "-o", str(out)])  # fmt: skip
    _one_line(code, capsys, "xia_style", "the predictor works on a 22-joint skeleton", "31 joints")
    assert not out.exists()


def test_evaluating_a_generator_on_another_skeletons_motion_is_refused(mocap_dir: Path, capsys):
    code = main(["learn", "generate", "eval", "--data", str(mocap_dir / "xia_style"), "--labels", XIA_LABELS])
    _one_line(code, capsys, "xia_style", "the generator works on a 22-joint skeleton", "31 joints")


@pytest.mark.parametrize("option", ["--rnn", "--gcn"])
def test_predict_eval_refuses_a_folder_of_another_architecture_for_an_option(mocap_dir: Path, capsys, option):
    mlp = pretrained_dir("predict_mlp")
    code = main(["learn", "predict", "eval", "--data", str(mocap_dir / "bandai_namco_2"), option, str(mlp), "--json"])
    _one_line(code, capsys, f"{mlp} is a mlp predictor, not {option[2:]}", option)


def test_training_into_a_folder_that_holds_a_model_is_refused_and_overwrite_replaces_only_the_same_kind(
    learn_files, tmp_path: Path, capsys
):
    """A new run into a folder holding a model (or a run's state) had replaced it without a word: now one line and
    the folder as it was, unless ``--overwrite``; even then a model of another kind (a recogniser's folder given to
    ``learn predict train``) is refused. ``--overwrite`` removes the replaced run's state, ``--resume`` with it is
    refused."""
    import json
    import shutil

    from skelanim.nn.checkpoint import STATE_NAME

    def refused(args: list[str], words: str) -> None:
        code = main(args)
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
        assert words in errors[0], errors[0]

    folder = tmp_path / "rec"
    shutil.copytree(pretrained_dir("recognize_cnn"), folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    data = [arg for f in learn_files[:3] for arg in ("--data", str(f))]
    train = ["learn", "predict", "train", *data, "--split", "none", "--arch", "mlp", "--max-steps", "1", "--no-progress"]
    refused([*train, "-o", str(folder)], "holds a trained model or an interrupted run")
    refused([*train, "-o", str(folder), "--overwrite"], "holds a skelanim-recognizer model")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    again = tmp_path / "pred"
    assert main([*train, "-o", str(again)]) == 0
    first = (again / "model.safetensors").read_bytes()
    refused([*train, "-o", str(again), "--seed", "1"], "--overwrite replaces it")
    assert (again / "model.safetensors").read_bytes() == first
    refused([*train, "-o", str(again), "--resume", "--overwrite"], "give one")
    (again / STATE_NAME).write_bytes(b"the replaced run's state")
    assert main([*train, "-o", str(again), "--seed", "1", "--overwrite"]) == 0
    assert (again / "model.safetensors").read_bytes() != first
    assert (again / STATE_NAME).read_bytes() != b"the replaced run's state"
    assert json.loads((again / "config.json").read_text())["format"] == "skelanim-predictor"


def test_an_evaluation_on_files_the_model_was_trained_on_says_so(learn_files, tmp_path: Path, capsys):
    """The file split is drawn from the whole ``--data`` list, so evaluating with other data than training's can
    score training files (an audit: bandai_namco_1 alone, 11 of its 23 test files in training) without a word. The
    eval commands now note it, from the files the model's config records."""
    folder = tmp_path / "mlp"
    data = [arg for f in learn_files for arg in ("--data", str(f))]
    train = ["learn", "predict", "train", *data, "--split", "none", "--arch", "mlp", "--max-steps", "1", "--no-progress"]
    assert main([*train, "-o", str(folder)]) == 0
    capsys.readouterr()
    for held_out, noted in (("angry", [folder]), ("happy", [folder, "predict_rnn", "predict_gcn"])):
        # the shipped GRU and DCT-GCN were trained on every style but angry, childish and elderly: happy files in
        evaluate = ["learn", "predict", "eval", *data, "--split", f"style:{held_out}/", "--mlp", str(folder), "--json"]
        assert main(evaluate) == 0
        err = capsys.readouterr().err
        notes = [line for line in err.splitlines() if "test files were in the training data of" in line]
        assert len(notes) == len(noted) and all(any(str(n) in line for line in notes) for n in noted), err
        assert all(line.startswith("note: 2 of the 2 test files") for line in notes)


def test_copies_of_the_training_files_in_another_folder_are_noted_too(learn_files, tmp_path: Path, capsys):
    """Training files are matched by name: the same takes copied into another folder (a review: scored by the
    shipped and the user's models as unseen, without a word) get the note."""
    import shutil

    folder, copies = tmp_path / "mlp", tmp_path / "copies"
    copies.mkdir()
    for f in learn_files:
        shutil.copy(f, copies / Path(f).name)
    data = [arg for f in learn_files for arg in ("--data", str(f))]
    train = ["learn", "predict", "train", *data, "--split", "none", "--arch", "mlp", "--max-steps", "1", "--no-progress"]
    assert main([*train, "-o", str(folder)]) == 0
    capsys.readouterr()
    evaluate = ["learn", "predict", "eval", "--data", str(copies), "--split", "style:angry/", "--mlp", str(folder),
                "--json"]  # fmt: skip
    assert main(evaluate) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "were in the training data of" in line]
    assert len(notes) == 1 and notes[0].startswith(f"note: 2 of the 2 test files were in the training data of {folder}")
    assert notes[0].endswith("give the --data, --split and --seed it was trained with (training's --seed also draws the "
                             "file split)")


def test_predict_eval_retarget_says_a_folder_is_read_for_bvh_files(mocap_files, tmp_path: Path, capsys):
    """A folder of DeepMimic clips with ``--retarget`` had been called one without motion files; the message is
    the one without ``--retarget``: folders are read for BVH, other formats are named one by one."""
    folder = tmp_path / "deepmimic"
    folder.mkdir()
    clip = mocap_files(["deepmimic/humanoid3d_walk.txt"])[0]
    (folder / clip.name).write_bytes(clip.read_bytes())
    assert main(["learn", "predict", "eval", "--data", str(folder), "--labels", "none", "--retarget", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {folder}: no .bvh files") and "name a file of another format" in err
    assert len(err.strip().splitlines()) == 1


def test_predict_eval_retargets_a_lying_clip_in_the_models_frame(mocap_files, capsys):
    """A crawl retargeted onto Bandai-Namco (whose rest pose lies along X) was guessed X-up and refused ("its up
    axis is X, the model's Y"), though retargeting had put it in the model's frame: its up is the model's."""
    crawl = mocap_files(["deepmimic/humanoid3d_crawl.txt"])[0]
    assert main(["learn", "predict", "eval", "--data", str(crawl), "--labels", "none", "--retarget", "--stride", "25",
                 "--json"]) == 0, capsys.readouterr().err  # fmt: skip
    out = capsys.readouterr().out
    assert json.loads(out)["methods"]["zero_velocity"]["mpjpe"][0] > 0
