"""Left/right mirroring of motions.

The mirror is the reflection ``M = I - 2 e e^T`` across the plane through the origin normal to the
lateral axis ``e`` (an axis of the file: X, Y or Z). For a rotation ``R``, the mirrored rotation is
``M R M`` (a proper rotation again); for a unit quaternion ``(w, v)`` this is ``(w, -M v)``: the vector
component along ``e`` is kept and the other two are negated, e.g. ``(w, x, -y, -z)`` for X. Joints are
swapped with their partners ``P`` (:meth:`Skeleton.mirror_permutation`, completed by structure for
joints whose names carry no side marker the name rules know, see :func:`mirror_permutation`):

* ``rotations'[:, j] = M R[:, P[j]] M``,
* ``offsets'[j] = M offsets[P[j]]`` (End Sites likewise), ``root_positions' = M root_positions``,
  ``joint_translations'[:, j] = M joint_translations[:, P[j]]``.

Real skeletons are rarely exactly symmetric (left and right bone lengths differ slightly). The choice
made here: **a joint takes its mirrored partner's offset**, so the result lives on the mirror image of
the original skeleton (for a symmetric skeleton that is the same skeleton). With that choice, for every
skeleton, symmetric or not,

* FK positions of the mirrored motion are the reflected original positions with left and right swapped:
  ``positions'[:, j] = M positions[:, P[j]]``;
* mirroring twice gives back the original exactly (only signs and indices change, bit for bit).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor

from skelanim.core._tensor import _check, as_tensor, numpy_in_numpy_out
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.errors import SkeletonError
from skelanim.ops._common import axis_index

__all__ = ["joint_reflections", "lateral_axis", "mirror", "mirror_permutation", "mirror_quat", "mirror_skeleton"]


def _sign(axis: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    s = torch.ones(3, dtype=dtype)
    s[axis] = -1.0
    return s


@numpy_in_numpy_out
def mirror_quat(q: Tensor, *, axis: int | str = 0) -> Tensor:
    """Reflect rotations across the plane normal to ``axis``: ``R -> M R M``.

    Parameters
    ----------
    q:
        ``(..., 4)`` quaternions (w, x, y, z).
    axis:
        ``0/1/2`` or ``"x"/"y"/"z"``.

    Returns
    -------
    ``(..., 4)``: ``w`` and the component along ``axis`` kept, the other two negated.
    """
    t = as_tensor(q)
    _check(t, (4,), "q")
    a = axis_index(axis)
    sign = -torch.ones(4, dtype=t.dtype, device=t.device)
    sign[0] = 1.0
    sign[1 + a] = 1.0
    return t * sign


def lateral_axis(skeleton: Skeleton) -> int:
    """The skeleton's left-right axis, from its left/right joint pairs.

    For each axis ``a``, the asymmetry ``sum ||offset[left] - M_a offset[right]||`` over all pairs is
    measured; the axis of least asymmetry is the one the skeleton is (nearly) symmetric across.

    Returns
    -------
    int
        0, 1 or 2; 0 (X) when the skeleton has no left/right pairs.
    """
    pairs = skeleton.left_right_pairs()
    if not pairs:
        return 0
    left = torch.tensor([l for l, _ in pairs])
    right = torch.tensor([r for _, r in pairs])
    off = skeleton.offsets
    cost = [float((off[left] - off[right] * _sign(a)).norm(dim=-1).sum()) for a in range(3)]
    return int(np.argmin(cost))  # ties resolve to the lowest axis (X first)


def mirror_permutation(skeleton: Skeleton) -> np.ndarray:
    """The left/right permutation used by :func:`mirror`: :meth:`Skeleton.mirror_permutation` completed by
    structure, and checked.

    Joints the name rules leave unpaired (e.g. ``lhand``/``rhand`` in CMU's 3dsMax conversion) but whose
    parent has a partner are paired with the unpaired children of that partner, in child order, when both
    sides have the same number of unpaired children.

    Returns
    -------
    np.ndarray
        ``(J,)`` int64 permutation, an involution; ``perm[j] == j`` for centre joints.

    Raises
    ------
    SkeletonError
        If the pairs do not form a symmetric tree (a joint's partner has a parent that is not its parent's
        partner).
    """
    perm = skeleton.mirror_permutation().copy()
    parents = skeleton.parents
    for p in range(skeleton.num_joints):
        q = int(perm[p])
        if q <= p:  # handle each left/right parent pair once, from its lower index
            continue
        mine = [c for c in skeleton.children(p) if perm[c] == c]
        theirs = [c for c in skeleton.children(q) if perm[c] == c]
        if mine and len(mine) == len(theirs):
            for a, b in zip(mine, theirs):
                perm[a], perm[b] = b, a
    for j in range(1, skeleton.num_joints):
        if parents[perm[j]] != perm[parents[j]]:
            raise SkeletonError(
                f"cannot mirror: joint {skeleton.names[j]!r} and its partner {skeleton.names[perm[j]]!r} "
                "have parents that are not partners (the left/right names do not form a symmetric tree)"
            )
    return perm


def mirror_skeleton(skeleton: Skeleton, *, axis: int | str | None = None) -> Skeleton:
    """The mirror image of a skeleton: same names and parents, ``offsets'[j] = M offsets[P[j]]``.

    Parameters
    ----------
    skeleton:
        The skeleton (not modified).
    axis:
        Lateral axis; default :func:`lateral_axis`.

    Returns
    -------
    Skeleton
        Offsets and End Sites taken from the mirrored partner joints; channels kept per joint.
    """
    a = lateral_axis(skeleton) if axis is None else axis_index(axis)
    perm = mirror_permutation(skeleton)
    s = _sign(a)
    ends = {
        int(j): skeleton.end_sites[int(perm[j])] * s
        for j in range(skeleton.num_joints)
        if int(perm[j]) in skeleton.end_sites
    }
    return Skeleton(
        skeleton.names,
        skeleton.parents.copy(),
        skeleton.offsets[torch.as_tensor(perm)] * s,
        list(skeleton.channels),
        ends,
    )


def _level_lateral_axis(motion: Motion) -> int:
    """:func:`lateral_axis` of the skeleton where that is not the motion's up axis, else the other axis along which
    its left/right pairs lie farthest apart (mean over up to 64 sampled frames; the mirror's default axis)."""
    a = lateral_axis(motion.skeleton)
    pairs = motion.skeleton.left_right_pairs()
    if not pairs or motion.num_frames == 0:
        return a
    up = motion.up_axis()
    if a != up:
        return a
    frames = torch.linspace(0, motion.num_frames - 1, min(64, motion.num_frames)).round().long()
    pos = motion[frames].positions().detach()
    left, right = [l for l, _ in pairs], [r for _, r in pairs]
    apart = (pos[:, left] - pos[:, right]).abs().mean((0, 1))  # (3,)
    apart[up] = -1.0
    return int(apart.argmax())


def mirror(motion: Motion, *, axis: int | str | None = None, same_skeleton: bool = False) -> Motion:
    """Mirror a motion left/right (see the module docstring for the exact rule).

    Parameters
    ----------
    motion:
        The motion (not modified).
    axis:
        Lateral axis of the file (``0/1/2`` or ``"x"/"y"/"z"``); default :func:`lateral_axis` of the
        skeleton (X when the skeleton has no left/right pairs), unless that is the axis the motion stands along
        (:meth:`Motion.up_axis`: a Y-up rig captured or turned Z-up or X-up, its rest's side to side now up),
        where a reflection across it would turn the body upside down: then the level axis along which the
        motion's left and right joints lie farthest apart (any upright mirror plane is a left/right mirror; they
        differ by a turn about the up axis).
    same_skeleton:
        Keep the skeleton: each joint is reflected in its own rest axes (:func:`joint_reflections` with the
        motion's ``frames`` choosing, among reflections its offsets leave equally good, those that bring the mirrored
        rotations closest to the joints' own over each chain), so that a model trained on the rig reads the
        result, where the mirror image of a rig whose joint axes are not mirror images of their partners' (the
        Bandai rig) is another rig. FK positions are the reflected ones with left and right swapped up to the
        rig's own left/right asymmetry (exact on a symmetric rig; 2.6 % of the height on a CMU rig whose legs
        differ by 0.25 units).

    Returns
    -------
    Motion
        The mirrored motion on :func:`mirror_skeleton` of the original skeleton (with ``same_skeleton``: on the
        skeleton itself).

    Raises
    ------
    SkeletonError
        If the left/right pairs do not form a symmetric tree (a joint's partner has a parent that is not
        its parent's partner); with ``same_skeleton``, if no joint has a partner (no sides known by name).
    """
    a = _level_lateral_axis(motion) if axis is None else axis_index(axis)
    perm = torch.as_tensor(mirror_permutation(motion.skeleton))
    sideless = motion.skeleton.num_joints > 1 and bool((perm == torch.arange(len(perm))).all())
    if sideless and same_skeleton:
        raise SkeletonError("no left/right joint pairs found by name, so a mirror image cannot be put on the "
                            "skeleton itself (rename the joints, e.g. LeftLeg/RightLeg; without same_skeleton, "
                            "--keep-skeleton, the motion is reflected onto the skeleton's mirror image)")  # fmt: skip
    if sideless:
        warnings.warn("mirror: no left/right joint pairs found by name, so no joint changes sides: the motion is "
                      "reflected, its left limbs now on the right (rename the joints, e.g. LeftLeg/RightLeg)",
                      stacklevel=2)  # fmt: skip
    s = _sign(a)
    if same_skeleton:
        return _mirror_on_skeleton(motion, s, perm)
    jt = None if motion.joint_translations is None else motion.joint_translations[:, perm] * s
    return motion.copy(
        skeleton=mirror_skeleton(motion.skeleton, axis=a),
        rotations=mirror_quat(motion.rotations[:, perm], axis=a),
        root_positions=motion.root_positions * s,
        joint_translations=jt,
        metadata=dict(motion.metadata),
    )


#: :func:`joint_reflections` with ``frames``: reflections whose offset cost is within this share of the offsets' size
#: of the best are equally good. A CMU spine bone 0.1 units off the centre line (of 2.05) had decided a half turn
#: about the bone over the world reflection.
NEAR_TIE = 0.05


def _chain_reflections(parents: list[int], near: Tensor, frames: Tensor, perm: Tensor, candidates: Tensor,
                       world: Tensor) -> Tensor:  # fmt: skip
    """:func:`joint_reflections`' choice with ``frames``: ``(count, 3)`` reflections ``N_j``, one of the ``near``
    ``(count, 4)`` of ``candidates`` ``(4, 3)`` each, that make the mirrored rotations ``L_j R_{P[j]} N_j`` (``L_j``
    the parent's ``N``, the world reflection for the root) closest to the joints' own, summed over the whole tree
    (mean Frobenius distance over the ``(F, count, 3, 3)`` ``frames``): a joint's choice is its children's ``L``, so
    it is made for its chain, not for itself alone (a choice made joint by joint had turned forearms and hands
    against most of their frames). The root keeps the world reflection where it is near (a static dummy root stays
    unturned); ties go to the parent's reflection, then the world's."""
    count = len(parents)
    children: list[list[int]] = [[] for _ in range(count)]
    for j in range(1, count):
        children[parents[j]].append(j)
    same_as = (candidates[:, None, :] == candidates[None, :, :]).all(-1)  # (L, c)
    is_world = (candidates == world).all(-1)  # (c,)
    prefer = 1e-9 * (~same_as).double() + 5e-10 * (~is_world).double()[None, :]  # ties: the parent's, then M
    best = torch.zeros(count, 4, dtype=torch.float64)  # the least misfit of j's subtree, given its L
    pick = torch.zeros(count, 4, dtype=torch.long)
    root_total = torch.zeros(4, dtype=torch.float64)
    for j in reversed(range(count)):  # children before parents
        below = sum((best[k] for k in children[j]), torch.zeros(4, dtype=torch.float64))  # (c,)
        lefts = world[None] if j == 0 else candidates  # (L, 3)
        mirrored = lefts[:, None, None, :, None] * frames[None, None, :, int(perm[j])] * candidates[None, :, None, None, :]
        fit = (mirrored - frames[None, None, :, j]).flatten(3).norm(dim=3).mean(2)  # (L, c)
        total = torch.where(near[j][None, :], fit + below[None, :], torch.inf)
        if j == 0:
            root_total = total[0] + 5e-10 * (~is_world).double()
        else:
            best[j], pick[j] = (total + prefer).min(1)
    right = torch.empty(count, 3, dtype=torch.float64)
    choice = torch.empty(count, dtype=torch.long)
    choice[0] = int((near[0] & is_world).nonzero()[0]) if bool((near[0] & is_world).any()) else int(root_total.argmin())
    right[0] = candidates[choice[0]]
    for j in range(1, count):  # parents first
        choice[j] = pick[j, choice[parents[j]]]
        right[j] = candidates[choice[j]]
    return right


def _mirror_on_skeleton(motion: Motion, world: Tensor, perm: Tensor) -> Motion:
    """:func:`mirror` with ``same_skeleton``: ``R'_j = L_j R_{P[j]} N_j`` with :func:`joint_reflections`' ``L``
    (the world reflection for the root, the parent's ``N`` otherwise) and ``N``; animated joint translations, in
    the parent's axes, ``t'_j = L_j t_{P[j]}``; root positions reflected."""
    from skelanim.core.rotation_convert import matrix_to_quat
    from skelanim.core.rotations import quat_to_matrix

    local = quat_to_matrix(motion.rotations.to(torch.float64))
    step = max(1, motion.num_frames // 1000)  # the choice on at most about a thousand frames
    _, left, right = joint_reflections(motion.skeleton, world, frames=local[::step] if motion.num_frames else None)
    turned = left[None, :, :, None] * local[:, perm] * right[None, :, None, :]
    jt = None if motion.joint_translations is None else motion.joint_translations[:, perm] * left.to(
        motion.joint_translations.dtype)
    return motion.copy(rotations=matrix_to_quat(turned).to(motion.rotations.dtype),
                       root_positions=motion.root_positions * world.to(motion.root_positions.dtype),
                       joint_translations=jt, metadata=dict(motion.metadata))  # fmt: skip


def joint_reflections(skeleton: Skeleton, world: Tensor, *, first: int = 0, reference: Tensor | None = None,
                      frames: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """The left/right mirror **on the same skeleton**, for rigs whose joints have their own rest axes.

    :func:`mirror` puts the mirrored motion on the mirror image of the skeleton (``R -> M R M``). Where
    the mirror image must stay on the original rig (learning, augmentation) and the rig's joint axes are
    not mirror images of their partners' (the Bandai rig: every bone along its joint's local ``x``, left
    limbs toward ``+x``, right ones toward ``-x``), each joint ``j`` needs a reflection ``N_j`` of its own
    axes: mirrored world rotations ``G'_j = M G_{P[j]} N_j``, local rotations
    ``R'_j = N_{parent(j)} R_{P[j]} N_j`` (root: ``M R_{P[j]} N_j``), with ``M`` the world reflection.
    FK of the result puts every joint at ``M x_{P[j]}`` when ``N_j`` maps the joint's child offsets onto
    its partner's.

    ``N_j`` is one of the four diagonal reflections (across the x, y or z plane of the joint's axes, or
    through its origin) that take its children's rest offsets (End Sites included) closest to those of
    its partner's children. Offsets along one axis leave two of them equally good, differing by a half
    turn about the bone: ``reference``, a typical pose (the data's mean), decides, taking the one whose
    mirrored rotation is closest to the joint's own; without it, the parent's reflection is kept where it
    is among the best (a rest rotation stays a rest rotation), else the first.

    Parameters
    ----------
    skeleton : Skeleton
        The rig.
    world : Tensor
        ``(3,)`` diagonal of the world reflection ``M`` (``-1`` on the lateral axis).
    first : int
        First joint mirrored (a body root under a static dummy root); joints ``first..J-1`` are returned,
        ``first`` as the root.
    reference : Tensor, optional
        ``(J - first, 3, 3)`` a typical pose: the root in the frame ``M`` reflects, the others local.
    frames : Tensor, optional
        ``(F, J - first, 3, 3)`` local rotations of a clip, for a choice that does not hang on one mean (``reference``
        is then not read): reflections whose cost is within :data:`NEAR_TIE` of the offsets' size of the best count
        as equally good; among them the root takes the world reflection ``M`` where it is one (a static dummy root
        stays unturned), and the others together the ones whose mirrored rotations are closest to the joints' own
        over the whole tree (mean over the frames; ties: the parent's, then ``M``; :func:`_chain_reflections`).

    Returns
    -------
    tuple of Tensor
        ``perm`` ``(J - first,)`` long (partners, :func:`mirror_permutation`), ``left`` and ``right``
        ``(J - first, 3)`` float64 diagonals of the reflections on either side of each rotation
        (``left``: ``M`` for the root, ``N_{parent}`` otherwise; ``right``: ``N_j``).
    """
    full = torch.as_tensor(mirror_permutation(skeleton), dtype=torch.long)
    perm = full[first:] - first
    offsets = torch.as_tensor(skeleton.offsets, dtype=torch.float64)
    world = torch.as_tensor(world, dtype=torch.float64)
    candidates = torch.tensor([[-1.0, 1, 1], [1, -1, 1], [1, 1, -1], [-1, -1, -1]], dtype=torch.float64)
    count = skeleton.num_joints - first
    left = torch.ones(count, 3, dtype=torch.float64)
    right = torch.ones(count, 3, dtype=torch.float64)
    near = torch.zeros(count, 4, dtype=torch.bool)
    for j in range(count):  # parents come first
        left[j] = world if j == 0 else right[int(skeleton.parents[j + first]) - first]
        pairs = [(offsets[c], offsets[int(full[c])]) for c in skeleton.children(j + first)]
        if j + first in skeleton.end_sites and int(full[j + first]) in skeleton.end_sites:
            pairs.append((torch.as_tensor(skeleton.end_sites[j + first], dtype=torch.float64),
                          torch.as_tensor(skeleton.end_sites[int(full[j + first])], dtype=torch.float64)))  # fmt: skip
        cost = torch.tensor([sum(float((d * a - b).norm()) for a, b in pairs) for d in candidates])
        scale = sum(float(a.norm() + b.norm()) for a, b in pairs)
        if frames is not None:  # decided for the whole tree below, once every joint's near set is known
            near[j] = cost <= cost.min() + NEAR_TIE * (1.0 + scale)
            continue
        best = cost <= cost.min() + 1e-3 * (1.0 + scale)
        if reference is not None:
            ref = reference.to(torch.float64)
            mirrored = left[j][:, None] * ref[int(perm[j])][None] * candidates[:, None, :]  # (4, 3, 3)
            fit = (mirrored - ref[j]).flatten(1).norm(dim=1)
            choice = int(torch.where(best, fit, torch.inf).argmin())
        else:
            keep = best & (candidates == left[j]).all(1) if j > 0 else torch.zeros(4, dtype=torch.bool)
            choice = int(keep.nonzero()[0]) if bool(keep.any()) else int(best.nonzero()[0])
        right[j] = candidates[choice]
    if frames is not None:
        parents = [-1] + [int(skeleton.parents[j + first]) - first for j in range(1, count)]
        right = _chain_reflections(parents, near, frames.to(torch.float64), perm, candidates, world)
        left = torch.stack([world] + [right[p] for p in parents[1:]])
    return perm, left, right
