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
   directions to its primary child and to a second child; where its children sit on it in the rest pose, as
   ``Hips``' on CMU rigs, to their first descendants that do not, see :func:`_root_axes`), so the network
   never sees the heading.
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
from typing import Any, Literal, overload

import torch
from torch import Tensor, nn

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import matrix_to_quat, quat_to_matrix, rot6d_to_matrix
from skelanim.ik.classical import _cross, rotation_between, rotation_onto, swing_polynomial
from skelanim.ik.frames import _EPS, IKRig, bone_frames_to_local, primary_children
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
    root_frame_descendants : bool
        Where the IK root's children with a bone give no root frame (CMU rigs: ``Hips``' children all sit at
        zero offset), build it from the first descendants away from the root (:func:`_root_axes`); ``False``:
        world axes there, so the answers do not turn with the input (models saved before this option, whose
        configs lack it: :meth:`from_dict` reads them so). Rigs whose root has such children are unaffected.
    """

    hidden: int = 64
    layers: int = 3
    heads: int = 4
    ffn_mult: int = 2
    hops: int = 2
    joint_embedding: bool = True
    chain: bool = False
    flat: bool = False
    root_frame_descendants: bool = True

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GATConfig:
        """Build from a dict, ignoring unknown keys; one without ``root_frame_descendants`` (a model saved
        before it, trained on world-axis features where its root's children gave no frame) reads ``False``."""
        names = {f.name for f in fields(cls)}
        return cls(**{"root_frame_descendants": False, **{k: v for k, v in data.items() if k in names}})

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; ``root_frame_descendants`` only where set, so a model or run of before it (which
        :meth:`from_dict` reads as unset) is written, resumed and compared as it was."""
        out = asdict(self)
        if not out["root_frame_descendants"]:
            del out["root_frame_descendants"]
        return out


class IKGAT(nn.Module):
    """Positions ``(B, J, 3)`` of one rig to bone frames and local rotations ``(B, J, 3, 3)``.

    Parameters
    ----------
    rig : IKRig
        The skeleton (its tree, rest offsets, IK root and rest bone frames become buffers).
    config : GATConfig
        Architecture.
    """

    # buffers (register_buffer); level{k}_slots, swing_linear{k} and swing_constant{k} are read with getattr
    inv_height: Tensor
    rest_features: Tensor
    parent_index: Tensor
    has_parent: Tensor
    fixed: Tensor
    rest_frames: Tensor
    mean_pose: Tensor
    attn_bias: Tensor
    primary: Tensor
    has_bone: Tensor
    base_frames: Tensor
    mean_local: Tensor
    identity_6d: Tensor
    centre: Tensor
    root_pick: Tensor  # only with root_axes
    pick_primary: Tensor
    differences: Tensor
    leaf_joints: Tensor
    leaf_parents: Tensor
    leaf_order: Tensor
    leaf_offsets: Tensor
    chain_joints: Tensor
    chain_all: Tensor
    tip_slots: Tensor
    world_order: Tensor
    local_order: Tensor
    start_left: Tensor
    joint_embed: nn.Parameter | None

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
        self.root_axes = _root_axes(rig, primary, descendants=config.root_frame_descendants)
        #: a model saved before the look-through rule, on a rig where it finds a frame: it sees the heading
        self.outdated_frame = (self.root_axes is None and not config.root_frame_descendants
                               and _descendant_axes(rig) is not None)  # fmt: skip
        self.register_buffer("base_frames", rig.rest_frames.float().clone())  # (J, 3, 3) mean pose in the root frame
        self.register_buffer("mean_local", torch.eye(3).expand(j, 3, 3).clone())  # (J, 3, 3) mean local rotations
        self.register_buffer("identity_6d", torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]), persistent=False)
        self._init_chain(rig)
        eye = torch.eye(j)
        centre = eye.clone()
        centre[:, rig.ik_root] -= 1.0
        self.register_buffer("centre", centre / h, persistent=False)  # rel = centre @ positions
        if self.root_axes is not None:  # the two root-frame directions, (2, J) @ positions
            self.register_buffer("root_pick", (eye[list(self.root_axes)] - eye[rig.ik_root]) / h, persistent=False)
        pick_parent = torch.where(rig.has_parent[:, None], eye[rig.parent_index], torch.zeros(j, j))
        pick_primary = eye[self.primary]
        self.register_buffer("pick_primary", pick_primary, persistent=False)
        self.register_buffer("differences", torch.cat([(eye - pick_parent) * rig.has_parent[:, None], pick_primary - eye]),
                             persistent=False)  # fmt: skip
        # leaves take their parent's frame; an IK root without a bone (CMU's hips) has none and keeps its own
        leaves = [i for i in range(j) if not bool(self.has_bone[i]) and i > rig.ik_root]
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
        self._derive_chain()

    def _init_chain(self, rig: IKRig) -> None:
        """Index buffers of the swing chain (see :meth:`_chain`): the joints of each tree level below the IK
        root that have children, the slots of their parents among the world rotations computed so far (IK root
        first, then level by level), the tips (joints without children: no swing, their local rotation is
        their start), and where each joint lands in the concatenated results."""
        levels, tips = _chain_levels(rig)
        self.num_levels = len(levels)
        r = rig.ik_root
        slot, previous = {r: 0}, [r]
        for k, joints in enumerate(levels):  # a level's parents are on the level before it
            slots = [previous.index(rig.parents[i]) for i in joints]
            plain = len(previous) == 1 or slots == list(range(len(previous)))  # broadcast or same order: no gather
            self.register_buffer(f"level{k}_slots", None if plain else torch.tensor(slots), persistent=False)
            for i in joints:
                slot[i] = len(slot)
            previous = joints
        chain = [i for level in levels for i in level]
        self.chain_sizes = [1] + [len(level) for level in levels] + [len(tips)]
        self.register_buffer("chain_joints", torch.tensor(chain, dtype=torch.long), persistent=False)
        self.register_buffer("chain_all", torch.tensor([r, *chain, *tips], dtype=torch.long), persistent=False)
        self.register_buffer("tip_slots", torch.tensor([slot[rig.parents[i]] for i in tips], dtype=torch.long),
                             persistent=False)  # fmt: skip
        for i in tips:
            slot[i] = len(slot)
        # worlds: [IK root, levels..., tips] (a dummy root reads the IK root's); locals: [dummies, the same]
        self.register_buffer("world_order", torch.tensor([slot.get(i, 0) for i in range(rig.num_joints)]),
                             persistent=False)  # fmt: skip
        self.register_buffer("local_order", torch.tensor([i if i < r else r + slot[i] for i in range(rig.num_joints)]),
                             persistent=False)  # fmt: skip
        for k in range(self.num_levels):  # the swing onto the observed axis, as polynomial coefficients
            self.register_buffer(f"swing_linear{k}", torch.zeros(len(levels[k]), 12, 10), persistent=False)
            self.register_buffer(f"swing_constant{k}", torch.zeros(len(levels[k]), 1, 10), persistent=False)
        self.register_buffer("start_left", torch.eye(3).expand(rig.num_joints, 3, 3).clone(), persistent=False)

    def _derive_chain(self) -> None:
        """Constants of the chain from the mean pose: ``start_left_j = L_mean,j B_j`` (the IK root's: its mean
        bone frame in the root frame ``M_r``), so a joint's start is ``X_j = start_left_j D_j B_j^T``, and the
        swing's source axis ``c_j = L_mean,j a_j`` (``a_j`` the rest bone axis), kept as the coefficients of
        its swing (:func:`~skelanim.ik.classical.swing_polynomial`)."""
        with torch.no_grad():
            left = self.mean_local @ self.rest_frames
            left[self.ik_root] = self.base_frames[self.ik_root]
            self.start_left.copy_(left)
            source = (self.mean_local @ self.rest_frames[:, :, :1])[..., 0]
            sizes = self.chain_sizes[1:-1]
            for k, part in enumerate(source.index_select(0, self.chain_joints).split(sizes)):
                linear, constant = swing_polynomial(part)
                getattr(self, f"swing_linear{k}").copy_(linear)
                getattr(self, f"swing_constant{k}").copy_(constant)

    def features(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Per-joint features in the observed root frame (see the module docstring).

        Parameters
        ----------
        positions : Tensor
            ``(B, J, 3)`` world positions.

        Returns
        -------
        tuple of Tensor
            ``(B, J, 18)`` features and ``(B, 3, 3)`` the root frame ``C`` (columns in world axes; the
            identity where :attr:`root_axes` is ``None``).
        """
        rel = self.centre @ positions  # (B, J, 3) relative to the IK root, in heights
        if self.root_axes is not None:
            picked = self.root_pick @ positions  # (B, 2, 3), reshaped by size: ONNX cannot infer -1 at batch 0
            canon = rot6d_to_matrix(picked.reshape(picked.shape[0], 6), guarded=False)  # see _corrections
            rel = rel @ canon  # row vectors: C^T x
        else:
            canon = torch.eye(3, dtype=rel.dtype, device=rel.device).expand(rel.shape[0], 3, 3)
        if self.ik_root:  # a dummy root's observed position carries nothing: put it where the IK root implies
            rel = torch.where(self.fixed[:, None], -self.rest_features[self.ik_root, :3], rel)
        j = self.num_joints
        diffs = self.differences @ rel  # (B, 2J, 3): bone vectors (0 at the root), then primary bone vectors
        bone, axis = diffs[:, :j], diffs[:, j:]
        axis = axis / axis.norm(dim=-1, keepdim=True).clamp_min(1e-6)  # observed bone axis (0 for a leaf)
        bend = _cross(axis, self.pick_primary @ axis)  # normal of the bend at the child
        feats = torch.cat([rel, bone, self.rest_features.expand(rel.shape[0], -1, -1), axis, bend], -1)
        return feats, canon

    def _corrections(self, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Features ``(B, J, 18)``, root frame ``C`` ``(B, 3, 3)`` and the network's corrections ``D``
        ``(B, J, 3, 3)`` (rotations in the bone frames; zero output = identity)."""
        feats, canon = self.features(positions)
        b, j = feats.shape[:2]
        bias = self.embed.bias if self.joint_embed is None else self.embed.bias + self.joint_embed
        # joints of all poses as rows of one (B J, D) matrix: each linear layer is one plain product (ONNX Gemm)
        rows = bias.expand(b, j, -1).reshape(b * j, bias.shape[-1])  # (B J, D): the input layer's and each joint's
        x = nn.functional.linear(feats.reshape(b * j, F_IN), self.embed.weight) + rows
        for block in self.blocks:
            x = block(x, self.attn_bias)
        d6 = nn.functional.linear(x, self.head.weight, self.head.bias + self.identity_6d)  # zero output = identity
        # unguarded Gram-Schmidt (half the ONNX nodes): the 6D here stay near the identity's; a degenerate root
        # frame (the IK root's reference joints on top of it) gives finite, meaningless rotations either way
        return feats, canon, rot6d_to_matrix(d6.reshape(b, j, 6), guarded=False)

    def frames(self, positions: Tensor) -> Tensor:
        """Predicted bone frames ``G``: ``(B, J, 3)`` positions to ``(B, J, 3, 3)`` rotations.

        In the observed root frame ``C``, each joint starts from the mean training pose's bone frame
        ``M_j`` turned by the smallest rotation ``S_j`` that carries its bone axis onto the observed one
        (a leaf keeps ``M_j``); the 6D output ``d`` is a correction in the bone's own frame (zero output =
        identity), so ``G_j = C S_j M_j rot6d(e + d_j)``: exact swing and the mean twist at the start,
        learned twist (and denoised swing) after training.
        """
        return self(positions)[0]

    @overload
    def _chain(self, axes: Tensor, start: Tensor, canon: Tensor, *, wanted: Literal[True]) -> tuple[Tensor, Tensor]: ...

    @overload
    def _chain(self, axes: Tensor, start: Tensor, canon: Tensor, *, wanted: Literal[False]) -> tuple[Tensor, None]: ...

    def _chain(self, axes: Tensor, start: Tensor, canon: Tensor, *, wanted: bool) -> tuple[Tensor, Tensor | None]:
        """Swing IK from given starts, one tree level at a time (all joints of a level batched).

        Each joint's local rotation is ``L_j = S'_j X_j``: its start ``X_j`` turned by the smallest rotation
        ``S'_j`` carrying the start's bone axis ``c_j = L_mean,j a_j`` onto the observed axis seen from the
        parent, ``W_p^T v_j`` (identity for a joint without a bone, whose axis is 0). This is the world-frame
        swing ``S_j`` (from ``W_p c_j`` onto ``v_j``) written in the parent's frame, ``S'_j = W_p^T S_j W_p``,
        so ``W_j = W_p L_j = S_j W_p X_j`` and ``L_j = W_p^T W_j`` exactly; the IK root's world rotation (in the
        root frame) is its start, its local rotation ``C X_r``; a dummy root keeps the identity. Joints without
        children (tips) need no swing and no world rotation, so the chain has one level less than the tree.

        Parameters
        ----------
        axes : Tensor
            ``(B, J, 3)`` observed unit bone axes ``v`` in the root frame (0 for joints without a bone).
        start : Tensor
            ``(B, J, 3, 3)`` or ``(J, 3, 3)`` starts ``X`` (the IK root's: its world rotation in the root frame).
        canon : Tensor
            ``(B, 3, 3)`` root frame ``C``.
        wanted : bool
            Also return every joint's world rotation ``W`` in the root frame (training; inference needs only
            the parents').

        Returns
        -------
        tuple
            ``(B, J, 3, 3)`` local rotations and ``(B, J, 3, 3)`` world rotations in the root frame (or ``None``).
        """
        b, r = axes.shape[0], self.ik_root
        start = start if start.ndim == 4 else start.expand(b, -1, -1, -1)
        sizes = self.chain_sizes
        axes = axes.index_select(1, self.chain_joints)[:, :, None, :].split(sizes[1:-1], 1)  # rows, per level
        starts = start.index_select(1, self.chain_all).split(sizes, 1)  # IK root, levels, tips
        world = starts[0]
        parts, worlds = [canon[:, None] @ world], [world]
        if r:
            parts.insert(0, torch.eye(3, dtype=axes[0].dtype, device=axes[0].device).expand(b, r, 3, 3))
        for k in range(self.num_levels):
            slots = getattr(self, f"level{k}_slots")  # parents are on the previous level
            parent = world if slots is None else world.index_select(1, slots)
            seen = axes[k] @ parent  # W_p^T v_j, as rows (B, n, 1, 3)
            swing = rotation_onto(seen, getattr(self, f"swing_linear{k}"), getattr(self, f"swing_constant{k}"))
            local = swing @ starts[k + 1]
            parts.append(local)
            if wanted or k + 1 < self.num_levels:
                world = parent @ local
                worlds.append(world)
        local = torch.cat([*parts, starts[-1]], 1).index_select(1, self.local_order)
        if not wanted:
            return local, None
        tips = torch.cat(worlds, 1).index_select(1, self.tip_slots) @ starts[-1]
        return local, torch.cat([*worlds, tips], 1).index_select(1, self.world_order)

    def local_rotations(self, positions: Tensor) -> Tensor:
        """Local rotation matrices only (the inference path: ``forward(positions)[1]`` without the bone
        frames, fewer ops for the ``chain`` start).

        Parameters
        ----------
        positions : Tensor
            ``(B, J, 3)`` float32 world positions in the rig's units.

        Returns
        -------
        Tensor
            ``(B, J, 3, 3)``.
        """
        if not self.config.chain or self.config.flat:
            return self(positions)[1]
        feats, canon, correction = self._corrections(positions)
        start = self.start_left @ correction @ self.rest_frames.transpose(-1, -2)
        return self._chain(feats[..., 12:15], start, canon, wanted=False)[0]

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
        self._derive_chain()

    def to_local(self, frames: Tensor) -> Tensor:
        """Bone frames to local rotation matrices (exact, :func:`~skelanim.ik.frames.bone_frames_to_local`)."""
        return bone_frames_to_local(frames, self.rest_frames, self.parent_index, self.has_parent, self.fixed)

    def forward(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Bone frames and local rotations.

        ``chain``: the local rotations come from the chain (:meth:`_chain`), the frames are ``C W B``; the
        other starts: frames first, local rotations from them (:meth:`to_local`).

        Parameters
        ----------
        positions : Tensor
            ``(B, J, 3)`` float32 world positions in the rig's units.

        Returns
        -------
        tuple of Tensor
            ``(B, J, 3, 3)`` bone frames ``G`` and ``(B, J, 3, 3)`` local rotation matrices.
        """
        feats, canon, correction = self._corrections(positions)
        axes = feats[..., 12:15]
        if self.config.flat:
            frames = canon[:, None] @ self.flat_frames(axes, correction)
            return frames, self.to_local(frames)
        rest_t = self.rest_frames.transpose(-1, -2)
        if self.config.chain:
            local, world = self._chain(axes, self.start_left @ correction @ rest_t, canon, wanted=True)
            return canon[:, None] @ (world @ self.rest_frames), local
        _, world = self._chain(axes, self.start_left @ rest_t, canon, wanted=True)  # swing chain without corrections
        frames = canon[:, None] @ ((world @ self.rest_frames) @ correction)
        return frames, self.to_local(frames)

    def num_parameters(self) -> int:
        """Trainable parameter count."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def _chain_levels(rig: IKRig) -> tuple[list[list[int]], list[int]]:
    """Joints below the IK root by tree level, those with children only, and the joints without children
    (tips; every joint under the IK root except it, under a static dummy root)."""
    depth = {rig.ik_root: 0}
    for j in range(rig.ik_root + 1, rig.num_joints):
        depth[j] = depth[rig.parents[j]] + 1
    has_children = {p for p in rig.parents if p >= 0}
    levels = [
        [j for j in sorted(depth) if depth[j] == d and j in has_children] for d in range(1, max(depth.values()) + 1)
    ]
    tips = [j for j in sorted(depth) if j != rig.ik_root and j not in has_children]
    return [lv for lv in levels if lv], tips


def _root_axes(rig: IKRig, primary: list[int], *, descendants: bool = True) -> tuple[int, int] | None:
    """Joints whose directions from the IK root span the observed root frame.

    The IK root's primary child and its first child with a bone (by index) not collinear with it (unit
    directions' cross product above 0.1). Where the root has no such pair and ``descendants`` is set, the
    same rule on the joints found by looking through those that coincide with the root in the rest pose
    (CMU rigs: ``Hips``' children ``LHipJoint``, ``RHipJoint``, ``LowerBack`` at zero offset) to their first
    descendants that do not, with directions from rest positions relative to the root: the farthest first
    (ties by index), then the first by index not collinear with it.

    Parameters
    ----------
    rig : IKRig
        The skeleton.
    primary : list of int
        ``(J,)`` primary child per joint (:func:`~skelanim.ik.frames.primary_children`).
    descendants : bool
        Look through coinciding joints where the direct children give no pair.

    Returns
    -------
    tuple of int or None
        The two joints, or ``None`` (the frame is then the world axes).
    """
    r = rig.ik_root
    first = primary[r]
    if first >= 0:
        a = rig.offsets[first] / rig.offsets[first].norm()
        for c in rig.bone_children[r]:
            b = rig.offsets[c] / rig.offsets[c].norm()
            if c != first and float(torch.linalg.cross(a, b).norm()) > 0.1:
                return first, c
    return _descendant_axes(rig) if descendants else None


def _descendant_axes(rig: IKRig) -> tuple[int, int] | None:
    """:func:`_root_axes` through the joints that coincide with the IK root in the rest pose (distance at most
    ``_EPS`` times the height): the first joints below it that do not, the farthest and the first by index
    not collinear with it (``None`` when there is no such pair)."""
    r, sk = rig.ik_root, rig.skeleton
    rest = sk.rest_positions()
    rel = rest - rest[r]  # (J, 3) rest positions relative to the IK root
    distance = rel.norm(dim=-1)
    found, stack = [], sk.children(r)
    while stack:
        j = stack.pop()
        if float(distance[j]) > _EPS * rig.height:
            found.append(j)
        else:
            stack.extend(sk.children(j))
    found.sort()
    if not found:
        return None
    first = min(found, key=lambda c: (-float(distance[c]), c))
    a = rel[first] / distance[first]
    for c in found:
        if c != first and float(torch.linalg.cross(a, rel[c] / distance[c]).norm()) > 0.1:
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
        return matrix_to_quat(self.net.local_rotations(positions))
