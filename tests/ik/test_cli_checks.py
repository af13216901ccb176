"""``skelanim ik train`` and ``fit-corrector`` checks a CLI audit asked for: options refused before any training,
each way a train/validation split fails said as such, ``--init`` weights of another architecture or skeleton
named by the options that differ."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import skelanim
from skelanim.cli import main

#: Options of a training run that stops at once (the checks under test come before or instead of training).
TINY = ["--max-steps", "1", "--batch-size", "16", "--max-frames-per-file", "20", "--threads", "1", "--no-progress"]


def _error(capsys) -> str:
    """The one ``error:`` line the last command printed."""
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("option, value", [("--noise", "nan"), ("--noise", "-1"), ("--noise", "inf")])
def test_train_refuses_a_bad_noise_before_training(bandai_files, tmp_path, capsys, option, value):
    """``--noise nan`` trained and wrote a bare NaN into config.json (invalid JSON)."""
    out = tmp_path / "m"
    argv = ["ik", "train", *(a for f in bandai_files for a in ("--data", str(f))), "-o", str(out), *TINY]
    assert main([*argv, option, value]) == 2
    assert option in _error(capsys) and not out.exists()
    from skelanim.ik.train import LossWeights, train

    with pytest.raises(ValueError, match="noise"):  # the library refuses it too, before reading the data
        train(["no-such-file.bvh"], out, weights=LossWeights(noise=float("nan")))


def test_fit_corrector_refuses_an_infinite_ridge(tmp_path, capsys):
    assert main(["ik", "fit-corrector", str(tmp_path / "m"), "--data", "x.bvh", "--ridge", "inf"]) == 2
    assert "--ridge" in _error(capsys)


def test_split_errors_say_what_went_wrong(bandai_files, tmp_path, capsys):
    """One unreadable file is said as its parse error (not "got 0 and 1"); a --val pattern that matches nothing
    says that patterns are globs; one file alone says that training validates on another; --val or --exclude
    are not blamed when neither was given."""
    out = tmp_path / "m"
    text = bandai_files[0].read_text().splitlines()
    text[-1] = "abc " + text[-1].split(" ", 1)[1]
    broken = tmp_path / "broken.bvh"
    broken.write_text("\n".join(text) + "\n")
    assert main(["ik", "train", "--data", str(broken), "-o", str(out), *TINY]) == 2
    line = _error(capsys)
    assert f"{broken}:{len(text)}:" in line and "'abc'" in line
    both = [a for f in bandai_files for a in ("--data", str(f))]
    assert main(["ik", "train", *both, "--val", "walk", "-o", str(out), *TINY]) == 2
    assert "no file matched --val 'walk' (patterns are globs on file names, such as '*walk*')" in _error(capsys)
    assert main(["ik", "train", *both, "--val", "*", "-o", str(out), *TINY]) == 2
    assert "nothing to train on: every file matches --val '*'" in _error(capsys)
    assert main(["ik", "train", "--data", str(bandai_files[0]), "-o", str(out), *TINY]) == 2
    line = _error(capsys)
    assert "one motion file only" in line and "--exclude" not in line
    assert not out.exists()
    model = tmp_path / "ik"
    shutil.copytree(Path(skelanim.__file__).parent / "ik" / "pretrained", model)
    assert main(["ik", "fit-corrector", str(model), "--data", str(broken)]) == 2
    assert f"{broken}:{len(text)}:" in _error(capsys)
    # one file for the corrector is fitted on (the default split kept it for validation: "nothing to fit on")
    assert main(["ik", "fit-corrector", str(model), "--data", str(bandai_files[0]), "--threads", "1"]) == 0
    info = json.loads((model / "refine.json").read_text())
    assert info["train_files"] == 1 and "validation" not in info


def test_init_of_another_architecture_says_which_option(bandai_files, mocap_files, tmp_path, capsys):
    """``--init`` of a --hidden 8 model stopped at "Error(s) in loading state_dict for IKGAT:"."""
    data = [a for f in bandai_files for a in ("--data", str(f))]
    small = tmp_path / "small"
    assert main(["ik", "train", *data, "-o", str(small), "--hidden", "8", "--heads", "2", "--layers", "1", *TINY]) == 0
    capsys.readouterr()
    out = tmp_path / "m"
    assert main(["ik", "train", *data, "-o", str(out), "--init", str(small), "--layers", "1", *TINY]) == 2
    line = _error(capsys)
    assert "trained with --hidden 8 --heads 2 (this run: --hidden 48 --heads 4)" in line and str(small) in line
    cmu = mocap_files(["cmu_cgspeed_max/131_01.bvh", "cmu_cgspeed_max/131_02.bvh"])
    shipped = Path(skelanim.__file__).parent / "ik" / "pretrained"
    assert main(["ik", "train", *(a for f in cmu for a in ("--data", str(f))), "-o", str(out), "--init", str(shipped),
                 *TINY]) == 2  # fmt: skip
    assert "do not fit this data: they are for a skeleton of 22 joints, the data's has 31" in _error(capsys)
    assert not out.exists()


def test_init_keeps_the_root_frame_its_weights_were_trained_on(mocap_files, tmp_path, capsys):
    """A model saved before the root frame looked through CMU's zero-offset hip joints has world-axis features;
    fine-tuning it (``--init``) keeps them, and one saved since keeps its own."""
    cmu = [a for f in mocap_files(["cmu_cgspeed_max/131_01.bvh", "cmu_cgspeed_max/131_02.bvh"]) for a in ("--data", str(f))]
    new = tmp_path / "new"
    assert main(["ik", "train", *cmu, "-o", str(new), "--hidden", "8", "--heads", "2", "--layers", "1", *TINY]) == 0
    config = json.loads((new / "config.json").read_text())
    assert config["architecture"]["root_frame_descendants"] is True
    old = tmp_path / "old"  # as saved before the option: no key
    shutil.copytree(new, old)
    del config["architecture"]["root_frame_descendants"]
    config.pop("weights_file_sha256", None)
    (old / "config.json").write_text(json.dumps(config))
    small = ["--hidden", "8", "--heads", "2", "--layers", "1", *TINY]
    for init, kept in ((old, False), (new, True)):
        out = tmp_path / f"from_{init.name}"
        assert main(["ik", "train", *cmu, "-o", str(out), "--init", str(init), *small]) == 0
        architecture = json.loads((out / "config.json").read_text())["architecture"]
        assert architecture.get("root_frame_descendants", False) is kept  # written only where set
    capsys.readouterr()


def test_a_run_started_before_the_root_frame_option_resumes(mocap_files, tmp_path, monkeypatch, capsys):
    """A run started before ``root_frame_descendants`` recorded no such key; resuming it had been refused
    ("architecture.root_frame_descendants null -> true") with advice no option could follow. It resumes with the
    frame it started with, and its folder reads as before."""
    from dataclasses import asdict

    from skelanim.ik.model import GATConfig

    cmu = [a for f in mocap_files(["cmu_cgspeed_max/131_01.bvh", "cmu_cgspeed_max/131_02.bvh"]) for a in ("--data", str(f))]
    args = ["ik", "train", *cmu, "-o", str(tmp_path / "run"), "--hidden", "8", "--heads", "2", "--layers", "1",
            "--batch-size", "16", "--max-frames-per-file", "20", "--threads", "1", "--no-progress", "--epochs", "2"]  # fmt: skip
    with monkeypatch.context() as old:  # the code of before: no key written, every rig on the old frame
        old.setattr(GATConfig, "to_dict", lambda self: {k: v for k, v in asdict(self).items() if k != "root_frame_descendants"})
        old.setattr(GATConfig, "root_frame_descendants", False)
        assert main([*args, "--max-steps", "1"]) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert "root_frame_descendants" not in config["architecture"]
    capsys.readouterr()
    assert main([*args, "--resume"]) == 0, capsys.readouterr().err
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert "root_frame_descendants" not in config["architecture"]  # read back as the world axes it trained on


def test_a_model_of_a_cmu_rig_saved_before_the_look_through_rule_is_said_to_see_the_heading(mocap_files, tmp_path):
    """Such a model keeps its world-axis features (its weights were trained on them), and its answers do not turn
    with the input: loading it says so, once, and a model trained since loads without a word."""
    import warnings

    from skelanim.ik.solve import IKModel

    cmu = [a for f in mocap_files(["cmu_cgspeed_max/131_01.bvh", "cmu_cgspeed_max/131_02.bvh"]) for a in ("--data", str(f))]
    new = tmp_path / "new"
    assert main(["ik", "train", *cmu, "-o", str(new), "--hidden", "8", "--heads", "2", "--layers", "1", *TINY]) == 0
    old = tmp_path / "old"
    shutil.copytree(new, old)
    config = json.loads((old / "config.json").read_text())
    del config["architecture"]["root_frame_descendants"]
    config.pop("weights_file_sha256", None)
    (old / "config.json").write_text(json.dumps(config))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        IKModel.load(new)
        assert not [w for w in caught if "turn with the input" in str(w.message)]
        IKModel.load(old)
    said = [str(w.message) for w in caught if "turn with the input" in str(w.message)]
    assert len(said) == 1 and said[0].startswith(f"{old}: this model was trained before")
