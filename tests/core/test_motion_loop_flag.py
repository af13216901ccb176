"""A looping clip's flag (``metadata["loop"]``: DeepMimic's ``Loop``, glTF extras) is kept by frame selections
that still run from its first frame to its last, and set to ``"none"`` by a cut or a join, whose last frame does not
lead back to its first (found by a read-only review: ``save(run[3:10], "cut.txt")`` had written a 7-frame cut of the
looping run with ``"Loop": "wrap"``, which DeepMimic plays with a jump back; ``convert --start/--end`` already said
``none``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import skelanim
from skelanim import Motion

RUN = "deepmimic/humanoid3d_run.txt"


def test_a_cut_or_a_join_no_longer_loops_and_the_whole_clip_does(mocap_files, tmp_path: Path) -> None:
    run = skelanim.load(mocap_files([RUN])[0])
    assert run.metadata["loop"] == "wrap" and run.num_frames == 25
    cuts = {"3:10": run[3:10], "first frame": run[0], "to the end": run[5:], "from the start": run[:-1],
            "join": Motion.concatenate([run, run]), "picked": run[np.array([0, 3, 7])]}  # fmt: skip
    assert {name: m.metadata["loop"] for name, m in cuts.items()} == dict.fromkeys(cuts, "none")
    whole = {"all": run[:], "reversed": run[::-1], "every other": run[::2], "every third": run[::3],
             "one motion joined": Motion.concatenate([run])}  # fmt: skip
    assert {name: m.metadata["loop"] for name, m in whole.items()} == dict.fromkeys(whole, "wrap")
    assert run.metadata["loop"] == "wrap"  # the source keeps its own
    skelanim.save(run[3:10], tmp_path / "cut.txt")
    assert json.loads((tmp_path / "cut.txt").read_text())["Loop"] == "none"
    skelanim.save(run[3:10], tmp_path / "cut.glb")
    assert skelanim.load(tmp_path / "cut.glb").metadata["loop"] == "none"
