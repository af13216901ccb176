"""``skelanim positions --contacts``: foot contact labels stored beside the positions in one ``.npz``, and the
``extra_arrays`` of :func:`skelanim.io.positions.save` they go through."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bvh_text import make_bvh  # tests/helpers
from cli_output import run_cli as run  # tests/helpers

import skelanim
from skelanim import ops
from skelanim.errors import ShapeError, UnsupportedFormatError
from skelanim.io.positions import JointPositions, save

WALK = "cmu_cgspeed_max/131_01.bvh"


def test_contacts_are_the_librarys_labels_of_the_feet_and_a_walks_stance_share(mocap_files, tmp_path: Path, capsys):
    (src,) = mocap_files([WALK])
    code, text, err = run(["positions", str(src), "-o", str(tmp_path / "with.npz"), "--contacts"], capsys)
    assert code == 0, err
    code, _, err = run(["positions", str(src), "-o", str(tmp_path / "without.npz")], capsys)
    assert code == 0, err
    with_, without = np.load(tmp_path / "with.npz"), np.load(tmp_path / "without.npz")
    assert sorted(with_.files) == sorted([*without.files, "contacts", "contact_joints"])
    for key in without.files:  # the positions file itself is the same
        np.testing.assert_array_equal(with_[key], without[key])
    motion = skelanim.load(src)
    feet = ops.find_feet(motion.skeleton)
    assert list(with_["contact_joints"]) == [motion.skeleton.names[j] for j in feet] == \
        ["LeftAnkle", "RightAnkle", "LeftToe", "RightToe"]  # fmt: skip
    np.testing.assert_array_equal(with_["contacts"], np.asarray(ops.foot_contacts(motion, joints=feet)))
    assert with_["contacts"].dtype == bool and with_["contacts"].shape == (motion.num_frames, 4)
    # a walk stands on each foot for about 60 % of its cycle (Perry & Burnfield, Gait Analysis): 40-75 % here
    assert np.all((with_["contacts"].mean(0) > 0.4) & (with_["contacts"].mean(0) < 0.75))
    assert "contacts of LeftAnkle, RightAnkle, LeftToe, RightToe" in text
    read = skelanim.load_positions(tmp_path / "with.npz")  # the reader takes the positions and leaves the extras
    np.testing.assert_array_equal(read.positions, without["positions"])


def test_contacts_need_an_npz_and_feet(tmp_path: Path, capsys):
    values = np.zeros((3, 12))
    src = tmp_path / "nofeet.bvh"  # Hips, Spine, Head, LeftLeg: no left/right foot pair
    src.write_text(make_bvh([["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"],
                             ["Zrotation", "Xrotation", "Yrotation"], None, ["Zrotation", "Xrotation", "Yrotation"]],
                            values[:, :12]))  # fmt: skip
    code, _, err = run(["positions", str(src), "-o", str(tmp_path / "p.npz"), "--contacts"], capsys)
    assert code != 0 and str(src) in err and "no left/right foot or ankle joints" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run(["positions", str(src), "-o", str(tmp_path / "p.csv"), "--contacts"], capsys)
    assert code != 0 and "a .csv file holds the positions alone; write .npz" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nofeet.bvh"]


def test_extra_arrays_go_to_an_npz_only_and_not_under_its_own_names(tmp_path: Path):
    data = JointPositions(["a", "b"], np.arange(12.0).reshape(2, 2, 3), fps=10.0)
    save(data, tmp_path / "x.npz", extra_arrays={"labels": [[True, False], [False, True]]})
    np.testing.assert_array_equal(np.load(tmp_path / "x.npz")["labels"], [[True, False], [False, True]])
    with pytest.raises(UnsupportedFormatError, match="holds the positions alone; write .npz to store labels"):
        save(data, tmp_path / "x.npy", extra_arrays={"labels": [1]})
    with pytest.raises(ShapeError, match="may not be named fps, joints"):
        save(data, tmp_path / "y.npz", extra_arrays={"joints": [1], "fps": 2, "ok": 3})
    with pytest.raises(ShapeError, match="extra arrays ragged hold Python objects"):  # np.savez would pickle it
        save(data, tmp_path / "y.npz", extra_arrays={"ragged": np.array([[1], [2, 3]], dtype=object)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npz"]
