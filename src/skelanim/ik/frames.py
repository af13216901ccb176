r"""The IK view of a skeleton: rest-pose bone frames and the exact bone-frame <-> local rotation maps.

Bone-aligned frames
-------------------
For each joint ``j`` fix, once, a **rest bone frame** ``B_j`` (a rotation, ``(3, 3)``): its first column
``a_j`` is the unit rest direction of the joint's *primary bone* (towards its child with the longest
offset; for a leaf, along its own incoming offset), its second column is a reference direction made
orthogonal to ``a_j`` by Gram-Schmidt (towards a second child for a branching joint, else the coordinate
axis least parallel to ``a_j``), the third their cross product. In the rest pose every world rotation is
the identity, so ``B_j`` is at once the bone frame in world and in the joint's own frame.

In a posed skeleton with world rotations ``R_j`` the same material frame has turned to

.. math:: G_j = R_j B_j .

``G_j`` is what the network predicts (as 6D, first two columns). Its first column is ``R_j a_j``: the
world direction of the primary bone, i.e. ``(p_child - p_j)/|p_child - p_j|``, which the input positions
show directly. Its second column fixes the **twist about that bone**, the part positions cannot show.
So the output separates what is observed (the bone axis) from what must be inferred (the rotation about
it); the twist axis is explicit.

From bone frames to local rotations (exact)
-------------------------------------------
Since ``B_j`` is orthogonal, ``R_j = G_j B_j^T``. With the convention ``R_j = R_{p(j)} L_j``
(``L_j`` the local rotation, ``p(j)`` the parent):

.. math:: L_j = R_{p(j)}^T R_j = B_{p(j)} G_{p(j)}^T G_j B_j^T ,

and for the root ``L_0 = R_0 = G_0 B_0^T``. These are products of rotation matrices, exact up to
rounding: predicted frames go to local rotations with no fitting, and GT local rotations go to GT frames
by ``G = R B`` with ``R`` from forward kinematics (:func:`skelanim.core.kinematics.forward_kinematics`).

Static dummy root
-----------------
Some rigs (Bandai-Namco) put a joint at the origin that never rotates, with the real root (the hips) as its
only child, which usually carries the global translation. When joint 0 has one child and never rotates in
the training data, the **IK root** is that child: joint 0 keeps the identity rotation and its rest position,
and the IK root's translation is what places it. Geodesic errors leave such a joint out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from skelanim.core.rotations import rot6d_to_matrix
from skelanim.core.skeleton import Skeleton

__all__ = ["IKRig", "bone_frames_to_local", "primary_children", "rest_bone_frames", "world_to_local"]

_EPS = 1e-9


def _unit(v: Tensor) -> Tensor:
    return v / v.norm() if float(v.norm()) > _EPS else v


def primary_children(skeleton: Skeleton) -> list[int]:
    """Per joint, the child whose bone defines its bone axis (the longest non-zero offset), or -1."""
    offsets = skeleton.offsets
    out = []
    for j in range(skeleton.num_joints):
        kids = sorted((c for c in skeleton.children(j) if float(offsets[c].norm()) > _EPS),
                      key=lambda c: (-float(offsets[c].norm()), c))  # fmt: skip
        out.append(kids[0] if kids else -1)
    return out


def rest_bone_frames(skeleton: Skeleton) -> Tensor:
    """Rest bone frames ``B_j`` (see the module docstring).

    Parameters
    ----------
    skeleton : Skeleton
        The rig; only its tree and rest offsets are used.

    Returns
    -------
    Tensor
        ``(J, 3, 3)`` float64 rotation matrices, columns = bone axis, reference, their cross product.
    """
    offsets = skeleton.offsets
    frames = []
    for j in range(skeleton.num_joints):
        kids = sorted((c for c in skeleton.children(j) if float(offsets[c].norm()) > _EPS),
                      key=lambda c: (-float(offsets[c].norm()), c))  # fmt: skip
        if kids:
            axis = _unit(offsets[kids[0]])
        elif j > 0 and float(offsets[j].norm()) > _EPS:
            axis = _unit(offsets[j])
        else:
            axis = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
        ref = None
        for c in kids[1:]:
            d = _unit(offsets[c])
            if float(torch.linalg.cross(axis, d).norm()) > 0.1:
                ref = d
                break
        if ref is None:
            ref = torch.eye(3, dtype=torch.float64)[int(torch.argmin(axis.abs()))]
        frames.append(rot6d_to_matrix(torch.cat([axis, ref])))
    return torch.stack(frames)


def world_to_local(world: Tensor, parent_index: Tensor, has_parent: Tensor) -> Tensor:
    """Local rotations ``L_j = R_{p(j)}^T R_j`` from world rotations.

    Parameters
    ----------
    world : Tensor
        ``(..., J, 3, 3)`` world rotation matrices.
    parent_index : Tensor
        ``(J,)`` long, parent of each joint (any valid index for the root).
    has_parent : Tensor
        ``(J,)`` bool, false for the root.

    Returns
    -------
    Tensor
        ``(..., J, 3, 3)`` local rotation matrices.
    """
    eye = torch.eye(3, dtype=world.dtype, device=world.device)
    parent = torch.where(has_parent[:, None, None], world.index_select(-3, parent_index), eye)
    return parent.transpose(-1, -2) @ world


def bone_frames_to_local(
    frames: Tensor, rest_frames: Tensor, parent_index: Tensor, has_parent: Tensor, fixed: Tensor
) -> Tensor:
    """Local rotations from posed bone frames: ``L_j = B_p G_p^T G_j B_j^T`` (exact).

    Parameters
    ----------
    frames : Tensor
        ``(..., J, 3, 3)`` posed bone frames ``G``.
    rest_frames : Tensor
        ``(J, 3, 3)`` rest bone frames ``B``.
    parent_index, has_parent : Tensor
        As in :func:`world_to_local`.
    fixed : Tensor
        ``(J,)`` bool: joints held at the identity world rotation (a static dummy root).

    Returns
    -------
    Tensor
        ``(..., J, 3, 3)`` local rotation matrices.
    """
    world = frames @ rest_frames.to(frames.dtype).transpose(-1, -2)
    world = torch.where(fixed[:, None, None], torch.eye(3, dtype=frames.dtype, device=frames.device), world)
    return world_to_local(world, parent_index, has_parent)


@dataclass
class IKRig:
    """A skeleton prepared for IK: tree arrays, rest frames, the IK root and which joints are observable.

    Attributes
    ----------
    skeleton : Skeleton
        The rig (its rest offsets are the bone lengths IK uses).
    ik_root : int
        The joint whose position is taken as given (0, or 1 under a static dummy root).
    """

    skeleton: Skeleton
    ik_root: int = 0

    def __post_init__(self) -> None:
        sk = self.skeleton
        self.parents: list[int] = [int(p) for p in sk.parents]
        self.num_joints = sk.num_joints
        self.parent_index = torch.tensor([max(p, 0) for p in self.parents], dtype=torch.long)
        self.has_parent = torch.tensor([p >= 0 for p in self.parents], dtype=torch.bool)
        self.fixed = torch.tensor([j < self.ik_root for j in range(self.num_joints)], dtype=torch.bool)
        if self.ik_root and (self.ik_root != 1 or sk.children(0) != [1]):
            raise ValueError("ik_root must be 0, or 1 when joint 0 is a dummy with joint 1 as its only child")
        self.rest_frames = rest_bone_frames(sk)
        self.offsets = sk.offsets.clone()
        self.height = sk.height()
        self.evaluated = [j for j in range(self.num_joints) if j >= self.ik_root]
        #: per joint, children whose offset is not zero (they constrain its rotation)
        self.bone_children = [[c for c in sk.children(j) if float(sk.offsets[c].norm()) > _EPS]
                              for j in range(self.num_joints)]  # fmt: skip
        desc = np.zeros((self.num_joints, self.num_joints), dtype=bool)  # desc[i, k]: i strictly below k
        for i in range(self.num_joints):
            p = self.parents[i]
            while p >= 0:
                desc[i, p] = True
                p = self.parents[p]
        self.descendant = torch.from_numpy(desc)

    def world_to_frames(self, world: Tensor) -> Tensor:
        """Bone frames ``G = R B`` from ``(..., J, 3, 3)`` world rotations."""
        return world @ self.rest_frames.to(world.dtype)

    def frames_to_local(self, frames: Tensor) -> Tensor:
        """Local rotations from ``(..., J, 3, 3)`` bone frames (:func:`bone_frames_to_local`)."""
        return bone_frames_to_local(frames, self.rest_frames, self.parent_index, self.has_parent, self.fixed)

    def translations(self, root_positions: Tensor) -> Tensor:
        """``(..., J, 3)`` local translations: rest offsets, with the IK root placed at ``root_positions``.

        Parameters
        ----------
        root_positions : Tensor
            ``(..., 3)`` world positions of the IK root (joint 0 stays at its rest offset under a dummy root,
            so the IK root's translation is ``root_positions - offsets[0]``).
        """
        offsets = self.offsets if root_positions.dtype == torch.float64 else self.offsets.to(root_positions.dtype)
        r = self.ik_root
        out = offsets.expand(*root_positions.shape[:-1], -1, -1).clone()  # one copy, then the IK root's row
        out[..., r, :] = root_positions - offsets[0] if r else root_positions
        return out
