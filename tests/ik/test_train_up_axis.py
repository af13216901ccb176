"""``ik train`` reads the up axis off the body's joints: a dummy root above the IK root stands at minus the IK root's
median OFFSET, which some Bandai-Namco takes put 4.3 m along Z (found by a read-only review: three Y-up walks of
dataset 2 trained as Z up, their heading turns rolled about Z and the model's config and ONNX metadata said ``z``).
The reference: the files' own up axis as ``Motion.up_axis`` reads it (Y)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import skelanim
from skelanim.cli import main

WALKS = [f"bandai_namco_2/dataset-2_walk_{style}_001.bvh" for style in ("active", "normal", "elderly")]


def test_ik_train_takes_the_up_axis_of_the_body_not_of_the_dummy_root(mocap_files, tmp_path: Path, capsys) -> None:
    data = tmp_path / "walks"
    data.mkdir()
    for path in mocap_files(WALKS):
        shutil.copy(path, data / path.name)
        assert skelanim.load(path).up_axis() == 1
    offsets = [skelanim.load(p).skeleton.offsets[1] for p in sorted(data.iterdir())]
    assert max(abs(float(o[2])) for o in offsets) > 400  # the trap: a Hips OFFSET metres along Z
    out = tmp_path / "model"
    assert main(["ik", "train", "--data", str(data), "--out", str(out), "--epochs", "1", "--max-steps", "2",
                 "--no-progress"]) == 0  # fmt: skip
    assert "up axis Y" in capsys.readouterr().err  # the data line, on stderr with the progress
    assert json.loads((out / "config.json").read_text())["up_axis"] == 1
