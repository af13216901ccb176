"""glTF / GLB export and import (skelanim.io.gltf).

The exported files are checked three ways: by the Khronos glTF-Validator (``tools/validate_gltf.mjs``,
needs ``node`` and ``npm install`` in ``tools/``; skipped without them unless ``SKELANIM_REQUIRE_NODE=1``),
by an independent reader below (pygltflib for the container, numpy for accessors, TRS matrices, the node
hierarchy and skinning) compared with :meth:`Motion.positions`, and by reading back with
:func:`skelanim.io.gltf.load`.
"""

from __future__ import annotations

import json
import re
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pygltflib
import pytest
import torch
from needs import node_tool  # tests/helpers

import skelanim
from skelanim import Motion
from skelanim.core.rotations import matrix_to_quat, quat_multiply
from skelanim.core.units import UNITS, guess_unit, up_to_y_matrix
from skelanim.errors import FormatError, ShapeError
from skelanim.io import deepmimic, gltf

SAMPLE = Path(skelanim.__file__).parent / "data" / "samples" / "deepmimic" / "walk.txt"
REAL_FILES = [
    "bandai_namco_1/dataset-1_walk_normal_001.bvh",  # 22 joints, positions animated on every joint, cm
    "cmu_cgspeed_mb/01_01.bvh",  # 31 joints, CMU units, 120 fps
    "cmu_iclone_ccrig/001_01.bvh",  # 100 joints, cm
    "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh",  # 23 joints, XYZ order, inches
    "deepmimic/humanoid3d_spinkick.txt",  # 13 joints, metres, 1-DoF knees and elbows
]
_DTYPES = {5121: np.uint8, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_WIDTHS = {"SCALAR": 1, "VEC3": 3, "VEC4": 4, "MAT4": 16}


# ------------------------------------------------------------------------------ the independent reader
class Reader:
    """A glTF file read without skelanim: pygltflib for the JSON and buffer, numpy for the rest."""

    def __init__(self, path: Path) -> None:
        self.doc = pygltflib.GLTF2.load(str(path))
        uri = self.doc.buffers[0].uri
        self.blob = self.doc.binary_blob() if uri is None else self.doc.decode_data_uri(uri)
        self.names = [n.name for n in self.doc.nodes]

    def accessor(self, index: int) -> np.ndarray:
        acc = self.doc.accessors[index]
        view = self.doc.bufferViews[acc.bufferView]
        assert view.byteStride is None
        dtype, width = np.dtype(_DTYPES[acc.componentType]).newbyteorder("<"), _WIDTHS[acc.type]
        start = (view.byteOffset or 0) + (acc.byteOffset or 0)
        assert start + acc.count * width * dtype.itemsize <= view.byteOffset + view.byteLength
        return np.frombuffer(self.blob, dtype, acc.count * width, start).reshape(acc.count, width)

    @staticmethod
    def matrix(t: list[float] | None, q: list[float] | None, s: list[float] | None) -> np.ndarray:
        x, y, z, w = q if q is not None else (0.0, 0.0, 0.0, 1.0)
        m = np.eye(4)
        m[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
        m[:3, :3] *= np.asarray(s if s is not None else (1.0, 1.0, 1.0))[None, :]
        m[:3, 3] = t if t is not None else (0.0, 0.0, 0.0)
        return m

    def keys(self) -> np.ndarray:
        """The key times shared by every sampler (asserted), in seconds."""
        anim = self.doc.animations[0]
        inputs = {s.input for s in anim.samplers}
        assert len(inputs) == 1 and all(s.interpolation == "LINEAR" for s in anim.samplers)
        return self.accessor(inputs.pop())[:, 0].astype(np.float64)

    def world(self, key: int | None) -> dict[str, np.ndarray]:
        """``{node name: (4, 4) world matrix}`` at key index ``key`` of the animation (``None``: rest pose)."""
        trs = [[n.translation, n.rotation, n.scale] for n in self.doc.nodes]
        if key is not None:
            anim = self.doc.animations[0]
            for channel in anim.channels:
                value = self.accessor(anim.samplers[channel.sampler].output)[key].astype(np.float64).tolist()
                trs[channel.target.node][{"translation": 0, "rotation": 1, "scale": 2}[channel.target.path]] = value
        out: dict[str, np.ndarray] = {}
        stack = [(n, np.eye(4)) for n in self.doc.scenes[self.doc.scene].nodes]
        while stack:
            n, parent = stack.pop()
            out[self.names[n]] = parent @ self.matrix(*trs[n])
            stack.extend((c, out[self.names[n]]) for c in self.doc.nodes[n].children)
        return out


def validate(path: Path) -> dict:
    """The Khronos validator's JSON report for ``path`` (skips when node or the npm module is missing)."""
    script = node_tool("gltf-validator", "the Khronos glTF validation step (the other checks ran)") / "validate_gltf.mjs"
    run = subprocess.run(["node", str(script), str(path)], check=False, capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    report = json.loads(run.stdout)
    issues = report["issues"]
    for message in issues["messages"]:
        if message["severity"] <= 1:  # 0 error, 1 warning
            warnings.warn(f"{path.name}: {message['code']} at {message.get('pointer')}: {message['message']}")
    errors = [m for m in issues["messages"] if m["severity"] == 0]
    assert issues["numErrors"] == 0, errors[:10]
    return report


def sample_motion() -> Motion:
    return deepmimic.load(SAMPLE)


def check_against_fk(file: Path, motion: Motion, scale: float, up: int = 1, frames: int = 6) -> None:
    """World joint positions from the independent reader equal ``scale * C @ Motion.positions()``."""
    reader = Reader(file)
    keys = reader.keys()
    assert len(keys) == motion.num_frames
    np.testing.assert_allclose(keys, np.arange(motion.num_frames) / motion.fps, atol=1e-5)
    picks = np.unique(np.linspace(0, motion.num_frames - 1, frames).round().astype(int))
    expected = scale * motion[picks].positions(end_sites=True).numpy() @ up_to_y_matrix(up).numpy().T
    names = motion.skeleton.names + motion.end_site_names()
    for f, want in zip(picks, expected):
        world = reader.world(int(f))
        got = np.stack([world[n][:3, 3] for n in names])
        np.testing.assert_allclose(got, want, atol=1e-5 * motion.height * scale, err_msg=f"{file.name} frame {f}")


def check_skin(file: Path, motion: Motion, scale: float) -> None:
    """Inverse bind matrices invert the rest pose; bone tips follow their child joints; normals point out."""
    reader = Reader(file)
    skin = reader.doc.skins[0]
    assert len(skin.joints) == motion.skeleton.num_joints + len(motion.skeleton.end_sites)
    ibm = reader.accessor(skin.inverseBindMatrices).reshape(-1, 4, 4).transpose(0, 2, 1).astype(np.float64)
    rest = reader.world(None)
    for j, node in enumerate(skin.joints):
        np.testing.assert_allclose(rest[reader.names[node]] @ ibm[j], np.eye(4), atol=1e-5)
    prim = reader.doc.meshes[0].primitives[0]
    pos = reader.accessor(prim.attributes.POSITION).astype(np.float64)
    normals = reader.accessor(prim.attributes.NORMAL).astype(np.float64)
    owners = reader.accessor(prim.attributes.JOINTS_0)[:, 0]
    assert np.all(reader.accessor(prim.attributes.WEIGHTS_0) == [1, 0, 0, 0])
    assert np.all(reader.accessor(prim.indices)[:, 0] == np.arange(len(pos)))
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-5)
    tris = pos.reshape(-1, 8, 3, 3)  # bones, faces, corners, xyz
    centre = tris.reshape(len(tris), -1, 3).mean(1)[:, None]
    assert np.all(np.einsum("bfk,bfk->bf", tris.mean(2) - centre, normals.reshape(-1, 8, 3, 3)[:, :, 0]) > 0)
    # each bone is skinned to its parent joint and its tip (face 1, corner 0) follows the child joint
    tol = 1e-5 * motion.height * scale
    animated = {c.target.node for c in reader.doc.animations[0].channels if c.target.path == "translation"}
    world = reader.world(motion.num_frames // 2)
    skinning = np.stack([world[reader.names[n]] for n in skin.joints]) @ ibm
    for b, tip in enumerate(tris[:, 1, 0]):
        owner = int(owners[b * 24])
        kids = [c for c in reader.doc.nodes[skin.joints[owner]].children
                if np.linalg.norm(rest[reader.names[c]][:3, 3] - tip) < tol]
        assert kids, f"bone {b} does not end on a child of {reader.names[skin.joints[owner]]}"
        if kids[0] not in animated:
            moved = (skinning[owner] @ np.append(tip, 1.0))[:3]
            np.testing.assert_allclose(moved, world[reader.names[kids[0]]][:3, 3], atol=tol)


def assert_same_positions(a: Motion, b: Motion, scale: float, tol: float) -> None:
    """``b``'s joint and End Site positions equal ``scale`` times ``a``'s (joints matched by name)."""
    assert a.skeleton.names == b.skeleton.names and np.array_equal(a.skeleton.parents, b.skeleton.parents)
    assert sorted(a.skeleton.end_sites) == sorted(b.skeleton.end_sites)
    assert a.num_frames == b.num_frames and abs(a.fps - b.fps) < 1e-6 * a.fps
    torch.testing.assert_close(b.positions(end_sites=True), scale * a.positions(end_sites=True), atol=tol, rtol=0)


# ------------------------------------------------------------------------------------------ real files
@pytest.mark.parametrize("name", REAL_FILES)
def test_real_file_validates_and_matches_fk(mocap_dir: Path, tmp_path: Path, name: str) -> None:
    source = mocap_dir / name
    motion = skelanim.load(source)
    out = tmp_path / (source.stem + ".glb")
    skelanim.save(motion, out)
    scale, _ = gltf.export_scale(motion)
    assert 1.2 < motion.height * scale < 2.2, f"{name}: guessed scale {scale} gives height {motion.height * scale} m"
    check_against_fk(out, motion, scale)
    check_skin(out, motion, scale)
    # quaternions are sign-continuous over time
    reader = Reader(out)
    anim = reader.doc.animations[0]
    for channel in anim.channels:
        if channel.target.path == "rotation":
            q = reader.accessor(anim.samplers[channel.sampler].output).astype(np.float64)
            assert np.all((q[1:] * q[:-1]).sum(1) >= 0)
    # every animated non-root joint translation is exported (Bandai animates them all)
    moving = {c.target.node for c in anim.channels if c.target.path == "translation"}
    if motion.joint_translations is not None:
        differs = (motion.joint_translations[:, 1:] - motion.skeleton.offsets[1:]).abs().amax(dim=(0, 2)) > 1e-6
        assert {j + 1 for j in differs.nonzero()[:, 0].tolist()} <= moving
    # read back: metres by default, the source's units on request
    tol = 1e-5 * motion.height * scale
    back = gltf.load(out)
    assert back.metadata["units"] == "m" and back.metadata["gltf_scale"] == pytest.approx(scale)
    assert_same_positions(motion, back, scale, tol)
    original = skelanim.load(out, original_units=True)
    assert_same_positions(motion, original, 1.0, tol / scale)
    assert original.skeleton.channels == motion.skeleton.channels
    report = validate(out)  # last, as it may skip
    counts = [report["issues"][k] for k in ("numErrors", "numWarnings", "numInfos", "numHints")]
    print(f"{name}: {motion.skeleton.num_joints} joints, {motion.num_frames} frames, {out.stat().st_size} bytes, "
          f"validator errors/warnings/infos/hints {counts}")


# --------------------------------------------------------------------------------- bundled sample only
def test_gltf_text_container_round_trip(tmp_path: Path) -> None:
    motion = sample_motion()
    out = tmp_path / "walk.gltf"
    gltf.save(motion, out)
    assert json.loads(out.read_text())["buffers"][0]["uri"].startswith("data:application/octet-stream;base64,")
    check_against_fk(out, motion, 1.0)
    check_skin(out, motion, 1.0)
    back = gltf.load(out)
    assert_same_positions(motion, back, 1.0, 1e-5 * motion.height)
    torch.testing.assert_close(back.skeleton.offsets, motion.skeleton.offsets, atol=1e-6, rtol=0)
    assert back.metadata["animation"] == "walk" and back.joint_translations is None
    assert validate(out)["issues"]["numWarnings"] == 0


@pytest.mark.parametrize("axis", ["x", "z", "-x", "-y", "-z"])
def test_source_up_axis_is_turned_to_y(tmp_path: Path, axis: str) -> None:
    """A copy of the sample turned to X or Z up, or upside down along any axis, exports exactly like the Y-up
    original (an upside-down source came out with its head 1.36 m below its feet)."""
    motion = sample_motion()
    sign = -1.0 if axis.startswith("-") else 1.0
    axis = axis.lstrip("-")
    turn = up_to_y_matrix("xyz".index(axis), sign).T  # takes +Y to the new up direction
    q_turn = matrix_to_quat(turn)
    sk = motion.skeleton
    turned_sk = type(sk)(sk.names, sk.parents, sk.offsets @ turn.T, sk.channels,
                         {k: turn @ v for k, v in sk.end_sites.items()})
    # conjugating every local rotation by the turn rotates every world position by it
    rot = quat_multiply(quat_multiply(q_turn, motion.rotations), q_turn * torch.tensor([1.0, -1, -1, -1]))
    turned = Motion(turned_sk, rot, motion.root_positions @ turn.T, motion.fps, metadata=dict(motion.metadata))
    torch.testing.assert_close(turned.positions(), motion.positions() @ turn.T)
    assert turned_sk.up_axis() == "xyz".index(axis)
    assert turned.up_direction() == ("xyz".index(axis), sign)
    out = tmp_path / f"{axis}_up.glb"
    gltf.save(turned, out)
    if sign > 0:
        check_against_fk(out, turned, 1.0, up="xyz".index(axis))
    check_against_fk(out, motion, 1.0)  # the same world positions as the Y-up original
    assert_same_positions(motion, gltf.load(out), 1.0, 1e-5 * motion.height)
    assert_same_positions(turned, gltf.load(out, original_units=True), 1.0, 1e-5 * motion.height)
    validate(out)


def test_scale_option_and_guess(tmp_path: Path) -> None:
    assert gltf.guess_scale(1.75) == (1.0, "m")
    assert gltf.guess_scale(30.0) == (pytest.approx(0.0254 / 0.45), "cmu")
    assert gltf.guess_scale(66.0) == (0.0254, "in")
    assert gltf.guess_scale(172.0) == (0.01, "cm")
    assert gltf.guess_scale(1700.0) == (0.001, "mm")
    motion = sample_motion()  # metres
    cm = motion.copy(skeleton=motion.skeleton.scaled(100.0), root_positions=motion.root_positions * 100,
                     metadata={})
    for option, expected in ((None, 0.01), ("cm", 0.01), (0.02, 0.02)):
        out = tmp_path / f"cm_{expected}.glb"
        gltf.save(cm, out, scale=option)
        check_against_fk(out, cm, expected, frames=3)
    with pytest.raises(ShapeError, match="bad.glb: unknown unit 'furlong'"):
        gltf.save(cm, tmp_path / "bad.glb", scale="furlong")
    with pytest.raises(ShapeError, match="positive"):
        gltf.save(cm, tmp_path / "bad.glb", scale=-1.0)
    with pytest.raises(ShapeError, match="up_axis"):
        gltf.save(cm, tmp_path / "bad.glb", up_axis="w")
    assert not (tmp_path / "bad.glb").exists()


def test_documented_unit_boundaries_are_guess_unit_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """The unit-guess boundaries that the module docstring and docs/engines.md state are where ``guess_unit``
    switches (they once said 7.2 / 45 / 107 / 538, rounded), and the size guessed from is ``Motion.stature``,
    which :func:`gltf.export_scale` uses (they once said the posed height)."""
    engines = (Path(__file__).resolve().parents[2] / "docs" / "engines.md").read_text()
    stated = {
        "gltf.py": re.findall(r"``h < ([\d.]+)``|``[\d.]+ <= h < ([\d.]+)``", gltf.__doc__ or ""),
        "engines.md": re.findall(r"`h < ([\d.]+)`|`[\d.]+–([\d.]+)`", engines),
    }
    names = list(UNITS)
    for where, found in stated.items():
        bounds = [float(first or second) for first, second in found]
        assert len(bounds) == len(names) - 1, (where, bounds)
        for k, bound in enumerate(bounds):
            assert (guess_unit(bound * 0.9995), guess_unit(bound * 1.0005)) == (names[k], names[k + 1]), (where, bound)
    assert "Motion.stature" in (gltf.__doc__ or "") and "Motion.stature" in engines
    crawl = sample_motion().copy(metadata={})  # metres, no declared unit
    monkeypatch.setattr(Motion, "height", property(lambda self: 40.0))  # a posed height that alone reads as CMU units
    assert 1.0 < crawl.stature < 2.0 and gltf.export_scale(crawl) == (1.0, "m")


def test_bad_input_and_atomic_writes(tmp_path: Path) -> None:
    motion = sample_motion()
    out = tmp_path / "walk.glb"
    with pytest.raises(ShapeError, match="0 frames") as info:
        gltf.save(motion[0:0], out)
    assert info.value.path == str(out)
    skelanim.save(motion, out)
    before = out.read_bytes()
    broken = motion.copy(rotations=motion.rotations.clone())
    broken.rotations[5, 2, 0] = float("nan")
    with pytest.raises(ShapeError, match="non-finite rotation") as info:
        skelanim.save(broken, out)
    assert info.value.where == f"frame 5, joint {motion.skeleton.names[2]}"
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["walk.glb"]
    with pytest.raises(FormatError, match=".glb or .gltf"):
        gltf.save(motion, tmp_path / "walk.fbx")
    one = tmp_path / "one.glb"
    gltf.save(motion[3:4], one)  # a single frame is a valid (static) animation
    assert gltf.load(one).num_frames == 1
    # files that are not glTF, or ask for what is not there
    (tmp_path / "junk.glb").write_bytes(b"glTF\x02\x00\x00\x00garbage")
    with pytest.raises(FormatError, match="junk.glb"):
        skelanim.load(tmp_path / "junk.glb")
    with pytest.raises(FormatError, match="cannot read"):
        gltf.load(tmp_path / "missing.glb")
    with pytest.raises(FormatError, match="no animation 'dance'"):
        gltf.load(out, animation="dance")
    cut = tmp_path / "cut.glb"  # cut inside its JSON chunk: said so (it had been a JSON parser's "Expecting value")
    cut.write_bytes(before[: 20 + int.from_bytes(before[12:16], "little") // 2])
    with pytest.raises(FormatError, match=r"cut.glb: .*a binary glTF cut short: \d+ bytes, its JSON chunk alone says"):
        skelanim.load(cut)
    validate(one)


def test_what_float32_cannot_hold_is_refused_before_writing(tmp_path: Path) -> None:
    """A scale past float32's range, or a frame rate whose key times round together in float32, gave a file
    that validators and the reader refuse (with numpy overflow warnings); now an error and no file."""
    motion = sample_motion()
    out = tmp_path / "big.glb"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning either
        with pytest.raises(ShapeError, match="32-bit floats") as info:
            gltf.save(motion, out, scale=1e300)
    assert info.value.path == str(out)
    fast = motion.copy(fps=1e46)
    with pytest.raises(ShapeError, match="too fast for glTF's 32-bit key times: frame 1"):
        gltf.save(fast, out)
    with warnings.catch_warnings():  # an audit: 1e-300 fps had been called too fast, with a numpy warning
        warnings.simplefilter("error")
        with pytest.raises(ShapeError, match="1e-300 fps is too slow for glTF's 32-bit key times: frame 1 lies beyond"):
            gltf.save(motion.copy(fps=1e-300), out)
    assert list(tmp_path.iterdir()) == []
    gltf.save(motion.copy(fps=1e6), out)  # fast but representable: still written, and read back
    assert gltf.load(out).num_frames == motion.num_frames


def test_load_reads_other_exporters_conventions(tmp_path: Path) -> None:
    """A file without skelanim extras, with an armature node above the root (scale and turn, as Blender
    writes), rest rotations on the joints and a STEP sampler, reads back as its world positions say."""
    motion = sample_motion()
    src = tmp_path / "walk.gltf"
    gltf.save(motion, src, bone_mesh=False)
    doc = json.loads(src.read_text())
    for item in doc["nodes"] + doc["skins"] + doc["animations"]:
        item.pop("extras", None)
    doc["nodes"][3]["rotation"] = [0.0, 0.0, np.sin(0.2), np.cos(0.2)]  # a rest rotation on an animated joint
    doc["nodes"].append({"name": "Armature", "children": [0], "scale": [0.5, 0.5, 0.5],
                         "rotation": [np.sin(np.pi / 4), 0.0, 0.0, np.cos(np.pi / 4)], "translation": [1.0, 0.0, 2.0]})
    doc["scenes"][0]["nodes"] = [len(doc["nodes"]) - 1]
    doc["animations"][0]["samplers"][1]["interpolation"] = "STEP"
    foreign = tmp_path / "foreign.gltf"
    foreign.write_text(json.dumps(doc))
    back = gltf.load(foreign)
    assert back.metadata["units"] == "m" and "gltf_scale" not in back.metadata
    assert abs(back.fps - motion.fps) < 1e-3 and back.num_frames == motion.num_frames
    reader = Reader(foreign)
    names = back.skeleton.names  # without the extras, End Site nodes are joints too
    assert names == motion.skeleton.names + motion.end_site_names()
    for f in (0, 17, motion.num_frames - 1):
        world = reader.world(f)
        expected = np.stack([world[n][:3, 3] for n in names])
        np.testing.assert_allclose(back.positions()[f].numpy(), expected, atol=1e-5)
    doc["nodes"][-1]["children"] = []  # the armature node becomes a second root, and a skin joint
    doc["scenes"][0]["nodes"] = [0, len(doc["nodes"]) - 1]
    doc["skins"][0]["joints"].append(len(doc["nodes"]) - 1)
    (tmp_path / "two_roots.gltf").write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="no common root"):
        gltf.load(tmp_path / "two_roots.gltf")
    validate(foreign)


def test_convert_up_names_the_source_up_axis(tmp_path: Path) -> None:
    """``skelanim convert SRC X.glb --up AXIS`` writes the source as standing along AXIS, whatever the guess: the
    sample walk turned Z-up at the root comes out upright with ``--up z`` (as the guess has it) and lying along
    +Z with ``--up y``; ``--up`` on a format that keeps the axes is a usage error, and nothing is written."""
    from skelanim.cli import main

    skelanim.save(sample_motion(), tmp_path / "y_up.bvh")
    motion = skelanim.load(tmp_path / "y_up.bvh")  # the BVH's joint order, as the turned copy's
    turn = up_to_y_matrix(2, 1.0).T  # +Y to +Z
    q_turn = matrix_to_quat(turn)
    rot = motion.rotations.clone()
    rot[:, 0] = quat_multiply(q_turn.expand_as(rot[:, 0]), rot[:, 0])  # the root turned: the rest pose stays Y-up
    src = tmp_path / "z_up.bvh"
    skelanim.save(motion.copy(rotations=rot, root_positions=motion.root_positions @ turn.T), src)
    out = tmp_path / "z_up.glb"
    assert main(["convert", str(src), str(out), "--up", "z"]) == 0
    assert_same_positions(motion, gltf.load(out), 1.0, 1e-5 * motion.height)
    assert skelanim.load(src).up_axis() == 2
    lying = tmp_path / "lying.glb"
    assert main(["convert", str(src), str(lying), "--up", "y"]) == 0
    assert_same_positions(motion.copy(root_positions=motion.root_positions @ turn.T, rotations=rot), gltf.load(lying),
                          1.0, 1e-5 * motion.height)  # fmt: skip
    assert main(["convert", str(src), str(tmp_path / "z_up2.bvh"), "--up", "z"]) == 2
    assert main(["convert", str(src), str(tmp_path / "bad.glb"), "--up", "up"]) == 2
    assert not (tmp_path / "z_up2.bvh").exists() and not (tmp_path / "bad.glb").exists()


@pytest.mark.parametrize("fps", [30.0, 24.0, 120.0, 30000 / 1001, 30.0012])
def test_a_foreign_file_s_rate_comes_from_its_float32_keys(tmp_path: Path, fps: float) -> None:
    """Without skelanim's extras the rate is read from the key times, stored as float32: a whole or NTSC rate is
    read as that rate (keys at k / 30 had given 30.000029), any other as the keys' span says (not snapped)."""
    motion = sample_motion().copy(fps=fps)
    src = tmp_path / "walk.gltf"
    gltf.save(motion, src, bone_mesh=False)
    doc = json.loads(src.read_text())
    for item in doc["nodes"] + doc["skins"] + doc["animations"]:
        item.pop("extras", None)
    foreign = tmp_path / "foreign.gltf"
    foreign.write_text(json.dumps(doc))
    back = gltf.load(foreign)
    if fps == 30.0012:
        assert back.fps == pytest.approx(fps, rel=1e-6) and back.fps != 30.0
    else:
        assert back.fps == fps
    assert back.num_frames == motion.num_frames
