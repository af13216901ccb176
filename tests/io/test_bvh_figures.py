"""BVH files of several figures (``ROOT`` blocks one after another: actors, props), which had been refused ("a second
ROOT: only one skeleton per file is supported"): read as one tree under a scene joint without channels, each figure
where the file puts it, and written back as separate ROOTs."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from bvh_text import TWO_FIGURES as SMALL  # tests/helpers
from bvh_text import two_figures
from needs import peer_library  # tests/helpers

import skelanim
from skelanim.errors import FormatError
from skelanim.io import bvh
from skelanim.io.bvh_parse import SCENE_ROOT

FILES = ["xia_style/angry_13_000.bvh", "cmu_cgspeed_mb/01_01.bvh"]  # files pybvh reads (no position channels below the root)


def _pybvh_positions(path: Path, names: list[str]) -> np.ndarray:
    peer = peer_library("pybvh").read_bvh_file(path, world_up="+y")
    return np.asarray(peer.joint_positions())[:, [peer.joint_index[n] for n in names]]


def test_two_real_figures_are_read_where_their_own_files_put_them(mocap_files, tmp_path):
    """Xia's angry walk and CMU's 01_01 in one file (frames paired): every joint of each figure where pybvh, reading
    its own file, puts it; the scene joint at the origin; the second figure's names the first has get ``.001``."""
    paths = mocap_files(FILES)
    texts = [p.read_text() for p in paths]
    frames = 40
    both = tmp_path / "two.bvh"
    both.write_text(two_figures(*texts, frames))
    with pytest.warns(UserWarning, match=r"joint name\(s\) used before .* e.g. 'Hips.001'"):
        motion = skelanim.load(both)
    alone = [bvh.load(p) for p in paths]
    names = [m.skeleton.names for m in alone]
    second = [f"{n}.001" if n in names[0] else n for n in names[1]]
    assert motion.skeleton.names == [SCENE_ROOT, *names[0], *second]
    assert motion.metadata["bvh_scene_root"] == SCENE_ROOT
    assert motion.skeleton.channels[0] == () and motion.skeleton.parents[1] == 0
    assert motion.skeleton.parents[1 + len(names[0])] == 0  # the second figure's root hangs from the scene joint
    positions = motion.positions().numpy()
    assert not positions[:, 0].any()
    start = 1
    for path, own, m in zip(paths, names, alone, strict=True):
        got = positions[:, start : start + len(own)]
        np.testing.assert_allclose(got, _pybvh_positions(path, own)[:frames], rtol=0, atol=1e-5 * m.height)
        np.testing.assert_allclose(got, m.positions().numpy()[:frames], rtol=0, atol=1e-9 * m.height)
        start += len(own)


def test_figures_are_written_back_as_roots(mocap_files, tmp_path):
    texts = [p.read_text() for p in mocap_files(FILES)]
    with pytest.warns(UserWarning, match="read with a suffix"):  # Hips, Spine, ... in both
        motion = bvh.loads(two_figures(*texts, 12), "two.bvh")
    text = bvh.dumps(motion)
    assert text.count("\nROOT ") == 2 and SCENE_ROOT not in text
    again = bvh.loads(text)
    assert again.skeleton.names == motion.skeleton.names
    np.testing.assert_allclose(again.positions().numpy(), motion.positions().numpy(), rtol=0, atol=1e-5)


def test_a_scene_joint_name_the_file_has_is_not_taken_and_repeated_names_are_renamed():
    motion = bvh.loads(SMALL.format(a=SCENE_ROOT, b="Ball"))
    assert motion.skeleton.names == [f"{SCENE_ROOT}.001", SCENE_ROOT, f"{SCENE_ROOT}_arm", "Ball"]
    assert motion.positions()[0, 3].tolist() == [100.0, 0.0, 0.0]  # a prop's position channels replace its OFFSET
    with pytest.warns(UserWarning, match="read with a suffix, e.g. 'A.001'"):
        twice = bvh.loads(SMALL.format(a="A", b="A"))
    assert twice.skeleton.names == [SCENE_ROOT, "A", "A_arm", "A.001"]
    assert bvh.dumps(twice).count("\nROOT ") == 2


def test_a_root_inside_a_joint_is_still_an_error():
    bad = SMALL.format(a="A", b="B").replace("    End Site", "    ROOT C\n    {\n      OFFSET 0 0 0\n    }\n    End Site")
    with pytest.raises(FormatError, match="ROOT inside another joint"):
        bvh.loads(bad, "bad.bvh")


def test_figures_survive_a_gltf_round_trip_and_a_moved_scene_joint_is_written(mocap_files, tmp_path):
    """The scene joint's name travels in the glTF's extras; once an op turns or moves it, it is written as the one
    ROOT (dropping it would lose that motion)."""
    from skelanim.ops import rotate

    texts = [p.read_text() for p in mocap_files(FILES)]
    with pytest.warns(UserWarning, match="read with a suffix"):
        motion = bvh.loads(two_figures(*texts, 8), "two.bvh")
    skelanim.save(motion, tmp_path / "two.glb")
    again = skelanim.load(tmp_path / "two.glb")
    assert again.metadata["bvh_scene_root"] == SCENE_ROOT and bvh.dumps(again).count("\nROOT ") == 2
    back = bvh.loads(bvh.dumps(again))  # the scene joint's channels (a glTF gives it 6) had stayed in each frame line
    np.testing.assert_allclose(back.positions().numpy(), again.positions().numpy(), rtol=0, atol=1e-6)
    assert len(again.skeleton.channels[0]) == 6  # the glTF's root node has a transform: channels to hold it
    turned = rotate(again, [0.9238795325, 0.0, 0.3826834324, 0.0])  # 45 degrees about Y, on the scene joint
    text = bvh.dumps(turned)
    assert text.count("\nROOT ") == 1 and f"\nROOT {SCENE_ROOT}\n" in text
    np.testing.assert_allclose(bvh.loads(text).positions().numpy(), turned.positions().numpy(), rtol=0, atol=1e-5)


def test_figures_are_split_into_their_own_motions_with_their_names(mocap_files):
    """``ops.figures``: each figure alone, as its own file reads (names without the reader's suffix)."""
    from skelanim.ops import figures

    paths = mocap_files(FILES)
    with pytest.warns(UserWarning, match="read with a suffix"):
        motion = bvh.loads(two_figures(*(p.read_text() for p in paths), 20), "two.bvh")
    parts = figures(motion)
    assert [part.metadata["bvh_figure"] for part in parts] == [1, 2]
    for part, path in zip(parts, paths, strict=True):
        own = bvh.load(path)[:20]
        assert part.skeleton.names == own.skeleton.names and "bvh_scene_root" not in part.metadata
        np.testing.assert_allclose(part.positions().numpy(), own.positions().numpy(), rtol=0, atol=1e-9 * own.height)
        assert bvh.dumps(part).count("\nROOT ") == 1
    single = bvh.load(paths[0])
    assert figures(single) == [single]


@pytest.mark.parametrize("command", [["gait"], ["predict", "-o", "{out}/p.bvh"], ["retarget", "--to", "{one}", "-o",
                                     "{out}/r.bvh"], ["evaluate", "{one}"], ["stream", "--frames", "1"],
                                     ["ik", "solve", "-o", "{out}/s.bvh"]])  # fmt: skip
def test_single_body_commands_refuse_several_figures_in_one_line(command, tmp_path, capsys):
    """gait, retarget, predict, stream, ik solve had used the first figure alone (or measured the scene as one body,
    evaluate) and exited 0; now they say so and name the option that picks one."""
    from skelanim.cli import main

    two, one = tmp_path / "two.bvh", tmp_path / "one.bvh"
    two.write_text(SMALL.format(a="A", b="B"))
    assert main(["convert", str(two), str(one), "--figure", "1"]) == 0
    assert bvh.load(one).skeleton.names == ["A", "A_arm"]
    capsys.readouterr()
    args = [a.format(out=tmp_path, one=one) for a in command]
    where = {"evaluate": 2, "ik": 2}.get(command[0], 1)  # where SRC goes
    assert main([*args[:where], str(two), *args[where:]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 figures (ROOTs A, B)" in err and "--figure N" in err and "Traceback" not in err


def test_simple_channels_of_several_figures_say_why_they_are_refused(tmp_path, capsys):
    from skelanim.cli import main

    two = tmp_path / "two.bvh"
    two.write_text(SMALL.format(a="A", b="B"))
    assert main(["convert", str(two), str(tmp_path / "s.bvh"), "--simple-channels"]) == 2
    err = capsys.readouterr().err
    assert f"{two}: 2 figures, each with its own root: simplify one at a time" in err  # it had blamed an animated joint
    assert main(["convert", str(two), str(tmp_path / "s.bvh"), "--simple-channels", "--figure", "2"]) == 0
    capsys.readouterr()
    assert main(["convert", str(two), str(tmp_path / "f2.txt"), "--figure", "2"]) == 2  # not the DeepMimic humanoid
    err = capsys.readouterr().err  # the hint had been to retarget the file of two figures, which retarget refuses
    assert f"skelanim convert {two} FIGURE.bvh --figure 2, then skelanim retarget FIGURE.bvh --to " in err


def test_a_scene_joint_an_op_moved_is_written_with_channels_that_hold_its_motion():
    """Read from a BVH file the scene joint has no channels: turned (``ops.rotate``) or moved (``ops.normalize``),
    it had been written as ``ROOT Scene ... CHANNELS 0``, the turn lost with a warning and the move silently. Now it
    gets the channels its motion needs (``bvh_channels.with_root_channels``, as any root): rotation channels for the
    turn about the origin, position channels for the move."""
    from skelanim.ops import normalize, rotate

    two = bvh.loads(SMALL.format(a="A", b="B"))
    turned_only, moved_only = ["Zrotation", "Xrotation", "Yrotation"], ["Xposition", "Yposition", "Zposition"]
    for moved, needed in ((rotate(two, [0.9238795325, 0.0, 0.3826834324, 0.0]), turned_only),
                          (normalize(two), moved_only)):  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            text = bvh.dumps(moved)
        assert text.count("\nROOT ") == 1 and f"ROOT {SCENE_ROOT}\n{{\n\tOFFSET 0 0 0\n\tCHANNELS " in text
        assert text.split(f"ROOT {SCENE_ROOT}")[1].splitlines()[3].split()[2:] == needed
        np.testing.assert_allclose(bvh.loads(text).positions().numpy(), moved.positions().numpy(), rtol=0, atol=1e-5)
