"""The two sides of a retargeting, prepared: :func:`make_rig` (a canonical rig from a skeleton, a clip or a rig), their
world up (:func:`upright`, :func:`world_turn`: canonical space stands Y up), where a clip's feet stand
(:func:`target_floor_of`), how long a clip's bones are against another's (:func:`bone_size`), and the
:class:`RetargetError` of bad options. Used by :class:`~skelanim.retarget.retargeter.Retargeter`, which re-exports
them, and by the command line."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_to_matrix
from skelanim.core.skeleton import Skeleton
from skelanim.core.units import up_to_y_matrix
from skelanim.errors import SkelanimError
from skelanim.ops.normalize import rotate
from skelanim.retarget.baselines import FEET
from skelanim.retarget.mapping import JointMapping, map_skeleton
from skelanim.retarget.rig import CanonicalRig, calibrate_rig, physical_zero_pose
from skelanim.retarget.stance import standing_level

__all__ = ["RetargetError", "bone_size", "make_rig", "target_floor_of", "upright", "world_turn"]


def bone_size(skeleton: Skeleton, reference: Skeleton) -> float:
    """How long ``skeleton``'s bones are against ``reference``'s (the same joints): the median ratio of the rest
    offsets of the joints below the root's children (longer than 0.1 % of the reference's height). End Sites and a
    root child's offset (Bandai-Namco's Hips under a static ``joint_Root``: where the body stands) are left out:
    they differ between takes of one actor (10 units of End Site and the Hips offset, 5 % of the rest height)."""
    mine, theirs = (s.offsets.to(torch.float64).norm(dim=-1) for s in (skeleton, reference))
    floor = 1e-3 * reference.height()
    bones = [j for j, p in enumerate(reference.parents.tolist()) if p > 0 and float(theirs[j]) > floor]
    return float((mine[bones] / theirs[bones]).median()) if bones else 1.0


def target_floor_of(rig: CanonicalRig, motion: Motion) -> float:
    """Where a clip of ``rig``'s skeleton stands its feet, in its canonical space (:func:`standing_level`), for
    :class:`Retargeter`'s ``target_floor``."""
    local = quat_to_matrix(motion.rotations.to(torch.float64))
    _, positions, _ = rig.encode_matrices(local, motion.local_translations(), None)
    return standing_level(positions[:, list(FEET), 1])


def upright(motion: Motion) -> tuple[Motion, Tensor | None]:
    """``motion`` turned Y up (canonical space stands so) and its :func:`world_turn`, ``None`` where it is Y up."""
    turn = world_turn(motion)
    return (motion if turn is None else rotate(motion, turn)), turn


def world_turn(skeleton: Skeleton | CanonicalRig | Motion) -> Tensor | None:
    """The turn ``(3, 3)`` of a clip's world up onto +Y (:func:`~skelanim.core.units.up_to_y_matrix` of its
    :meth:`~skelanim.core.motion.Motion.up_direction`); ``None`` where it is +Y already, and for a bare skeleton or
    rig, which no motion shows standing (a zero pose need not be a body pose), so it is taken as Y up. Canonical
    space stands Y up (its floors, heights, the NKN's training): :class:`Retargeter` turns a Z-up clip Y up on the
    way in and the result back into a Z-up target's world on the way out. A clip of only a zero pose that is no
    body pose is refused (:func:`_require_a_body_pose`)."""
    if not isinstance(skeleton, Motion) or skeleton.num_frames == 0:
        return None
    _require_a_body_pose(skeleton)
    axis, sign = skeleton.up_direction()
    return None if (axis, sign) == (1, 1.0) else up_to_y_matrix(axis, sign)


def _require_a_body_pose(motion: Motion, mapping: JointMapping | None = None, source: str | None = None) -> None:
    """A :class:`RetargetError` for a clip of only its skeleton's zero pose where that is no body pose
    (:func:`~.rig.physical_zero_pose`), whose up axis and limb twist would be read off it (results had been written
    lying on their side); a skeleton the default mapping cannot map is left to the mapping's own error."""
    if not motion.num_frames or not bool((motion.rotations[..., 0].abs() > 1 - 1e-9).all()):
        return
    try:
        lying = not physical_zero_pose(motion.skeleton, mapping)
    except SkelanimError:
        return
    if lying:
        raise RetargetError("the motion holds only its skeleton's zero pose, which is no body pose on this rig (the upper "
                            "legs do not point down from the chest), so nothing shows which way is up or how its limbs "
                            "twist: give frames of its motion (one real pose will do)", path=source or motion.metadata.get("path"))


class RetargetError(SkelanimError):
    """Bad retargeting options (unknown method, wrong frame shape)."""


def make_rig(
    skeleton: Skeleton | CanonicalRig | Motion,
    mapping: JointMapping | Mapping[str, Any] | str | os.PathLike | None = None,
    rest: Tensor | None = None,
    *,
    source: str | None = None,
    calibration: Tensor | None = None,
    option: str = "--map",
) -> CanonicalRig:
    """A :class:`CanonicalRig` from a skeleton, an optional user mapping, an optional rest pose and optional
    frames of the skeleton's own motion to calibrate its bone frames on. A :class:`Motion` stands for its
    skeleton, calibrated on the motion itself where its zero pose is no body pose (:func:`~.rig.calibrate_rig`),
    unless ``calibration`` is given. ``mapping``: a user mapping or its file (:func:`~.mapping.map_skeleton`), or the
    :class:`JointMapping` that function made for this skeleton. ``option``: the command-line option an unmappable
    skeleton's error names."""
    if isinstance(skeleton, CanonicalRig):
        if mapping is not None:  # a rig's mapping is its own: the one given had been ignored without a word
            raise RetargetError("a CanonicalRig carries its own joint mapping: give the skeleton (or motion) with the "
                                "mapping, or the rig alone", path=source)  # fmt: skip
        return skeleton
    if not isinstance(skeleton, (Skeleton, Motion)):
        raise RetargetError(f"expected a Skeleton, a Motion or a CanonicalRig, got {type(skeleton).__name__} "
                            "(load a file with skelanim.load first)")  # fmt: skip
    if mapping is not None and not isinstance(mapping, (JointMapping, Mapping, str, os.PathLike)):
        raise RetargetError(f"a joint mapping is a JointMapping, a dict or a mapping file's path, got "
                            f"{type(mapping).__name__}", path=source)  # fmt: skip
    if isinstance(skeleton, Motion):
        rig = make_rig(skeleton.skeleton, mapping, rest, source=source, calibration=calibration, option=option)
        if calibration is not None:
            return rig
        _require_a_body_pose(skeleton, rig.mapping, source)
        return calibrate_rig(rig, skeleton.rotations)
    joints = mapping if isinstance(mapping, JointMapping) else map_skeleton(skeleton, mapping, source=source, option=option)
    return CanonicalRig(skeleton, joints, rest, calibration)
