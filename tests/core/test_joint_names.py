"""Side markers and prefixes of joint names: one reader for mirror pairs, the foot finder and the joint mapping."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skelanim.core.joint_names import mirrored_name, normalize_name, side_marker, strip_prefix
from skelanim.core.skeleton import Skeleton
from skelanim.retarget.mapping import map_skeleton

PARTS = ("Thigh", "Calf", "Foot", "Toe", "Clavicle", "UpperArm", "Forearm", "Hand")

# name of the left / right joint of a part, per convention
CONVENTIONS = {
    "mixamo": lambda s, p: f"mixamorig:{'Left' if s == 'l' else 'Right'}{p}",
    "words lower": lambda s, p: f"{'left' if s == 'l' else 'right'}_{p.lower()}",
    "unreal": lambda s, p: f"{p.lower()}_{s}",
    "character creator": lambda s, p: f"CC_Base_{s.upper()}_{p}",
    "biped": lambda s, p: f"Bip01 {s.upper()} {p}",
    "blender": lambda s, p: f"{p.lower()}.{s}",
    "blender caps": lambda s, p: f"{p}.{s.upper()}",
    "daz": lambda s, p: f"{s}{p}",
    "dash": lambda s, p: f"{p}-{s.upper()}",
    "suffix": lambda s, p: f"{p}{s.upper()}",
    "vrm": lambda s, p: f"J_Bip_{s.upper()}_{p}",
    "smpl": lambda s, p: f"m_avg_{s.upper()}_{p}",
    "cmu": lambda s, p: f"{s.upper()}{p}",
    "cmu lower": lambda s, p: f"{s}{p.lower()}",
    "namespaced cmu": lambda s, p: f"Skel:{s.upper()}{p}",
    "inner capital": lambda s, p: f"Rig{s.upper()}{p}",
    "motive": lambda s, p: f"Skeleton_{s.upper()}{p}",  # OptiTrack Motive (its asset's name, Skeleton by default)
}


def _skeleton(names: list[str]) -> Skeleton:
    """A humanoid tree of ``names``: five centre joints, then the left and right parts in :data:`PARTS` order."""
    centre = [(-1, (0, 100, 0)), (0, (0, 10, 0)), (1, (0, 20, 0)), (2, (0, 20, 0)), (3, (0, 10, 0))]
    side = [(0, (10, -5, 0)), (5, (0, -45, 0)), (6, (0, -45, 0)), (7, (0, -5, 12)),  # leg from the hips
            (2, (5, 15, 0)), (9, (12, 0, 0)), (10, (28, 0, 0)), (11, (25, 0, 0))]  # arm from the chest  # fmt: skip
    joints = centre + side + [(p + len(PARTS) if p >= 5 else p, (-x, y, z)) for p, (x, y, z) in side]
    parents = np.array([p for p, _ in joints])
    return Skeleton(names, parents, torch.tensor([o for _, o in joints], dtype=torch.float64))


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_pairs_and_mapping_read_the_same_sides(convention):
    name = CONVENTIONS[convention]
    names = ["Hips", "Spine", "Chest", "Neck", "Head"] + [name(s, p) for s in "lr" for p in PARTS]
    skeleton = _skeleton(names)
    pairs = skeleton.left_right_pairs()
    assert sorted(pairs) == [(5 + k, 5 + len(PARTS) + k) for k in range(len(PARTS))]
    for left, right in pairs:  # the mapping's reading of each pair: same base, opposite sides
        (side_l, base_l), (side_r, base_r) = normalize_name(names[left], names), normalize_name(names[right], names)
        assert (side_l, side_r) == ("l", "r") and base_l == base_r and base_l.endswith(PARTS[left - 5].lower())
    for centre in names[:5]:
        assert side_marker(centre, names) is None
    if convention != "inner capital":  # "RigLThigh" reads as side l of "rigthigh", a name no alias has
        assert set(map_skeleton(skeleton).joints) >= {"l_upleg", "r_upleg", "l_foot", "r_hand", "l_forearm"}


def test_side_marker_spans_the_marker_in_the_full_name():
    marker = side_marker("mixamorig:LeftUpLeg")
    assert marker is not None and "mixamorig:LeftUpLeg"[marker.start : marker.end] == "Left"
    assert mirrored_name("mixamorig:LeftUpLeg", marker) == "mixamorig:RightUpLeg"
    biped = side_marker("Bip01 R Thigh")
    assert biped is not None and biped.side == "r" and mirrored_name("Bip01 R Thigh", biped) == "Bip01 L Thigh"
    assert strip_prefix("J_Bip_L_UpperLeg") == "L_UpperLeg"


def test_one_letter_markers_need_the_mirrored_joint():
    # "lowerback" and "LHipJoint" alone could be words; with their mirrored names they are sides
    assert side_marker("lowerback", ["lowerback"]) is None
    assert side_marker("LHipJoint", ["LHipJoint"]) is None
    assert side_marker("LHipJoint", ["LHipJoint", "RHipJoint"]) == ("l", 0, 1)
    assert normalize_name("lhand", ["lhand", "rhand"]) == ("l", "hand")
    assert normalize_name("Arm_L") == ("l", "arm")  # a separated marker counts without its pair
