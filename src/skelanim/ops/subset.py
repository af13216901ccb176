"""Joint subsets and renaming.

:func:`collapse` keeps some joints and removes the rest, so that every kept joint has the **same world
position and world rotation at every frame** as before. Each kept joint ``k`` hangs from its nearest kept
ancestor ``a`` (the shallowest kept joint becomes the root). Its new local rotation and translation are
the transform of ``k`` relative to ``a``, composed through the removed joints between them::

    G[j] = q[j],                 T[j] = t[j]                 if parent(j) is kept
    G[j] = G[p] * q[j],          T[j] = T[p] + G[p] t[j]     otherwise (p = parent(j), removed)

(``t`` the local translation, offset or animated; above the new root, "relative to the world"). This is
forward kinematics restricted to the removed chains, with quaternion products, so no matrix inverse is
involved. The new root's rotation and position are its world rotation and position.

Rest pose and animated translations: the new offsets are taken from the **rest pose** (the sum of the
rest offsets along the removed chain), so the collapsed skeleton's rest pose is the original's restricted
to the kept joints. When a removed intermediate joint is animated (or carried an animated translation)
the kept child's translation changes from frame to frame and differs from that offset; the result then
carries ``joint_translations`` ``(F, J', 3)``, and such joints gain position channels so that a BVH
writer can store them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_apply, quat_multiply, quat_normalize
from skelanim.core.skeleton import DEFAULT_JOINT_CHANNELS, POSITION_CHANNELS, Skeleton
from skelanim.errors import SkeletonError

__all__ = ["collapse", "figure_roots", "figures", "rename", "reorder_joints", "simplify_channels"]


def _kept_parents(skeleton: Skeleton, keep: list[int]) -> dict[int, int]:
    """Nearest kept strict ancestor of each kept joint (-1 for the new root)."""
    kept = set(keep)
    parents: dict[int, int] = {}
    for k in keep:
        p = int(skeleton.parents[k])
        while p >= 0 and p not in kept:
            p = int(skeleton.parents[p])
        parents[k] = p
    roots = [k for k in keep if parents[k] < 0]
    if len(roots) != 1:
        names = ", ".join(skeleton.names[r] for r in roots)
        raise SkeletonError(f"the kept joints must form one tree, but {len(roots)} have no kept ancestor: {names}")
    return parents


def collapse(motion: Motion, keep: Sequence[int | str], *, tol: float = 1e-9) -> Motion:
    """A motion on the sub-skeleton of the ``keep`` joints with unchanged world transforms.

    Parameters
    ----------
    motion:
        The motion (not modified), ``J`` joints.
    keep:
        Names or indices of the ``J'`` joints to keep (any order; the original order is kept). Exactly one
        of them may have no kept ancestor: it becomes the root.
    tol:
        Relative tolerance (times :attr:`Motion.height`, at least 1) below which a kept joint's per-frame
        translation counts as equal to its rest offset, so no ``joint_translations`` are needed.

    Returns
    -------
    Motion
        ``J'`` joints: names, channels and End Sites of the kept joints; parents remapped to the nearest
        kept ancestor; see the module docstring for rotations, offsets and translations.
        ``collapse(m, keep).positions() == m.positions()[:, sorted(keep)]`` up to rounding.
    """
    skel = motion.skeleton
    idx = sorted(set(skel.indices(keep)))
    if not idx:
        raise SkeletonError("collapse needs at least one joint to keep")
    for j in idx:
        if not 0 <= j < skel.num_joints:
            raise SkeletonError(f"joint index {j} out of range for a skeleton of {skel.num_joints} joints")
    kparent = _kept_parents(skel, idx)
    kept = set(idx)

    # joints whose relative transform is needed: kept joints and every removed joint above one
    needed: set[int] = set()
    for k in idx:
        j = k
        while j >= 0 and (j == k or j not in kept):
            needed.add(j)
            j = int(skel.parents[j])
    local_t = motion.local_translations()
    rotations = quat_normalize(motion.rotations)
    G: dict[int, torch.Tensor] = {}
    T: dict[int, torch.Tensor] = {}
    rest: dict[int, torch.Tensor] = {}
    for j in sorted(needed):
        p = int(skel.parents[j])
        if p < 0 or p in kept:
            G[j], T[j] = rotations[:, j], local_t[:, j]
            rest[j] = skel.offsets[j]
        else:
            G[j] = quat_multiply(G[p], rotations[:, j])
            T[j] = T[p] + quat_apply(G[p], local_t[:, j])
            rest[j] = rest[p] + skel.offsets[j]

    new_parents = np.array([-1 if kparent[k] < 0 else idx.index(kparent[k]) for k in idx])
    new_offsets = torch.stack([rest[k] for k in idx])
    new_rot = torch.stack([G[k] for k in idx], dim=1)
    new_t = torch.stack([T[k] for k in idx], dim=1)
    root_positions = new_t[:, 0].clone()

    height = motion.height
    scale = max(height, 1.0) if np.isfinite(height) else 1.0
    deviates = ((new_t - new_offsets).norm(dim=-1) > tol * scale).any(dim=0)
    deviates[0] = False
    animated = motion.joint_translations is not None or bool(deviates.any())

    channels: list[tuple[str, ...]] = []
    for n, k in enumerate(idx):
        ch = tuple(skel.channels[k])
        rot_ch = tuple(c for c in ch if c.endswith("rotation"))
        pos_ch = tuple(c for c in ch if c.endswith("position"))
        need_pos = n == 0 or bool(animated and deviates[n])
        if not rot_ch or (need_pos and not pos_ch):
            ch = ((pos_ch or POSITION_CHANNELS) if need_pos else pos_ch) + (rot_ch or DEFAULT_JOINT_CHANNELS)
        channels.append(ch)
    ends = {idx.index(k): v.clone() for k, v in skel.end_sites.items() if k in kept}
    new_skel = Skeleton([skel.names[k] for k in idx], new_parents, new_offsets, channels, ends)
    return motion.copy(
        skeleton=new_skel,
        rotations=new_rot,
        root_positions=root_positions,
        joint_translations=new_t if animated else None,
        metadata=dict(motion.metadata),
    )


def figure_roots(motion: Motion) -> list[int]:
    """The joints that were the ``ROOT`` s of a BVH file of several figures (the children of the scene joint that
    ``metadata["bvh_scene_root"]`` names); ``[]`` for a motion that is no such scene."""
    skel = motion.skeleton
    return skel.children(0) if motion.metadata.get("bvh_scene_root") == skel.names[0] else []


def figures(motion: Motion) -> list[Motion]:
    """The figures of a motion read from a BVH file of several ``ROOT`` s (actors, props; under the scene joint that
    ``metadata["bvh_scene_root"]`` names, :data:`skelanim.io.bvh_parse.SCENE_ROOT`): one motion per ROOT, in file
    order, on that figure's joints alone with their world transforms unchanged (:func:`collapse`), the names the
    reader suffixed (``Hips.001``: an earlier figure had it) given back, ``metadata["bvh_figure"]`` its number (from
    1, as ``skelanim convert --figure`` takes it). ``[motion]`` for a motion of one figure.
    """
    skel = motion.skeleton
    roots = figure_roots(motion)
    if len(roots) < 2:
        return [motion]
    suffixed = motion.metadata.get("bvh_renamed_joints")
    suffixed = suffixed if isinstance(suffixed, dict) else {}
    out = []
    for number, root in enumerate(roots, start=1):
        joints = [root]
        for j in range(root + 1, skel.num_joints):  # parents come first: a joint below the figure follows it
            if int(skel.parents[j]) in joints:
                joints.append(j)
        figure = collapse(motion, joints)
        kept = {k: v for k, v in figure.metadata.items() if k not in ("bvh_scene_root", "bvh_values", "bvh_renamed_joints")}
        figure = figure.copy(metadata={**kept, "bvh_figure": number})  # its place among the file's ROOTs, from 1
        names = set(figure.skeleton.names)
        back = {n: n.rsplit(".", 1)[0] for n in names if n in suffixed and n.rsplit(".", 1)[0] not in names}
        out.append(rename(figure, back) if back else figure)
    return out


def simplify_channels(motion: Motion, *, tol: float = 1e-6) -> Motion:
    """The motion in the BVH layout that every reader takes alike: position channels on the root alone, rotation
    channels on every other joint, the root's offset zero.

    Some exporters animate a translation on every joint (Bandai-Namco: six channels per joint, under a static
    ``joint_Root``), which pybvh refuses and three.js's BVHLoader adds to the offsets (its figures stand metres
    off); others give the root an offset that three.js adds to the root positions. Here a root with one child whose
    translation is animated is folded into that child (:func:`collapse`: world transforms unchanged), each other
    joint's translation, constant over the frames, becomes its offset, and the root's offset is zero (its
    positions place it). World positions are unchanged to ``tol`` of the height.

    Parameters
    ----------
    motion:
        The motion (not modified).
    tol:
        Largest change of a joint's translation over the frames, as a fraction of the height, that still counts as
        constant.

    Returns
    -------
    Motion
        One joint fewer where a root was folded; no ``joint_translations``. A motion without frames keeps its
        joints (nothing is animated in it) and its rest offsets.

    Raises
    ------
    SkeletonError
        A joint other than the root whose translation is animated (the layout cannot hold it); a motion of several
        figures (:func:`figures`: each has a root of its own).
    """
    skel = motion.skeleton
    count = len(figure_roots(motion))
    if count > 1:  # their roots' position channels had been called an animated joint translation
        raise SkeletonError(f"{count} figures, each with its own root: simplify one at a time (ops.figures, or "
                            "skelanim convert --figure N)")  # fmt: skip
    frames = motion.num_frames  # none: nothing is animated, the rest offsets are the translations
    children = [j for j in range(skel.num_joints) if int(skel.parents[j]) == 0]
    if len(children) == 1 and motion.joint_translations is not None and frames > 0:
        child_t = motion.local_translations()[:, children[0]]
        if float((child_t - child_t[:1]).abs().max()) > 0:  # the animated joint below a root of one child: the root
            motion = collapse(motion, [j for j in range(1, skel.num_joints)])
            skel = motion.skeleton
    height = motion.height
    scale = max(height, 1.0) if np.isfinite(height) else 1.0
    local_t = motion.local_translations()  # (F, J, 3)
    if frames > 0:
        spread = (local_t - local_t[:1]).norm(dim=-1).amax(0)  # (J,)
        offsets = local_t[0].clone()  # (J, 3)
    else:
        spread = torch.zeros(skel.num_joints, dtype=local_t.dtype)
        offsets = skel.offsets.clone()
    moving = [j for j in range(1, skel.num_joints) if float(spread[j]) > tol * scale]
    if moving:
        j = moving[0]
        raise SkeletonError(f"joint {skel.names[j]}'s translation is animated (it moves by up to "
                            f"{float(spread[j]):.4g}), which a BVH file holds only in position channels: keep them "
                            f"({len(moving)} joint(s) move)")  # fmt: skip
    offsets[0] = 0.0
    channels = [POSITION_CHANNELS + (tuple(c for c in skel.channels[0] if c.endswith("rotation"))
                                             or DEFAULT_JOINT_CHANNELS)]  # fmt: skip
    channels += [tuple(c for c in skel.channels[j] if c.endswith("rotation")) or DEFAULT_JOINT_CHANNELS
                 for j in range(1, skel.num_joints)]  # fmt: skip
    new_skel = Skeleton(list(skel.names), skel.parents.copy(), offsets, channels,
                        {k: v.clone() for k, v in skel.end_sites.items()})  # fmt: skip
    return motion.copy(skeleton=new_skel, joint_translations=None, metadata=dict(motion.metadata))


def rename(
    motion: Motion,
    mapping: Mapping[str, str] | Callable[[str], str],
    *,
    strict: bool = True,
) -> Motion:
    """Rename joints.

    Parameters
    ----------
    motion:
        The motion (not modified).
    mapping:
        ``{old: new}`` (joints not listed keep their names) or a function ``old -> new``.
    strict:
        With a dict, raise :class:`SkeletonError` when a key names no joint.

    Returns
    -------
    Motion
        The same motion on a skeleton with the new names (everything else copied).

    Raises
    ------
    SkeletonError
        Unknown joints (``strict``) or names that collide after renaming.
    """
    skel = motion.skeleton
    if callable(mapping):
        names = [str(mapping(n)) for n in skel.names]
    else:
        unknown = [k for k in mapping if k not in skel.names]
        if strict and unknown:
            raise SkeletonError(f"rename: unknown joint(s) {', '.join(map(repr, unknown))}")
        names = [mapping.get(n, n) for n in skel.names]
    new_skel = Skeleton(
        names,
        skel.parents.copy(),
        skel.offsets.clone(),
        list(skel.channels),
        {k: v.clone() for k, v in skel.end_sites.items()},
    )
    return motion.copy(skeleton=new_skel, metadata=dict(motion.metadata))


def reorder_joints(motion: Motion, names: Sequence[str]) -> Motion:
    """The same motion with its joints stored in the order ``names`` gives (a permutation of its joint names).

    BVH lists joints depth first, other sources do not (DeepMimic's humanoid: root, chest, neck, right_hip, ...; its
    BVH: root, chest, neck, right_shoulder, ...), so one skeleton may come back from a file in another order; a model
    trained on one order reads the other's joints by index. Every joint keeps its name, parent, offset, channels,
    End Site, rotations and translations; world positions are unchanged.

    Raises
    ------
    SkeletonError
        ``names`` is not a permutation of the joints' names, or lists a joint before its parent.
    """
    skel = motion.skeleton
    if sorted(names) != sorted(skel.names) or len(set(names)) != len(names):
        raise SkeletonError(f"reorder_joints: {len(names)} names that are not a permutation of the motion's "
                            f"{skel.num_joints} joints")  # fmt: skip
    index = {name: j for j, name in enumerate(skel.names)}
    order = [index[name] for name in names]
    position = {old: new for new, old in enumerate(order)}
    parents = np.array([position[int(skel.parents[j])] if skel.parents[j] >= 0 else -1 for j in order], dtype=np.int64)
    if any(p >= i for i, p in enumerate(parents)):
        raise SkeletonError("reorder_joints: the order lists a joint before its parent")
    new_skel = Skeleton(list(names), parents, skel.offsets[order].clone(), [skel.channels[j] for j in order],
                        {position[j]: v.clone() for j, v in skel.end_sites.items()})  # fmt: skip
    translations = None if motion.joint_translations is None else motion.joint_translations[:, order].clone()
    return motion.copy(skeleton=new_skel, rotations=motion.rotations[:, order].clone(), joint_translations=translations)
