"""A skeleton moving over time.

A :class:`Motion` holds local joint rotations as unit quaternions ``(F, J, 4)`` (w, x, y, z), the root's
world translation ``(F, 3)``, optional animated per-joint translations ``(F, J, 3)`` (BVH files that
put position channels on every joint, e.g. Bandai-Namco), and the frame rate. Values are float64 torch
tensors in the file's units; :mod:`skelanim.core.kinematics` turns them into world positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from skelanim.core.kinematics import end_site_positions, forward_kinematics
from skelanim.core.rotations import quat_normalize
from skelanim.core.skeleton import Skeleton, head_and_feet
from skelanim.errors import ShapeError


@dataclass
class Motion:
    """Skeleton + local rotations + root translation + fps.

    Attributes
    ----------
    skeleton:
        The joint tree and rest pose.
    rotations:
        ``(F, J, 4)`` float64 local quaternions (w, x, y, z).
    root_positions:
        ``(F, 3)`` float64 world position of the root joint.
    fps:
        Frames per second.
    joint_translations:
        ``(F, J, 3)`` float64 local translations of every joint, or ``None`` when only the root is
        translated (then rest offsets are used). Row 0 (the root) is ignored in favour of
        ``root_positions``.
    metadata:
        Free-form facts from the source file (format, units hint, ...).
    """

    skeleton: Skeleton
    rotations: torch.Tensor
    root_positions: torch.Tensor
    fps: float
    joint_translations: torch.Tensor | None = None
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rotations = torch.as_tensor(self.rotations, dtype=torch.float64)
        self.root_positions = torch.as_tensor(self.root_positions, dtype=torch.float64)
        if self.joint_translations is not None:
            self.joint_translations = torch.as_tensor(self.joint_translations, dtype=torch.float64)
        f, j = self.rotations.shape[:2] if self.rotations.ndim == 3 else (-1, -1)
        if self.rotations.ndim != 3 or self.rotations.shape[2] != 4 or j != self.skeleton.num_joints:
            raise ShapeError(
                f"rotations must be (F, {self.skeleton.num_joints}, 4), got {tuple(self.rotations.shape)}"
            )
        if tuple(self.root_positions.shape) != (f, 3):
            raise ShapeError(f"root_positions must be ({f}, 3), got {tuple(self.root_positions.shape)}")
        if self.joint_translations is not None and tuple(self.joint_translations.shape) != (f, j, 3):
            raise ShapeError(
                f"joint_translations must be ({f}, {j}, 3), got {tuple(self.joint_translations.shape)}"
            )
        if not (self.fps > 0 and np.isfinite(self.fps)):
            raise ShapeError(f"fps must be a positive number, got {self.fps}")

    # ------------------------------------------------------------------ sizes
    @property
    def num_frames(self) -> int:
        """Number of frames ``F``."""
        return int(self.rotations.shape[0])

    def __len__(self) -> int:
        return self.num_frames

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame, ``(F - 1) / fps``."""
        return max(self.num_frames - 1, 0) / self.fps

    def up_axis(self) -> int:
        """Guess the up axis (0=X, 1=Y, 2=Z) from the rest pose and from the motion itself.

        *Posed*: the axis along which joints named like head/neck lie farthest from joints named like
        feet/ankles/toes, averaged over up to 64 evenly spaced frames. *Rest*: :meth:`Skeleton.up_axis`.
        Where they agree that is the answer; where they differ, Y if either says Y (Bandai-Namco's rest
        pose lies along X; a crawl's mean pose lies flat), else the posed axis. Checked on every file of
        the shared mocap set.
        """
        rest = self.skeleton.up_axis()
        heads, feet = head_and_feet(self.skeleton.names)
        if not feet or not heads or self.num_frames == 0:
            return rest
        pos = self._sample_positions()
        posed = int((pos[:, heads].mean(1) - pos[:, feet].mean(1)).mean(0).abs().argmax())
        return rest if rest == posed else (1 if 1 in (rest, posed) else posed)

    @property
    def height(self) -> float:
        """Body height in the motion's units: the median over up to 64 evenly spaced frames of the extent
        of joints and End Sites along :meth:`up_axis`. Falls back to the rest pose for an empty motion."""
        if self.num_frames == 0:
            return self.skeleton.height()
        axis = self.up_axis()
        extent = self._sample_positions(end_sites=True)[..., axis]
        return float((extent.max(-1).values - extent.min(-1).values).median())

    def _sample_positions(self, *, end_sites: bool = False, count: int = 64) -> torch.Tensor:
        """``(S, J(+E), 3)`` world positions at up to ``count`` evenly spaced frames."""
        frames = torch.linspace(0, self.num_frames - 1, min(count, self.num_frames)).round().long()
        return self[frames].positions(end_sites=end_sites)

    # ------------------------------------------------------------------ kinematics
    def local_translations(self) -> torch.Tensor:
        """``(F, J, 3)`` translation of each joint in its parent's frame; row 0 is the root position."""
        if self.joint_translations is not None:
            t = self.joint_translations.clone()
        else:
            t = self.skeleton.offsets.expand(self.num_frames, -1, -1).clone()
        t[:, 0] = self.root_positions
        return t

    def world(self) -> tuple[torch.Tensor, torch.Tensor]:
        """World rotation matrices ``(F, J, 3, 3)`` and positions ``(F, J, 3)``."""
        return forward_kinematics(self.rotations, self.local_translations(), self.skeleton.parents.tolist())

    def positions(self, *, end_sites: bool = False) -> torch.Tensor:
        """``(F, J, 3)`` world joint positions, or ``(F, J+E, 3)`` with End Sites appended
        in the order of ``sorted(skeleton.end_sites)``."""
        world_rot, world_pos = self.world()
        if not end_sites or not self.skeleton.end_sites:
            return world_pos
        joints = sorted(self.skeleton.end_sites)
        offsets = torch.stack([self.skeleton.end_sites[j] for j in joints])
        return torch.cat([world_pos, end_site_positions(world_rot, world_pos, joints, offsets)], dim=-2)

    def end_site_names(self) -> list[str]:
        """Names for the End Sites appended by ``positions(end_sites=True)``: ``<joint>_end``."""
        return [f"{self.skeleton.names[j]}_end" for j in sorted(self.skeleton.end_sites)]

    # ------------------------------------------------------------------ editing
    def copy(self, **changes) -> Motion:
        """A shallow copy with the given fields replaced (tensors are not cloned)."""
        return replace(self, **changes)

    def __getitem__(self, frames: slice | Sequence[int] | np.ndarray | torch.Tensor) -> Motion:
        """Frames selected by a slice or index array, as a new Motion (same skeleton and fps)."""
        if isinstance(frames, int):
            frames = slice(frames, frames + 1 if frames != -1 else None)
        jt = None if self.joint_translations is None else self.joint_translations[frames]
        return replace(
            self,
            rotations=self.rotations[frames],
            root_positions=self.root_positions[frames],
            joint_translations=jt,
            metadata=dict(self.metadata),
        )

    def normalized_rotations(self) -> Motion:
        """A copy whose quaternions are unit length."""
        return self.copy(rotations=quat_normalize(self.rotations))

    @staticmethod
    def concatenate(motions: Sequence[Motion]) -> Motion:
        """Join motions of the same skeleton topology and fps end to end (root positions as they are)."""
        if not motions:
            raise ShapeError("concatenate needs at least one motion")
        first = motions[0]
        for m in motions[1:]:
            if not first.skeleton.same_topology(m.skeleton):
                raise ShapeError("cannot concatenate motions of different skeletons")
            if abs(m.fps - first.fps) > 1e-9:
                raise ShapeError(f"cannot concatenate motions at {first.fps} and {m.fps} fps; resample first")
        has_jt = any(m.joint_translations is not None for m in motions)
        jt = torch.cat([m.local_translations() for m in motions]) if has_jt else None
        return replace(
            first,
            rotations=torch.cat([m.rotations for m in motions]),
            root_positions=torch.cat([m.root_positions for m in motions]),
            joint_translations=jt,
            metadata=dict(first.metadata),
        )

    @classmethod
    def rest(cls, skeleton: Skeleton, num_frames: int = 1, fps: float = 30.0) -> Motion:
        """``num_frames`` frames of the rest pose (identity rotations, root at its rest offset)."""
        rot = torch.zeros(num_frames, skeleton.num_joints, 4, dtype=torch.float64)
        rot[..., 0] = 1.0
        root = skeleton.offsets[0].expand(num_frames, 3).clone()
        return cls(skeleton, rot, root, fps)
