"""Every writer refuses what its own reader would reject (non-finite values, BVH joint names that do not
read back), names the frame and joint, and leaves no file behind (an old file stays as it was)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import skelanim
from skelanim import Motion, Skeleton
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError, SkelanimError, SkeletonError, UnsupportedFormatError
from skelanim.io import bvh
from skelanim.io.positions import JointPositions

SUFFIXES = [".bvh", ".txt", ".glb", ".gltf", ".npz", ".npy", ".csv"]


def walk() -> Motion:
    return skelanim.load(sample_path("walk"))


def assert_refused(motion: Motion | JointPositions, target: Path, *needles: str) -> None:
    """Saving ``motion`` to ``target`` (which holds ``old``) raises naming ``needles`` and changes nothing."""
    target.write_bytes(b"old")
    with pytest.raises(SkelanimError) as info:
        skelanim.save(motion, target)
    line = info.value.one_line()
    assert line.startswith(str(target)), line
    for needle in needles:
        assert needle in line, (needle, line)
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temporary file left


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_non_finite_root_position_is_refused_by_every_writer(tmp_path: Path, suffix: str) -> None:
    motion = walk()
    roots = motion.root_positions.clone()
    roots[5, 1] = float("nan")
    assert_refused(motion.copy(root_positions=roots), tmp_path / f"out{suffix}", "frame 5", "root", "non-finite")


@pytest.mark.parametrize("suffix", [".bvh", ".glb", ".gltf"])
def test_non_finite_rotation_names_frame_and_joint(tmp_path: Path, suffix: str) -> None:
    motion = walk()
    rotations = motion.rotations.clone()
    rotations[7, 3, 2] = float("inf")
    assert_refused(motion.copy(rotations=rotations), tmp_path / f"out{suffix}",
                   f"frame 7, joint {motion.skeleton.names[3]}", "non-finite rotation")


@pytest.mark.parametrize("suffix", [".bvh", ".glb", ".txt", ".npz", ".csv"])
def test_non_finite_bone_offset_is_refused(tmp_path: Path, suffix: str) -> None:
    motion = walk()
    sk = motion.skeleton
    offsets = sk.offsets.clone()
    offsets[4, 0] = float("nan")
    broken = motion.copy(skeleton=Skeleton(sk.names, sk.parents, offsets, sk.channels, sk.end_sites))
    assert_refused(broken, tmp_path / f"out{suffix}", "non-finite")


@pytest.mark.parametrize("suffix", [".npz", ".npy", ".csv"])
def test_non_finite_joint_positions_are_refused(tmp_path: Path, suffix: str) -> None:
    data = JointPositions.from_motion(walk())
    data.positions[3, 2, 2] = float("nan")
    assert_refused(data, tmp_path / f"p{suffix}", f"frame 3, joint {data.names[2]}", "(z)")


@pytest.mark.parametrize("suffix", [".bvh", ".txt", ".json", ".glb", ".gltf", ""])
def test_joint_positions_cannot_be_saved_as_a_motion_format(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"out{suffix}"
    with pytest.raises(UnsupportedFormatError, match=r"expected \.npz, \.npy or \.csv") as info:
        skelanim.save(JointPositions.from_motion(walk()), target)
    assert info.value.path == str(target)
    assert list(tmp_path.iterdir()) == []


def renamed(motion: Motion, j: int, name: str) -> Motion:
    sk = motion.skeleton
    names = list(sk.names)
    names[j] = name
    return motion.copy(skeleton=Skeleton(names, sk.parents, sk.offsets, sk.channels, sk.end_sites))


@pytest.mark.parametrize("name", ["a{b}", "x}", "  padded ", "x\ty", "two  spaces", "line\nbreak", "nb\xa0sp", "",
                                  "nul\x00"])
def test_bvh_refuses_joint_names_it_cannot_hold(tmp_path: Path, name: str) -> None:
    motion = renamed(walk(), 2, name)
    target = tmp_path / "names.bvh"
    assert_refused(motion, target, "joint 2", repr(name), "rename the joint")
    with pytest.raises(SkeletonError, match="cannot be written to a BVH file"):
        bvh.dumps(motion)
    # and before any work (skelanim predict checks its output so): io.check_save had looked for a public
    # check_writable the BVH writer did not have, and let every .bvh output through
    with pytest.raises(SkeletonError, match="cannot be written to a BVH file"):
        skelanim.io.check_save(tmp_path / "checked.bvh", motion)
    assert not (tmp_path / "checked.bvh").exists()


@pytest.mark.parametrize("name", ["Left Arm", "é ü", "End Site", "a_b-c.d:1"])
def test_bvh_names_with_single_spaces_and_unicode_round_trip(tmp_path: Path, name: str) -> None:
    target = tmp_path / "names.bvh"
    bvh.save(renamed(walk(), 2, name), target)
    assert skelanim.load(target).skeleton.names[2] == name


def test_writer_warnings_point_at_the_caller(tmp_path: Path) -> None:
    motion = walk()
    sk = motion.skeleton
    channels = list(sk.channels)
    channels[3] = ()  # a rotating joint without rotation channels: its rotation is not written
    stripped = motion.copy(skeleton=Skeleton(sk.names, sk.parents, sk.offsets, channels, sk.end_sites))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        skelanim.save(stripped, tmp_path / "w.bvh")
    assert [w.filename for w in caught] == [__file__], [(w.filename, str(w.message)) for w in caught]
    assert "has no rotation channels" in str(caught[0].message)


def test_a_rotation_its_channels_cannot_hold_is_warned_about(tmp_path: Path) -> None:
    """An audit: a joint with two rotation channels (a glTF's extras can say so) lost its third axis silently."""
    motion = walk()
    sk = motion.skeleton
    j = next(j for j in range(1, sk.num_joints) if float(motion.rotations[:, j, 1:].abs().max()) > 0.1)
    channels = list(sk.channels)
    channels[j] = ("Xrotation", "Yrotation")
    two = motion.copy(skeleton=Skeleton(sk.names, sk.parents, sk.offsets, channels, sk.end_sites))
    with pytest.warns(UserWarning, match=rf"joint {sk.names[j]!r} turns about an axis its channels \(Xrotation "
                                         r"Yrotation\) lack, by up to [0-9.]+ degrees; that part is not written"):
        skelanim.save(two, tmp_path / "two.bvh")
    back = skelanim.load(tmp_path / "two.bvh")  # what was written: the X and Y part only
    k = back.skeleton.names.index(sk.names[j])  # the writer orders joints depth first
    from skelanim.core.euler import euler_to_quat, quat_to_euler

    xy = quat_to_euler(motion.rotations[:, j], "XYZ")
    xy[..., 2] = 0.0
    expected = euler_to_quat(xy, "XYZ")
    sign = torch.sign((back.rotations[:, k] * expected).sum(-1, keepdim=True))
    assert float((back.rotations[:, k] * sign - expected).abs().max()) < 1e-5
    rotations = motion.rotations.clone()
    rotations[:, j] = back.rotations[:, k]
    held = two.copy(rotations=rotations)  # already within its channels: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skelanim.save(held, tmp_path / "again.bvh")


def test_finite_motions_still_write_everywhere(tmp_path: Path) -> None:
    motion = walk()
    for suffix in SUFFIXES:
        skelanim.save(motion, tmp_path / f"ok{suffix}")
    assert np.allclose(skelanim.load_positions(tmp_path / "ok.npz").positions, motion.positions().numpy())
    assert torch.allclose(skelanim.load(tmp_path / "ok.txt").root_positions, motion.root_positions)


def test_a_motion_without_frames_is_refused_before_a_file_is_written(tmp_path):
    """``save`` wrote "Frames: 0", which ``load`` (as most readers) refuses: now a one-line error and no file."""
    from skelanim.errors import ShapeError

    skeleton = Skeleton(["Hips", "Spine"], np.array([-1, 0]), torch.tensor([[0.0, 0, 0], [0, 1, 0]]))
    empty = Motion.rest(skeleton, 1)[:0]
    assert empty.num_frames == 0
    with pytest.raises(ShapeError, match="without frames"):
        skelanim.save(empty, tmp_path / "empty.bvh")
    assert not (tmp_path / "empty.bvh").exists()


def _huge(motion: Motion, what: str) -> Motion:
    """``motion`` with one length of kind ``what`` at 2e9, beyond :data:`bvh.MAX_LENGTH` (the reader refuses it)."""
    sk = motion.skeleton
    if what == "root position":
        roots = motion.root_positions.clone()
        roots[4, 0] = 2e9
        return motion.copy(root_positions=roots)
    if what == "joint translation":
        translations = motion.local_translations().clone()
        translations[4, 3, 1] = -2e9
        channels = [*sk.channels[:3], ("Xposition", "Yposition", "Zposition", *sk.channels[3]), *sk.channels[4:]]
        return motion.copy(skeleton=Skeleton(sk.names, sk.parents, sk.offsets, channels, sk.end_sites),
                           joint_translations=translations)  # fmt: skip
    offsets, ends = sk.offsets.clone(), dict(sk.end_sites)
    if what == "bone offset":
        offsets[3, 2] = 2e9
    else:
        ends[12] = torch.tensor([0.0, 2e9, 0.0], dtype=offsets.dtype)
    return motion.copy(skeleton=Skeleton(sk.names, sk.parents, offsets, sk.channels, ends))


@pytest.mark.parametrize(("what", "where"), [("root position", "frame 4, joint root"),
                                             ("joint translation", "frame 4, joint right_hip"),
                                             ("bone offset", "joint right_hip"), ("End Site offset", "joint left_elbow")])
def test_bvh_refuses_lengths_its_reader_refuses(tmp_path: Path, what: str, where: str) -> None:
    """An audit: ``bvh.save`` wrote a root x of 2e9 (``convert --scale 1e8`` exited 0) into a file ``bvh.load`` then
    refused, every value beyond ``MAX_LENGTH`` being a corrupt number to the reader; now refused before writing."""
    motion = _huge(walk(), what)
    article = "an" if what[0] in "aeiouAEIOU" else "a"
    assert_refused(motion, tmp_path / "big.bvh", where, f"cannot write {article} {what} of 2e+09", "beyond +-1e+09")
    with pytest.raises(ShapeError, match=f"{where}: cannot write {article} {what}"):
        skelanim.io.check_save(tmp_path / "checked.bvh", motion)  # before any work, as the CLI checks
    assert not (tmp_path / "checked.bvh").exists()
    at_bound = walk()
    roots = at_bound.root_positions.clone()
    roots[4, 0] = bvh.MAX_LENGTH  # at the bound: written, and read back
    bvh.save(at_bound.copy(root_positions=roots), tmp_path / "ok.bvh")
    assert float(bvh.load(tmp_path / "ok.bvh").root_positions[4, 0]) == bvh.MAX_LENGTH


@pytest.mark.parametrize(("name", "said"), [(" Hips", "it would read back as 'Hips'"),
                                            ("\xa0Hips", "it would read back as 'Hips'"),
                                            ("", "the name is empty"), ("a\rb", "would not read back"),
                                            ("a\udcff", "not valid Unicode text")])  # fmt: skip
def test_csv_refuses_joint_names_its_header_does_not_give_back(tmp_path: Path, name: str, said: str) -> None:
    """An audit: a leading space was lost on reading (the header's cells are stripped) and an empty name wrote
    ``_x,_y,_z``, which the reader refuses; now refused before writing, naming the joint. ``.npz`` keeps them."""
    data = JointPositions(["Spine", name], np.zeros((2, 2, 3)), 30.0)
    assert_refused(data, tmp_path / "p.csv", "joint 1", repr(name), said, "cannot be written to a CSV file")
    if name != "a\udcff":  # (numpy's npz stores unicode names as UTF-32)
        skelanim.save(data, tmp_path / "p.npz")
        assert skelanim.load_positions(tmp_path / "p.npz").names == ["Spine", name]


@pytest.mark.parametrize("name", ["Hips ", "a,b", 'q"uote', "line\nbreak", "two  spaces", "{a}", "x_x", "time"])
def test_csv_joint_names_that_read_back_are_still_written(tmp_path: Path, name: str) -> None:
    data = JointPositions([name, "b"], np.arange(12.0).reshape(2, 2, 3), 30.0)
    skelanim.save(data, tmp_path / "p.csv")
    assert skelanim.load_positions(tmp_path / "p.csv").names == [name, "b"]


def test_a_positions_file_where_a_motion_is_read_says_how_to_make_one(tmp_path: Path) -> None:
    """``render``/``view``/``plot``/``gait`` read motion files; a ``.npz`` of joint positions (what ``skelanim
    positions`` writes, what ``ik solve`` takes) had been "unknown suffix" alone (a review): the message now says
    what the file holds and how to turn it into a motion."""
    path = tmp_path / "pos.npz"
    skelanim.save(walk(), path)
    with pytest.raises(UnsupportedFormatError) as info:
        skelanim.load(path)
    line = info.value.one_line()
    assert line.startswith(f"{path}: unknown suffix '.npz' for a motion file")
    assert "holds joint positions" in line and "skelanim ik solve turns them into a motion" in line
    with pytest.raises(UnsupportedFormatError) as info:
        skelanim.load(tmp_path / "pos.xyz")
    assert "joint positions" not in info.value.one_line()
