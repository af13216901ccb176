"""The summary line after training says which weights the folder holds, and ``--resume`` from a training state with
wrong contents is one line naming the file (exit 2), not a traceback."""

from __future__ import annotations

import json

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from skelanim.cli import main
from skelanim.cli.learn_common import report_training

BANDAI = [f"bandai_namco_1/dataset-1_{c}_{s}_001.bvh" for c in ("walk", "run", "bow", "dash") for s in ("normal", "angry")]


def test_the_summary_names_the_step_a_max_steps_run_stopped_at(capsys, tmp_path):
    history = [{"epoch": 1, "train_subset_loss": 1.718}]
    stopped = {"best": {"epoch": 1, "train_subset_loss": 1.718}, "history": history, "steps": 6, "seconds": 0.4,
               "keep": "last", "metric": "train_subset_loss", "parameters": 10, "stopped": {"step": 6, "epoch": 1.5}}  # fmt: skip
    report_training(tmp_path, stopped, "val_error")
    line = capsys.readouterr().out
    assert "the weights at step 6 (epoch 1.5, where --max-steps stopped) kept; lowest train_subset_loss 1.718 at epoch 1" in line
    assert "last epoch" not in line
    report_training(tmp_path, {**stopped, "best": {"epoch": 1.5, "train_subset_loss": 1.7}, "history": [],
                               "stopped": {"step": 2, "epoch": 1.5}}, "val_error")  # fmt: skip
    assert "the weights at step 2 (epoch 1.5, where --max-steps stopped) kept; train_subset_loss 1.7)" in capsys.readouterr().out
    whole = {k: v for k, v in stopped.items() if k != "stopped"}  # whole epochs: as before
    report_training(tmp_path, whole, "val_error")
    assert "the last epoch (1) kept; lowest train_subset_loss 1.718 at epoch 1" in capsys.readouterr().out
    report_training(tmp_path, {**whole, "keep": "best"}, "val_error")
    assert "best epoch 1: train_subset_loss 1.718" in capsys.readouterr().out


def test_a_max_steps_run_says_so_and_a_corrupt_state_is_one_line(mocap_files, capsys, tmp_path):
    """The auditor's run: 8 windows of 16 a batch make 4 steps an epoch; ``--max-steps 6`` stops at epoch 1.5, and the
    summary had said "the last epoch (1) kept" over the folder holding step 6's weights."""
    out = tmp_path / "rec"
    data = [a for f in mocap_files(BANDAI) for a in ("--data", str(f))]
    args = ["learn", "recognize", "train", *data, "--split", "none", "--window", "16", "--stride", "8", "--epochs", "3",
            "--batch-size", "16", "--threads", "1", "--device", "cpu", "--no-progress", "-o", str(out)]  # fmt: skip
    assert main([*args, "--max-steps", "6"]) == 0
    said = capsys.readouterr().out
    assert "the weights at step 6 (epoch 1.5, where --max-steps stopped) kept" in said and "last epoch" not in said
    assert json.loads((out / "config.json").read_text())["training"]["stopped"]["epoch"] == 1.5
    state = out / "train_state.safetensors"
    tensors = load_file(str(state))
    with safe_open(str(state), framework="pt") as handle:
        metadata = handle.metadata()
    save_file({k: v for k, v in tensors.items() if not k.startswith("optim/")}, str(state), metadata=metadata)
    assert main([*args, "--resume"]) == 2  # had resumed with fresh Adam moments
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"error: {state}: corrupt training state: no optimizer state (the Adam moments) after 6 steps"
    save_file({**tensors, "rng/torch": torch.zeros(10, dtype=torch.uint8)}, str(state), metadata=metadata)
    assert main([*args, "--resume"]) == 2  # had been a 60-line traceback
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "corrupt training state: its random-number state" in captured.err
    save_file(tensors, str(state), metadata=metadata)  # the genuine state resumes
    assert main([*args, "--resume"]) == 0
    assert "the last epoch (3) kept" in capsys.readouterr().out
