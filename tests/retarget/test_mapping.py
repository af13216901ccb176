"""Joint mapping: every skeleton family of the shared data, the common schemes outside it, user overrides,
and errors that name the joints."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from skelanim.core.skeleton import Skeleton
from skelanim.io.deepmimic import humanoid_skeleton
from skelanim.retarget.mapping import CANONICAL_JOINTS, REQUIRED, MappingError, map_skeleton, normalize_name

EXPECTED = {
    "bandai": {"hips": "Hips", "chest": "Chest", "l_clavicle": "Shoulder_L", "l_upperarm": "UpperArm_L",
               "r_forearm": "LowerArm_R", "l_upleg": "UpperLeg_L", "r_foot": "Foot_R", "l_toe": "Toes_L"},
    "cmu_mb": {"hips": "Hips", "spine": "LowerBack", "chest": "Spine1", "neck": "Neck1", "l_clavicle": "LeftShoulder",
               "l_upperarm": "LeftArm", "l_upleg": "LeftUpLeg", "r_toe": "RightToeBase"},
    "cmu_max": {"chest": "Chest2", "l_clavicle": "LeftCollar", "l_upperarm": "LeftShoulder", "l_forearm": "LeftElbow",
                "l_hand": "LeftWrist", "l_upleg": "LeftHip", "l_leg": "LeftKnee", "l_foot": "LeftAnkle", "l_toe": "LeftToe"},
    "ccrig": {"hips": "CC_Base_Hip", "spine": "CC_Base_Waist", "chest": "CC_Base_Spine02", "neck": "CC_Base_NeckTwist01",
              "l_upperarm": "CC_Base_L_Upperarm", "l_upleg": "CC_Base_L_Thigh", "r_leg": "CC_Base_R_Calf",
              "l_toe": "CC_Base_L_ToeBase"},
    "pymo": {"hips": "Hips", "chest": "Spine", "head": "Head", "l_upperarm": "LeftArm"},
    "deepmimic": {"hips": "root", "chest": "chest", "neck": "neck", "l_upperarm": "left_shoulder",
                  "r_forearm": "right_elbow", "l_upleg": "left_hip", "r_leg": "right_knee", "l_foot": "left_ankle"},
}  # fmt: skip


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_every_family_maps(clips, family):
    mapping = map_skeleton(clips[family].skeleton)
    names = mapping.names()
    for canonical, joint in EXPECTED[family].items():
        assert names.get(canonical) == joint, (canonical, names.get(canonical))
    assert REQUIRED <= set(names)
    assert len(set(names.values())) == len(names)  # one joint per canonical joint


def test_xia_maps_like_cmu(clips):
    assert map_skeleton(clips["xia"].skeleton).names() == map_skeleton(clips["cmu_mb"].skeleton).names()


def _chain_skeleton(names: list[str], parents: list[int]) -> Skeleton:
    rng = np.random.default_rng(0)
    return Skeleton(names, np.array(parents), torch.from_numpy(rng.normal(size=(len(names), 3))) + 1.0)


def _mixamo_like(prefix: str, table: dict[str, str]) -> Skeleton:
    tree = [("Hips", -1), ("Spine", 0), ("Spine1", 1), ("Spine2", 2), ("Neck", 3), ("Head", 4)]
    for side in ("Left", "Right"):
        tree += [(f"{side}Shoulder", 3), (f"{side}Arm", len(tree)), (f"{side}ForeArm", len(tree) + 1),
                 (f"{side}Hand", len(tree) + 2)]  # fmt: skip
    for side in ("Left", "Right"):
        tree += [(f"{side}UpLeg", 0), (f"{side}Leg", len(tree)), (f"{side}Foot", len(tree) + 1), (f"{side}ToeBase", len(tree) + 2)]
    names = [prefix + table.get(n, n) for n, _ in tree]
    return _chain_skeleton(names, [p for _, p in tree])


def test_mixamo_names():
    sk = _mixamo_like("mixamorig:", {})
    names = map_skeleton(sk).names()
    assert names["l_upleg"] == "mixamorig:LeftUpLeg" and names["r_clavicle"] == "mixamorig:RightShoulder"
    assert names["l_upperarm"] == "mixamorig:LeftArm" and names["chest"] == "mixamorig:Spine2"
    assert names["spine"] == "mixamorig:Spine" and names["spine1"] == "mixamorig:Spine1"


def test_smpl_names():
    tree = [("Pelvis", -1), ("L_Hip", 0), ("R_Hip", 0), ("Spine1", 0), ("L_Knee", 1), ("R_Knee", 2), ("Spine2", 3),
            ("L_Ankle", 4), ("R_Ankle", 5), ("Spine3", 6), ("L_Foot", 7), ("R_Foot", 8), ("Neck", 9), ("L_Collar", 9),
            ("R_Collar", 9), ("Head", 12), ("L_Shoulder", 13), ("R_Shoulder", 14), ("L_Elbow", 16), ("R_Elbow", 17),
            ("L_Wrist", 18), ("R_Wrist", 19), ("L_Hand", 20), ("R_Hand", 21)]  # fmt: skip
    names = map_skeleton(_chain_skeleton([n for n, _ in tree], [p for _, p in tree])).names()
    assert names["l_clavicle"] == "L_Collar" and names["l_upperarm"] == "L_Shoulder" and names["l_hand"] == "L_Wrist"
    assert names["l_foot"] == "L_Ankle" and names["l_toe"] == "L_Foot" and names["chest"] == "Spine3"
    assert names["hips"] == "Pelvis"


def test_normalize_name():
    assert normalize_name("mixamorig:LeftUpLeg") == ("l", "upleg")
    assert normalize_name("CC_Base_R_Thigh") == ("r", "thigh")
    assert normalize_name("UpperLeg_L") == ("l", "upperleg")
    assert normalize_name("lhand", frozenset({"lhand", "rhand"})) == ("l", "hand")
    assert normalize_name("lowerback", frozenset({"lowerback"})) == (None, "lowerback")


def test_user_override_json_and_yaml(clips, tmp_path):
    sk = clips["cmu_mb"].skeleton
    (tmp_path / "m.json").write_text(json.dumps({"neck": "Neck", "LeftFingerBase": "l_hand", "spine1": None}))
    mapping = map_skeleton(sk, tmp_path / "m.json")
    assert mapping.names()["neck"] == "Neck" and mapping.names()["l_hand"] == "LeftFingerBase"
    assert "spine1" not in mapping.joints and mapping.how["neck"] == "user"
    (tmp_path / "m.yaml").write_text("map:\n  neck: Neck\n")
    assert map_skeleton(sk, tmp_path / "m.yaml").names()["neck"] == "Neck"


def test_unmappable_skeleton_lists_required_joints():
    sk = _chain_skeleton(["root", "a", "b", "c"], [-1, 0, 1, 2])
    with pytest.raises(MappingError) as err:
        map_skeleton(sk)
    message = str(err.value)
    for joint in ("hips", "chest", "l_upperarm", "r_foot"):
        assert joint in message
    assert "root, a, b, c" in message


def test_a_lone_hips_joint_is_said_to_be_too_few_joints_not_a_missing_hips():
    """A skeleton of one joint named ``Hips`` was told "no joint found for ... hips", though it has one."""
    with pytest.raises(MappingError) as err:
        map_skeleton(_chain_skeleton(["Hips"], [-1]), source="lone.bvh")
    message = str(err.value)
    assert message.startswith("lone.bvh: cannot map the skeleton: it has only 1 joint (Hips), and a humanoid mapping "
                              "needs at least 12, one for each of hips, chest, l_upperarm,"), message
    assert "no joint found" not in message


def test_hips_named_but_not_placed_are_not_said_to_be_missing():
    """The hips are placed above the chest (where the arms meet): arms not found leave a named ``Hips`` unplaced,
    which is said as that, not as "no joint found for ... hips"."""
    tree = [("Hips", -1), ("Spine", 0), ("Chest", 1), ("Head", 2)]
    for side in ("Left", "Right"):
        tree += [(f"{side}Wing", 2), (f"{side}Tip", len(tree))]
    for side in ("Left", "Right"):
        tree += [(f"{side}UpLeg", 0), (f"{side}Leg", len(tree)), (f"{side}Foot", len(tree) + 1)]
    with pytest.raises(MappingError) as err:
        map_skeleton(_chain_skeleton([n for n, _ in tree], [p for _, p in tree]))
    message = str(err.value)
    assert "no joint found for required canonical joint(s) chest, l_upperarm, l_forearm, r_upperarm, r_forearm; " in message
    assert "hips: Hips is not taken, as the hips are placed above the chest and no chest was found" in message


def test_user_mapping_with_unknown_joint_is_named(clips):
    with pytest.raises(MappingError, match="NoSuchJoint"):
        map_skeleton(clips["cmu_mb"].skeleton, {"neck": "NoSuchJoint"})
    with pytest.raises(MappingError, match="belly"):
        map_skeleton(clips["cmu_mb"].skeleton, {"belly": "Neck"})


def test_a_given_joint_off_its_limb_is_named(clips):
    """A mapping file that puts the left foot on the right leg: the error had listed the leg joints it could not
    find and asked for a mapping file, which was given; it names the entry now (an audit)."""
    with pytest.raises(MappingError, match="given mapping's l_foot = Foot_R is not on one chain with the left leg"):
        map_skeleton(clips["bandai"].skeleton, {"l_foot": "Foot_R"})
    assert map_skeleton(clips["bandai"].skeleton, {"l_foot": "Foot_L"}).names()["l_foot"] == "Foot_L"
    # a right entry on a limb whose other joints are not found by name is not blamed
    sk = clips["bandai"].skeleton
    renamed = Skeleton([("Thingy" if n == "UpperLeg_L" else n) for n in sk.names], sk.parents, sk.offsets)
    with pytest.raises(MappingError, match="l_upleg") as err:
        map_skeleton(renamed, {"l_foot": "Foot_L"})
    assert "given mapping" not in str(err.value)


def test_ambiguous_chain_is_reported():
    # two equally good left forearms (same alias) below one upper arm, each with a hand
    tree = [("Hips", -1), ("Chest", 0), ("Head", 1)]
    for side in ("Left", "Right"):
        tree += [(f"{side}Arm", 1), (f"{side}ForeArm", len(tree)), (f"{side}Hand", len(tree) + 1)]
    tree += [("Left_ForeArm", 3), ("Left_Hand", len(tree))]
    for side in ("Left", "Right"):
        tree += [(f"{side}UpLeg", 0), (f"{side}Leg", len(tree)), (f"{side}Foot", len(tree) + 1)]
    with pytest.raises(MappingError, match="ambiguous left arm"):
        map_skeleton(_chain_skeleton([n for n, _ in tree], [p for _, p in tree]))


def test_canonical_set_size():
    assert len(CANONICAL_JOINTS) == 22 and humanoid_skeleton().num_joints == 13


_CMU_PARTS = {"Hips": ("C", "Hips"), "Spine": ("C", "Spine"), "Spine1": ("C", "Chest"), "Neck": ("C", "Neck"),
              "Head": ("C", "Head"), "Shoulder": ("S", "Shoulder"), "Arm": ("S", "UpperArm"),
              "ForeArm": ("S", "LowerArm"), "Hand": ("S", "Hand"), "UpLeg": ("S", "UpperLeg"),
              "Leg": ("S", "LowerLeg"), "Foot": ("S", "Foot"), "ToeBase": ("S", "ToeBase")}  # fmt: skip
_CONVENTIONS = {  # (centre name, side name) from a part's name in that convention and the side letter
    "vrm": (lambda part: f"J_Bip_C_{part}", lambda side, part: f"J_Bip_{side}_{part}"),
    "smpl fbx": (lambda part: f"m_avg_{part}", lambda side, part: f"m_avg_{side}_{part}"),
    "optitrack": (lambda part: part, lambda side, part: side + {"UpperArm": "UArm", "LowerArm": "FArm",
                                                                 "UpperLeg": "Thigh", "LowerLeg": "Shin"}.get(part, part)),
    "daz": (lambda part: part, lambda side, part: side.lower() + {"UpperArm": "Shldr", "LowerArm": "ForeArm",
                                                                   "UpperLeg": "Thigh", "LowerLeg": "Shin"}.get(part, part)),
    "suffix -L": (lambda part: part, lambda side, part: f"{part}-{side}"),
}  # fmt: skip


@pytest.mark.parametrize("convention", list(_CONVENTIONS))
def test_other_naming_conventions_map_as_their_source(clips, convention):
    """VRM (J_Bip_L_UpperLeg, J_Bip_C_Hips), SMPL's FBX (m_avg_L_Hip), OptiTrack (LUArm, LFArm), Daz (lThigh,
    lShldr) and Thigh-L names had failed to map ("no joint found for required canonical joint(s) chest, ...", an
    audit's finding): CMU's skeleton renamed into each maps every canonical joint to the same joints."""
    from skelanim.ops import rename

    motion = clips["cmu_mb"]
    centre, sided = _CONVENTIONS[convention]

    def renamed(name: str) -> str:
        for side, letter in (("Left", "L"), ("Right", "R")):
            if name.startswith(side) and name[len(side):] in _CMU_PARTS:
                return sided(letter, _CMU_PARTS[name[len(side):]][1])
        return centre(_CMU_PARTS[name][1]) if name in _CMU_PARTS else name

    skeleton = motion.skeleton
    other = rename(motion, renamed).skeleton
    assert other.names != skeleton.names
    assert map_skeleton(other).joints == map_skeleton(skeleton).joints


def test_a_rig_s_ground_control_named_root_is_not_the_hips(clips):
    """Blender Rigify names its ground control ``root`` and the pelvis ``spine``: ``root`` was taken as the hips
    (a Bandai walk so named retargeted 16 heights off, an audit's measure). A joint named root is the hips only
    where it is the pelvis (the lowest joint above chest and legs, as the DeepMimic humanoid's)."""
    from skelanim.ops import rename

    motion = clips["bandai"]
    names = {"joint_Root": "root", "Hips": "spine", "Spine": "spine.001", "Chest": "spine.002", "Neck": "spine.004",
             "Head": "spine.006"}  # fmt: skip
    for side in "LR":
        names |= {f"Shoulder_{side}": f"shoulder.{side}", f"UpperArm_{side}": f"upper_arm.{side}",
                  f"LowerArm_{side}": f"forearm.{side}", f"Hand_{side}": f"hand.{side}", f"UpperLeg_{side}": f"thigh.{side}",
                  f"LowerLeg_{side}": f"shin.{side}", f"Foot_{side}": f"foot.{side}", f"Toes_{side}": f"toe.{side}"}  # fmt: skip
    rigify = map_skeleton(rename(motion, names).skeleton).joints
    usual = map_skeleton(motion.skeleton).joints
    assert rigify["hips"] == motion.skeleton.index("Hips")
    assert {k: v for k, v in usual.items() if k in rigify} == rigify and set(usual) - set(rigify) <= {"neck", "head"}
    assert map_skeleton(clips["deepmimic"].skeleton).names()["hips"] == "root"
