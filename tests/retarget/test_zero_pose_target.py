"""A ``--to`` clip that holds only its skeleton's zero pose, where that is no body pose (Bandai-Namco's lies along
+X), is refused in one line: its up axis and limb twist would be read off it (found by a read-only review: a CMU walk
retargeted onto it was written lying along +X, reported as X up by ``info``). A T-pose zero pose (CMU's) is a body
pose and still works, the result standing along +Y (head above feet, measured from the written file)."""

from __future__ import annotations

from pathlib import Path

import skelanim
from skelanim import Motion
from skelanim.cli import main


def test_a_zero_pose_target_is_refused_where_it_is_no_body_pose(mocap_files, tmp_path: Path, capsys) -> None:
    cmu, bandai = mocap_files(["cmu_cgspeed_max/131_01.bvh", "bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    for name, source in (("bandai_rest.bvh", bandai), ("cmu_rest.bvh", cmu)):
        skeleton = skelanim.load(source).skeleton
        skelanim.save(Motion.rest(skeleton, 1, fps=30.0), tmp_path / name)
    out = tmp_path / "out.bvh"
    capsys.readouterr()
    assert main(["retarget", "run", str(cmu), "--to", str(tmp_path / "bandai_rest.bvh"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path / 'bandai_rest.bvh'}: the motion holds only its "
                                               "skeleton's zero pose, which is no body pose")
    assert not out.exists()
    assert main(["retarget", "run", str(cmu), "--to", str(tmp_path / "cmu_rest.bvh"), "-o", str(out)]) == 0
    result = skelanim.load(out)
    names = result.skeleton.names
    head, foot = names.index("Head"), names.index("LeftAnkle")
    rise = result.positions()[0, head] - result.positions()[0, foot]
    assert float(rise[1]) > 0.8 * float(rise.norm())  # standing along +Y
