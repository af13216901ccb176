"""Left/right mirror images of motion frames on a rig whose joints have their own rest axes.

:func:`skelanim.ops.mirror.mirror` reflects a motion onto the mirror image of its skeleton (``R -> M R M``
and mirrored offsets), exact for any skeleton. Learning needs the mirror image *on the same rig*: a rig
whose bones lie along their joints' local axes (the Bandai rig: every bone along local ``x``, left limbs
toward ``+x``, right ones toward ``-x``) then needs a reflection ``N_j`` of each joint's local axes,
``R'_j = N_{parent} R_{P[j]} N_j`` (:func:`mirror_frames`). Which reflection fits is read from the rest
offsets and, where they leave a choice (a half turn about the bone), from the data's mean pose
(:func:`rig_mirror`). The predictors mirror frame vectors (:func:`vector_mirror`), the recogniser its joint
features (:func:`skelanim.learn.joints.mirror_features`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from skelanim.data.rig import Rig
from skelanim.learn.predictors import frames_to_vectors

__all__ = ["mirror_frames", "rig_mirror", "vector_mirror"]


def rig_mirror(rig: Rig, reference: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor, int]:
    """What :func:`mirror_frames` needs for a rig: :func:`skelanim.ops.mirror.joint_reflections` of its model
    joints, the world reflection across the reference frame's lateral axis.

    Parameters
    ----------
    rig : Rig
        The learning skeleton.
    reference : Tensor, optional
        ``(M, 3, 3)`` a typical pose (the mean of the data): body root relative to the heading, the other
        joints local. It settles the half-turn choices the rest offsets leave open.

    Returns
    -------
    tuple
        ``perm`` ``(M,)`` long, ``left`` and ``right`` ``(M, 3)`` reflection diagonals, and the reference
        frame's lateral axis.
    """
    from skelanim.data.features import horizontal_axes
    from skelanim.ops.mirror import joint_reflections

    lateral = horizontal_axes(rig.up)[1]
    world = torch.ones(3, dtype=torch.float64)
    world[lateral] = -1.0
    perm, left, right = joint_reflections(rig.skeleton, world, first=rig.root, reference=reference)
    return perm, left.float(), right.float(), lateral


def vector_mirror(rig: Rig, reference: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The left/right mirror image of frame vectors (:func:`~skelanim.learn.predictors.frames_to_vectors`)
    as a signed permutation: ``mirror(x) = x[..., index] * sign``.

    :func:`mirror_frames` only permutes joints and flips signs of matrix entries
    and of the pelvis, so on vectors it is a signed permutation; it is read off the mirror image of one
    random frame, whose entries are all distinct. ``reference`` as for :func:`rig_mirror`.

    Returns
    -------
    tuple of Tensor
        ``index`` ``(D,)`` long and ``sign`` ``(D,)``, ``D = 6 M + 3``.
    """
    from skelanim.core.rotations import rotvec_to_matrix

    g = torch.Generator().manual_seed(0)
    rot = rotvec_to_matrix(torch.randn(1, rig.num_joints, 3, generator=g, dtype=torch.float64))
    pelvis = torch.randn(1, 3, generator=g, dtype=torch.float64)
    x = frames_to_vectors(rot, pelvis)[0]
    y = frames_to_vectors(*mirror_frames(rot, pelvis, *rig_mirror(rig, reference)))[0]
    match = (y.abs()[:, None] - x.abs()[None, :]).abs()  # (D, D)
    index = match.argmin(1)
    if float(match.min(1).values.max()) > 1e-9 or len(set(index.tolist())) != len(index):
        raise ValueError("the mirror of frame vectors is not a signed permutation")
    return index, torch.sign(y) * torch.sign(x[index])


def mirror_frames(rot: Tensor, pelvis: Tensor, perm: Tensor, left: Tensor, right: Tensor,
                  lateral: int) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Left/right mirror image of reference-frame frames on a rig whose joints have their own rest axes.

    With ``M`` the reflection across the world plane normal to ``lateral``, ``P`` the left/right partner of
    each joint and ``N_j`` a diagonal reflection of joint ``j``'s local axes (across one of their planes or
    through the origin; the one :func:`rig_mirror` finds), the mirrored world
    rotations are ``G'_j = M G_{P[j]} N_j``: body root ``M G_{P[0]} N_0``, local rotations
    ``R'_j = N_{parent(j)} R_{P[j]} N_j``, pelvis ``M p``. FK of the result puts joint ``j`` at
    ``M x_{P[j]}`` (exactly for a symmetric rig, up to its asymmetry otherwise); mirroring twice gives back
    the input exactly. All reflections are diagonal, so ``D_a R D_b`` is ``R * a[:, None] * b[None, :]``.

    Parameters
    ----------
    rot : Tensor
        ``(..., T, M, 3, 3)``: body root relative to the reference heading, other joints local.
    pelvis : Tensor
        ``(..., T, 3)``.
    perm : Tensor
        ``(M,)`` long, the partner of every model joint (an involution).
    left, right : Tensor
        ``(M, 3)`` diagonals of the reflections on the left (``M`` for the root, ``N_{parent(j)}`` otherwise)
        and on the right (``N_j``) of each joint's rotation.
    lateral : int
        Lateral axis of the reference frame.

    Returns
    -------
    tuple of Tensor
        Mirrored ``rot`` ``(..., T, M, 3, 3)`` and ``pelvis`` ``(..., T, 3)``.
    """
    left, right = left.to(rot.dtype), right.to(rot.dtype)
    out = rot[..., perm, :, :] * left[:, :, None] * right[:, None, :]
    flip = torch.ones(3, dtype=pelvis.dtype, device=pelvis.device)
    flip[lateral] = -1.0
    return out, pelvis * flip
