"""A model folder whose config.json is valid JSON with a wrong value: one line naming the file and the entry, exit 2.

Copies of the shipped models with one entry changed (a review of 2026-12-07 found a predictor's ``fps: 0`` ending in a
ZeroDivisionError inside the error meant to report it, ``horizon: 0`` in an empty stack, ``observed: 100000`` running
for minutes, an NKN's ``train_fps: 0`` in a ZeroDivisionError, an IK skeleton entry's error naming no file)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skelanim.cli import main
from skelanim.data.samples import sample_path

PRETRAINED = Path(__file__).resolve().parents[2] / "src" / "skelanim"


def _copy(tmp_path: Path, source: Path, **changes) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    for key, value in changes.items():
        if key == "names":
            config["skeleton"]["names"] = config["skeleton"]["names"][:value]
        else:
            config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(("key", "value", "message"), [
    ("fps", 0, r"'fps' must be a positive number, found 0"),
    ("fps", "25", r"'fps' must be a positive number, found '25'"),
    ("horizon", 0, r"'horizon' must be a whole number from 1 to 10,000, found 0"),
    ("observed", 2.5, r"'observed' must be a whole number from 1 to 10,000, found 2.5"),
    ("observed", 100_000, r"'observed' must be a whole number from 1 to 10,000, found 100000"),
])  # fmt: skip
def test_a_predictor_config_with_a_wrong_value(tmp_path, capsys, key, value, message) -> None:
    model = _copy(tmp_path, PRETRAINED / "learn" / "pretrained" / "predict_rnn", **{key: value})
    out = tmp_path / "p.bvh"
    code = main(["predict", str(sample_path("walk")), "-o", str(out), "--method", "rnn", "-m", str(model), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: {model / 'config.json'}: corrupt model config: ") and message.replace("\\", "") in err
    assert not out.exists()


def test_an_nkn_train_fps_of_zero_and_a_recogniser_window_of_zero(tmp_path, capsys) -> None:
    from skelanim.errors import FormatError
    from skelanim.learn.recognize import Recognizer
    from skelanim.retarget.model import load_nkn

    nkn = _copy(tmp_path / "a", PRETRAINED / "retarget" / "pretrained", train_fps=0)
    with pytest.raises(FormatError, match=r"'train_fps' must be a positive number, found 0") as err:
        load_nkn(nkn)
    assert err.value.path == str(nkn / "config.json")
    recogniser = _copy(tmp_path / "b", PRETRAINED / "learn" / "pretrained" / "recognize_cnn", window=0)
    with pytest.raises(FormatError, match=r"'window' must be a whole number from 1"):
        Recognizer.load(recogniser)


def test_an_ik_skeleton_entry_that_builds_no_skeleton_names_the_file(tmp_path) -> None:
    from skelanim.errors import FormatError
    from skelanim.ik.solve import IKModel

    model = _copy(tmp_path, PRETRAINED / "ik" / "pretrained", names=20)
    with pytest.raises(FormatError, match=r"corrupt model config: end_sites key 21 is not a joint index 0 \.\. 19") as err:
        IKModel.load(model)
    assert err.value.path == str(model / "config.json")


def test_a_file_given_as_the_model_folder_is_called_a_file(tmp_path) -> None:
    from skelanim.errors import FormatError
    from skelanim.ik.solve import IKModel

    with pytest.raises(FormatError, match=r"a file, not a model folder"):
        IKModel.load(sample_path("walk"))
    with pytest.raises(FormatError, match=r"no such model folder"):
        IKModel.load(tmp_path / "missing")


def test_a_recogniser_config_whose_layers_cannot_be_built(tmp_path, capsys) -> None:
    """A review's mutation of the shipped configs: a negative channel count made ``recognize`` print torch's
    RuntimeError traceback ("Trying to create tensor with negative dimension"); one line naming the file now."""
    model = tmp_path / "model"
    shutil.copytree(PRETRAINED / "learn" / "pretrained" / "recognize", model)
    config = json.loads((model / "config.json").read_text())
    config["arch_options"]["channels"][0] = -1
    (model / "config.json").write_text(json.dumps(config))
    code = main(["recognize", str(sample_path("walk")), "--model", str(model)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: {model / 'config.json'}: corrupt model config: it builds no network (")
