"""The DeepMimic humanoid: its skeleton read from the URDF, the bundled files, and forward kinematics of
clips checked against two references that share no code with skelanim:

* pybullet (test-only dependency, skipped when absent) loading ``humanoid.urdf`` at ``globalScaling=0.25``
  with the frame's state set through ``resetBasePositionAndOrientation`` / ``resetJointStateMultiDof``.
  Compared: the world position of the *link frame* (``getLinkState(...)[4]``, not the centre of mass) of
  every body link and of the two fixed ``*_wrist`` links, against skelanim's joint positions and wrist
  End Sites. The URDF's ``base`` link has a zero inertial offset and the fixed ``root`` joint a zero
  origin, so pybullet's base position, the ``root`` link frame and skelanim's root joint coincide.
* a small scipy/numpy forward kinematics written here from the URDF read with ``xml.etree``.

Reading and writing clips is tested in ``test_deepmimic.py``.
"""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from needs import peer_library
from scipy.spatial.transform import Rotation

from skelanim.data.samples import SAMPLES, sample_names, sample_path
from skelanim.errors import FormatError
from skelanim.io import deepmimic

CLIP_NAMES = ("walk", "run", "jump")
ONE_DOF_BODIES = {"right_knee", "right_elbow", "left_knee", "left_elbow"}  # from the data README


# ---------------------------------------------------------------------------------------- helpers


def raw_frames(path: Path) -> np.ndarray:
    return np.array(json.loads(Path(path).read_text())["Frames"], dtype=np.float64)


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
        if link in ONE_DOF_BODIES:
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


def bad_urdf(tmp_path: Path, old: str, new: str) -> Path:
    text = sample_path("humanoid.urdf").read_text(errors="replace").replace("\x00", "")
    assert old in text
    path = tmp_path / "bad.urdf"
    path.write_text(text.replace(old, new))
    return path


# ---------------------------------------------------------------------------------------- the skeleton from the URDF


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


def test_data_folder_urdf_equals_the_bundled_copy(deepmimic_folder):
    urdf = deepmimic_folder / "humanoid.urdf"
    assert urdf.read_bytes() == sample_path("humanoid.urdf").read_bytes()
    assert deepmimic.humanoid_skeleton(urdf) == deepmimic.humanoid_skeleton()


def test_humanoid_skeleton_returns_independent_copies():
    a = deepmimic.humanoid_skeleton()
    a.offsets[1, 1] = 99.0
    assert deepmimic.humanoid_skeleton().offsets[1, 1] == pytest.approx(0.944604 * 0.25)


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


# ---------------------------------------------------------------------------------------- bundled files


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


def test_bundled_clips_are_the_data_folder_files(deepmimic_folder):
    for name in CLIP_NAMES:
        assert sample_path(name).read_bytes() == (deepmimic_folder / f"humanoid3d_{name}.txt").read_bytes()


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


def test_fk_matches_pybullet(optional_mocap_dir, pose_pybullet_humanoid):
    pybullet = peer_library("pybullet")
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
                pose_pybullet_humanoid(pybullet, body, link_index, frames[f], client)
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
