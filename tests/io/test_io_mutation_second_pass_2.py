"""Second-pass mutation audit of ``skelanim.io`` (part 2): DeepMimic URDFs and durations, glTF sampling and skins,
positions files, atomic writes.

Each test compares with a source independent of the code under test: hand values worked out in comments, numpy and
scipy computed directly, the bytes of the written files read without the library.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from skelanim.io import deepmimic

# ------------------------------------------------------------------------------------------------- DeepMimic


def _bundled_urdf_text() -> str:
    path = deepmimic.bundled_urdf_path()
    if path is None:
        pytest.skip("the bundled humanoid.urdf is missing (a broken installation)")
    return path.read_bytes().decode("utf-8")  # CRLF line ends kept


def test_a_translated_base_joint_moves_the_roots_children(tmp_path) -> None:
    """The fixed joint from ``base`` to ``root`` moved by (0, 0.4, 0): the root's children hang 0.4 higher, times the
    URDF scale 0.25, so chest (0, 0.944604 + 0.4, 0) * 0.25 and right_hip (0, 0.4, 0.339548) * 0.25; the neck, under
    the chest, keeps (0, 0.895576, 0) * 0.25."""
    text = _bundled_urdf_text()
    base_joint = '<child link="root" />\r\n\t\t\t\t<origin rpy = "0 0 0" xyz = "0.000000 0.000000 0.000000" />'
    assert base_joint in text
    urdf = tmp_path / "raised.urdf"
    urdf.write_bytes((text.replace(base_joint, base_joint.replace("0.000000 0.000000 0.000000", "0 0.4 0"))).encode("utf-8"))
    sk = deepmimic.humanoid_skeleton(urdf)
    offsets = {name: sk.offsets[j].tolist() for j, name in enumerate(sk.names)}
    np.testing.assert_allclose(offsets["chest"], [0.0, 1.344604 * 0.25, 0.0], atol=1e-12)
    np.testing.assert_allclose(offsets["right_hip"], [0.0, 0.1, 0.339548 * 0.25], atol=1e-12)
    np.testing.assert_allclose(offsets["left_hip"], [0.0, 0.1, -0.339548 * 0.25], atol=1e-12)
    np.testing.assert_allclose(offsets["neck"], [0.0, 0.895576 * 0.25, 0.0], atol=1e-12)


def test_the_first_fixed_leaf_under_a_body_is_its_end_site(tmp_path) -> None:
    """A second fixed leaf link under ``right_elbow`` (a marker, after the wrist in the file) does not replace the
    wrist End Site (0, -1.035788, 0) * 0.25."""
    text = _bundled_urdf_text()
    wrist = '<joint name="right_wrist" type="fixed" >'
    marker = ('<link name="marker" />\r\n\t<joint name="marker" type="fixed" >\r\n\t\t<parent link="right_elbow" />'
              '\r\n\t\t<child link="marker" />\r\n\t\t\t\t<origin rpy = "0 0 0" xyz = "0.5 0.5 0.5" />\r\n\t</joint>')
    end = text.index("</joint>", text.index(wrist)) + len("</joint>")
    urdf = tmp_path / "marker.urdf"
    urdf.write_bytes((text[:end] + "\r\n\t" + marker + text[end:]).encode("utf-8"))
    sk = deepmimic.humanoid_skeleton(urdf)
    elbow = sk.names.index("right_elbow")
    np.testing.assert_allclose(sk.end_sites[elbow].tolist(), [0.0, -1.035788 * 0.25, 0.0], atol=1e-12)


def _humanoid_motion(frames: int = 3, fps: float = 30.0, scale: float = 1.0):
    """A humanoid motion whose rotations are ``scale`` times unit quaternions: every ball joint turned by 30 degrees
    about (1, 2, 2) / 3 (a quaternion (cos 15, sin 15 / 3 * (1, 2, 2))), the 1-DoF joints by 40 degrees about z."""
    from skelanim.core.motion import Motion

    sk = deepmimic.humanoid_skeleton()
    half = np.radians(15.0)
    ball = [np.cos(half), *(np.sin(half) * np.array([1.0, 2.0, 2.0]) / 3.0)]
    hinge = [np.cos(np.radians(20.0)), 0.0, 0.0, np.sin(np.radians(20.0))]
    q = np.array([hinge if name in deepmimic.ONE_DOF_BODIES else ball for name in sk.names]) * scale
    rotations = torch.from_numpy(np.repeat(q[None], frames, axis=0))
    root = torch.tensor([[0.1 * f, 0.9, 0.0] for f in range(frames)], dtype=torch.float64)
    return Motion(sk, rotations, root, fps), ball


def test_quaternions_off_unit_length_are_written_normalised(tmp_path) -> None:
    motion, ball = _humanoid_motion(scale=2.0)
    path = tmp_path / "scaled.txt"
    deepmimic.save(motion, path)
    frames = np.array(json.loads(path.read_text())["Frames"])
    np.testing.assert_allclose(frames[:, 4:8], [ball] * 3, atol=1e-12)  # root orientation: the unit quaternion
    np.testing.assert_allclose(frames[:, 8:12], [ball] * 3, atol=1e-12)  # chest
    np.testing.assert_allclose(frames[:, 20], np.radians(40.0), atol=1e-12)  # right_knee: its angle about z


def test_extra_keys_named_loop_or_frames_do_not_replace_the_clips_own(tmp_path) -> None:
    motion, _ = _humanoid_motion()
    extra = {"Loop": "none", "Frames": [], "RightJoints": [3, 4, 5]}
    path = tmp_path / "extra.txt"
    deepmimic.save(motion.copy(metadata={**motion.metadata, "deepmimic_extra": extra}), path, loop="wrap")
    pairs = json.loads(path.read_text(), object_pairs_hook=lambda items: items)  # every key as written, repeats too
    assert [key for key, _ in pairs] == ["Loop", "RightJoints", "Frames"]
    clip = dict(pairs)
    assert clip["Loop"] == "wrap" and clip["RightJoints"] == [3, 4, 5] and len(clip["Frames"]) == 3


# ------------------------------------------------------------------------------------------------------ glTF

_CHAIN = (
    "HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
    "\tJOINT Slider\n\t{\n\t\tOFFSET 0 1 0\n\t\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
    "\t\tJOINT Head\n\t\t{\n\t\t\tOFFSET 0 1 0\n\t\t\tCHANNELS 3 Zrotation Xrotation Yrotation\n"
    "\t\t\tEnd Site\n\t\t\t{\n\t\t\t\tOFFSET 0 1 0\n\t\t\t}\n\t\t}\n\t}\n}\n"
    "MOTION\nFrames: 3\nFrame Time: 0.04\n"
    "0 0 0 0 0 0 0 1 0 0 0 0 0 0 0\n0 0 0 0 0 0 0.5 1 0 0 0 0 0 0 0\n0 0 0 0 0 0 1 1 0 0 0 0 0 0 0\n"
)


def test_a_foreign_gltf_joint_with_animated_translation_gets_position_channels(tmp_path) -> None:
    """Without skelanim's extras (another exporter's file) a joint's BVH channels come from what the file animates:
    the root and ``Slider`` (its translation keyed: x from 0 to 1) get the six channels, ``Head`` the three rotations."""
    from skelanim.io import bvh, gltf

    path = tmp_path / "slider.gltf"
    gltf.save(bvh.loads(_CHAIN), path, scale=1.0, up_axis="y", bone_mesh=False)
    doc = json.loads(path.read_text())
    for node in doc["nodes"]:
        node.get("extras", {}).get("skelanim", {}).pop("channels", None)  # no channel lists, as a foreign file
    path.write_text(json.dumps(doc))
    back = gltf.load(path)
    channels = dict(zip(back.skeleton.names, back.skeleton.channels))
    six = ("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation")
    assert channels == {"Hips": six, "Slider": six, "Head": ("Zrotation", "Xrotation", "Yrotation")}
    assert back.joint_translations is not None
    np.testing.assert_allclose(back.joint_translations[:, 1, 0].numpy(), [0.0, 0.5, 1.0], atol=1e-6)


def test_normalised_integer_translation_keys_are_value_over_the_type_maximum(tmp_path) -> None:
    """glTF (KHR_mesh_quantization) lets translation keys be normalised int16, read as value / 32767: ``Slider``'s
    keys (0, 1, 0), (16384, 32767, 0), (32767, 32767, -32767) are x = 0, 16384 / 32767, 1 with y 1 and z 0, 0, -1."""
    import base64

    from skelanim.io import bvh, gltf

    path = tmp_path / "quantized.gltf"
    gltf.save(bvh.loads(_CHAIN), path, scale=1.0, up_axis="y", bone_mesh=False)
    doc = json.loads(path.read_text())
    head, data = doc["buffers"][0]["uri"].split(",", 1)
    blob = bytearray(base64.b64decode(data))
    keys = np.array([[0, 32767, 0], [16384, 32767, 0], [32767, 32767, -32767]], dtype="<i2")
    doc["bufferViews"].append({"buffer": 0, "byteOffset": len(blob), "byteLength": keys.nbytes})
    blob += keys.tobytes() + bytes(-keys.nbytes % 4)
    doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5122, "normalized": True,
                             "count": 3, "type": "VEC3"})
    anim = doc["animations"][0]
    channel = next(c for c in anim["channels"] if c["target"] == {"node": 1, "path": "translation"})
    anim["samplers"][channel["sampler"]]["output"] = len(doc["accessors"]) - 1
    doc["buffers"][0].update(uri=head + "," + base64.b64encode(bytes(blob)).decode(), byteLength=len(blob))
    path.write_text(json.dumps(doc))
    back = gltf.load(path)
    assert back.joint_translations is not None
    expected = [[0.0, 1.0, 0.0], [16384 / 32767, 1.0, 0.0], [1.0, 1.0, -1.0]]
    np.testing.assert_allclose(back.joint_translations[:, 1].numpy(), expected, atol=1e-12)


def test_bone_mesh_width_is_capped_at_three_percent_of_the_height(tmp_path) -> None:
    """Three upright bones of 1 m (Hips, Slider, Head, End Site: height 3 m): each octahedron's ring lies 0.2 along
    the bone, at min(0.1 * length, 0.03 * height) = min(0.1, 0.09) = 0.09 m from its axis, along x and z."""
    from skelanim.io import bvh, gltf

    still = _CHAIN.replace("0.5 1 0 0 0 0", "0 1 0 0 0 0").replace("\n0 0 0 0 0 0 1 1 0", "\n0 0 0 0 0 0 0 1 0")
    path = tmp_path / "bones.gltf"
    gltf.save(bvh.loads(still), path, scale=1.0, up_axis="y", bone_mesh=True)
    doc = json.loads(path.read_text())
    position = doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]]
    np.testing.assert_allclose(position["min"], [-0.09, 0.0, -0.09], atol=1e-7)
    np.testing.assert_allclose(position["max"], [0.09, 3.0, 0.09], atol=1e-7)



def _with_root_rotation_track(path, keys: np.ndarray, values: np.ndarray, mode: str) -> None:
    """Rewrite the skelanim glTF at ``path`` so that the root's rotation sampler has key times ``keys`` (float32) and
    outputs ``values`` (x, y, z, w rows, float32), interpolated by ``mode``."""
    import base64

    doc = json.loads(path.read_text())
    head, data = doc["buffers"][0]["uri"].split(",", 1)
    blob = bytearray(base64.b64decode(data))
    found = []
    for array, kind in ((keys.astype("<f4")[:, None], "SCALAR"), (values.astype("<f4"), "VEC4")):
        doc["bufferViews"].append({"buffer": 0, "byteOffset": len(blob), "byteLength": array.nbytes})
        blob += array.tobytes()
        doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5126,
                                 "count": len(array), "type": kind})
        found.append(len(doc["accessors"]) - 1)
    anim = doc["animations"][0]
    channel = next(c for c in anim["channels"] if c["target"] == {"node": 0, "path": "rotation"})
    anim["samplers"][channel["sampler"]] = {"input": found[0], "output": found[1], "interpolation": mode}
    doc["buffers"][0].update(uri=head + "," + base64.b64encode(bytes(blob)).decode(), byteLength=len(blob))
    path.write_text(json.dumps(doc))


def test_key_times_must_strictly_increase(tmp_path) -> None:
    from skelanim.errors import FormatError
    from skelanim.io import bvh, gltf

    path = tmp_path / "repeated.gltf"
    gltf.save(bvh.loads(_CHAIN), path, scale=1.0, up_axis="y", bone_mesh=False)
    identity = np.array([[0.0, 0.0, 0.0, 1.0]] * 3)
    _with_root_rotation_track(path, np.array([0.0, 0.04, 0.04]), identity, "LINEAR")  # key 2 repeats key 1's time
    with pytest.raises(FormatError, match=r"key times must increase; key 2 \(0.04 s\) follows 0.04 s"):
        gltf.load(path)


def test_cubicspline_zero_tangents_are_fine_and_a_zero_value_is_refused(tmp_path) -> None:
    """CUBICSPLINE outputs are (in-tangent, value, out-tangent) per key: zero tangents (a common flat spline) are no
    rotation and read fine, holding each key's value; a zero *value* quaternion is refused."""
    from scipy.spatial.transform import Rotation

    from skelanim.errors import FormatError
    from skelanim.io import bvh, gltf

    path = tmp_path / "spline.gltf"
    gltf.save(bvh.loads(_CHAIN), path, scale=1.0, up_axis="y", bone_mesh=False)
    turn = Rotation.from_euler("y", [[0.0], [40.0], [80.0]], degrees=True).as_quat()  # x, y, z, w
    zero = np.zeros((3, 4))
    spline = np.stack([zero, turn, zero], axis=1).reshape(-1, 4)
    _with_root_rotation_track(path, np.array([0.0, 0.04, 0.08]), spline, "CUBICSPLINE")
    q = gltf.load(path).rotations[:, 0].numpy()  # frames at the keys: the key values
    expected = Rotation.from_quat(turn).as_quat(scalar_first=True)
    np.testing.assert_allclose(np.abs((q * expected).sum(-1)), 1.0, atol=1e-6)
    spline[4] = 0.0  # the value of key 1 (rows: in 0, value 1, out 2, in 3, value 4, ...)
    _with_root_rotation_track(path, np.array([0.0, 0.04, 0.08]), spline, "CUBICSPLINE")
    with pytest.raises(FormatError, match="rotation 1 is a zero quaternion"):
        gltf.load(path)


def test_an_upside_down_source_gets_a_half_turn_on_the_root_node(tmp_path) -> None:
    """Up ``-y``: the root node's rest rotation is the half turn about x, (x, y, z, w) = (+-1, 0, 0, 0), so that the
    rest pose (the skin's bind pose) stands upright too, not only the animated frames."""
    from skelanim.io import bvh, gltf

    path = tmp_path / "upside_down.gltf"
    gltf.save(bvh.loads(_CHAIN), path, scale=1.0, up_axis="-y", bone_mesh=False)
    root = json.loads(path.read_text())["nodes"][0]
    np.testing.assert_allclose(np.abs(root["rotation"]), [1.0, 0.0, 0.0, 0.0], atol=1e-7)
    upright = tmp_path / "upright.gltf"
    gltf.save(bvh.loads(_CHAIN), upright, scale=1.0, up_axis="y", bone_mesh=False)
    assert "rotation" not in json.loads(upright.read_text())["nodes"][0]  # +y: no turn

# ------------------------------------------------------------------------------------------------ atomic writes


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o755])
def test_a_replaced_file_keeps_a_mode_other_than_the_temporary_files(tmp_path, mode) -> None:
    """The temporary file is made 0600 (mkstemp): a replaced file must get its own mode back, not that one (a 0600
    file cannot tell the two apart)."""
    import os
    import stat

    from skelanim.io.atomic import atomic_open

    target = tmp_path / "shared.txt"
    target.write_text("old")
    os.chmod(target, mode)
    with atomic_open(target, "w") as handle:
        handle.write("new")
    assert stat.S_IMODE(os.stat(target).st_mode) == mode and target.read_text() == "new"
