"""IK-GAT: a graph-attention network from joint positions to joint rotations in one forward pass.

After Khan et al., "Amortized Inverse Kinematics via Graph Attention for Real-Time Human Avatar
Animation" (arXiv 2604.16629). One pass, no iteration:

1. **Per-joint features** (``F_IN = 18``), lengths divided by the skeleton height ``h``: the joint's
   position relative to the IK root, its vector from its parent (both observed), its rest offset and its
   rest position relative to the IK root (both constant: they tell the joints apart, so one architecture
   fits any skeleton), the observed unit direction of its primary bone and the normal of the bend between
   that bone and the next (zero for leaves). A dummy root's observed position is replaced by the one its
   child implies. An optional learned per-joint embedding is added after the input projection.
   Every observed vector is expressed in the **observed root frame** ``C`` (Gram-Schmidt of the IK root's
   directions to its primary child and to a second child), so the network never sees the heading.
2. **Graph attention** over the tree (:class:`skelanim.nn.GATBlock`: multi-head, residual, LayerNorm),
   ``layers`` blocks; each joint attends to its ``hops``-neighbourhood.
3. **Output**: 6D per joint = the posed **bone frame** ``G_j`` (Gram-Schmidt,
   :func:`skelanim.core.rotations.rot6d_to_matrix`), predicted as a correction in the bone's own frame to a
   starting frame (the mean training pose's bone frame swung onto the observed bone axis, see
   :meth:`IKGAT.frames`), turned into local rotations exactly by
   :func:`skelanim.ik.frames.bone_frames_to_local` (derivation there). Three ways to build the start
   (:class:`GATConfig`): by default (``chain=False, flat=False``, the model shipped before) the swing chain
   runs on the *uncorrected* parents, so a joint's local rotation mixes its own correction with its
   parent's; ``chain`` (the shipped model) runs the swing chain after the network on the *corrected* parents, so ``L_j = (B_p G_p^T S_j G_p B_p^T) L_mean,j
   B_j D_j B_j^T`` depends on the joint's own correction ``D_j`` and the observed swing only (a leaf's is
   ``L_mean,j B_j D_j B_j^T``); ``flat`` swings every joint from the mean frame at once (no chain:
   about a quarter fewer graph nodes, the fastest single-pose call) and puts leaves on their corrected
   parents.

Sizes (``hidden`` x ``layers``) trade accuracy for speed; the paper's size (374K parameters) is about ``hidden=128,
layers=4`` (404K here); see ``src/skelanim/ik/README.md`` for measured trade-offs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import Tensor, nn

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import matrix_to_quat, quat_to_matrix, rot6d_to_matrix
from skelanim.ik.classical import rotation_between
from skelanim.ik.frames import IKRig, bone_frames_to_local, primary_children
from skelanim.nn.layers import GATBlock, graph_mask, mask_bias

__all__ = ["F_IN", "IKGAT", "GATConfig", "IKGATExport"]

F_IN = 18


@dataclass
class GATConfig:
    """Architecture of :class:`IKGAT`.

    Attributes
    ----------
    hidden : int
        Feature size per joint.
    layers : int
        Graph-attention blocks.
    heads : int
        Attention heads per block.
    ffn_mult : int
        Feed-forward width as a multiple of ``hidden``.
    hops : int
        Attention neighbourhood in tree edges.
    joint_embedding : bool
        Add a learned per-joint vector to the input projection.
    chain : bool
        Compose each joint's start on its parent's **corrected** frame (the swing chain runs after the
        network), so a joint's local rotation depends on its own correction only; ``False``: the start
        chain uses the uncorrected parent frames (models trained before this option).
    flat : bool
        No chain: every joint with a bone starts from the mean pose's bone frame swung onto the observed
        axis (all joints at once), leaves from their parent's corrected frame and the mean local rotation.
    """

    hidden: int = 64
    layers: int = 3
    heads: int = 4
    ffn_mult: int = 2
    hops: int = 2
    joint_embedding: bool = True
    chain: bool = False
    flat: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GATConfig:
        """Build from a dict, ignoring unknown keys."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


class IKGAT(nn.Module):
    """Positions ``(B, J, 3)`` of one rig to bone frames and local rotations ``(B, J, 3, 3)``.

    Parameters
    ----------
    rig : IKRig
        The skeleton (its tree, rest offsets, IK root and rest bone frames become buffers).
    config : GATConfig
        Architecture.
    """

    def __init__(self, rig: IKRig, config: GATConfig) -> None:
        super().__init__()
        self.config = config
        self.ik_root = rig.ik_root
        self.num_joints = j = rig.num_joints
        h = float(rig.height)
        rest = rig.skeleton.rest_positions()
        rest = rest - rest[rig.ik_root]
        self.register_buffer("inv_height", torch.tensor(1.0 / h, dtype=torch.float32))
        self.register_buffer("rest_features", torch.cat([rig.offsets / h, rest / h], -1).float())
        self.register_buffer("parent_index", rig.parent_index.clone())
        self.register_buffer("has_parent", rig.has_parent.clone())
        self.register_buffer("fixed", rig.fixed.clone())
        self.register_buffer("rest_frames", rig.rest_frames.float())
        identity = torch.zeros(j, 4)
        identity[:, 0] = 1.0
        self.register_buffer("mean_pose", identity)  # (J, 4) mean training pose, set by training
        self.register_buffer("attn_bias", mask_bias(graph_mask(rig.parents, hops=config.hops)))
        primary = primary_children(rig.skeleton)
        self.register_buffer("primary", torch.tensor([c if c >= 0 else i for i, c in enumerate(primary)]))
        self.register_buffer("has_bone", torch.tensor([c >= 0 for c in primary]))
        self.root_axes = _root_axes(rig, primary)
        self.register_buffer("base_frames", rig.rest_frames.float().clone())  # (J, 3, 3) mean pose in the root frame
        self.register_buffer("mean_local", torch.eye(3).expand(j, 3, 3).clone())  # (J, 3, 3) mean local rotations
        self.register_buffer("identity_6d", torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]), persistent=False)
        levels = _levels(rig)[1]
        self.num_levels = len(levels)
        slots = {rig.ik_root: 0}
        for k, (joints, parent_slots) in enumerate(levels):  # buffers, so .to(device) moves them
            self.register_buffer(f"level{k}_joints", joints, persistent=False)
            self.register_buffer(f"level{k}_slots", parent_slots, persistent=False)
            for jj in joints.tolist():
                slots[jj] = len(slots)
        self.register_buffer("order", torch.tensor([slots.get(i, 0) for i in range(j)]), persistent=False)
        eye = torch.eye(j)
        centre = eye.clone()
        centre[:, rig.ik_root] -= 1.0
        self.register_buffer("centre", centre / h, persistent=False)  # rel = centre @ positions
        pick_parent = torch.where(rig.has_parent[:, None], eye[rig.parent_index], torch.zeros(j, j))
        pick_primary = eye[self.primary]
        self.register_buffer("pick_primary", pick_primary, persistent=False)
        self.register_buffer("differences", torch.cat([(eye - pick_parent) * rig.has_parent[:, None], pick_primary - eye]),
                             persistent=False)  # fmt: skip
        leaves = [i for i in range(j) if not bool(self.has_bone[i]) and i >= rig.ik_root]
        self.register_buffer("leaf_joints", torch.tensor(leaves, dtype=torch.long), persistent=False)
        self.register_buffer("leaf_parents", torch.tensor([rig.parents[i] for i in leaves], dtype=torch.long),
                             persistent=False)  # fmt: skip
        leaf_order = list(range(j))
        for k, i in enumerate(leaves):
            leaf_order[i] = j + k
        self.register_buffer("leaf_order", torch.tensor(leaf_order), persistent=False)
        self.register_buffer("leaf_offsets", torch.eye(3).expand(len(leaves), 3, 3).clone(), persistent=False)
        self._rig = rig
        self.embed = nn.Linear(F_IN, config.hidden)
        self.joint_embed = nn.Parameter(torch.zeros(j, config.hidden)) if config.joint_embedding else None
        self.blocks = nn.ModuleList(
            GATBlock(config.hidden, config.heads, config.ffn_mult) for _ in range(config.layers)
        )
        self.head = nn.Linear(config.hidden, 6)
        with torch.no_grad():  # zero correction at first: the network starts as swing IK from the mean pose
            self.head.weight.mul_(0.1)
            self.head.bias.zero_()

    def features(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Per-joint features in the observed root frame (see the module docstring).

        Parameters
        ----------
        positions : Tensor
            ``(B, J, 3)`` world positions.

        Returns
        -------
        tuple of Tensor
            ``(B, J, 18)`` features and ``(B, 3, 3)`` the root frame ``C`` (columns in world axes).
        """
        rel = self.centre @ positions  # (B, J, 3) relative to the IK root, in heights
        if self.root_axes is not None:
            first, second = self.root_axes
            canon = rot6d_to_matrix(torch.cat([rel[:, first], rel[:, second]], -1))
            rel = rel @ canon  # row vectors: C^T x
        else:
            canon = torch.eye(3, dtype=rel.dtype).expand(rel.shape[0], 3, 3)
        if self.ik_root:  # a dummy root's observed position carries nothing: put it where the IK root implies
            rel = torch.where(self.fixed[:, None], -self.rest_features[self.ik_root, :3], rel)
        j = self.num_joints
        diffs = self.differences @ rel  # (B, 2J, 3): bone vectors (0 at the root), then primary bone vectors
        bone, axis = diffs[:, :j], diffs[:, j:]
        axis = axis / axis.norm(dim=-1, keepdim=True).clamp_min(1e-6)  # observed bone axis (0 for a leaf)
        bend = torch.linalg.cross(axis, self.pick_primary @ axis)  # normal of the bend at the child
        feats = torch.cat([rel, bone, self.rest_features.expand(rel.shape[0], -1, -1), axis, bend], -1)
        return feats, canon

    def frames(self, positions: Tensor) -> Tensor:
        """Predicted bone frames ``G``: ``(B, J, 3)`` positions to ``(B, J, 3, 3)`` rotations.

        In the observed root frame ``C``, each joint starts from the mean training pose's bone frame
        ``M_j`` turned by the smallest rotation ``S_j`` that carries its bone axis onto the observed one
        (a leaf keeps ``M_j``); the 6D output ``d`` is a correction in the bone's own frame (zero output =
        identity), so ``G_j = C S_j M_j rot6d(e + d_j)``: exact swing and the mean twist at the start,
        learned twist (and denoised swing) after training.
        """
        feats, canon = self.features(positions)
        x = self.embed(feats)
        if self.joint_embed is not None:
            x = x + self.joint_embed
        for block in self.blocks:
            x = block(x, self.attn_bias)
        correction = rot6d_to_matrix(self.head(x) + self.identity_6d)
        if self.config.flat:
            return canon[:, None] @ self.flat_frames(feats[..., 12:15], correction)
        if self.config.chain:
            return canon[:, None] @ self.start_frames(feats[..., 12:15], correction)
        return canon[:, None] @ (self.start_frames(feats[..., 12:15]) @ correction)

    def start_frames(self, axes: Tensor, correction: Tensor | None = None) -> Tensor:
        """Swing IK from the mean pose, in the root frame, one tree level at a time (all joints of a level
        batched): ``W_j = S_j W_p L_mean,j`` with ``S_j`` the smallest rotation taking the bone axis of
        ``W_p L_mean,j`` onto the observed one (identity for a leaf); the IK root keeps the mean pose's frame.

        Parameters
        ----------
        axes : Tensor
            ``(B, J, 3)`` observed unit bone axes in the root frame.
        correction : Tensor, optional
            ``(B, J, 3, 3)`` per-joint corrections in the bone frames (``chain``): each joint's frame is
            ``S_j W_p L_mean,j B_j D_j`` with ``W_p`` the parent's corrected world rotation, so the chain
            runs on corrected frames.

        Returns
        -------
        Tensor
            ``(B, J, 3, 3)`` starting bone frames ``W_j B_j`` in the root frame.
        """
        rest_axis = self.rest_frames[:, :, 0]
        root = self.ik_root
        world = (self.base_frames[root] @ self.rest_frames[root].T).expand(axes.shape[0], 1, 3, 3)
        turn = None if correction is None else self.rest_frames @ correction @ self.rest_frames.transpose(-1, -2)
        if turn is not None:
            world = world @ turn[:, root : root + 1]
        for k in range(self.num_levels):
            joints, slots = getattr(self, f"level{k}_joints"), getattr(self, f"level{k}_slots")
            start = world.index_select(1, slots) @ self.mean_local[joints]
            current = (start @ rest_axis[joints][..., None])[..., 0]
            swing = rotation_between(current, axes[:, joints], half_turn=False)  # a leaf's axis is 0: identity
            frame = swing @ start
            if turn is not None:
                frame = frame @ turn.index_select(1, joints)
            world = torch.cat([world, frame], 1)
        return world.index_select(1, self.order) @ self.rest_frames

    def flat_frames(self, axes: Tensor, correction: Tensor) -> Tensor:
        """Bone frames without a chain (``flat``): ``G_j = S_j M_j D_j`` for joints with a bone (``S_j`` the
        smallest rotation from the mean frame's axis onto the observed one), ``G_l = G_p B_p^T L_mean,l B_l
        D_l`` for leaves; all in the root frame.

        Parameters
        ----------
        axes : Tensor
            ``(B, J, 3)`` observed unit bone axes in the root frame.
        correction : Tensor
            ``(B, J, 3, 3)`` corrections ``D`` in the bone frames.

        Returns
        -------
        Tensor
            ``(B, J, 3, 3)`` bone frames.
        """
        swing = rotation_between(self.base_frames[:, :, 0], axes)  # identity for a leaf (axis 0)
        frames = swing @ (self.base_frames @ correction)
        leaves = self.leaf_joints
        if leaves.numel() == 0:
            return frames
        leaf = frames.index_select(1, self.leaf_parents) @ (self.leaf_offsets @ correction.index_select(1, leaves))
        return torch.cat([frames, leaf], 1).index_select(1, self.leaf_order)

    def set_mean_pose(self, quats: Tensor) -> None:
        """Store the mean training pose and, as the output's starting point, its bone frames in its root frame.

        Parameters
        ----------
        quats : Tensor
            ``(J, 4)`` mean local rotations.
        """
        rig = self._rig
        q = quats.to(torch.float64).clone()
        q[rig.fixed] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
        world, pos = forward_kinematics(q, rig.translations(torch.zeros(3, dtype=torch.float64)), rig.parents)
        canon = torch.eye(3, dtype=torch.float64)
        if self.root_axes is not None:
            first, second = self.root_axes
            canon = rot6d_to_matrix(torch.cat([pos[first] - pos[rig.ik_root], pos[second] - pos[rig.ik_root]]))
        with torch.no_grad():
            self.mean_pose.copy_(q)
            self.mean_local.copy_(quat_to_matrix(q))
            self.base_frames.copy_(canon.T @ rig.world_to_frames(world))
            leaves, parents = self.leaf_joints, self.leaf_parents  # B_p^T L_mean,l B_l
            rest = rig.rest_frames
            self.leaf_offsets.copy_(rest[parents].transpose(-1, -2) @ quat_to_matrix(q)[leaves] @ rest[leaves])

    def to_local(self, frames: Tensor) -> Tensor:
        """Bone frames to local rotation matrices (exact, :func:`~skelanim.ik.frames.bone_frames_to_local`)."""
        return bone_frames_to_local(frames, self.rest_frames, self.parent_index, self.has_parent, self.fixed)

    def forward(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Bone frames and local rotations.

        Parameters
        ----------
        positions : Tensor
            ``(B, J, 3)`` float32 world positions in the rig's units.

        Returns
        -------
        tuple of Tensor
            ``(B, J, 3, 3)`` bone frames ``G`` and ``(B, J, 3, 3)`` local rotation matrices.
        """
        frames = self.frames(positions)
        return frames, self.to_local(frames)

    def num_parameters(self) -> int:
        """Trainable parameter count."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def _levels(rig: IKRig) -> tuple[int, list[tuple[Tensor, Tensor]]]:
    """The IK root and, per tree level below it, ``(joints, slots of their parents)`` where slots index the
    frames computed so far (root first, then level by level)."""
    depth = {rig.ik_root: 0}
    for j in range(rig.ik_root + 1, rig.num_joints):
        depth[j] = depth[rig.parents[j]] + 1
    slot = {rig.ik_root: 0}
    levels = []
    for d in range(1, max(depth.values()) + 1):
        joints = [j for j in sorted(depth) if depth[j] == d]
        levels.append((torch.tensor(joints), torch.tensor([slot[rig.parents[j]] for j in joints])))
        for j in joints:
            slot[j] = len(slot)
    return rig.ik_root, levels


def _root_axes(rig: IKRig, primary: list[int]) -> tuple[int, int] | None:
    """Joints whose directions from the IK root span the observed root frame: its primary child and a
    second child not collinear with it (``None`` when the root has no such pair)."""
    r = rig.ik_root
    first = primary[r]
    if first < 0:
        return None
    a = rig.offsets[first] / rig.offsets[first].norm()
    for c in rig.bone_children[r]:
        b = rig.offsets[c] / rig.offsets[c].norm()
        if c != first and float(torch.linalg.cross(a, b).norm()) > 0.1:
            return first, c
    return None


class IKGATExport(nn.Module):
    """Inference graph for ONNX: positions ``(B, J, 3)`` to local unit quaternions ``(B, J, 4)`` (w, x, y, z).

    Parameters
    ----------
    net : IKGAT
        A trained network.
    """

    def __init__(self, net: IKGAT) -> None:
        super().__init__()
        self.net = net

    def forward(self, positions: Tensor) -> Tensor:
        """``(B, J, 3)`` positions to ``(B, J, 4)`` local quaternions."""
        return matrix_to_quat(self.net(positions)[1])
