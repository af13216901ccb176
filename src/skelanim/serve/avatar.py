"""The receiving avatar's own proportions, read from its VRM file, so that a stream fits it.

A VMC marionette may set every bone's local position to what it receives (EVMC4U does, with its default
``BonePositionSynchronize``); positions of another body then stretch the avatar. Given the avatar's ``.vrm``,
:class:`~skelanim.serve.vmc.AvatarEncoder` sends that avatar's own bone offsets, the bones it has (``UpperChest``
included), and the hips' travel scaled by its leg length over the source's (as retargeting's ``copy`` does).

VRM is glTF with the humanoid's bones named in an extension: ``VRM`` (VRM 0.x: ``humanoid.humanBones``, a list
of ``{"bone", "node"}``) or ``VRMC_vrm`` (VRM 1.0: ``humanoid.humanBones``, ``{bone: {"node"}}``); bone names
are Unity's in lower camel case. Both rest in a T-pose. A VRM 0.x model faces -Z in its glTF (UniVRM wrote it
by negating Unity's Z), a VRM 1.0 model +Z (UniVRM negates X): Unity's axes are ``(x, y, -z)`` and
``(-x, y, z)`` of the file's.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from pygltflib import GLTF2

from skelanim.core.rotations import quat_to_matrix
from skelanim.errors import FormatError
from skelanim.io.gltf import node_trs

__all__ = ["UNITY_PARENTS", "AvatarRig", "load_vrm"]


def _unity_parents() -> dict[str, str | None]:
    parents: dict[str, str | None] = {"Hips": None, "Spine": "Hips", "Chest": "Spine", "UpperChest": "Chest",
                                      "Neck": "UpperChest", "Head": "Neck", "Jaw": "Head"}  # fmt: skip
    for side in ("Left", "Right"):
        parents.update({f"{side}Eye": "Head", f"{side}Shoulder": "UpperChest", f"{side}UpperArm": f"{side}Shoulder",
                        f"{side}LowerArm": f"{side}UpperArm", f"{side}Hand": f"{side}LowerArm",
                        f"{side}UpperLeg": "Hips", f"{side}LowerLeg": f"{side}UpperLeg",
                        f"{side}Foot": f"{side}LowerLeg", f"{side}Toes": f"{side}Foot"})  # fmt: skip
        for finger in ("Thumb", "Index", "Middle", "Ring", "Little"):
            parent = f"{side}Hand"
            for phalanx in ("Proximal", "Intermediate", "Distal"):
                parents[f"{side}{finger}{phalanx}"] = parent
                parent = f"{side}{finger}{phalanx}"
    return parents


#: Unity's 55 humanoid bones (``HumanBodyBones``) -> parent bone, parents first.
UNITY_PARENTS: dict[str, str | None] = _unity_parents()


#: VRM 1.0 names the thumb's bones one joint further up than Unity (and VRM 0.x) do.
_VRM1_THUMBS = {f"{side}{vrm}": f"{side}{unity}" for side in ("left", "right") for vrm, unity in
                (("ThumbMetacarpal", "ThumbProximal"), ("ThumbProximal", "ThumbIntermediate"))}  # fmt: skip


@dataclass(frozen=True)
class AvatarRig:
    """An avatar's humanoid in its T-pose, Unity's axes, metres.

    Attributes
    ----------
    offsets : dict
        Bone name (Unity's ``HumanBodyBones``) -> ``(3,)`` position relative to its nearest humanoid ancestor
        the avatar has (the ``Hips``: relative to the model's origin).
    parents : dict
        Bone name -> that ancestor's name (``None`` for the ``Hips``).
    leg_length : float
        Height of the hips over the mean of the feet, metres.
    """

    offsets: dict[str, np.ndarray]
    parents: dict[str, str | None]
    leg_length: float


def _node_matrices(gltf: GLTF2, path: Path) -> list[np.ndarray]:
    """World ``(4, 4)`` matrices of every node in the rest (bind) layout of the file."""
    local = []
    for node in gltf.nodes:
        t, q, scale = node_trs(node, path)
        m = np.eye(4)
        m[:3, :3] = quat_to_matrix(torch.from_numpy(q)).numpy() * scale[None, :]
        m[:3, 3] = t
        local.append(m)
    parent = {c: i for i, node in enumerate(gltf.nodes) for c in (node.children or [])}
    world: list[np.ndarray | None] = [None] * len(local)

    def resolve(i: int) -> np.ndarray:
        done = world[i]
        if done is None:
            done = world[i] = local[i] if i not in parent else resolve(parent[i]) @ local[i]
        return done

    return [resolve(i) for i in range(len(local))]


def load_vrm(path: str | os.PathLike) -> AvatarRig:
    """The humanoid of a VRM 0.x or 1.0 file (``.vrm``, a GLB).

    Raises
    ------
    FormatError
        Not a GLB, no VRM humanoid, or a humanoid without hips, legs and feet.
    """
    path = Path(path)
    try:
        gltf = GLTF2().load_binary(str(path))
    except (OSError, ValueError, KeyError, TypeError, struct.error) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise FormatError(f"not a VRM (GLB) file: {err}", path=path) from None
    extensions = gltf.extensions or {}
    if "VRMC_vrm" in extensions:
        bones = {_VRM1_THUMBS.get(name, name): entry.get("node") for name, entry in
                 extensions["VRMC_vrm"].get("humanoid", {}).get("humanBones", {}).items()}  # fmt: skip
        to_unity = np.array([-1.0, 1.0, 1.0])
    elif "VRM" in extensions:
        bones = {entry.get("bone"): entry.get("node") for entry in extensions["VRM"].get("humanoid", {}).get("humanBones", [])}  # fmt: skip
        to_unity = np.array([1.0, 1.0, -1.0])
    else:
        raise FormatError("no VRM humanoid (neither a VRMC_vrm nor a VRM extension)", path=path)
    nodes = len(gltf.nodes)
    named = {}
    for name, node in bones.items():
        if not isinstance(name, str) or not isinstance(node, int) or not 0 <= node < nodes:
            raise FormatError(f"humanoid bone {name!r} points at no node ({node!r})", path=path)
        named[name[0].upper() + name[1:]] = node
    missing = [b for b in ("Hips", "LeftUpperLeg", "LeftLowerLeg", "LeftFoot", "RightFoot") if b not in named]
    if missing:
        raise FormatError(f"the VRM humanoid has no {', '.join(missing)}", path=path)
    world = _node_matrices(gltf, path)
    position = {b: world[n][:3, 3] * to_unity for b, n in named.items()}
    offsets, parents = {}, {}
    for bone, parent in UNITY_PARENTS.items():
        if bone not in position:
            continue
        while parent is not None and parent not in position:
            parent = UNITY_PARENTS[parent]
        parents[bone] = parent
        offsets[bone] = position[bone] - (position[parent] if parent is not None else 0.0)
    leg = float(position["Hips"][1] - (position["LeftFoot"][1] + position["RightFoot"][1]) / 2)
    if not leg > 0:
        raise FormatError(f"the VRM's hips are not above its feet (leg length {leg:.3g} m)", path=path)
    return AvatarRig(offsets, parents, leg)
