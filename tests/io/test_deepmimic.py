"""DeepMimic clips: every real clip loads, 1-DoF joints, exact round trips, errors that name the place,
and forward kinematics checked against two references that share no code with skelanim:

* pybullet (test-only dependency, skipped when absent) loading ``humanoid.urdf`` at ``globalScaling=0.25``
  with the frame's state set through ``resetBasePositionAndOrientation`` / ``resetJointStateMultiDof``.
  Compared: the world position of the *link frame* (``getLinkState(...)[4]``, not the centre of mass) of
  every body link and of the two fixed ``*_wrist`` links, against skelanim's joint positions and wrist
  End Sites. The URDF's ``base`` link has a zero inertial offset and the fixed ``root`` joint a zero
  origin, so pybullet's base position, the ``root`` link frame and skelanim's root joint coincide.
* a small scipy/numpy forward kinematics written here from the URDF read with ``xml.etree``.
"""

from __future__ import annotations

import hashlib
import json
import math
import xml.etree.ElementTree as ET
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
from skelanim.data.samples import SAMPLES, sample_names, sample_path
from skelanim.errors import FormatError, SkeletonError
from skelanim.io import deepmimic
from skelanim.io.positions import JointPositions

CLIP_NAMES = ("walk", "run", "jump")
ONE_DOF_INDEX = {"right_knee": 20, "right_elbow": 29, "left_knee": 34, "left_elbow": 43}  # from the data README


# ---------------------------------------------------------------------------------------- helpers


def deepmimic_dir(mocap_dir: Path) -> Path:
    folder = Path(mocap_dir) / "deepmimic"
    if not folder.is_dir():
        pytest.skip(f"no deepmimic folder in {mocap_dir}")
    return folder


def data_clips(mocap_dir: Path) -> list[Path]:
    clips = sorted(deepmimic_dir(mocap_dir).glob("*.txt"))
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


def urdf_tree(path: Path) -> dict[str, tuple[str, np.ndarray]]:
    """child link -> (parent link, origin xyz), read independently of skelanim."""
    root = ET.fromstring(path.read_bytes().rstrip(b"\x00"))
    tree = {}
    for joint in root.iter("joint"):
        xyz = np.array([float(v) for v in joint.find("origin").get("xyz").split()])
        tree[joint.find("child").get("link")] = (joint.find("parent").get("link"), xyz)
    return tree


def reference_fk(frames: np.ndarray, urdf: Path, scale: float = 0.25) -> dict[str, np.ndarray]:
    """World positions ``(F, 3)`` of every URDF link from raw DeepMimic frames, with scipy rotations."""
    tree = urdf_tree(urdf)
    layout = {
        "chest": 8,
        "neck": 12,
        "right_hip": 16,
        "right_knee": 20,
        "right_ankle": 21,
        "right_shoulder": 25,
        "right_elbow": 29,
        "left_hip": 30,
        "left_knee": 34,
        "left_ankle": 35,
        "left_shoulder": 39,
        "left_elbow": 43,
    }

    def local(link: str) -> Rotation:
        if link not in layout:  # fixed joints
            return Rotation.identity(len(frames))
        i = layout[link]
        if link in ONE_DOF_INDEX:
            return Rotation.from_rotvec(np.outer(frames[:, i], [0.0, 0.0, 1.0]))
        return Rotation.from_quat(frames[:, i : i + 4], scalar_first=True)

    rot = {"base": Rotation.from_quat(frames[:, 4:8], scalar_first=True)}
    pos = {"base": frames[:, 1:4]}
    pending = list(tree)
    while pending:
        link = pending.pop(0)
        parent, xyz = tree[link]
        if parent not in rot:
            pending.append(link)
            continue
        pos[link] = pos[parent] + rot[parent].apply(xyz * scale)
        rot[link] = rot[parent] * local(link)
    return pos


# ---------------------------------------------------------------------------------------- layout, skeleton


def test_frame_layout_matches_the_data_readme():
    assert deepmimic.FRAME_SIZE == 44
    assert deepmimic.FRAME_LAYOUT["duration"] == slice(0, 1)
    assert deepmimic.FRAME_LAYOUT["root_position"] == slice(1, 4)
    assert deepmimic.FRAME_LAYOUT["root"] == slice(4, 8)
    assert deepmimic.FRAME_LAYOUT["chest"] == slice(8, 12)
    for body, index in ONE_DOF_INDEX.items():
        assert deepmimic.FRAME_LAYOUT[body] == slice(index, index + 1)
    assert deepmimic.FRAME_LAYOUT["left_shoulder"] == slice(39, 43)


def test_skeleton_comes_from_the_urdf_at_quarter_scale():
    sk = deepmimic.humanoid_skeleton()
    assert sk.names == list(deepmimic.BODY_NAMES)
    assert sk.parents.tolist() == [-1, 0, 1, 0, 3, 4, 1, 6, 0, 8, 9, 1, 11]
    tree = urdf_tree(sample_path("humanoid.urdf"))
    for j, name in enumerate(sk.names[1:], start=1):
        parent, xyz = tree[name]
        assert parent == sk.names[sk.parents[j]]
        np.testing.assert_allclose(sk.offsets[j].numpy(), xyz * 0.25, rtol=0, atol=1e-15)
    np.testing.assert_allclose(sk.offsets[1].numpy(), [0.0, 0.944604 * 0.25, 0.0])
    # fixed wrists become End Sites of the elbows
    assert sorted(sk.end_sites) == [sk.index("right_elbow"), sk.index("left_elbow")]
    np.testing.assert_allclose(sk.end_sites[sk.index("left_elbow")].numpy(), tree["left_wrist"][1] * 0.25)
    assert sk.up_axis() == 1


def test_documented_fallback_equals_the_bundled_urdf():
    fallback = deepmimic._skeleton_from_tables(deepmimic._FALLBACK_OFFSETS, deepmimic._FALLBACK_END_SITES, 0.25)
    assert fallback == deepmimic.humanoid_skeleton()


def test_fallback_used_when_bundled_urdf_is_missing(monkeypatch):
    monkeypatch.setattr(deepmimic, "bundled_urdf_path", lambda: None)
    motion = deepmimic.load(sample_path("walk"))
    assert motion.skeleton == deepmimic.humanoid_skeleton(sample_path("humanoid.urdf"))


def test_data_folder_urdf_equals_the_bundled_copy(mocap_dir):
    urdf = deepmimic_dir(mocap_dir) / "humanoid.urdf"
    assert urdf.read_bytes() == sample_path("humanoid.urdf").read_bytes()
    assert deepmimic.humanoid_skeleton(urdf) == deepmimic.humanoid_skeleton()


def test_humanoid_skeleton_returns_independent_copies():
    a = deepmimic.humanoid_skeleton()
    a.offsets[1, 1] = 99.0
    assert deepmimic.humanoid_skeleton().offsets[1, 1] == pytest.approx(0.944604 * 0.25)


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


def test_every_clip_in_the_data_folder_loads(mocap_dir):
    clips = data_clips(mocap_dir)
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


def test_run_clip_keeps_extra_keys(mocap_dir):
    motion = deepmimic.load(deepmimic_dir(mocap_dir) / "humanoid3d_run.txt")
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


def test_round_trip_of_every_data_clip(mocap_dir, tmp_path):
    for path in data_clips(mocap_dir):
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
    deepmimic.save(motion.copy(rotations=rotations), tmp_path / "p.txt")
    np.testing.assert_allclose(raw_frames(tmp_path / "p.txt")[:, 20], [-1.2, 0.4, 3.0], atol=1e-14)
    # a half-turn swing leaves no twist to speak of: written as 0
    rotations[0, knee] = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    deepmimic.save(motion.copy(rotations=rotations), tmp_path / "q.txt")
    assert raw_frames(tmp_path / "q.txt")[0, 20] == 0.0


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
        ('{"Frames": [[0.1]]}', r"missing key 'Loop'"),
        ('{"Loop": "wrap", "Frames": []}', r"\"Frames\" must be a non-empty list of frames, found an empty list"),
        ('{"Loop": "wrap", "Frames": 3}', r"\"Frames\" must be a non-empty list of frames, found 3"),
        ('{"Loop": 1, "Frames": [[0.1]]}', r"\"Loop\" must be a string"),
        ("[1, 2]", r"expected a JSON object with \"Loop\" and \"Frames\", found list"),
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
    with pytest.raises(FormatError, match=r"x\.txt: not UTF-8 text \(byte 10\)"):
        deepmimic.load(path)


def bad_urdf(tmp_path: Path, old: str, new: str) -> Path:
    text = sample_path("humanoid.urdf").read_text(errors="replace").replace("\x00", "")
    assert old in text
    path = tmp_path / "bad.urdf"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("old", "new", "pattern"),
    [
        ('<link name="neck" >', '<link name="nek" >', r"bad\.urdf: joint 'neck': child link 'neck' is not defined"),
        ('"neck"', '"head"', r"bad\.urdf: not a DeepMimic humanoid: links neck are missing"),
        (
            '<parent link="right_hip" />',
            '<parent link="left_hip" />',
            r"joint 'right_knee': body 'right_knee' hangs from 'left_hip', expected 'right_hip'",
        ),
        (
            '<axis xyz = "0.000000 0.000000 1.000000" />',
            '<axis xyz = "1 0 0" />',
            r"joint 'right_knee': expected a revolute joint about \+z",
        ),
        (
            '<joint name="chest" type="spherical" >',
            '<joint name="chest" type="hinge" >',
            r"joint 'chest': unknown joint type 'hinge'",
        ),
        (
            'xyz = "0.000000 0.895576 0.000000"',
            'xyz = "0.000000 oops 0.000000"',
            r"joint 'neck': xyz='0.000000 oops 0.000000': expected three finite numbers",
        ),
        (
            '<origin rpy = "0 0 0" xyz = "0.000000 0.895576',
            '<origin rpy = "0 0 0.1" xyz = "0.000000 0.895576',
            r"joint 'neck': rotated joint origins",
        ),
        ("</robot>", "</robo>", r"bad\.urdf:\d+: invalid XML"),
    ],
)
def test_bad_urdf(tmp_path, old, new, pattern):
    with pytest.raises(FormatError, match=pattern):
        deepmimic.load(sample_path("walk"), urdf=bad_urdf(tmp_path, old, new))


def test_missing_urdf(tmp_path):
    with pytest.raises(FormatError, match=r"nowhere\.urdf: cannot read the URDF"):
        deepmimic.humanoid_skeleton(tmp_path / "nowhere.urdf")


# ---------------------------------------------------------------------------------------- samples


def test_sample_paths():
    assert sample_names() == list(SAMPLES)
    for name in sample_names():
        assert sample_path(name).is_file()
    assert sample_path("walk.txt") == sample_path("walk") == sample_path()
    with pytest.raises(ValueError, match="unknown sample 'sprint'; available: walk, run, jump"):
        sample_path("sprint")


@pytest.mark.parametrize("name", ["walk", "humanoid.urdf"])
def test_bundled_files_carry_the_zlib_notice_and_their_hashes(name):
    path = sample_path(name)
    notice = (path.parent / "NOTICE").read_text()
    for needle in ("zlib", "Erwin Coumans", "Peng", "This notice may not be removed or altered"):
        assert needle in notice
    assert f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}" in notice


def test_the_urdf_ships_with_its_reader():
    """The reader finds its URDF in io's own folder, so io never imports data/ (imports run downhill)."""
    assert deepmimic.bundled_urdf_path() == sample_path("humanoid.urdf")
    assert deepmimic.bundled_urdf_path().parent == Path(deepmimic.__file__).parent / "assets"


def test_bundled_clips_are_the_data_folder_files(mocap_dir):
    folder = deepmimic_dir(mocap_dir)
    for name in CLIP_NAMES:
        assert sample_path(name).read_bytes() == (folder / f"humanoid3d_{name}.txt").read_bytes()


# ---------------------------------------------------------------------------------------- FK references


def bundled_and_data_clips(mocap_dir: Path | None) -> list[Path]:
    clips = [sample_path(n) for n in CLIP_NAMES]
    folder = None if mocap_dir is None else Path(mocap_dir) / "deepmimic"
    if folder is not None and folder.is_dir():
        clips += sorted(folder.glob("*.txt"))
    return clips


@pytest.fixture
def optional_mocap_dir(request) -> Path | None:
    try:
        return request.getfixturevalue("mocap_dir")
    except pytest.skip.Exception:
        return None


def test_fk_matches_an_independent_scipy_fk(optional_mocap_dir):
    urdf = sample_path("humanoid.urdf")
    for path in bundled_and_data_clips(optional_mocap_dir):
        motion = deepmimic.load(path)
        reference = reference_fk(raw_frames(path), urdf)
        ours = motion.positions(end_sites=True).numpy()
        names = list(deepmimic.BODY_NAMES) + ["right_wrist", "left_wrist"]
        expected = np.stack([reference[n] for n in names], axis=1)
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12, err_msg=path.name)
        np.testing.assert_allclose(reference["base"], ours[:, 0], atol=0)


def test_fk_matches_pybullet(optional_mocap_dir):
    pybullet = pytest.importorskip("pybullet")
    urdf = sample_path("humanoid.urdf")
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(urdf), globalScaling=0.25, physicsClientId=client)
        link_index = {
            pybullet.getJointInfo(body, j, physicsClientId=client)[12].decode(): j
            for j in range(pybullet.getNumJoints(body, physicsClientId=client))
        }
        names = list(deepmimic.BODY_NAMES) + ["right_wrist", "left_wrist"]
        compared = 0
        for path in bundled_and_data_clips(optional_mocap_dir):
            motion = deepmimic.load(path)
            ours = motion.positions(end_sites=True).numpy()
            frames = raw_frames(path)
            for f in range(0, len(frames), max(1, len(frames) // 12)):
                frame = frames[f]
                w, x, y, z = frame[4:8]
                pybullet.resetBasePositionAndOrientation(
                    body, frame[1:4].tolist(), [x, y, z, w], physicsClientId=client
                )
                for name, part in deepmimic.FRAME_LAYOUT.items():
                    if name in ("duration", "root_position", "root"):
                        continue
                    values = frame[part]
                    if len(values) == 4:
                        values = values / np.linalg.norm(values)
                        target = [values[1], values[2], values[3], values[0]]  # pybullet: x, y, z, w
                    else:
                        target = [float(values[0])]
                    pybullet.resetJointStateMultiDof(body, link_index[name], target, physicsClientId=client)
                states = pybullet.getLinkStates(
                    body, [link_index[n] for n in names], computeForwardKinematics=True, physicsClientId=client
                )
                reference = np.array([s[4] for s in states])  # URDF link frame origins, not centres of mass
                np.testing.assert_allclose(ours[f], reference, rtol=0, atol=1e-5, err_msg=f"{path.name} frame {f}")
                base = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)[0]
                np.testing.assert_allclose(ours[f, 0], base, rtol=0, atol=1e-5)
                compared += 1
        assert compared >= 30
    finally:
        pybullet.disconnect(physicsClientId=client)
