"""``ik solve`` (and ``stream``) of a positions file that names its length unit: converted into the model's with a
note (found by a read-only review: ``skelanim positions walk.glb`` stores ``units = "m"``, and solving it had been
refused with advice to multiply by 100 by hand). A bare array, which names no unit, is still refused, and
``--scale`` still rules. The reference: the same positions in centimetres."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import skelanim
from skelanim.cli import main
from skelanim.io.positions import JointPositions


def test_a_file_in_metres_is_solved_as_the_same_positions_in_centimetres(mocap_files, tmp_path: Path, capsys) -> None:
    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])[:20]
    cm = JointPositions.from_motion(walk)
    metres = JointPositions(cm.names, np.asarray(cm.positions) / 100.0, fps=cm.fps, metadata={"units": "m"})
    skelanim.save(cm, tmp_path / "cm.npz")
    skelanim.save(metres, tmp_path / "m.npz")
    assert str(np.load(tmp_path / "m.npz")["units"]) == "m"
    capsys.readouterr()
    for name in ("cm", "m"):
        assert main(["ik", "solve", str(tmp_path / f"{name}.npz"), "-o", str(tmp_path / f"{name}.bvh")]) == 0
    assert f"note: {tmp_path / 'm.npz'} says its positions are in m: scaled by 100 into the model's cm" in (
        capsys.readouterr().err)
    a, b = (skelanim.load(tmp_path / f"{name}.bvh").positions() for name in ("cm", "m"))
    assert float((a - b).abs().max()) < 1e-4
    np.save(tmp_path / "bare.npy", np.asarray(metres.positions))  # no unit named: refused, the factor said
    assert main(["ik", "solve", str(tmp_path / "bare.npy"), "-o", str(tmp_path / "bare.bvh")]) == 2
    assert "100" in capsys.readouterr().err
    assert main(["ik", "solve", str(tmp_path / "m.npz"), "--scale", "100", "-o", str(tmp_path / "s.bvh")]) == 0
    assert "note:" not in capsys.readouterr().err  # --scale given: the file's unit is not applied on top
