"""``--device`` of the training commands: a device name torch does not know, or a GPU this machine lacks, is one
line before any work; the device a run trained on is recorded with the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from skelanim.cli import main

TRAINERS = [["ik", "train", "--data", "x"], ["retarget", "train"], ["learn", "recognize", "train", "--data", "x"],
            ["learn", "predict", "train", "--data", "x"], ["learn", "generate", "train", "--data", "x"]]  # fmt: skip


def _error(argv: list[str], capsys) -> str:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", TRAINERS, ids=lambda c: " ".join(c[:3]))
def test_unknown_or_absent_devices_are_one_line(command, tmp_path, capsys):
    out = tmp_path / "model"
    assert "unknown device 'gpu0'" in _error([*command, "-o", str(out), "--device", "gpu0"], capsys)
    assert "holds shapes, not values" in _error([*command, "-o", str(out), "--device", "meta"], capsys)
    if not torch.cuda.is_available():
        assert "sees no CUDA GPU" in _error([*command, "-o", str(out), "--device", "cuda:0"], capsys)
    assert not out.exists()


def test_the_device_is_recorded_with_the_model(mocap_files, tmp_path: Path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for path in mocap_files(["bandai_namco_1/dataset-1_walk_happy_001.bvh", "bandai_namco_1/dataset-1_run_happy_001.bvh"]):
        (data / path.name).symlink_to(path)
    out = tmp_path / "model"
    code = main(["learn", "predict", "train", "--data", str(data), "--split", "none", "-o", str(out), "--arch", "mlp",
                 "--epochs", "1", "--batch-size", "2", "--stride", "25", "--max-steps", "1", "--no-progress",
                 "--device", "auto"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    loop = json.loads((out / "config.json").read_text())["training"]["loop"]
    assert loop["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
