"""Poses for IK from motion files: loading, the IK root, splitting by file, augmentation.

Every frame of every file becomes one sample: its world joint positions and world joint rotations
recomputed by forward kinematics **on the rig's rest offsets** (the IK root placed where the file puts
it), so inputs and targets always agree with the skeleton IK solves on. Files whose animated joint
translations stretch bones (Bandai-Namco files animate a position channel on every joint) are measured:
:attr:`PoseSet.stretch` is the largest distance between the file's own FK positions and the rest-offset
ones, as a fraction of height (0 for the Bandai data: only the hips translation is animated).

Augmentation (:func:`augment`) draws only from the generator it is given: a random heading about the
data's up axis (positions and world rotations turn together), left/right mirroring (positions
reflected across a vertical plane and joints swapped; world rotations mirrored as ``M R_P N_j`` with a
reflection ``N_j`` of each joint's own axes, see :func:`mirror_map`), and Gaussian noise on the input
positions only.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_geodesic, quat_normalize
from skelanim.data.dataset import expand_paths
from skelanim.data.features import yaw_matrix
from skelanim.errors import SkeletonError
from skelanim.ik.frames import IKRig

__all__ = ["PoseSet", "augment", "checked_split", "detect_ik_root", "expand_paths", "load_motions", "mean_pose",
           "mirror_map", "mirror_world", "pose_set", "split_files", "up_axis"]  # fmt: skip


def split_files(
    files: Sequence[Path], *, val: Sequence[str] = (), exclude: Sequence[str] = ()
) -> tuple[list[Path], list[Path]]:
    """Train/validation split by file name patterns (``fnmatch`` on the file name).

    Files matching ``exclude`` are dropped (held out for evaluation); files matching ``val`` validate. With no
    ``val`` pattern every tenth of the kept files validates, in the order given (``expand_paths`` sorts), from the
    sixth: the 6th, 16th, 26th, ...; of five or fewer, the last.
    """
    kept = [f for f in files if not any(fnmatch.fnmatch(f.name, pat) for pat in exclude)]
    if val:
        val_files = [f for f in kept if any(fnmatch.fnmatch(f.name, pat) for pat in val)]
    else:
        val_files = kept[5::10] if len(kept) > 5 else kept[-1:]
    train = [f for f in kept if f not in val_files]
    return train, val_files


def _patterns(patterns: Sequence[str]) -> str:
    return ", ".join(repr(p) for p in patterns)


def checked_split(
    data: Sequence[str | Path],
    *,
    val: Sequence[str] = (),
    exclude: Sequence[str] = (),
    purpose: str = "train on",
    need_val: bool = True,
) -> tuple[list[Path], list[Path]]:
    """:func:`split_files` of the files ``data`` names, refusing a split that leaves nothing to ``purpose`` (or,
    with ``need_val``, nothing to validate on) with what went wrong.

    Without ``need_val`` a lone file (which the default split keeps for validation) is the training file, with no
    validation. With ``need_val`` a lone file is read first, so that one that cannot be read says so itself.

    Raises
    ------
    FileNotFoundError
        Naming ``data`` and why: no motion files, every file excluded, a ``val`` pattern that matched nothing (patterns
        are globs), every file validating, or one file only.
    """
    from skelanim.data.dataset import NO_MOTION_FILES

    files = expand_paths(data)
    train, val_files = split_files(files, val=val, exclude=exclude)

    def refuse(why: str) -> None:
        raise FileNotFoundError(2, why, ", ".join(map(str, data)))

    if not files:
        refuse(f"nothing to {purpose}: {NO_MOTION_FILES}")
    if not train and not val_files:
        refuse(f"nothing to {purpose}: every file matches --exclude {_patterns(exclude)}")
    if val and not val_files:
        hint = val[0] if any(c in val[0] for c in "*?[") else f"*{val[0]}*"
        refuse(f"no file matched --val {_patterns(val)} (patterns are globs on file names, such as {hint!r})")
    if not train and val:
        refuse(f"nothing to {purpose}: every file {'left ' if exclude else ''}matches --val {_patterns(val)}")
    if not train and not need_val:
        return val_files, []
    if not train:
        load_motions(val_files)  # a file that cannot be read is said as that
        refuse("one motion file only: training needs another to validate on (of 5 files or fewer the last "
               "validates; --val chooses)")
    return train, val_files


def load_motions(files: Sequence[Path]) -> list[Motion]:
    """Load motion files that must all share one skeleton topology (names and parents).

    Raises
    ------
    SkeletonError
        Naming the first file whose skeleton differs.
    """
    import skelanim

    motions = [skelanim.load(f) for f in files]
    for f, m in zip(files[1:], motions[1:]):
        if not m.skeleton.same_topology(motions[0].skeleton):
            raise SkeletonError(f"skeleton differs from {files[0]} ({motions[0].skeleton.num_joints} joints: "
                                f"{', '.join(motions[0].skeleton.names)})", path=f)  # fmt: skip
    return motions


def detect_ik_root(motions: Sequence[Motion]) -> int:
    """1 when joint 0 is a dummy (one child, identity rotation in every frame of ``motions``), else 0.

    Such a root may still carry the translation in some files (Bandai-Namco: 4 of 211); IK puts it back on
    the child, which is equivalent because the dummy never rotates.
    """
    sk = motions[0].skeleton
    if sk.num_joints < 2 or sk.children(0) != [1]:
        return 0
    identity = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    for m in motions:
        if float(quat_geodesic(quat_normalize(m.rotations[:, 0]), identity).max()) > 1e-6:
            return 0
    return 1


@dataclass
class PoseSet:
    """Samples for IK: world positions and world rotations on the rig's rest offsets.

    Attributes
    ----------
    rig : IKRig
        The skeleton and IK root.
    positions : Tensor
        ``(N, J, 3)`` float32 world positions relative to the IK root.
    world : Tensor
        ``(N, J, 3, 3)`` float32 world rotations.
    local : Tensor
        ``(N, J, 4)`` float64 local unit quaternions (as in the files).
    starts : Tensor
        ``(N,)`` bool, true on each file's first frame.
    files : list of str
        Source files; ``file_index`` ``(N,)`` says which.
    stretch : float
        Largest gap between the files' own FK positions and rest-offset FK, as a fraction of height.
    """

    rig: IKRig
    positions: Tensor
    world: Tensor
    local: Tensor
    starts: Tensor
    files: list[str] = field(default_factory=list)
    file_index: Tensor | None = None
    stretch: float = 0.0

    def __len__(self) -> int:
        return int(self.positions.shape[0])


def pose_set(
    motions: Sequence[Motion], rig: IKRig, files: Sequence[str | Path] = (), *, max_frames: int | None = None
) -> PoseSet:
    """Recompute every frame on the rig's rest offsets (see the module docstring).

    Parameters
    ----------
    motions : sequence of Motion
        Same topology as ``rig``.
    rig : IKRig
        Target rig.
    files : sequence of path
        Names for ``motions`` (for reports).
    max_frames : int, optional
        Keep at most this many frames per file, evenly spaced.
    """
    pos_all, world_all, local_all, starts, index = [], [], [], [], []
    stretch = 0.0
    for i, m in enumerate(motions):
        if max_frames is not None and m.num_frames > max_frames:
            m = m[torch.linspace(0, m.num_frames - 1, max_frames).round().long()]
        own = m.positions()
        q = quat_normalize(m.rotations).clone()
        q[:, rig.fixed] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=q.dtype)
        world, pos = forward_kinematics(q, rig.translations(own[:, rig.ik_root]), rig.parents)
        stretch = max(stretch, float((own - pos)[:, rig.evaluated].norm(dim=-1).max()) / rig.height)
        rel = pos - pos[:, rig.ik_root : rig.ik_root + 1]
        rel[:, rig.fixed] = -rig.offsets[rig.ik_root].to(rel.dtype)  # a dummy root where its child implies it
        pos_all.append(rel.float())
        world_all.append(world.float())
        local_all.append(q)
        s = torch.zeros(m.num_frames, dtype=torch.bool)
        s[0] = True
        starts.append(s)
        index.append(torch.full((m.num_frames,), i, dtype=torch.long))
    return PoseSet(rig, torch.cat(pos_all), torch.cat(world_all), torch.cat(local_all), torch.cat(starts),
                   [str(f) for f in files], torch.cat(index), stretch)  # fmt: skip


def mean_pose(local: Tensor) -> Tensor:
    """Per-joint average rotation (Markley et al. 2007: top eigenvector of ``sum q q^T``).

    Parameters
    ----------
    local : Tensor
        ``(N, J, 4)`` unit quaternions.

    Returns
    -------
    Tensor
        ``(J, 4)`` unit quaternions, ``w >= 0``.
    """
    q = local.to(torch.float64)
    m = torch.einsum("nji,njk->jik", q, q)
    _, vecs = torch.linalg.eigh(m)
    mean = vecs[..., -1]
    return torch.where(mean[:, :1] < 0, -mean, mean)


def up_axis(positions: Tensor) -> int:
    """The world axis along which poses are tallest (median over frames of the joints' extent); ``positions``
    ``(N, J, 3)``, the body's joints (:attr:`IKRig.evaluated`: a dummy root placed off the body is no extent)."""
    extent = positions.amax(1) - positions.amin(1)  # (N, 3)
    return int(extent.median(0).values.argmax())


def mirror_map(rig: IKRig, lateral: int, reference: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """The left/right mirror of poses on the same rig: ``G'_j = M G_{P[j]} N_j`` for world rotations.

    ``M`` reflects the world ``lateral`` axis, ``P`` swaps partners and ``N_j`` reflects joint ``j``'s own
    axes (:func:`skelanim.ops.mirror.joint_reflections`, its half-turn choices settled by ``reference``).
    Joints above the IK root keep the identity (``N = M``). FK of the mirrored rotations on the rig's rest
    offsets puts joint ``j`` at ``M x_{P[j]}``, with every bone's twist mirrored as well.

    Parameters
    ----------
    rig : IKRig
        The skeleton.
    lateral : int
        Reflected world axis.
    reference : Tensor, optional
        ``(J, 3, 3)`` a typical pose of local rotations (the training poses' :func:`mean_pose`).

    Returns
    -------
    tuple of Tensor
        ``perm`` ``(J,)`` long, ``world`` ``(3,)`` and ``right`` ``(J, 3)`` reflection diagonals.
    """
    from skelanim.ops.mirror import joint_reflections

    world = torch.ones(3, dtype=torch.float64)
    world[lateral] = -1.0
    r = rig.ik_root
    perm, _, right = joint_reflections(rig.skeleton, world, first=r,
                                       reference=None if reference is None else reference[r:])  # fmt: skip
    full_perm = torch.cat([torch.arange(r), perm + r])
    full_right = torch.cat([world.expand(r, 3), right])
    return full_perm, world.float(), full_right.float()


def mirror_world(world: Tensor, perm: Tensor, reflection: Tensor, right: Tensor) -> Tensor:
    """Mirrored world rotations ``M G_{P[j]} N_j`` (:func:`mirror_map`); ``(..., J, 3, 3)`` in and out.

    All reflections are diagonal, so ``M G N`` is ``G * m[:, None] * n[None, :]``; mirroring twice gives
    back the input exactly.
    """
    return world.index_select(-3, perm) * reflection.to(world.dtype)[:, None] * right.to(world.dtype)[:, None, :]


def augment(
    positions: Tensor,
    world: Tensor,
    rig: IKRig,
    generator: torch.Generator,
    *,
    up: int,
    noise: float = 0.0,
    noisy: float = 0.5,
    mirror: float = 0.0,
    reflection: tuple[Tensor, Tensor, Tensor] | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Random heading, optional mirroring and input noise.

    Parameters
    ----------
    positions : Tensor
        ``(B, J, 3)`` root-relative positions.
    world : Tensor
        ``(B, J, 3, 3)`` world rotations.
    rig : IKRig
        The skeleton.
    generator : torch.Generator
        The only source of randomness.
    up : int
        Up axis for the heading.
    noise : float
        Largest noise sigma as a fraction of height (each noisy sample draws sigma uniformly in
        ``[0, noise]``).
    noisy : float
        Fraction of samples that get noise (the others stay clean).
    mirror : float
        Probability of mirroring a sample (needs ``reflection``).
    reflection : tuple of Tensor, optional
        :func:`mirror_map` of the rig (the world reflection's lateral axis: any horizontal one).

    Returns
    -------
    tuple of Tensor
        Noisy input positions, clean positions ``(B, J, 3)`` and world rotations ``(B, J, 3, 3)``.
    """
    b = positions.shape[0]
    if mirror > 0 and reflection is not None:
        perm, m, right = reflection
        flip = torch.rand(b, generator=generator) < mirror
        m_positions = positions.index_select(1, perm) * m
        m_positions[:, rig.fixed] = positions[:, rig.fixed]  # a dummy root stays where its child implies it
        positions = torch.where(flip[:, None, None], m_positions, positions)
        world = torch.where(flip[:, None, None, None], mirror_world(world, perm, m, right), world)
    heading = yaw_matrix(torch.rand(b, generator=generator) * (2 * torch.pi), up)
    positions = positions @ heading.transpose(1, 2)
    world = torch.where(rig.fixed[:, None, None], world, heading[:, None] @ world)
    clean = positions
    if noise > 0:
        sigma = torch.rand(b, generator=generator) * noise * rig.height
        sigma = torch.where(torch.rand(b, generator=generator) < noisy, sigma, torch.zeros_like(sigma))
        positions = positions + torch.randn(positions.shape, generator=generator) * sigma[:, None, None]
    return positions, clean, world
