"""A training's output folder seen from the command line: a second run into a folder another is writing is one line
(exit 2), a run stopped between the model and the state write can be got out of, and a predictor's training writes
the weights it trained without reading the folder back after the loop let go of it."""

from __future__ import annotations

import fcntl

import pytest
import torch
from cli_output import error_line  # tests/helpers

from skelanim.cli import main
from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, WEIGHTS_NAME, load_model_files, save_model_files
from skelanim.nn.outdir import LOCK_NAME

NAMES = [f"bandai_namco_1/dataset-1_{c}_{s}_001.bvh" for c in ("walk", "bow") for s in ("happy", "angry")]


@pytest.fixture
def train_args(mocap_files):
    data = [arg for f in mocap_files(NAMES) for arg in ("--data", str(f))]

    def args(out) -> list[str]:
        return ["learn", "predict", "train", *data, "--split", "none", "--arch", "mlp", "--epochs", "1",
                "--batch-size", "8", "--stride", "25", "--threads", "1", "--no-progress", "-o", str(out)]  # fmt: skip

    return args


def test_a_training_into_a_folder_another_training_holds_is_one_line(train_args, tmp_path, capsys):
    out = tmp_path / "m"
    out.mkdir()
    with open(out / LOCK_NAME, "w") as held:  # another `learn ... train -o m` running
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(train_args(out)) == 2
        assert error_line(capsys) == f"error: {out}: another training is writing this folder: wait for it to end, or " \
                                 "choose another output folder"  # fmt: skip
        assert [p.name for p in out.iterdir()] == [LOCK_NAME]
    assert main(train_args(out)) == 0
    assert {p.name for p in out.iterdir()} == {CONFIG_NAME, WEIGHTS_NAME, STATE_NAME}


def test_a_run_stopped_before_its_first_state_has_a_way_out(train_args, tmp_path, capsys, monkeypatch):
    """The audit's Ctrl-C between the model-folder write and the state write: ``--resume`` sent the user to a plain
    run and the plain run back to ``--resume``; both now say ``--overwrite``, which works."""
    import skelanim.nn.train as train_module

    out = tmp_path / "m"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "save_train_state", interrupted)
    assert main(train_args(out)) == 130
    monkeypatch.undo()
    assert (out / CONFIG_NAME).is_file() and not (out / STATE_NAME).exists()
    capsys.readouterr()
    assert main([*train_args(out), "--resume"]) == 2
    said = error_line(capsys)
    assert "no training state to resume from" in said and "--overwrite" in said and "without --resume" not in said
    assert main(train_args(out)) == 2
    said = error_line(capsys)
    assert "--overwrite replaces it" in said and "--resume continues" not in said
    assert main([*train_args(out), "--overwrite"]) == 0


def test_train_predictor_writes_the_weights_it_trained_and_reads_nothing_back(mocap_files, tmp_path, monkeypatch):
    """After ``fit``, ``train_predictor`` read the folder again (to add the input range): what another run had
    written there by then was taken for its own (one run's weights with the other's config, 2 of 50 audit trials).
    Now the range is added while ``fit`` still holds the folder: the folder ``fit`` leaves holds the trained weights
    with their range, and a write by another run afterwards is left as that run wrote it."""
    from skelanim.data import MotionDataset
    from skelanim.learn import predict
    from skelanim.nn.train import TrainConfig, parameter_fingerprint

    ds = MotionDataset(mocap_files(NAMES), fps=25.0, cache=tmp_path / "cache")
    out = tmp_path / "m"
    real_fit = predict.fit
    seen: dict[str, tuple[dict[str, torch.Tensor], dict]] = {}

    def fit_then_another_run_writes(model, task, out_dir, config, **options):
        result = real_fit(model, task, out_dir, config, **options)
        seen["fit"] = load_model_files(out_dir)
        tensors, cfg = seen["fit"]
        other = {k: v + 1 if v.is_floating_point() else v for k, v in tensors.items()}
        other.update(input_low=torch.full_like(tensors["input_low"], -3.0), input_high=torch.full_like(tensors["input_high"], 3.0))
        save_model_files(out_dir, other, {**cfg, "training": {**cfg["training"], "seed": 99}})
        seen["other"] = load_model_files(out_dir)
        return result

    monkeypatch.setattr(predict, "fit", fit_then_another_run_writes)
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, keep="last")
    result = predict.train_predictor(ds, None, out, arch="mlp", stride=25, loop=loop, log=lambda line: None)
    now, now_config = load_model_files(out)  # not the other run's weights with this run's input range
    other, other_config = seen["other"]
    for name, value in other.items():
        assert torch.equal(now[name], value), name
    assert now_config == other_config and now_config["training"]["seed"] == 99
    tensors, config = seen["fit"]
    kept = predict.Predictor.from_config(config)
    kept.load_state_dict(tensors)
    assert parameter_fingerprint(kept) == result["weights_sha256"]  # the weights it trained
    assert bool(torch.isfinite(tensors["input_low"]).all() and torch.isfinite(tensors["input_high"]).all())
