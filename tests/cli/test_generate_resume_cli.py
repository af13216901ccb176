"""``learn generate train --resume`` refuses what cannot be resumed with the words every other training uses
(:func:`skelanim.nn.checkpoint.load_train_state`'s): a model without its training state is a run stopped before it
saved one, which ``--overwrite`` trains anew; nothing at all is a run to start without ``--resume``."""

from __future__ import annotations

import pytest
import torch
from cli_output import error_line  # tests/helpers

from skelanim.cli import main
from skelanim.learn.generate import Generator
from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, WEIGHTS_NAME, save_model_files

NAMES = [f"bandai_namco_1/dataset-1_{c}_{s}_001.bvh" for c in ("walk", "bow") for s in ("happy", "angry")]
SMALL = {"latent": 8, "hidden": 16, "embed": 4}


@pytest.fixture
def train_args(mocap_files):
    data = [arg for f in mocap_files(NAMES) for arg in ("--data", str(f))]

    def args(out) -> list[str]:
        return ["learn", "generate", "train", *data, "--split", "none", "--window", "16", "--stride", "16",
                "--vae-epochs", "1", "--gan-epochs", "1", "--batch-size", "8", "--threads", "1", "--no-progress",
                "-o", str(out)]  # fmt: skip

    return args


def _model_alone(folder) -> None:
    """A generator folder without a training state (as a run leaves it when stopped before its first state)."""
    torch.manual_seed(0)
    gen = Generator(Generator.load().rig, ["walk", "bow"], ["happy", "angry"], length=16, options=SMALL)
    save_model_files(folder, gen.state_dict(), gen.config())


def _says_overwrite(said: str, state) -> None:
    assert said.startswith(f"error: {state}: no training state to resume from: the run that wrote the model here "
                           "stopped before it saved one"), said  # fmt: skip
    assert "--overwrite" in said and "without --resume" not in said


def test_a_run_stopped_before_its_first_state_is_told_to_overwrite(train_args, tmp_path, capsys, monkeypatch):
    """The audit's Ctrl-C between the VAE folder's write and its state's: ``--resume`` had said "train without
    --resume first", and the plain run then said the folder holds a model; now ``--resume`` says the run cannot be
    continued and ``--overwrite`` trains anew, as the other trainings say, and ``--overwrite`` works."""
    import skelanim.nn.train as train_module

    out = tmp_path / "gen"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "save_train_state", interrupted)
    assert main(train_args(out)) == 130
    monkeypatch.undo()
    assert (out / "vae" / CONFIG_NAME).is_file() and not (out / "vae" / STATE_NAME).exists()
    capsys.readouterr()
    assert main([*train_args(out), "--resume"]) == 2
    _says_overwrite(error_line(capsys), out / "vae" / STATE_NAME)
    assert main(train_args(out)) == 2
    said = error_line(capsys)
    assert "--overwrite replaces it" in said and "--resume continues" not in said
    assert main([*train_args(out), "--overwrite"]) == 0
    for folder in (out / "vae", out):
        assert {CONFIG_NAME, WEIGHTS_NAME, STATE_NAME} <= {p.name for p in folder.iterdir()}


@pytest.mark.parametrize("alone", ["out", "vae"])
def test_a_model_without_its_state_is_named(train_args, tmp_path, capsys, alone):
    """Either stage's folder holding a model without its state, the other stage's state there or not: the stage
    without a state would have been trained afresh under ``--resume`` (replacing its model without a word)."""
    out = tmp_path / "gen"
    folder = out if alone == "out" else out / "vae"
    _model_alone(folder)
    assert main([*train_args(out), "--resume"]) == 2
    _says_overwrite(error_line(capsys), folder / STATE_NAME)
    if alone == "out":  # the VAE stage's state is there, the GAN stage's model has none
        (out / "vae").mkdir()
        (out / "vae" / STATE_NAME).write_bytes(b"")
        assert main([*train_args(out), "--resume"]) == 2
        _says_overwrite(error_line(capsys), folder / STATE_NAME)


def test_nothing_to_resume_says_to_train_first(train_args, tmp_path, capsys):
    out = tmp_path / "gen"
    assert main([*train_args(out), "--resume"]) == 2
    said = error_line(capsys)
    assert said == f"error: {out / STATE_NAME}: no training state to resume from (train without --resume first)"
    assert not out.exists()


def test_resuming_another_kinds_run_is_refused_before_any_training(train_args, tmp_path, capsys):
    """A recogniser's run in the folder: refused at once, no VAE stage trained into OUT/vae (it had trained the
    whole VAE stage, then refused at the GAN stage)."""
    out = tmp_path / "rec"
    save_model_files(out, {"w": torch.zeros(1)}, {"format": "skelanim-recognizer"})
    (out / STATE_NAME).write_bytes(b"")  # a run to resume, as far as the folder shows
    assert main([*train_args(out), "--resume"]) == 2
    assert error_line(capsys).startswith(f"error: {out}: the folder holds a skelanim-recognizer model's run, not a "
                                         "skelanim-generator's")  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == sorted([CONFIG_NAME, WEIGHTS_NAME, STATE_NAME])


def test_an_unfinished_start_given_to_init_warns_once(train_args, tmp_path, capsys):
    """--init from a VAE stage stopped by --max-steps: one warning that it is unfinished (it had been two)."""
    assert main([*train_args(tmp_path / "first"), "--max-steps", "1"]) == 0
    capsys.readouterr()
    assert main([*train_args(tmp_path / "second"), "--init", str(tmp_path / "first" / "vae")]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "unfinished training run" in line]
    assert len(warned) == 1 and warned[0].startswith(f"warning: {tmp_path / 'first' / 'vae'}: these are the weights")
