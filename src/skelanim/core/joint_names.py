"""Reading joint names: exporter prefixes and left/right side markers, in one place.

Every part that must tell a left joint from a right one (mirror pairs of :class:`~skelanim.core.skeleton.Skeleton`,
the foot finder of :mod:`skelanim.ops.contacts`, the canonical joint mapping of :mod:`skelanim.retarget.mapping`)
reads the side here, so a naming convention taught once is known everywhere.

Conventions recognised (the marker may lead, trail or sit between separators): ``LeftArm`` / ``left_arm`` /
``LEFT_ARM``; ``Arm_L``, ``arm_l``, ``L_Arm``, ``Arm.L``, ``arm.l`` (Blender), ``Arm-L``, ``Bip01 L Thigh``
(3ds Max Biped); and, only where the mirrored name is also a joint, ``LHipJoint`` / ``lhand`` (CMU),
``lThigh`` (Daz), ``ThighL``, ``RigLArm`` and ``Skeleton_LThigh`` (OptiTrack Motive). Exporter prefixes
(``mixamorig:``, ``CC_Base_``, ``Bip01``, ``joint_``, VRM's ``J_Bip_``, SMPL's ``m_avg_``, Motive's default
``Skeleton_``, any ``namespace:``) are removed before the marker is sought.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["SideMarker", "mirrored_name", "normalize_name", "side_marker", "strip_prefix"]

# VRM's J_Bip_L_UpperLeg and J_Bip_C_Hips, SMPL's m_avg_L_Hip, Blender Rigify's DEF-
_PREFIX = re.compile(r"^(mixamorig\d*[:_]?|skeleton\d*_|cc_base_|bip0*1[ _]?|joint_|jnt_|def[-_]|b_|j_bip_(?:c_)?|[mf]_avg_)",
                     re.IGNORECASE)  # fmt: skip
# Tried in order on the prefix-free name; group "s" is the marker. The flag: the marker counts only where the
# mirrored name is a joint too (a single capital or small letter could be part of a word).
_SIDES: tuple[tuple[re.Pattern[str], bool], ...] = tuple((re.compile(p), pair) for p, pair in (
    (r"(?P<s>Left|Right|LEFT|RIGHT|left|right)", False),
    (r"(?:^|[-_.\s])(?P<s>[LRlr])(?=$|[-_.\s\d])", False),  # Arm_L, L_Arm, arm.l, Thigh-L, "L Thigh"
    (r"^(?P<s>[LR])(?=[A-Z])", True),  # CMU LHipJoint
    (r"^(?P<s>[lr])(?=[a-z])", True),  # CMU lhand
    (r"^(?P<s>[lr])(?=[A-Z])", True),  # Daz lThigh
    (r"(?<=[a-z])(?P<s>[LR])(?=[A-Z])", True),  # RigLArm
    (r"(?<=[_\s])(?P<s>[LR])(?=[A-Z])", True),  # OptiTrack Motive's Skeleton_LThigh
    (r"(?<=[a-z])(?P<s>[LR])$", True),  # ThighL
))  # fmt: skip
_SWAP = {"Left": "Right", "Right": "Left", "LEFT": "RIGHT", "RIGHT": "LEFT", "left": "right", "right": "left",
         "L": "R", "R": "L", "l": "r", "r": "l"}  # fmt: skip


class SideMarker(NamedTuple):
    """Where a joint name says its side: ``side`` is ``"l"`` or ``"r"``; ``name[start:end]`` is the marker."""

    side: str
    start: int
    end: int


def strip_prefix(name: str) -> str:
    """``name`` without a ``namespace:`` and exporter prefixes (``mixamorig:LeftArm`` -> ``LeftArm``); always a
    suffix of ``name``."""
    name = name.split(":")[-1] if ":" in name else name
    while True:
        new = _PREFIX.sub("", name)
        if new == name:
            return name
        name = new


def _swapped(name: str, start: int, end: int) -> str:
    return name[:start] + _SWAP[name[start:end]] + name[end:]


def side_marker(name: str, names: Iterable[str] | None = None) -> SideMarker | None:
    """The side marker of a joint name, or ``None`` for a centre joint.

    Parameters
    ----------
    name : str
        A joint name, e.g. ``"mixamorig:LeftUpLeg"``, ``"Bip01 L Thigh"``, ``"lhand"``.
    names : iterable of str, optional
        Every joint name of the skeleton. A marker whose mirrored name is among them is preferred; the one-letter
        forms that could be part of a word (``LHipJoint``, ``lhand``, ``ThighL``) count only then.

    Returns
    -------
    SideMarker or None
        Side and span of the marker in ``name`` itself (not in its prefix-free form).
    """
    known = names if isinstance(names, (set, frozenset, dict)) else frozenset(names or ())  # built once by callers
    bare = strip_prefix(name)
    shift = len(name) - len(bare)
    fallback: SideMarker | None = None
    for pattern, needs_pair in _SIDES:
        for match in pattern.finditer(bare):
            start, end = match.span("s")
            marker = SideMarker(match.group("s")[0].lower(), start + shift, end + shift)
            if _swapped(name, marker.start, marker.end) in known:
                return marker
            if not needs_pair and fallback is None:
                fallback = marker
    return fallback


def mirrored_name(name: str, marker: SideMarker) -> str:
    """``name`` with its side marker swapped (``LeftArm`` -> ``RightArm``, ``thigh.l`` -> ``thigh.r``)."""
    return _swapped(name, marker.start, marker.end)


def normalize_name(name: str, names: Iterable[str] | None = None) -> tuple[str | None, str]:
    """``(side, base)`` of a joint name: side ``"l"``, ``"r"`` or ``None`` (:func:`side_marker`); base the
    prefix-free name without its marker, lower case, letters and digits only (``mixamorig:LeftUpLeg`` ->
    ``("l", "upleg")``)."""
    marker = side_marker(name, names)
    bare = strip_prefix(name)
    shift = len(name) - len(bare)
    if marker is not None:
        bare = bare[: marker.start - shift] + bare[marker.end - shift :]
    return (marker.side if marker else None), re.sub(r"[^a-z0-9]", "", bare.lower())
