"""``ik solve`` of a Bandai take written by ``convert --simple-channels`` (the model's skeleton without its static
``joint_Root``): the dummy is put where the IK root's OFFSET places it, as training places it, and the take solves
as the original does (a review: refused as "positions of another skeleton"). Joints named otherwise are still
refused. The reference: the solve of the original take."""

from __future__ import annotations

from pathlib import Path

import skelanim
from skelanim.cli import main

WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"


def test_a_take_without_its_dummy_root_solves_as_the_take(mocap_files, tmp_path: Path, capsys) -> None:
    (source,) = mocap_files([WALK])
    simple = tmp_path / "simple.bvh"
    assert main(["convert", str(source), str(simple), "--simple-channels"]) == 0
    solved = {}
    for name, path in (("original", source), ("simple", simple)):
        out = tmp_path / f"{name}_ik.bvh"
        assert main(["ik", "solve", str(path), "-o", str(out)]) == 0
        solved[name] = skelanim.load(out)
    original, from_simple = solved["original"], solved["simple"]
    body = [n for n in original.skeleton.names if n != "joint_Root"]
    a = original.positions()[:, [original.skeleton.names.index(n) for n in body]]
    b = from_simple.positions()[:, [from_simple.skeleton.names.index(n) for n in body]]
    assert float((a - b).norm(dim=-1).max()) < 1e-4 * original.height
    capsys.readouterr()
    cmu = mocap_files(["cmu_cgspeed_max/131_01.bvh"])[0]
    assert main(["ik", "solve", str(cmu), "-o", str(tmp_path / "cmu.bvh")]) == 2
    assert "their names not the model's" in capsys.readouterr().err
