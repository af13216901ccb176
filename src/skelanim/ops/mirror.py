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

import numpy as np
import torch
from torch import Tensor

from skelanim.core._tensor import as_tensor, numpy_in_numpy_out
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.errors import SkeletonError
from skelanim.ops._common import axis_index

__all__ = ["lateral_axis", "mirror", "mirror_quat", "mirror_skeleton"]


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


def mirror(motion: Motion, *, axis: int | str | None = None) -> Motion:
    """Mirror a motion left/right (see the module docstring for the exact rule).

    Parameters
    ----------
    motion:
        The motion (not modified).
    axis:
        Lateral axis of the file (``0/1/2`` or ``"x"/"y"/"z"``); default :func:`lateral_axis` of the
        skeleton (X when the skeleton has no left/right pairs).

    Returns
    -------
    Motion
        The mirrored motion on :func:`mirror_skeleton` of the original skeleton.

    Raises
    ------
    SkeletonError
        If the left/right pairs do not form a symmetric tree (a joint's partner has a parent that is not
        its parent's partner).
    """
    a = lateral_axis(motion.skeleton) if axis is None else axis_index(axis)
    perm = torch.as_tensor(mirror_permutation(motion.skeleton))
    s = _sign(a)
    jt = None if motion.joint_translations is None else motion.joint_translations[:, perm] * s
    return motion.copy(
        skeleton=mirror_skeleton(motion.skeleton, axis=a),
        rotations=mirror_quat(motion.rotations[:, perm], axis=a),
        root_positions=motion.root_positions * s,
        joint_translations=jt,
        metadata=dict(motion.metadata),
    )
