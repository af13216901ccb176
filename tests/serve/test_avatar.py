"""Streaming to a known avatar: VRM 0.x and 1.0 files (written here with pygltflib) read into Unity's axes as
hand-checked, the avatar's bones and offsets sent (``UpperChest`` included), joints folded into the bones an
avatar has, the hips' travel scaled to its legs, and without an avatar no bone left at a zero offset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from pygltflib import GLTF2, Node, Scene

import skelanim
from skelanim.cli import main
from skelanim.core.rotations import quat_to_matrix
from skelanim.core.units import up_to_y_matrix
from skelanim.errors import FormatError
from skelanim.retarget.mapping import CANONICAL_JOINTS
from skelanim.retarget.retargeter import make_rig
from skelanim.serve.avatar import UNITY_PARENTS, load_vrm
from skelanim.serve.vmc import HUMANOID_BONES, avatar_frames, bone_plan

#: A T-posed avatar in VRM 1.0's glTF axes (facing +Z, left hand at +X), metres: bone -> (parent, offset).
AVATAR = {
    "Hips": (None, (0.0, 0.80, 0.0)), "Spine": ("Hips", (0.0, 0.08, 0.0)), "Chest": ("Spine", (0.0, 0.10, 0.01)),
    "UpperChest": ("Chest", (0.0, 0.12, 0.0)), "Neck": ("UpperChest", (0.0, 0.12, -0.01)),
    "Head": ("Neck", (0.0, 0.08, 0.0)),
    "LeftShoulder": ("UpperChest", (0.03, 0.09, 0.0)), "LeftUpperArm": ("LeftShoulder", (0.09, 0.0, 0.0)),
    "LeftLowerArm": ("LeftUpperArm", (0.24, 0.0, 0.0)), "LeftHand": ("LeftLowerArm", (0.22, 0.0, 0.0)),
    "LeftUpperLeg": ("Hips", (0.08, -0.05, 0.0)), "LeftLowerLeg": ("LeftUpperLeg", (0.0, -0.36, 0.0)),
    "LeftFoot": ("LeftLowerLeg", (0.0, -0.34, 0.0)), "LeftToes": ("LeftFoot", (0.0, -0.05, 0.1)),
}  # fmt: skip
for _bone, (_parent, (_x, _y, _z)) in list(AVATAR.items()):
    if _bone.startswith("Left"):
        AVATAR["Right" + _bone[4:]] = (_parent.replace("Left", "Right"), (-_x, _y, _z))


def _write_vrm(path: Path, version: int, bones: dict = AVATAR) -> Path:
    """A VRM (no mesh) with the humanoid ``bones``; version 0 faces -Z (x and z negated), 1 faces +Z."""
    names = list(bones)
    flip = np.array([-1.0, 1.0, -1.0]) if version == 0 else np.ones(3)
    nodes = [Node(name=n, translation=(np.array(bones[n][1]) * flip).tolist(), children=[]) for n in names]
    for i, n in enumerate(names):
        if bones[n][0] is not None:
            nodes[names.index(bones[n][0])].children.append(i)
    camel = {n: n[0].lower() + n[1:] for n in names}
    if version == 0:
        ext = {"VRM": {"humanoid": {"humanBones": [{"bone": camel[n], "node": i} for i, n in enumerate(names)]}}}
    else:
        ext = {"VRMC_vrm": {"specVersion": "1.0", "humanoid": {"humanBones": {camel[n]: {"node": i} for i, n in
                                                                              enumerate(names)}}}}  # fmt: skip
    gltf = GLTF2(scenes=[Scene(nodes=[0])], scene=0, nodes=nodes, extensions=ext, extensionsUsed=list(ext))
    gltf.save_binary(str(path))
    return path


@pytest.mark.parametrize("version", [0, 1])
def test_vrm_humanoid_in_unity_axes(tmp_path, version):
    rig = load_vrm(_write_vrm(tmp_path / f"v{version}.vrm", version))
    # hand-checked: Unity mirrors X of the +Z-facing body; the left upper arm hangs 0.09 m to the left (-X there)
    np.testing.assert_allclose(rig.offsets["LeftUpperArm"], [-0.09, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(rig.offsets["LeftToes"], [0.0, -0.05, 0.1], atol=1e-12)
    np.testing.assert_allclose(rig.offsets["Hips"], [0.0, 0.80, 0.0], atol=1e-12)
    assert rig.parents["Neck"] == "UpperChest" and rig.parents["Hips"] is None
    assert rig.leg_length == pytest.approx(0.05 + 0.36 + 0.34)


def test_vrm1_thumbs_are_named_one_joint_up(tmp_path):
    """VRM 1.0's thumbMetacarpal/Proximal/Distal are Unity's ThumbProximal/Intermediate/Distal (VRM 0.x's names)."""
    bones = {**AVATAR, "LeftThumbMetacarpal": ("LeftHand", (0.02, 0.0, 0.02)),
             "LeftThumbProximal": ("LeftThumbMetacarpal", (0.03, 0.0, 0.0)),
             "LeftThumbDistal": ("LeftThumbProximal", (0.02, 0.0, 0.0))}  # fmt: skip
    rig = load_vrm(_write_vrm(tmp_path / "thumbs.vrm", 1, bones))
    assert rig.parents["LeftThumbIntermediate"] == "LeftThumbProximal" and rig.parents["LeftThumbDistal"] == (
        "LeftThumbIntermediate"
    )
    np.testing.assert_allclose(rig.offsets["LeftThumbIntermediate"], [-0.03, 0.0, 0.0], atol=1e-12)


def test_vrm_without_a_humanoid_or_legs_is_a_format_error(tmp_path):
    path = tmp_path / "plain.vrm"
    GLTF2(scenes=[Scene(nodes=[0])], scene=0, nodes=[Node(name="x")]).save_binary(str(path))
    with pytest.raises(FormatError, match="no VRM humanoid"):
        load_vrm(path)
    with pytest.raises(FormatError, match="has no LeftUpperLeg"):
        load_vrm(_write_vrm(tmp_path / "legless.vrm", 1, {"Hips": AVATAR["Hips"]}))
    (tmp_path / "junk.vrm").write_bytes(b"not a glb")
    with pytest.raises(FormatError, match="not a VRM"):
        load_vrm(tmp_path / "junk.vrm")


def test_joints_fold_into_the_bones_an_avatar_has():
    minimal = {"Hips", "Spine", "Head", "LeftUpperArm", "LeftLowerArm", "LeftHand", "LeftUpperLeg", "LeftLowerLeg",
               "LeftFoot"}  # fmt: skip
    plan = bone_plan(minimal)
    assert plan["Spine"] == ("spine", "spine1", "chest")  # no Chest: the spine carries the whole back
    assert plan["Head"] == ("neck", "head") and plan["LeftUpperArm"] == ("l_clavicle", "l_upperarm")
    assert "LeftToes" not in plan and set(plan) == minimal
    full = bone_plan(set(AVATAR))
    assert full["Chest"] == ("spine1",) and full["UpperChest"] == ("chest",)
    assert HUMANOID_BONES["Chest"] == ("spine1", "chest") and "UpperChest" not in HUMANOID_BONES


def _world(bones: tuple[str, ...], quats: torch.Tensor) -> dict[str, torch.Tensor]:
    """World rotations (right-handed again) through Unity's hierarchy of the bones sent."""
    mirror = torch.diag(torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64))
    local = mirror @ quat_to_matrix(quats) @ mirror
    world: dict[str, torch.Tensor] = {}
    for b, name in enumerate(bones):
        parent = UNITY_PARENTS[name]
        while parent is not None and parent not in world:
            parent = UNITY_PARENTS[parent]
        world[name] = local[:, b] if parent is None else world[parent] @ local[:, b]
    return world


def test_stream_fits_a_known_avatar(mocap_dir, tmp_path):
    motion = skelanim.load(mocap_dir / "cmu_cgspeed_mb" / "01_01.bvh")[:200:5]
    avatar = load_vrm(_write_vrm(tmp_path / "a.vrm", 1))
    plain, fitted = avatar_frames(motion), avatar_frames(motion, avatar=avatar)
    assert "UpperChest" in fitted.bones and set(fitted.bones) == set(AVATAR)
    for b, name in enumerate(fitted.bones[1:], start=1):  # the avatar's own offsets
        torch.testing.assert_close(fitted.positions[:, b], torch.tensor(avatar.offsets[name]).expand(len(motion), 3))
    # the hips' travel scaled by the legs' ratio, the same for every frame
    ratio = fitted.positions[:, 0] / plain.positions[:, 0]
    torch.testing.assert_close(ratio, torch.full_like(ratio, float(ratio[0, 1])), atol=1e-9, rtol=1e-9)
    rig = make_rig(motion)
    assert float(ratio[0, 1]) == pytest.approx(avatar.leg_length / (rig.leg_length * 0.056444), rel=0.02)
    # through the avatar's hierarchy (UpperChest included) the neck and the arms point as in the clip
    world = _world(fitted.bones, fitted.rotations)
    src = motion.positions() @ up_to_y_matrix(*motion.up_direction()).T
    joints = rig.mapping.joints
    for a, b, bone, child in [("neck", "head", "Neck", "Head"), ("l_upperarm", "l_forearm", "LeftUpperArm", "LeftLowerArm"),
                              ("r_leg", "r_foot", "RightLowerLeg", "RightFoot")]:  # fmt: skip
        want = torch.nn.functional.normalize(src[:, joints[b]] - src[:, joints[a]], dim=-1)
        rest = torch.tensor(avatar.offsets[child], dtype=torch.float64) * torch.tensor([-1.0, 1, 1])  # right-handed
        got = world[bone] @ torch.nn.functional.normalize(rest, dim=0)
        angle = torch.rad2deg(torch.acos((want * got).sum(-1).clamp(-1, 1)))
        assert float(angle.max()) < 0.05, (bone, float(angle.max()))


def test_without_an_avatar_the_source_proportions_go_out(mocap_dir):
    """The offsets sent, summed through Unity's hierarchy, put every joint the source has where its T-pose has it
    (a bone carrying several joints at the first the source has); DeepMimic's humanoid lacks spine joints,
    clavicles, hands, toes and a head: those bones sit between their neighbours or at the canonical T-pose's
    offset, never on their parent."""
    motion = skelanim.load(mocap_dir / "deepmimic" / "humanoid3d_walk.txt")
    frames = avatar_frames(motion[:1])
    lengths = frames.positions[0, 1:].norm(dim=-1)
    assert float(lengths.min()) > 0.03, dict(zip(frames.bones[1:], lengths.tolist()))
    placed: dict[str, torch.Tensor] = {}
    for b, name in enumerate(frames.bones):
        parent = UNITY_PARENTS[name]
        while parent is not None and parent not in placed:
            parent = UNITY_PARENTS[parent]
        placed[name] = frames.positions[0, b] if parent is None else placed[parent] + frames.positions[0, b]
    rig = make_rig(motion)
    metres = 1.0  # DeepMimic clips are in metres
    # Chest carries spine1 and chest; DeepMimic lacks spine1 (it turns with the spine), so Chest turns about the
    # chest joint and sits there (it had sat at a made-up spine1 point below it, bending the upper body there)
    for joint, bone in [("l_upperarm", "LeftUpperArm"), ("r_forearm", "RightLowerArm"), ("neck", "Neck"),
                        ("l_foot", "LeftFoot"), ("chest", "Chest")]:  # fmt: skip
        want = (
            (rig.canonical_rest[CANONICAL_JOINTS.index(joint)] - rig.canonical_rest[0])
            * torch.tensor([-1.0, 1, 1])
            * metres
        )
        torch.testing.assert_close(placed[bone] - placed["Hips"], want, atol=1e-6, rtol=0)


def test_cli_avatar_and_up_errors_are_one_line(mocap_dir, tmp_path, capsys):
    src = str(mocap_dir / "deepmimic" / "humanoid3d_walk.txt")
    (tmp_path / "junk.vrm").write_bytes(b"junk")
    for args, expected in [(["stream", src, "--up", "w"], "--up"),
                           (["stream", src, "--avatar", str(tmp_path / "junk.vrm")], "junk.vrm")]:  # fmt: skip
        assert main([*args, "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:") and expected in err[0], err


def test_a_vrm_without_chest_and_upper_chest_hangs_the_neck_and_shoulders_from_the_spine(tmp_path):
    """VRM 1.0 makes ``Chest`` and ``UpperChest`` optional: the neck and the shoulders then hang from the spine,
    their offsets the sum of the bones between (hand-checked from AVATAR, Unity's axes: X mirrored)."""
    bones = {b: v for b, v in AVATAR.items() if b not in ("Chest", "UpperChest")}
    bones["Neck"] = ("Spine", (0.0, 0.10 + 0.12 + 0.12, 0.01 + 0.0 - 0.01))
    for side, x in (("Left", 0.03), ("Right", -0.03)):
        bones[f"{side}Shoulder"] = ("Spine", (x, 0.10 + 0.12 + 0.09, 0.01))
    rig = load_vrm(_write_vrm(tmp_path / "no_chest.vrm", 1, bones))
    assert rig.parents["Neck"] == rig.parents["LeftShoulder"] == rig.parents["RightShoulder"] == "Spine"
    assert "Chest" not in rig.offsets and "UpperChest" not in rig.offsets
    np.testing.assert_allclose(rig.offsets["Neck"], [0.0, 0.34, 0.0], atol=1e-12)
    np.testing.assert_allclose(rig.offsets["LeftShoulder"], [-0.03, 0.31, 0.01], atol=1e-12)
    assert bone_plan(frozenset(rig.offsets))["Spine"] == ("spine", "spine1", "chest")


def test_the_leg_length_is_the_hips_over_the_mean_of_the_feet(tmp_path):
    """The right foot 0.1 m higher than the left (a shin of 0.24 m): the feet are at 0.05 and 0.15 m, the hips at
    0.80 m, the leg length 0.80 - 0.10 = 0.70 m."""
    bones = {**AVATAR, "RightFoot": ("RightLowerLeg", (0.0, -0.24, 0.0))}
    assert load_vrm(_write_vrm(tmp_path / "uneven.vrm", 1, bones)).leg_length == pytest.approx(0.70)


@pytest.mark.parametrize("rise", [0.75, 0.0])
def test_hips_not_above_the_feet_is_a_format_error(tmp_path, rise):
    """Legs that go up from the hips (feet 0.75 m above them) or lie level with them are no standing humanoid."""
    bones = dict(AVATAR)
    for side, x in (("Left", 0.08), ("Right", -0.08)):
        bones[f"{side}UpperLeg"] = ("Hips", (x, 0.05 * rise / 0.75, 0.0))
        bones[f"{side}LowerLeg"] = (f"{side}UpperLeg", (0.0, 0.36 * rise / 0.75, 0.0))
        bones[f"{side}Foot"] = (f"{side}LowerLeg", (0.0, 0.34 * rise / 0.75, 0.0))
    with pytest.raises(FormatError, match="hips are not above its feet") as err:
        load_vrm(_write_vrm(tmp_path / "upside.vrm", 1, bones))
    assert "\n" not in str(err.value)


def _under_armature(path: Path, armature: Node, translation_scale: float = 1.0) -> Path:
    """The VRM 1.0 AVATAR, its translations times ``translation_scale``, under one more (root) node ``armature``."""
    gltf = GLTF2().load_binary(str(_write_vrm(path, 1)))
    for node in gltf.nodes:
        node.translation = [v * translation_scale for v in node.translation]
    armature.children = [0]
    gltf.nodes.append(armature)
    gltf.scenes = [Scene(nodes=[len(gltf.nodes) - 1])]
    gltf.save_binary(str(path))
    return path


def _by_hand(gltf: GLTF2) -> dict[str, np.ndarray]:
    """Each humanoid bone's world position (Unity's axes, VRM 1.0: X negated), its node's matrix composed by hand
    down its chain of nodes as glTF defines it: ``parent @ T @ R @ S`` for each node from the scene's root."""
    parent = {c: i for i, node in enumerate(gltf.nodes) for c in node.children or []}

    def local(node: Node) -> np.ndarray:
        x, y, z, w = node.rotation or [0.0, 0.0, 0.0, 1.0]
        rotation = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                             [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                             [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])  # fmt: skip
        m = np.eye(4)
        m[:3, :3] = rotation @ np.diag(node.scale or [1.0, 1.0, 1.0])
        m[:3, 3] = node.translation or [0.0, 0.0, 0.0]
        return m

    out = {}
    for entry_name, entry in gltf.extensions["VRMC_vrm"]["humanoid"]["humanBones"].items():
        i, world = entry["node"], np.eye(4)
        chain = [i]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        for k in reversed(chain):  # from the scene's root down
            world = world @ local(gltf.nodes[k])
        out[entry_name[0].upper() + entry_name[1:]] = world[:3, 3] * np.array([-1.0, 1.0, 1.0])
    return out


def test_a_turned_and_moved_armature_node_composes_as_gltf_says(tmp_path):
    """An armature node above the hips turned 90 degrees about +Y and moved by (0.2, 0, 0.5) (glTF: a child's world
    matrix is its parent's times its own). By hand: the turn takes (x, y, z) to (z, y, -x), so the left upper arm's
    (0.09, 0, 0) becomes (0, 0, -0.09) and the toes' (0, -0.05, 0.1) become (0.1, -0.05, 0); the hips land at
    (0.2, 0.8, 0.5); Unity's axes negate X. The legs keep their length."""
    s = float(np.sqrt(0.5))
    path = _under_armature(tmp_path / "turned.vrm", Node(name="Armature", rotation=[0.0, s, 0.0, s],
                                                         translation=[0.2, 0.0, 0.5]))  # fmt: skip
    rig = load_vrm(path)
    np.testing.assert_allclose(rig.offsets["LeftUpperArm"], [0.0, 0.0, -0.09], atol=1e-12)
    np.testing.assert_allclose(rig.offsets["LeftToes"], [-0.1, -0.05, 0.0], atol=1e-12)
    np.testing.assert_allclose(rig.offsets["Hips"], [-0.2, 0.8, 0.5], atol=1e-12)
    assert rig.leg_length == pytest.approx(0.75)
    world = _by_hand(GLTF2().load_binary(str(path)))
    for bone, parent in rig.parents.items():
        want = world[bone] - (world[parent] if parent is not None else 0.0)
        np.testing.assert_allclose(rig.offsets[bone], want, atol=1e-12, err_msg=bone)


def test_an_armature_scaled_to_centimetres_gives_metres(tmp_path):
    """Translations in centimetres under a node scaled 0.01 (as Blender exports an armature) are the same avatar in
    metres: every offset and the leg length as in the unscaled file."""
    plain = load_vrm(_write_vrm(tmp_path / "plain.vrm", 1))
    scaled = load_vrm(_under_armature(tmp_path / "cm.vrm", Node(name="Armature", scale=[0.01, 0.01, 0.01]), 100.0))
    assert scaled.parents == plain.parents and scaled.leg_length == pytest.approx(0.75)
    for bone, offset in plain.offsets.items():
        np.testing.assert_allclose(scaled.offsets[bone], offset, atol=1e-12, err_msg=bone)
    np.testing.assert_allclose(scaled.offsets["LeftUpperArm"], [-0.09, 0.0, 0.0], atol=1e-12)
