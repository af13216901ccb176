"""DeepMimic clips: the frame layout, every real clip loads, 1-DoF joints, exact round trips, and errors
that name the file and the place.

The humanoid they animate (the URDF, the bundled files, forward kinematics against pybullet and scipy) is
tested in ``test_deepmimic_humanoid.py``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

import skelanim.io
from skelanim import Motion, Skeleton
from skelanim.core.rotations import axis_angle_to_quat, quat_multiply
from skelanim.data.samples import sample_path
from skelanim.errors import FormatError, ShapeError, SkeletonError
from skelanim.io import deepmimic
from skelanim.io.positions import JointPositions

CLIP_NAMES = ("walk", "run", "jump")
ONE_DOF_INDEX = {"right_knee": 20, "right_elbow": 29, "left_knee": 34, "left_elbow": 43}  # from the data README


# ---------------------------------------------------------------------------------------- helpers


def data_clips(folder: Path) -> list[Path]:
    clips = sorted(folder.glob("*.txt"))
    assert clips, "the deepmimic data folder holds no clips"
    return clips


def raw_frames(path: Path) -> np.ndarray:
    return np.array(json.loads(Path(path).read_text())["Frames"], dtype=np.float64)


def write_clip(path: Path, frames: list, loop: object = "wrap", **extra: object) -> Path:
    data: dict = {"Loop": loop, **extra, "Frames": frames}
    path.write_text(json.dumps(data))
    return path


def walk_frames() -> list[list[float]]:
    return json.loads(sample_path("walk").read_text())["Frames"]


# ---------------------------------------------------------------------------------------- layout


def test_frame_layout_matches_the_data_readme():
    assert deepmimic.FRAME_SIZE == 44
    assert deepmimic.FRAME_LAYOUT["duration"] == slice(0, 1)
    assert deepmimic.FRAME_LAYOUT["root_position"] == slice(1, 4)
    assert deepmimic.FRAME_LAYOUT["root"] == slice(4, 8)
    assert deepmimic.FRAME_LAYOUT["chest"] == slice(8, 12)
    for body, index in ONE_DOF_INDEX.items():
        assert deepmimic.FRAME_LAYOUT[body] == slice(index, index + 1)
    assert deepmimic.FRAME_LAYOUT["left_shoulder"] == slice(39, 43)


# ---------------------------------------------------------------------------------------- loading


@pytest.mark.parametrize("name", CLIP_NAMES)
def test_bundled_samples_load(name):
    path = sample_path(name)
    motion = deepmimic.load(path)
    frames = raw_frames(path)
    assert motion.rotations.shape == (len(frames), 13, 4)
    assert motion.root_positions.shape == (len(frames), 3)
    assert motion.fps == pytest.approx(1.0 / frames[0, 0], rel=1e-15)
    assert motion.metadata["format"] == "deepmimic"
    assert motion.metadata["loop"] == json.loads(path.read_text())["Loop"]
    assert motion.metadata["frame_duration"] == frames[0, 0]
    torch.testing.assert_close(motion.root_positions, torch.from_numpy(frames[:, 1:4]), rtol=0, atol=0)


def test_a_rounded_duration_reads_as_the_rate_it_stands_for_and_writes_back(deepmimic_folder, tmp_path):
    path = deepmimic_folder / "humanoid3d_spin.txt"
    assert raw_frames(path)[0, 0] == 0.041667  # 1 / 24 rounded to six digits; 1 / 0.041667 = 23.9998
    motion = deepmimic.load(path)
    assert motion.fps == 24.0 and motion.metadata["frame_duration"] == 0.041667
    deepmimic.save(motion, tmp_path / "s.txt")
    assert raw_frames(tmp_path / "s.txt")[0, 0] == 0.041667  # the file's own number
    skelanim.io.save(motion, tmp_path / "s.bvh")
    assert skelanim.io.load(tmp_path / "s.bvh").fps == 24.0  # the same rate by either format
    walk = deepmimic.load(deepmimic_folder / "humanoid3d_walk.txt")  # 0.033332: no whole rate rounds to it
    assert walk.fps == 1 / 0.033332


def test_a_gltf_round_trip_keeps_loop_other_keys_and_duration(deepmimic_folder, tmp_path):
    path = deepmimic_folder / "humanoid3d_run.txt"
    original = json.loads(path.read_text())
    assert original["Loop"] == "wrap" and "RightJoints" in original
    skelanim.io.save(deepmimic.load(path), tmp_path / "run.glb")
    skelanim.io.save(skelanim.io.load(tmp_path / "run.glb"), tmp_path / "run.txt")
    back = json.loads((tmp_path / "run.txt").read_text())
    assert list(back) == list(original)  # Loop, RightJoints, LeftJoints, Frames
    assert all(back[k] == original[k] for k in ("Loop", "RightJoints", "LeftJoints"))
    assert back["Frames"][0][0] == original["Frames"][0][0] == 0.033332


def test_every_clip_in_the_data_folder_loads(deepmimic_folder):
    clips = data_clips(deepmimic_folder)
    assert len(clips) >= 10
    for path in clips:
        motion = deepmimic.load(path)
        frames = raw_frames(path)
        assert motion.num_frames == len(frames), path.name
        assert 20 < motion.fps < 70, path.name
        norms = torch.linalg.vector_norm(motion.rotations, dim=-1)
        torch.testing.assert_close(norms, torch.ones_like(norms), rtol=0, atol=1e-12)
        positions = motion.positions(end_sites=True)
        assert positions.shape == (len(frames), 15, 3)
        assert torch.isfinite(positions).all()
        # load normalises the file's quaternions (kick's are up to 40% off unit length)
        root_q = frames[:, 4:8] / np.linalg.norm(frames[:, 4:8], axis=1, keepdims=True)
        np.testing.assert_allclose(motion.rotations[:, 0].numpy(), root_q, atol=1e-15)


def test_run_clip_keeps_extra_keys(deepmimic_folder):
    motion = deepmimic.load(deepmimic_folder / "humanoid3d_run.txt")
    assert motion.metadata["deepmimic_extra"] == {
        "RightJoints": [3, 4, 5, 6, 7, 8],
        "LeftJoints": [9, 10, 11, 12, 13, 14],
    }


def test_one_dof_joints_are_rotations_about_local_z():
    path = sample_path("jump")
    motion = deepmimic.load(path)
    frames = raw_frames(path)
    for body, index in ONE_DOF_INDEX.items():
        q = motion.rotations[:, motion.skeleton.index(body)].numpy()
        angle = frames[:, index]
        np.testing.assert_allclose(q[:, 1:3], 0.0, atol=0)
        np.testing.assert_allclose(q[:, 0], np.cos(angle / 2), atol=1e-15)
        np.testing.assert_allclose(q[:, 3], np.sin(angle / 2), atol=1e-15)
    # knees bend backwards (negative about +z), elbows forwards, in these clips
    assert (frames[:, 20] <= 1e-6).all() and (frames[:, 29] >= -1e-6).all()


def test_root_rotation_is_global_and_others_local():
    """The chest's world rotation is root * chest (the root quaternion is world, the chest's local)."""
    motion = deepmimic.load(sample_path("walk"))
    world_rot, _ = motion.world()
    expected = Rotation.from_quat(motion.rotations[:, 0].numpy(), scalar_first=True) * Rotation.from_quat(
        motion.rotations[:, 1].numpy(), scalar_first=True
    )
    np.testing.assert_allclose(world_rot[:, 1].numpy(), expected.as_matrix(), atol=1e-12)


def test_io_dispatch_and_positions_from_a_clip(tmp_path):
    copy = tmp_path / "walk.json"
    copy.write_bytes(sample_path("walk").read_bytes())
    motion = skelanim.io.load(copy)
    assert motion.metadata["format"] == "deepmimic"
    jp = skelanim.io.load_positions(sample_path("walk"))
    assert isinstance(jp, JointPositions)
    np.testing.assert_array_equal(jp.positions, motion.positions().numpy())


# ---------------------------------------------------------------------------------------- round trips


def assert_same_motion(a: Motion, b: Motion, atol: float = 1e-12) -> None:
    assert a.skeleton == b.skeleton
    assert a.fps == b.fps
    assert a.metadata["loop"] == b.metadata["loop"]
    assert a.metadata["deepmimic_extra"] == b.metadata["deepmimic_extra"]
    torch.testing.assert_close(a.root_positions, b.root_positions, rtol=0, atol=0)
    torch.testing.assert_close(a.rotations, b.rotations, rtol=0, atol=atol)


def test_round_trip_of_every_data_clip(deepmimic_folder, tmp_path):
    for path in data_clips(deepmimic_folder):
        first = deepmimic.load(path)
        out = tmp_path / path.name
        deepmimic.save(first, out)
        second = deepmimic.load(out)
        assert_same_motion(first, second)
        # a second save is byte-identical up to the 1-DoF angles' last digit
        deepmimic.save(second, tmp_path / "again.txt")
        np.testing.assert_allclose(raw_frames(tmp_path / "again.txt"), raw_frames(out), rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", CLIP_NAMES)
def test_saved_file_keeps_the_original_values(name, tmp_path):
    path = sample_path(name)
    deepmimic.save(deepmimic.load(path), tmp_path / "out.txt")
    original, written = raw_frames(path), raw_frames(tmp_path / "out.txt")
    assert json.loads((tmp_path / "out.txt").read_text())["Loop"] == json.loads(path.read_text())["Loop"]
    np.testing.assert_array_equal(written[:, 0], original[:, 0])  # durations, the last one 0
    np.testing.assert_array_equal(written[:, 1:4], original[:, 1:4])
    for index in ONE_DOF_INDEX.values():
        np.testing.assert_allclose(written[:, index], original[:, index], rtol=0, atol=1e-14)
    # quaternions are written normalised (some clips' are off unit length by up to 40%, e.g. kick)
    for body, part in deepmimic.FRAME_LAYOUT.items():
        if part.stop - part.start == 4:
            unit = original[:, part] / np.linalg.norm(original[:, part], axis=1, keepdims=True)
            np.testing.assert_allclose(written[:, part], unit, rtol=0, atol=1e-15, err_msg=body)


def test_save_projects_one_dof_joints_onto_z(tmp_path):
    motion = deepmimic.load(sample_path("walk"))[:3]
    knee = motion.skeleton.index("right_knee")
    z = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    twist = axis_angle_to_quat(z, torch.tensor([-1.2, 0.4, 3.0], dtype=torch.float64))
    swing = axis_angle_to_quat(x, torch.tensor([0.3, -0.5, 0.0], dtype=torch.float64))
    rotations = motion.rotations.clone()
    rotations[:, knee] = quat_multiply(twist, swing)
    rotations[2, knee] = -rotations[2, knee]  # the same rotation, other hemisphere
    # the largest swing dropped, 0.5 rad = 28.6 degrees at frame 1, is said in a warning naming the file and joint
    with pytest.warns(UserWarning, match=r"p\.txt: DeepMimic's right_knee .* 28\.6 degrees .* \(frame 1, "):
        deepmimic.save(motion.copy(rotations=rotations), tmp_path / "p.txt")
    np.testing.assert_allclose(raw_frames(tmp_path / "p.txt")[:, 20], [-1.2, 0.4, 3.0], atol=1e-14)
    # a half-turn swing leaves no twist to speak of: written as 0
    rotations[0, knee] = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    with pytest.warns(UserWarning, match=r"180\.0 degrees .* \(frame 0, "):
        deepmimic.save(motion.copy(rotations=rotations), tmp_path / "q.txt")
    assert raw_frames(tmp_path / "q.txt")[0, 20] == 0.0


def test_a_swing_below_the_warning_threshold_or_none_is_written_without_warning(tmp_path):
    """The swing warning's threshold (:data:`deepmimic.SWING_WARNING_DEGREES`, 1 degree) on an elbow: 0.9 degrees
    about local x passes silently, 1.1 degrees warns; the bundled clips, their mirror images and resampled copies
    (rotations about z only, so nothing to drop) save without any warning."""
    import warnings

    from skelanim import ops

    motion = deepmimic.load(sample_path("walk"))[:4]
    elbow = motion.skeleton.index("left_elbow")
    x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    for degrees, warns in ((0.9, False), (1.1, True)):
        rotations = motion.rotations.clone()
        rotations[3, elbow] = quat_multiply(rotations[3, elbow], axis_angle_to_quat(x, torch.tensor(math.radians(degrees))))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            deepmimic.save(motion.copy(rotations=rotations), tmp_path / "e.txt")
        expected = (f"{tmp_path / 'e.txt'}: DeepMimic's left_elbow turns about one axis only; {degrees} degrees of "
                    "its rotation about other axes (frame 3, the most of any 1-DoF joint) are dropped")
        assert [str(w.message) for w in caught] == ([expected] if warns else [])
    for name in CLIP_NAMES:
        clip = deepmimic.load(sample_path(name))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for variant in (clip, ops.mirror(clip), ops.resample(clip, 60.0)):
                deepmimic.save(variant, tmp_path / "c.txt")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-math.pi + 1e-9, math.pi - 1e-9), min_size=1, max_size=5))
def test_one_dof_angle_round_trip(tmp_path_factory, angles):
    frames = [list(f) for f in walk_frames()[: len(angles)]]
    for frame, angle in zip(frames, angles):
        frame[43] = angle
    path = write_clip(tmp_path_factory.mktemp("a") / "a.txt", frames)
    out = path.with_name("b.txt")
    deepmimic.save(deepmimic.load(path), out)
    np.testing.assert_allclose(raw_frames(out)[:, 43], angles, rtol=0, atol=4e-16 * 8)


def test_save_maps_joints_by_name_and_ignores_extra_joints(tmp_path):
    motion = deepmimic.load(sample_path("run"))
    sk = motion.skeleton
    bigger = Skeleton(
        sk.names + ["head"],
        np.append(sk.parents, 2),
        torch.cat([sk.offsets, torch.tensor([[0.0, 0.1, 0.0]], dtype=torch.float64)]),
    )
    ident = torch.zeros(motion.num_frames, 1, 4, dtype=torch.float64)
    ident[..., 0] = 1
    deepmimic.save(
        Motion(bigger, torch.cat([motion.rotations, ident], 1), motion.root_positions, motion.fps), tmp_path / "b.txt"
    )
    again = deepmimic.load(tmp_path / "b.txt")
    torch.testing.assert_close(again.rotations, motion.rotations, rtol=0, atol=1e-12)
    assert again.metadata["loop"] == "none"  # a Motion without DeepMimic metadata
    assert again.fps == motion.fps


def test_save_needs_every_body(tmp_path):
    sk = Skeleton(["root", "chest"], np.array([-1, 0]), torch.zeros(2, 3, dtype=torch.float64))
    with pytest.raises(SkeletonError, match="neck"):
        deepmimic.save(Motion.rest(sk, 2), tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists()


def test_save_refuses_non_finite_and_leaves_the_old_file(tmp_path):
    target = tmp_path / "walk.txt"
    target.write_text("old")
    motion = deepmimic.load(sample_path("walk"))
    roots = motion.root_positions.clone()
    roots[4, 1] = float("nan")
    with pytest.raises(FormatError, match=r"frame 4: cannot write a non-finite root position y"):
        deepmimic.save(motion.copy(root_positions=roots), target)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["walk.txt"]


def test_save_loop_option_and_fps_without_metadata(tmp_path):
    motion = deepmimic.load(sample_path("walk"))
    plain = motion.copy(metadata={}, fps=25.0)
    deepmimic.save(plain, tmp_path / "x.txt", loop="wrap")
    data = json.loads((tmp_path / "x.txt").read_text())
    assert data["Loop"] == "wrap"
    assert data["Frames"][0][0] == 0.04 and data["Frames"][-1][0] == 0.0
    assert deepmimic.load(tmp_path / "x.txt").fps == 25.0
    for bad in (True, "True", "loop"):  # True had been written as "True", which DeepMimic refuses
        with pytest.raises(ValueError, match="loop must be one of 'none', 'wrap', 'mirror'"):
            deepmimic.save(plain, tmp_path / "y.txt", loop=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "y.txt").exists()
    with pytest.warns(UserWarning, match="metadata loop True is no DeepMimic loop mode: written as 'none'"):
        deepmimic.save(plain.copy(metadata={"loop": True}), tmp_path / "z.txt")  # e.g. glTF extras' loop=True
    assert deepmimic.load(tmp_path / "z.txt").metadata["loop"] == "none"


def test_single_frame_clips(tmp_path):
    frame = walk_frames()[0]
    motion = deepmimic.load(write_clip(tmp_path / "one.txt", [frame]))
    assert motion.num_frames == 1 and motion.fps == pytest.approx(1 / frame[0])
    deepmimic.save(motion, tmp_path / "two.txt")  # keeps its duration: fps survives
    assert deepmimic.load(tmp_path / "two.txt").fps == motion.fps
    zero = list(frame)
    zero[0] = 0.0
    still = deepmimic.load(write_clip(tmp_path / "still.txt", [zero]))
    assert still.fps == deepmimic.DEFAULT_FPS and still.metadata["fps_assumed"] is True


def test_uneven_durations_are_recorded(tmp_path):
    frames = walk_frames()[:5]
    frames[1][0] = 0.05
    motion = deepmimic.load(write_clip(tmp_path / "u.txt", frames))
    assert motion.fps == pytest.approx(1 / 0.033332)
    assert motion.metadata["frame_durations"][1] == 0.05


# ---------------------------------------------------------------------------------------- bad input


def corrupt(tmp_path: Path, change) -> Path:
    frames = walk_frames()[:6]
    change(frames)
    return write_clip(tmp_path / "walk.txt", frames)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (lambda f: f[3].pop(), r"walk\.txt: frame 3: expected 44 values, found 43$"),
        (lambda f: f[0].append(1.0), r"walk\.txt: frame 0: expected 44 values, found 45$"),
        (
            lambda f: f[2].__setitem__(5, float("nan")),
            r"walk\.txt: frame 2: value 5 \(root quaternion x\): not a finite number \(nan\)",
        ),
        (lambda f: f[4].__setitem__(2, float("inf")), r"frame 4: value 2 \(root position y\): not a finite number"),
        (  # an audit: read, then written into a BVH file the BVH reader refused (as it refuses it: a corrupt number)
            lambda f: f[3].__setitem__(1, 1e300),
            r"walk\.txt: frame 3: value 1 \(root position x\): 1e\+300 is beyond \+-1e\+09: not a position",
        ),
        (lambda f: f[5].__setitem__(3, -2e9), r"frame 5: value 3 \(root position z\): -2e\+09 is beyond \+-1e\+09"),
        (
            lambda f: f[1].__setitem__(20, "0.5"),
            r"frame 1: value 20 \(right_knee angle\): expected a number, found \"0\.5\"",
        ),
        (
            lambda f: f[1].__setitem__(43, None),
            r"frame 1: value 43 \(left_elbow angle\): expected a number, found null",
        ),
        (
            lambda f: f[5].__setitem__(8, True),
            r"frame 5: value 8 \(chest quaternion w\): expected a number, found true",
        ),
        (lambda f: f.__setitem__(2, {"a": 1}), r"frame 2: expected a list of 44 values, found \{\"a\": 1\}"),
        (lambda f: f[3].__setitem__(0, -0.1), r"frame 3: value 0 \(frame duration\): must not be negative"),
        (lambda f: f[3].__setitem__(0, 0.0), r"frame 3: value 0 \(frame duration\): must be positive"),
        (lambda f: f[2].__setitem__(slice(12, 16), [0.0] * 4), r"frame 2: neck quaternion is zero \(values 12:16\)"),
        (lambda f: f[4].__setitem__(slice(4, 8), [0, 0, 0, 0]), r"frame 4: root orientation quaternion is zero"),
    ],
)
def test_bad_frames_name_file_and_frame(tmp_path, change, pattern):
    path = corrupt(tmp_path, change)
    with pytest.raises(FormatError, match=pattern) as info:
        deepmimic.load(path)
    assert info.value.path == str(path)
    assert info.value.where is not None and info.value.where.startswith("frame ")


def test_bad_json_gives_the_line(tmp_path):
    text = sample_path("walk").read_text().splitlines()
    text[7] = text[7].replace(",", ",,", 1)  # the 4th frame's line
    bad = tmp_path / "walk.txt"
    bad.write_text("\n".join(text))
    with pytest.raises(FormatError, match=r"walk\.txt:8: invalid JSON: Expecting value \(column \d+\)") as info:
        deepmimic.load(bad)
    assert info.value.line == 8


def test_truncated_file(tmp_path):
    bad = tmp_path / "cut.txt"
    bad.write_bytes(sample_path("walk").read_bytes()[:5000])
    with pytest.raises(FormatError, match=r"cut\.txt:\d+: invalid JSON"):
        deepmimic.load(bad)


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ('{"Loop": "wrap"}', r"missing key 'Frames' \(keys found: 'Loop'\)"),
        ('{"Loop": "wrap", "Frames": []}', r"\"Frames\" must be a non-empty list of frames, found an empty list"),
        ('{"Loop": "wrap", "Frames": 3}', r"\"Frames\" must be a non-empty list of frames, found 3"),
        ('{"Loop": 1, "Frames": [[0.1]]}', r"\"Loop\" must be \"none\", \"wrap\" or \"mirror\", found 1"),
        ('{"Loop": "sometimes", "Frames": [[0.1]]}', r"\"Loop\" must be .*, found \"sometimes\""),
        ("[1, 2]", r"expected a JSON object with \"Frames\", found list"),
        ("", r"x\.txt:1: invalid JSON"),
    ],
)
def test_bad_structure(tmp_path, content, pattern):
    path = tmp_path / "x.txt"
    path.write_text(content)
    with pytest.raises(FormatError, match=pattern):
        deepmimic.load(path)


def test_not_utf8(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b'{"Loop": "\xff"}')
    with pytest.raises(FormatError, match=r"x\.txt:1: not UTF-8 text \(byte 10: 0xff\)"):
        deepmimic.load(path)


# ---------------------------------------------------------------------------------------- only the humanoid is written


def test_save_refuses_a_scaled_motion(tmp_path):
    """A clip stores no bone lengths: a scaled walk would read back with the URDF's bones and a scaled root
    position, floating above the floor."""
    from skelanim import ops

    motion = deepmimic.load(sample_path("walk"))
    target = tmp_path / "s2.txt"
    with pytest.raises(SkeletonError, match=r"fixed bone lengths .* cannot be scaled: this motion's bones are 2 times"):
        deepmimic.save(ops.scale(motion, 2.0), target)
    assert list(tmp_path.iterdir()) == []
    deepmimic.save(ops.scale(motion, 1.0), target)  # the humanoid's own bones are fine
    torch.testing.assert_close(deepmimic.load(target).positions(), motion.positions(), rtol=0, atol=1e-12)


def test_save_refuses_other_bone_offsets_and_says_how_to_retarget(tmp_path):
    motion = deepmimic.load(sample_path("walk"))
    sk = motion.skeleton
    offsets = sk.offsets.clone()
    offsets[sk.index("left_knee"), 1] *= 1.3
    longer = motion.copy(skeleton=Skeleton(sk.names, sk.parents, offsets, sk.channels, sk.end_sites))
    # the hint names the file the clip was read from (metadata["path"])
    pattern = rf"joint 'left_knee' has offset .* skelanim retarget {re.escape(str(sample_path('walk')))} --to \S+humanoid\.urdf"
    with pytest.raises(SkeletonError, match=pattern):
        deepmimic.save(longer, tmp_path / "x.txt")
    assert list(tmp_path.iterdir()) == []


def test_save_of_another_skeleton_names_the_file_and_the_retarget_command(tmp_path):
    text = ("HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation"
            " Yrotation\n\tJOINT Spine\n\t{\n\t\tOFFSET 0 10 0\n\t\tCHANNELS 3 Zrotation Xrotation Yrotation\n"
            "\t\tEnd Site\n\t\t{\n\t\t\tOFFSET 0 10 0\n\t\t}\n\t}\n}\nMOTION\nFrames: 1\nFrame Time: 0.0333333\n"
            "0 0 0 0 0 0 0 0 0\n")
    src = tmp_path / "other.bvh"
    src.write_text(text)
    target = tmp_path / "out.txt"
    with pytest.raises(SkeletonError) as info:
        skelanim.io.save(skelanim.io.load(src), target)
    line = info.value.one_line()
    assert line.startswith(f"{target}: a DeepMimic clip holds the DeepMimic humanoid's 13 joints")
    assert "this skeleton has none of them (2 joints: Hips, Spine)" in line
    assert f"skelanim retarget {src} --to " in line and f"humanoid.urdf -o {target}" in line
    assert "unknown joint" not in line and not target.exists()


def test_a_clip_read_with_another_urdf_writes_back_with_it(tmp_path):
    text = sample_path("humanoid.urdf").read_text(errors="replace").replace("\x00", "")
    chest = 'xyz = "0.000000 0.944604 0.000000"'
    assert text.count(chest) == 1
    urdf = tmp_path / "tall.urdf"
    urdf.write_text(text.replace(chest, 'xyz = "0.000000 1.100000 0.000000"'))
    motion = deepmimic.load(sample_path("walk"), urdf=urdf)
    assert motion.metadata["deepmimic_urdf"] == str(urdf)
    deepmimic.save(motion, tmp_path / "a.txt")  # checked against the URDF it was read with
    deepmimic.save(motion, tmp_path / "b.txt", urdf=urdf)
    motion.metadata.pop("deepmimic_urdf")
    with pytest.raises(SkeletonError, match="joint 'chest' has offset"):
        deepmimic.save(motion, tmp_path / "c.txt")  # against the bundled humanoid
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "tall.urdf"]


def test_negative_duration_is_printed_as_a_plain_number(tmp_path):
    path = corrupt(tmp_path, lambda f: f[3].__setitem__(0, -0.03))
    with pytest.raises(FormatError) as info:
        deepmimic.load(path)
    assert info.value.one_line().endswith("frame 3: value 0 (frame duration): must not be negative, found -0.03")


# ---------------------------------------------------------------------------------------- an audit of 2026-12-06


def test_a_clip_without_loop_reads_as_none_as_deepmimic_reads_it(tmp_path):
    """DeepMimic's ``cMotion::LoadJson`` reads ``Loop`` only where present (else ``eLoopNone``); it had been refused."""
    path = tmp_path / "x.txt"
    path.write_text(json.dumps({"Frames": walk_frames()[:3]}))
    motion = deepmimic.load(path)
    assert motion.metadata["loop"] == "none" and motion.metadata["deepmimic_extra"] == {}
    assert motion.num_frames == 3


def test_nan_and_infinity_are_not_json(tmp_path):
    """Python's reader takes ``NaN``; strict readers (and DeepMimic's jsoncpp) do not, and the writer wrote it back."""
    path = tmp_path / "x.txt"
    frames = json.dumps(walk_frames()[:2])
    path.write_text('{"Loop": "wrap",\n"Note": "NaN",\n"Bad": [1, {"a": -Infinity}],\n"Frames": ' + frames + "}")
    with pytest.raises(FormatError, match=r'x\.txt: invalid JSON: "Bad"\[1\]\["a"\] is not a finite number'):
        deepmimic.load(path)
    motion = deepmimic.load(sample_path("walk"))
    target = tmp_path / "out.txt"
    for extra, pattern in (({"Bad": float("nan")}, r"deepmimic_extra\['Bad'\] as JSON: Out of range float"),
                           ("abc", r"metadata deepmimic_extra must be an object of top-level keys, found \"abc\"")):
        with pytest.raises(FormatError, match=pattern):
            deepmimic.save(motion.copy(metadata={**motion.metadata, "deepmimic_extra": extra}), target)
        assert not target.exists()


def test_frame_durations_outside_the_bvh_range_are_refused(tmp_path):
    """A first duration of 1e300 had been read as 1e-300 fps (and a glTF export then called that rate too fast)."""
    for bad in (1e300, 1e-9):
        path = corrupt(tmp_path, lambda f, d=bad: f[0].__setitem__(0, d))
        with pytest.raises(FormatError, match=rf"frame 0: value 0 \(frame duration\): expected 1e-06 to 3600 seconds"
                                              rf" \(a million frames a second to one an hour\), found {re.escape(str(bad))}"):
            deepmimic.load(path)


def test_huge_quaternions_keep_their_rotation(tmp_path):
    """The norm of ``[1e300, 1e300, 0, 0]`` overflowed to inf: the root turned into a zero (identity) quaternion."""
    half = math.sqrt(0.5)
    for scale in (1e300, 1e160):
        path = corrupt(tmp_path, lambda f, s=scale: f[1].__setitem__(slice(4, 8), [s, s, 0.0, 0.0]))
        q = deepmimic.load(path).rotations[1, 0]
        assert torch.allclose(q, torch.tensor([half, half, 0.0, 0.0], dtype=torch.float64), atol=1e-15)


def test_a_rate_the_reader_refuses_is_not_written(tmp_path):
    """A review: 1e-4 fps (a frame of 10,000 s) and 2e6 fps were written to .txt and .bvh, which then could not be read."""
    motion = deepmimic.load(sample_path("walk"))
    for fps in (1e-4, 2e6):
        for name in ("x.txt", "x.bvh"):
            with pytest.raises(ShapeError, match=rf"x\.{name[-3:]}: {re.escape(f'{fps:g}')} fps cannot be written: a "
                                                 "frame lasts 1e-06 to 3600 seconds"):
                skelanim.io.save(motion.copy(fps=fps), tmp_path / name)
    assert list(tmp_path.iterdir()) == []
    skelanim.io.save(motion.copy(fps=1 / 3600), tmp_path / "slow.txt")  # the bounds themselves are readable
    assert deepmimic.load(tmp_path / "slow.txt").fps == pytest.approx(1 / 3600)


def test_a_root_position_the_reader_refuses_is_not_written(tmp_path):
    """An audit's follow-up: the reader refuses a root position beyond ``MAX_LENGTH`` (1e9) as a corrupt number, but
    the writer wrote one (root x 2e9), and the file then did not read back; refused before anything is written, also
    by ``check_writable``, which the command line runs before any work."""
    motion = deepmimic.load(sample_path("walk"))
    roots = motion.root_positions.clone()
    roots[3, 0] = 2e9
    huge = motion.copy(root_positions=roots)
    for check in (lambda: deepmimic.save(huge, tmp_path / "x.txt"), lambda: deepmimic.check_writable(huge, tmp_path / "x.txt")):
        with pytest.raises(FormatError, match=r"x\.txt: frame 3: cannot write a root position x of 2e\+09, beyond \+-1e\+09"):
            check()
    assert list(tmp_path.iterdir()) == []
    roots[3, 0] = 1e9  # the bound itself reads back
    deepmimic.save(motion.copy(root_positions=roots), tmp_path / "edge.txt")
    assert float(deepmimic.load(tmp_path / "edge.txt").root_positions[3, 0]) == 1e9
