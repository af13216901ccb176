"""Joint mapping: any skeleton's joints onto a canonical set of 22 major joints.

The canonical set
-----------------
:data:`CANONICAL_JOINTS`, parents first (:data:`CANONICAL_PARENTS`)::

    hips -> spine -> spine1 -> chest -> neck -> head
    chest -> {l,r}_clavicle -> {l,r}_upperarm -> {l,r}_forearm -> {l,r}_hand
    hips  -> {l,r}_upleg -> {l,r}_leg -> {l,r}_foot -> {l,r}_toe

:data:`REQUIRED` joints must be found; the others are optional (DeepMimic has no clavicles, hands, toes or
head; Bandai-Namco has one spine joint). A missing optional joint is treated as rigidly attached to its
canonical parent.

How joints are found (names first, the tree to settle what names cannot)
------------------------------------------------------------------------
1. Every name is *normalised* (:func:`skelanim.core.joint_names.normalize_name`, the side reader mirror pairs
   and the foot finder use too): namespace and rig prefixes dropped (``mixamorig:``, ``CC_Base_``,
   ``Bip01``, ``joint_``, ``DEF-``), a side marker taken off and remembered (``Left``/``Right`` words,
   ``_L``/``_R``, ``L_``/``R_``, ``.L``, and the one-letter CMU forms ``LHipJoint``/``lhand`` when the
   mirrored name exists too), then lower case without separators: ``mixamorig:LeftUpLeg`` is
   ``(left, "upleg")``, ``CC_Base_L_Thigh`` is ``(left, "thigh")``, ``UpperLeg_L`` is ``(left, "upperleg")``.
2. Limb joints are matched against alias lists (:data:`LIMB_ALIASES`) *as chains*: for each side the arm
   ``clavicle -> upperarm -> forearm -> hand`` and the leg ``upleg -> leg -> foot -> toe`` take the
   combination of candidates that are ancestors of one another in that order, with the most joints,
   then the tightest chain. That settles the names that mean different joints in different schemes: CMU
   MotionBuilder's ``LeftShoulder`` (a clavicle, followed by ``LeftArm``) and CMU 3dsMax's
   ``LeftShoulder`` (the upper arm, below ``LeftCollar``); SMPL's ``L_Foot`` (a toe, below ``L_Ankle``).
3. ``chest`` is the joint where the two arms meet (their lowest common ancestor); ``hips`` is the joint
   named like hips/pelvis/root (in that order of preference) that carries both legs and the chest;
   ``spine``/``spine1`` are the joints between them, in order. ``neck`` is the first joint named like a
   neck between chest and head that is not at the chest's position (CMU's zero-length ``Neck`` gives way
   to ``Neck1``); ``head`` is named ``head``.

Nothing is guessed silently: a required joint that is not found, or a chain with two equally good
readings, raises :class:`MappingError` listing the joints by name. A user mapping (``{canonical: joint}``
or ``{joint: canonical}``, JSON or YAML; ``null`` removes a canonical joint) overrides the automatic one.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from skelanim.core.joint_names import normalize_name
from skelanim.core.skeleton import Skeleton
from skelanim.errors import FormatError, SkeletonError
from skelanim.io.common import read_utf8_text

__all__ = [
    "CANONICAL_JOINTS", "CANONICAL_PARENTS", "LIMB_ALIASES", "REQUIRED", "JointMapping", "MappingError",
    "load_mapping_file", "map_skeleton", "normalize_name",
]  # fmt: skip

#: The 22 canonical joints, parents first.
CANONICAL_JOINTS: tuple[str, ...] = (
    "hips", "spine", "spine1", "chest", "neck", "head",
    "l_clavicle", "l_upperarm", "l_forearm", "l_hand",
    "r_clavicle", "r_upperarm", "r_forearm", "r_hand",
    "l_upleg", "l_leg", "l_foot", "l_toe",
    "r_upleg", "r_leg", "r_foot", "r_toe",
)  # fmt: skip
_PARENT_NAMES = {
    "spine": "hips", "spine1": "spine", "chest": "spine1", "neck": "chest", "head": "neck",
    "l_clavicle": "chest", "l_upperarm": "l_clavicle", "l_forearm": "l_upperarm", "l_hand": "l_forearm",
    "r_clavicle": "chest", "r_upperarm": "r_clavicle", "r_forearm": "r_upperarm", "r_hand": "r_forearm",
    "l_upleg": "hips", "l_leg": "l_upleg", "l_foot": "l_leg", "l_toe": "l_foot",
    "r_upleg": "hips", "r_leg": "r_upleg", "r_foot": "r_leg", "r_toe": "r_foot",
}  # fmt: skip
#: ``(22,)`` canonical parent indices, ``-1`` for the hips.
CANONICAL_PARENTS: tuple[int, ...] = tuple(
    -1 if n == "hips" else CANONICAL_JOINTS.index(_PARENT_NAMES[n]) for n in CANONICAL_JOINTS
)
#: Joints every skeleton must have.
REQUIRED: frozenset[str] = frozenset(
    {"hips", "chest"} | {f"{s}_{p}" for s in "lr" for p in ("upperarm", "forearm", "upleg", "leg", "foot")}
)
#: Normalised base names (side removed) per limb part, best first.
LIMB_ALIASES: dict[str, tuple[str, ...]] = {
    "clavicle": ("clavicle", "collar", "collarbone", "shoulder"),
    "upperarm": ("upperarm", "arm", "uparm", "humerus", "shoulder", "uarm", "shldr"),  # OptiTrack LUArm, Daz lShldr
    "forearm": ("forearm", "lowerarm", "elbow", "forarm", "farm"),  # OptiTrack LFArm
    "hand": ("hand", "wrist"),
    "upleg": ("upleg", "upperleg", "thigh", "hip", "femur"),
    "leg": ("leg", "lowerleg", "calf", "knee", "shin", "tibia"),
    "foot": ("foot", "ankle"),
    "toe": ("toebase", "toes", "toe", "ball", "toe0", "foot"),
}
_ARM = ("clavicle", "upperarm", "forearm", "hand")
_LEG = ("upleg", "leg", "foot", "toe")
_HIPS = ("hips", "hip", "pelvis", "root")
_NECK = re.compile(r"(lower|upper)?neck(twist)?0?[12]?")
class MappingError(SkeletonError):
    """A skeleton cannot be mapped onto the canonical joints (unmapped required or ambiguous joints)."""


@dataclass
class JointMapping:
    """Which skeleton joint plays each canonical joint.

    Attributes
    ----------
    skeleton : Skeleton
        The mapped skeleton (``J`` joints).
    joints : dict
        ``{canonical name: joint index}`` for the canonical joints found.
    how : dict
        ``{canonical name: "name" | "tree" | "user"}``: matched by name, placed by the tree, or given by the user.
    """

    skeleton: Skeleton
    joints: dict[str, int]
    how: dict[str, str] = field(default_factory=dict)

    @property
    def index(self) -> np.ndarray:
        """``(22,)`` joint index per canonical joint, ``-1`` where missing."""
        return np.array([self.joints.get(n, -1) for n in CANONICAL_JOINTS], dtype=np.int64)

    @property
    def missing(self) -> list[str]:
        """Canonical joints not found."""
        return [n for n in CANONICAL_JOINTS if n not in self.joints]

    def names(self) -> dict[str, str]:
        """``{canonical: joint name}``."""
        return {c: self.skeleton.names[j] for c, j in self.joints.items()}

    def describe(self) -> str:
        """One line per canonical joint: the joint it maps to and how it was found (or ``-``)."""
        lines = []
        for c in CANONICAL_JOINTS:
            j = self.joints.get(c)
            lines.append(f"{c:11s} {'-' if j is None else self.skeleton.names[j]}  {self.how.get(c, '')}".rstrip())
        return "\n".join(lines)


def _ancestors(skeleton: Skeleton, j: int) -> list[int]:
    return skeleton.path_to_root(j)[1:]


def _is_below(skeleton: Skeleton, child: int, parent: int) -> bool:
    return parent in _ancestors(skeleton, child)


def _depth(skeleton: Skeleton, j: int) -> int:
    return len(skeleton.path_to_root(j)) - 1


def _match_chain(
    skeleton: Skeleton, parts: tuple[str, ...], candidates: dict[str, list[int]], required: set[str],
    priority: dict[tuple[str, int], int],
) -> tuple[dict[str, int], list[list[str]]]:
    """Best ancestor-ordered assignment of candidates to chain parts; also the tied alternatives."""
    options = [[-1] + candidates.get(p, []) for p in parts]
    best: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for combo in itertools.product(*options):
        chosen = [c for c in combo if c >= 0]
        if len(set(chosen)) != len(chosen):
            continue
        if any(combo[k] < 0 for k, p in enumerate(parts) if p in required):
            continue
        if any(not _is_below(skeleton, b, a) for a, b in itertools.pairwise(chosen)):
            continue
        gaps = sum(_depth(skeleton, b) - _depth(skeleton, a) for a, b in itertools.pairwise(chosen))
        # more joints, then a tighter chain, then earlier aliases
        rank = sum(priority.get((p, c), 0) for p, c in zip(parts, combo) if c >= 0)
        key = (len(chosen), -gaps, -rank)
        if not best or key > best[0][0]:
            best = [(key, combo)]
        elif key == best[0][0]:
            best.append((key, combo))
    if not best:
        return {}, []
    chosen_combo = best[0][1]
    ties = [[skeleton.names[c] if c >= 0 else "-" for c in combo] for _, combo in best[1:]]
    if ties:
        ties.insert(0, [skeleton.names[c] if c >= 0 else "-" for c in chosen_combo])
    return {p: c for p, c in zip(parts, chosen_combo) if c >= 0}, ties


def _lca(skeleton: Skeleton, joints: list[int]) -> int:
    paths = [list(reversed(skeleton.path_to_root(j))) for j in joints]
    common = -1
    for level in zip(*paths):
        if len(set(level)) != 1:
            break
        common = level[0]
    return common


def _validate_user(mapping: Mapping[str, Any], skeleton: Skeleton, source: str | None) -> dict[str, int | None]:
    """``{canonical: joint index or None}`` from a user mapping in either direction."""
    out: dict[str, int | None] = {}
    for key, value in mapping.items():
        if key in CANONICAL_JOINTS:
            canonical, joint = key, value
        elif isinstance(value, str) and value in CANONICAL_JOINTS:
            canonical, joint = value, key
        else:
            raise MappingError(
                f"mapping entry {key!r}: {value!r} names no canonical joint (canonical joints: "
                f"{', '.join(CANONICAL_JOINTS)})", path=source,
            )  # fmt: skip
        if joint is None:
            out[canonical] = None
            continue
        if not isinstance(joint, str) or joint not in skeleton.names:
            raise MappingError(f"mapping entry {canonical!r}: no joint named {joint!r} in the skeleton", path=source)
        out[canonical] = skeleton.names.index(joint)
    return out


def load_mapping_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read a user mapping file: a JSON or YAML object ``{canonical: joint}`` or ``{joint: canonical}``
    (optionally under a top-level ``"map"`` key; ``null`` removes a canonical joint).

    Raises
    ------
    FormatError
        Unreadable file, invalid JSON/YAML, or not an object of strings.
    """
    path = Path(path)
    text = read_utf8_text(path)
    if not text.strip():
        raise FormatError("empty mapping file: expected an object {canonical: joint}", path=path)
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # pragma: no cover - pyyaml is a dependency
            raise FormatError("reading YAML mappings needs pyyaml (pip install pyyaml)", path=path) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            raise FormatError(f"invalid YAML: {getattr(err, 'problem', err)}", path=path,
                              line=None if mark is None else mark.line + 1) from None  # fmt: skip
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise FormatError(f"invalid JSON: {err.msg}", path=path, line=err.lineno) from None
    if isinstance(data, dict) and isinstance(data.get("map"), dict):
        data = data["map"]
    if not isinstance(data, dict) or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                                             for k, v in data.items()):  # fmt: skip
        raise FormatError("expected an object of joint names, {canonical: joint} or {joint: canonical}", path=path)
    return data


def map_skeleton(
    skeleton: Skeleton, override: Mapping[str, Any] | str | os.PathLike | None = None, *, source: str | None = None,
    option: str = "--map",
) -> JointMapping:
    """Map ``skeleton`` onto :data:`CANONICAL_JOINTS` (see the module docstring).

    Parameters
    ----------
    skeleton : Skeleton
        Any skeleton.
    override : mapping or path, optional
        A user mapping (or a JSON/YAML file holding one) that takes precedence.
    source : str, optional
        A file name for error messages.
    option : str
        The command-line option that takes a mapping file for this skeleton, named in the error.

    Returns
    -------
    JointMapping

    Raises
    ------
    MappingError
        Required canonical joints not found, ambiguous chains, or a user mapping naming unknown joints;
        the message lists the joints by name.
    """
    user_source = source
    if isinstance(override, (str, os.PathLike)):
        user_source = str(override)
        override = load_mapping_file(override)
    user = _validate_user(override or {}, skeleton, user_source)
    known = frozenset(skeleton.names)
    parsed = [normalize_name(n, known) for n in skeleton.names]
    joints: dict[str, int] = {c: j for c, j in user.items() if j is not None}
    how = {c: "user" for c in joints}
    taken = set(joints.values())
    problems: list[str] = []

    for side in "lr":
        for parts in (_ARM, _LEG):
            by_name: dict[str, list[int]] = {}  # candidates by name alone, the user's entries aside
            priority: dict[tuple[str, int], int] = {}
            for p in parts:
                by_name[p] = []
                for rank, alias in enumerate(LIMB_ALIASES[p]):
                    for j, (s, b) in enumerate(parsed):
                        if s == side and b == alias and j not in taken and j not in by_name[p]:
                            by_name[p].append(j)
                            priority[(p, j)] = rank
            given = {p: user[f"{side}_{p}"] for p in parts if f"{side}_{p}" in user}  # None: left out by the user
            cands: dict[str, list[int]] = {p: by_name[p] for p in parts}
            for p, entry in given.items():
                cands[p] = [] if entry is None else [entry]
            required = {p for p in parts if f"{side}_{p}" in REQUIRED}
            chosen, ties = _match_chain(skeleton, parts, cands, required, priority)
            limb = f"{'left' if side == 'l' else 'right'} {'arm' if parts is _ARM else 'leg'}"
            off = {p: entry for p, entry in given.items() if entry is not None and p not in chosen}
            if off and _match_chain(skeleton, parts, {**cands, **{p: by_name[p] for p in off}}, required, priority)[0]:
                # the names alone make a chain of this limb that the user's entries break: say which entries
                for p, entry in off.items():
                    problems.append(f"the given mapping's {side}_{p} = {skeleton.names[entry]} is not on one chain "
                                    f"with the {limb}'s other joints")  # fmt: skip
            if ties:
                readings = "; ".join(" > ".join(t) for t in ties[:3])
                problems.append(f"ambiguous {'left' if side == 'l' else 'right'} "
                                f"{'arm' if parts is _ARM else 'leg'}: {readings}")  # fmt: skip
            for p, j in chosen.items():
                c = f"{side}_{p}"
                if c not in joints:
                    joints[c], how[c] = j, "name"
                    taken.add(j)

    if "chest" not in user:
        arms = [joints[c] for c in ("l_upperarm", "r_upperarm") if c in joints]
        if len(arms) == 2:
            arm_roots = [joints.get(f"{s}_clavicle", joints[f"{s}_upperarm"]) for s in "lr"]
            joints["chest"], how["chest"] = _lca(skeleton, arm_roots), "tree"
            if joints["chest"] in arm_roots:
                del joints["chest"]
    if "hips" not in user and "chest" in joints:
        legs = [joints[c] for c in ("l_upleg", "r_upleg") if c in joints]
        below = _lca(skeleton, [joints["chest"], *legs]) if len(legs) == 2 else None
        for alias in _HIPS:
            hits = [j for j, (s, b) in enumerate(parsed) if s is None and b == alias and j not in taken
                    and all(_is_below(skeleton, k, j) for k in [joints["chest"], *legs])
                    and (alias != "root" or below is None or j == below)]  # fmt: skip
            # a "root" above the pelvis is a rig's ground control (Blender Rigify's), not the hips
            if len(hits) > 1:
                problems.append(f"ambiguous hips: {', '.join(skeleton.names[j] for j in hits)}")
            if hits:
                joints["hips"], how["hips"] = hits[0], "name"
                break
        else:
            if len(legs) == 2:
                joints["hips"], how["hips"] = _lca(skeleton, [joints["chest"], *legs]), "tree"
    if "hips" in joints and "chest" in joints:
        between = list(reversed(skeleton.path_to_root(joints["chest"])[1:]))
        between = between[between.index(joints["hips"]) + 1 :] if joints["hips"] in between else []
        for c, pick in (("spine", 0), ("spine1", len(between) // 2 if len(between) > 1 else None)):
            if c not in user and pick is not None and between:
                joints[c], how[c] = between[pick], "tree"
    if "chest" in joints:
        heads = [j for j, (s, b) in enumerate(parsed) if s is None and b == "head" and _is_below(skeleton, j, joints["chest"])]
        if "head" not in user and heads:
            if len(heads) > 1 and len({_depth(skeleton, h) for h in heads}) == 1:
                problems.append(f"ambiguous head: {', '.join(skeleton.names[j] for j in heads)}")
            joints["head"], how["head"] = min(heads, key=lambda j: _depth(skeleton, j)), "name"
        if "neck" not in user:
            rest = skeleton.rest_positions()
            chest = joints["chest"]
            scale = max(skeleton.height(), 1e-9)
            necks = [j for j, (s, b) in enumerate(parsed) if s is None and _NECK.fullmatch(b)
                     and _is_below(skeleton, j, chest) and ("head" not in joints or _is_below(skeleton, joints["head"], j))]
            necks.sort(key=lambda j: _depth(skeleton, j))  # fmt: skip
            away = [j for j in necks if float((rest[j] - rest[chest]).norm()) > 0.01 * scale]
            if necks:
                joints["neck"], how["neck"] = (away or necks)[0], "name"

    missing = sorted(REQUIRED - set(joints), key=CANONICAL_JOINTS.index)
    if missing and not user and skeleton.num_joints < len(REQUIRED):  # not a humanoid: no joint to name differently
        listed = ", ".join(skeleton.names[:40]) + (" ..." if skeleton.num_joints > 40 else "")
        raise MappingError(
            f"cannot map the skeleton: it has only {skeleton.num_joints} joint{'s' if skeleton.num_joints != 1 else ''} "
            f"({listed}), and a humanoid mapping needs at least {len(REQUIRED)}, one for each of "
            f"{', '.join(c for c in CANONICAL_JOINTS if c in REQUIRED)} (the hips, the chest, both arms and both legs); "
            f"a mapping file ({option}) cannot supply joints the skeleton lacks", path=source,
        )  # fmt: skip
    notes: list[str] = []
    hips_named = [skeleton.names[j] for j, (s, b) in enumerate(parsed) if s is None and b in _HIPS]
    if "hips" in missing and "hips" not in user and hips_named:  # not "no joint found": the hips are placed by the tree
        missing.remove("hips")
        named = " or ".join(hips_named)
        if "chest" in joints:
            notes.append(f"hips: {named} is not above both the chest ({skeleton.names[joints['chest']]}) and the legs found")
        else:
            notes.append(f"hips: {named} is not taken, as the hips are placed above the chest and no chest was found")
    if missing:
        notes.insert(0, "no joint found for required canonical joint(s) " + ", ".join(missing))
    problems[:0] = notes
    for c, j in joints.items():
        up = CANONICAL_PARENTS[CANONICAL_JOINTS.index(c)]  # canonical index of the parent
        while up >= 0 and CANONICAL_JOINTS[up] not in joints:
            up = CANONICAL_PARENTS[up]
        if up >= 0 and not _is_below(skeleton, j, joints[CANONICAL_JOINTS[up]]):
            problems.append(f"{c} ({skeleton.names[j]}) is not below {CANONICAL_JOINTS[up]} "
                            f"({skeleton.names[joints[CANONICAL_JOINTS[up]]]})")  # fmt: skip
    if problems:
        names = ", ".join(skeleton.names[:40]) + (" ..." if len(skeleton.names) > 40 else "")
        raise MappingError("cannot map the skeleton: " + "; ".join(problems) + f" (joints: {names}); "
                           f"pass a mapping file ({option}) for these", path=source)  # fmt: skip
    return JointMapping(skeleton, {c: joints[c] for c in CANONICAL_JOINTS if c in joints}, how)
