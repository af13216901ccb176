"""The joint tree: names, parents, rest offsets, End Sites and each joint's BVH channel layout.

Conventions (see the README's *Conventions* section): joints are stored parents-first, so
``parents[j] < j`` for every non-root joint and the root is joint 0 with parent ``-1``. Offsets are the
rest-pose translation of a joint in its parent's frame, in the file's units. A joint's world position is
``p_world[j] = p_world[parent] + R_world[parent] @ offset[j]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from skelanim.core._tensor import as_tensor
from skelanim.core.joint_names import mirrored_name, side_marker
from skelanim.errors import SkeletonError

ROTATION_CHANNELS = ("Xrotation", "Yrotation", "Zrotation")
POSITION_CHANNELS = ("Xposition", "Yposition", "Zposition")
DEFAULT_ROOT_CHANNELS = ("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation")
DEFAULT_JOINT_CHANNELS = ("Zrotation", "Xrotation", "Yrotation")

_HEAD_NAME = re.compile(r"head|neck", re.IGNORECASE)
_FOOT_NAME = re.compile(r"foot|ankle|toe", re.IGNORECASE)


def head_and_feet(names: Sequence[str]) -> tuple[list[int], list[int]]:
    """Indices of the names that look like a head or neck, and of those that look like a foot, ankle or
    toe: the points whose difference gives a body's up direction when a file's up axis is guessed."""
    heads = [j for j, n in enumerate(names) if _HEAD_NAME.search(n)]
    feet = [j for j, n in enumerate(names) if _FOOT_NAME.search(n)]
    return heads, feet


def up_sign(names: Sequence[str], positions: Any, axis: int) -> float:
    """``+1.0`` if points named like a head or neck lie above those named like feet along ``+axis`` on average
    over the frames of ``positions`` ``(F, P, 3)`` (tensor or array, point ``p`` named ``names[p]``), ``-1.0``
    if below (an upside-down source), ``+1.0`` when the names tell nothing."""
    heads, feet = head_and_feet(names)
    if not heads or not feet:
        return 1.0
    pos = np.asarray(positions.detach().cpu() if hasattr(positions, "detach") else positions, dtype=np.float64)
    gap = float((pos[:, heads, axis].mean(axis=1) - pos[:, feet, axis].mean(axis=1)).mean())
    return -1.0 if gap < 0 else 1.0


def _end_site_joint(key: Any, n_joints: int) -> int:
    """An ``end_sites`` key as a joint index ``0 .. n_joints - 1``, else a :class:`SkeletonError`."""
    try:
        joint = int(key)  # an int, a NumPy integer, a numeric string (a JSON key)
        whole = isinstance(key, str) or joint == key  # not 1.5
    except (TypeError, ValueError):
        joint, whole = -1, False
    if not whole or not 0 <= joint < n_joints:
        raise SkeletonError(f"end_sites key {key!r} is not a joint index 0 .. {n_joints - 1}")
    return joint


def _end_site_offset(key: Any, value: Any) -> torch.Tensor:
    """An ``end_sites`` value as a ``(3,)`` float64 tensor, else a :class:`SkeletonError`."""
    offset = as_tensor(value, dtype=torch.float64)
    if offset.numel() != 3:
        raise SkeletonError(f"end_sites[{key!r}] must be 3 values (an offset), got shape {tuple(offset.shape)}")
    return offset.reshape(3)


@dataclass
class Skeleton:
    """A joint hierarchy with its rest pose.

    Attributes
    ----------
    names:
        Joint names, length ``J``, parents before children.
    parents:
        ``(J,)`` int64 array of parent indices, ``-1`` for the root.
    offsets:
        ``(J, 3)`` float64 tensor, rest translation of each joint in its parent's frame. Given as a ``(J, 3)``
        tensor, array or nested list, or flat, ``(3J,)``: ``x, y, z`` of joint 0, then of joint 1, ... Any other
        shape is a :class:`SkeletonError`, a transposed ``(3, J)`` one too (it used to be reshaped to ``(J, 3)``,
        its numbers scrambled).
    channels:
        Per joint, the BVH channel names in file order (e.g. ``("Zrotation", "Xrotation", "Yrotation")``),
        kept so a file can be written back as it was read. Empty tuple for a joint with no channels.
    end_sites:
        ``{joint index: (3,) offset}`` for joints that carry a BVH ``End Site``: indices ``0 .. J-1``, three
        values each.
    """

    names: list[str]
    parents: np.ndarray
    offsets: torch.Tensor
    channels: list[tuple[str, ...]] = field(default_factory=list)
    end_sites: dict[int, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.names = list(self.names)
        self.parents = np.asarray(self.parents, dtype=np.int64).reshape(-1)
        n = len(self.names)
        offsets = as_tensor(self.offsets, dtype=torch.float64)
        if offsets.ndim == 1 and offsets.shape[0] == 3 * n:  # flat: x, y, z per joint
            offsets = offsets.reshape(n, 3)
        if offsets.ndim != 2 or offsets.shape[1] != 3:  # not reshaped: a (3, J) array is a mistake, not offsets
            raise SkeletonError(f"offsets must be (J, 3), got {tuple(offsets.shape)} ({n} joints: ({n}, 3), or flat "
                                f"({3 * n},))")  # fmt: skip
        self.offsets = offsets
        if not self.channels:
            self.channels = [DEFAULT_ROOT_CHANNELS if j == 0 else DEFAULT_JOINT_CHANNELS for j in range(n)]
        self.channels = [tuple(c) for c in self.channels]
        self.end_sites = {_end_site_joint(k, n): _end_site_offset(k, v) for k, v in self.end_sites.items()}
        if len(self.parents) != n or self.offsets.shape[0] != n or len(self.channels) != n:
            raise SkeletonError(
                f"inconsistent skeleton: {n} names, {len(self.parents)} parents, "
                f"{self.offsets.shape[0]} offsets, {len(self.channels)} channel lists"
            )
        if n == 0:
            raise SkeletonError("a skeleton needs at least one joint")
        if self.parents[0] != -1 or np.any(self.parents[1:] < 0) or np.any(self.parents[1:] >= np.arange(1, n)):
            raise SkeletonError("joints must be ordered parents-first with the root (parent -1) at index 0")
        if len(set(self.names)) != n:
            dupes = sorted({x for x in self.names if self.names.count(x) > 1})
            raise SkeletonError(f"duplicate joint names: {', '.join(dupes)}")

    # ------------------------------------------------------------------ basic queries
    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return len(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Index of the joint called ``name``; raises :class:`SkeletonError` naming the unknown joint."""
        try:
            return self.names.index(name)
        except ValueError:
            raise SkeletonError(f"unknown joint {name!r} (joints: {', '.join(self.names)})") from None

    def indices(self, names: Iterable[str | int]) -> list[int]:
        """Indices of joints given by name or index (``0 <= i < J``; :class:`SkeletonError` otherwise)."""
        out = []
        for n in names:
            if isinstance(n, (int, np.integer)):
                if not 0 <= int(n) < self.num_joints:
                    raise SkeletonError(f"joint index {int(n)} is not one of the skeleton's {self.num_joints} joints")
                out.append(int(n))
            else:
                out.append(self.index(n))
        return out

    def children(self, joint: int | str) -> list[int]:
        """Indices of the direct children of ``joint``."""
        j = self.indices([joint])[0]
        return [int(c) for c in np.nonzero(self.parents == j)[0]]

    def path_to_root(self, joint: int | str) -> list[int]:
        """Joint indices from ``joint`` up to and including the root."""
        j = self.indices([joint])[0]
        path = [j]
        while self.parents[path[-1]] >= 0:
            path.append(int(self.parents[path[-1]]))
        return path

    def chain(self, start: int | str, end: int | str) -> list[int]:
        """Joint indices from ``start`` down to its descendant ``end`` (both included)."""
        s, e = self.indices([start, end])
        up = self.path_to_root(e)
        if s not in up:
            raise SkeletonError(f"joint {self.names[e]!r} is not a descendant of {self.names[s]!r}")
        return list(reversed(up[: up.index(s) + 1]))

    def chains(self) -> list[list[int]]:
        """The tree cut into unbranched chains: each starts at the root or at a branching joint's child
        and ends at a leaf or a branching joint. Together they cover every joint once (the root once)."""
        result: list[list[int]] = []
        starts = [0]
        while starts:
            current = [starts.pop(0)]
            while True:
                kids = self.children(current[-1])
                if len(kids) == 1:
                    current.append(kids[0])
                    continue
                starts.extend(kids)
                break
            result.append(current)
        return result

    @property
    def pelvis(self) -> int:
        """The joint where the body branches (legs and spine): from the root down single-child links to the first
        joint with more than one child. The root itself on most skeletons; Bandai-Namco's ``Hips`` under its
        static ``joint_Root``. A skeleton that never branches gives its root."""
        joint = 0
        while len(kids := self.children(joint)) == 1:
            joint = kids[0]
        return joint if kids else 0

    @property
    def leaves(self) -> list[int]:
        """Joints without children."""
        has_child = np.zeros(self.num_joints, dtype=bool)
        has_child[self.parents[1:]] = True
        return [int(j) for j in np.nonzero(~has_child)[0]]

    def left_right_pairs(self) -> list[tuple[int, int]]:
        """Pairs ``(left, right)`` of joint indices found from side markers in names
        (:func:`~skelanim.core.joint_names.side_marker`: ``Left``/``Right``, ``_L``/``_R``, ``L_``/``R_``, CMU
        ``LHip``/``RHip`` and ``lhand``/``rhand``, Biped ``Bip01 L Thigh``, Blender ``thigh.l``, Daz ``lThigh``,
        ``Thigh-L``, ``ThighL``, behind exporter prefixes): each left joint whose mirrored name is a joint."""
        index = {name: j for j, name in enumerate(self.names)}
        pairs = []
        for j, name in enumerate(self.names):
            marker = side_marker(name, index)
            if marker is not None and marker.side == "l" and (right := mirrored_name(name, marker)) in index:
                pairs.append((j, index[right]))
        return pairs

    def mirror_permutation(self) -> np.ndarray:
        """``(J,)`` permutation swapping left and right joints (identity for centre joints)."""
        perm = np.arange(self.num_joints)
        for left, right in self.left_right_pairs():
            perm[left], perm[right] = right, left
        return perm

    def edges(self) -> np.ndarray:
        """``(J-1, 2)`` array of ``(parent, child)`` bone edges."""
        child = np.arange(1, self.num_joints)
        return np.stack([self.parents[1:], child], axis=1)

    def adjacency(self, *, self_loops: bool = False, normalize: bool = False) -> torch.Tensor:
        """``(J, J)`` float tensor of the tree as an undirected graph (for graph networks).

        With ``normalize`` the symmetric normalisation ``D^-1/2 A D^-1/2`` is applied (after self loops).
        """
        adj = torch.zeros(self.num_joints, self.num_joints, dtype=torch.float32)
        e = torch.as_tensor(self.edges())
        adj[e[:, 0], e[:, 1]] = 1.0
        adj[e[:, 1], e[:, 0]] = 1.0
        if self_loops:
            adj += torch.eye(self.num_joints)
        if normalize:
            d = adj.sum(-1).clamp_min(1e-12).rsqrt()
            adj = d[:, None] * adj * d[None, :]
        return adj

    # ------------------------------------------------------------------ channels
    def rotation_order(self, joint: int) -> str:
        """Euler order of a joint's rotation channels, e.g. ``"ZXY"`` (empty if it has none)."""
        return "".join(c[0].upper() for c in self.channels[joint] if c.endswith("rotation"))

    def has_position_channels(self, joint: int) -> bool:
        """Whether the joint's channels animate its translation."""
        return any(c.endswith("position") for c in self.channels[joint])

    # ------------------------------------------------------------------ geometry
    def rest_positions(self, *, end_sites: bool = False) -> torch.Tensor:
        """``(J, 3)`` (or ``(J+E, 3)`` with End Sites appended) world positions of the rest pose, the root at the
        origin: its own offset is left out (``Motion.rest(skeleton).positions()`` puts the root at ``offsets[0]``)."""
        pos = torch.zeros(self.num_joints, 3, dtype=torch.float64)
        for j in range(1, self.num_joints):
            pos[j] = pos[self.parents[j]] + self.offsets[j]
        if end_sites and self.end_sites:
            ends = [pos[j] + off for j, off in sorted(self.end_sites.items())]
            pos = torch.cat([pos, torch.stack(ends)], dim=0)
        return pos

    def _rest_array(self, *, end_sites: bool = False) -> np.ndarray:
        """:meth:`rest_positions` as a float64 array, the same sums in the same order without torch's per-row
        cost (no gradient: for the measures below, called once per frame by the IK's input checks)."""
        offsets = self.offsets.detach().to(torch.float64).numpy()
        pos = np.zeros((self.num_joints, 3))
        for j in range(1, self.num_joints):
            pos[j] = pos[self.parents[j]] + offsets[j]
        if end_sites and self.end_sites:
            ends = [pos[j] + off.detach().to(torch.float64).numpy() for j, off in sorted(self.end_sites.items())]
            pos = np.concatenate([pos, np.stack(ends)])
        return pos

    def up_axis(self) -> int:
        """Guess the up axis (0=X, 1=Y, 2=Z) of the rest pose.

        Where joints named like a head/neck and like feet/ankles/toes exist, up is the axis along
        which the head lies farthest from the feet; otherwise the axis of largest rest-pose extent.
        """
        pos = self._rest_array()
        heads, feet = head_and_feet(self.names)
        if heads and feet:
            direction = pos[heads].mean(0) - pos[feet].mean(0)
            if float(np.linalg.norm(direction)) > 0:
                return int(np.abs(direction).argmax())
        return int((pos.max(0) - pos.min(0)).argmax())

    def height(self) -> float:
        """Rest-pose height along :meth:`up_axis`, End Sites included, in the file's units.

        A method here (``skeleton.height()``); on a motion a property (``motion.height``, the height the poses show).
        """
        pos = self._rest_array(end_sites=True)
        axis = self.up_axis()
        return float(pos[:, axis].max() - pos[:, axis].min())

    def stature(self) -> float | None:
        """Body size that no pose changes, in the file's units: the length along the bones from a joint named like a
        head or neck to one named like a foot, ankle or toe (:func:`head_and_feet`), the offsets on the path summed,
        the median over all such pairs (so that one stray match, an axe's ``Axe_Head`` or a foot IK effector under a
        far dummy root, does not decide it); each head is paired only with the feet of the smallest subtree above it
        that holds any, so two figures under one scene root are measured each on its own;
        ``None`` where the names find no head or no foot.

        On a standing figure it is 0.9-1.2 times the height the pose shows (the path turns through the hips and
        along the foot); unlike that height it does not shrink when the body crouches, crawls or lies down, so the
        length unit is guessed from it (:attr:`Motion.stature`).

        A method here (``skeleton.stature()``); on a motion a property (``motion.stature``, never ``None``).
        """
        heads, feet = head_and_feet(self.names)
        if not heads or not feet:
            return None
        lengths = np.linalg.norm(self.offsets.detach().to(torch.float64).numpy(), axis=1)
        depth = np.zeros(self.num_joints, np.int64)
        for j in range(1, self.num_joints):
            depth[j] = depth[self.parents[j]] + 1 if self.parents[j] >= 0 else 0

        def path_length(a: int, b: int) -> float:
            total = 0.0
            while a != b:  # climb from the deeper of the two until they meet (one root: they do)
                if depth[a] < depth[b]:
                    a, b = b, a
                total += float(lengths[a])
                a = int(self.parents[a])
            return total

        def nearest_feet(head: int) -> list[int]:
            """The feet of the smallest subtree above ``head`` that holds any: its own body's, not those of a
            second figure (or a far effector) under the same scene root."""
            a = head
            while a >= 0:
                under = [f for f in feet if ancestors[f][a]]
                if under:
                    return under
                a = int(self.parents[a])
            return feet

        ancestors = {f: self._ancestor_mask(f) for f in feet}
        size = float(np.median([path_length(h, f) for h in heads for f in nearest_feet(h)]))
        return size if np.isfinite(size) and size > 0 else None

    def _ancestor_mask(self, joint: int) -> np.ndarray:
        """``(J,)`` bool: ``joint`` and every joint above it."""
        mask = np.zeros(self.num_joints, bool)
        while joint >= 0:
            mask[joint] = True
            joint = int(self.parents[joint])
        return mask

    # ------------------------------------------------------------------ derived skeletons
    def scaled(self, factor: float) -> Skeleton:
        """A copy with every offset (and End Site) multiplied by ``factor``."""
        return Skeleton(
            self.names,
            self.parents.copy(),
            self.offsets * factor,
            list(self.channels),
            {k: v * factor for k, v in self.end_sites.items()},
        )

    def copy(self) -> Skeleton:
        """A deep copy."""
        return self.scaled(1.0)

    def same_topology(self, other: Skeleton) -> bool:
        """Whether ``other`` has the same joint names and parents (offsets may differ)."""
        return self.names == other.names and np.array_equal(self.parents, other.parents)

    def rig_difference(self, other: Skeleton, *, degrees: float = 45.0) -> str | None:
        """How ``other`` differs from this skeleton as a rig that rotations are relative to, or ``None``: the
        :meth:`topology_difference`, else the first bone (below the :attr:`pelvis`, whose offset places the body, not
        a bone) whose rest offset points more than ``degrees`` away from this one's, both bones longer than 1 % of
        their skeleton's longest. The same joints with other rest axes take other local rotations for one pose: a
        model trained on this rig would misread them. So does a mirror image of the rig (``ops.mirror`` puts a motion
        on one: its spine points down the other way); the takes of one capture rig differ by a fraction of a degree
        (0.06 over the 211 Bandai-Namco files)."""
        if (topology := self.topology_difference(other)) is not None:
            return topology
        mine, theirs = self.offsets.detach().double(), other.offsets.detach().double()
        length, other_length = mine.norm(dim=-1), theirs.norm(dim=-1)
        for j in range(self.pelvis + 1, self.num_joints):  # joints are stored parents first: the pelvis's chain is 0..
            if length[j] <= 0.01 * length.max() or other_length[j] <= 0.01 * other_length.max():
                continue
            cosine = float(mine[j] @ theirs[j] / (length[j] * other_length[j]))
            angle = float(np.degrees(np.arccos(min(1.0, max(-1.0, cosine)))))
            if angle > degrees:
                return (f"its bone to {self.names[j]!r} turned {angle:.0f} degrees at rest (a rig with other rest axes, "
                        "or the mirror image of this one, which convert --mirror writes; --keep-skeleton keeps the rig)")
        return None

    def same_rig(self, other: Skeleton) -> bool:
        """Whether ``other`` is the same rig: no :meth:`rig_difference`."""
        return self.rig_difference(other) is None

    def topology_difference(self, other: Skeleton) -> str | None:
        """How ``other``'s joints differ from these (the first difference, for a message: ``"22 joints, not
        31"``, ``"joint 7 named 'LeftHandIndex1', not 'LFingers'"``, ``"joint 7's parent 5, not 6"``), or
        ``None`` for the same topology."""
        if other.num_joints != self.num_joints:
            return f"{other.num_joints} joints, not {self.num_joints}"
        for j, (mine, theirs) in enumerate(zip(self.names, other.names, strict=True)):
            if mine != theirs:
                return f"joint {j} named {theirs!r}, not {mine!r}"
        for j, (mine, theirs) in enumerate(zip(self.parents, other.parents, strict=True)):
            if mine != theirs:
                return f"joint {j}'s parent {int(theirs)}, not {int(mine)}"
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Skeleton):
            return NotImplemented
        return (
            self.same_topology(other)
            and torch.equal(self.offsets, other.offsets)
            and self.channels == other.channels
            and self.end_sites.keys() == other.end_sites.keys()
            and all(torch.equal(v, other.end_sites[k]) for k, v in self.end_sites.items())
        )

    def to_dict(self) -> dict:
        """JSON-friendly description (names, parents, offsets, channels, End Sites)."""
        return {
            "names": self.names,
            "parents": self.parents.tolist(),
            "offsets": self.offsets.tolist(),
            "channels": [list(c) for c in self.channels],
            "end_sites": {str(k): v.tolist() for k, v in self.end_sites.items()},
        }

    @classmethod
    def from_dict(cls, data: dict) -> Skeleton:
        """Inverse of :meth:`to_dict`."""
        return cls(
            data["names"],
            np.asarray(data["parents"]),
            torch.tensor(data["offsets"], dtype=torch.float64),
            [tuple(c) for c in data.get("channels", [])],
            {int(k): torch.tensor(v, dtype=torch.float64) for k, v in data.get("end_sites", {}).items()},
        )
