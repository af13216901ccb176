"""Forward kinematics: local rotations and translations to world rotations and positions.

For joint ``j`` with parent ``p`` (see the README's *Conventions*)::

    R_world[j] = R_world[p] @ R_local[j]
    p_world[j] = p_world[p] + R_world[p] @ t_local[j]

where ``t_local[j]`` is the rest offset, or the animated translation for joints whose channels animate
it, and the root's world position is the root translation. Everything is batched over leading
dimensions ``(..., J)`` and differentiable.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from skelanim.core.rotations import quat_to_matrix


def forward_kinematics(
    rotations: torch.Tensor,
    translations: torch.Tensor,
    parents: list[int] | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """World rotation matrices and positions from local quaternions.

    Parameters
    ----------
    rotations:
        ``(..., J, 4)`` local quaternions (w, x, y, z); normalised on the way.
    translations:
        ``(..., J, 3)`` local translations; row 0 is the root's world position, row ``j > 0`` the joint's
        translation in its parent's frame (the rest offset unless animated). Broadcast against rotations.
    parents:
        ``(J,)`` parent indices, parents before children, ``-1`` for the root.

    Returns
    -------
    world_rotations:
        ``(..., J, 3, 3)`` world rotation matrices (``matrix_to_quat`` gives quaternions).
    world_positions:
        ``(..., J, 3)`` world positions.
    """
    parents_list = [int(p) for p in (parents.tolist() if isinstance(parents, torch.Tensor) else parents)]
    local = quat_to_matrix(rotations)
    # numpy's broadcast_shapes: torch's imports sympy on first use (seconds of start-up)
    shape = np.broadcast_shapes(tuple(local.shape[:-2]), tuple(translations.shape[:-1]))
    local = local.expand(*shape, 3, 3)
    translations = translations.expand(*shape, 3)
    # One joint at a time, parents first: each step is one batched 3x3 product over all frames, which
    # measured faster than grouping joints by depth (the gathers and concatenations cost more).
    world_rot = [local[..., 0, :, :]]
    world_pos = [translations[..., 0, :]]
    for j in range(1, len(parents_list)):
        parent_rot = world_rot[parents_list[j]]
        world_rot.append(parent_rot @ local[..., j, :, :])
        world_pos.append(world_pos[parents_list[j]] + (parent_rot @ translations[..., j, :, None])[..., 0])
    return torch.stack(world_rot, dim=-3), torch.stack(world_pos, dim=-2)


def end_site_positions(
    world_rotations: torch.Tensor,
    world_positions: torch.Tensor,
    joints: list[int],
    offsets: torch.Tensor,
) -> torch.Tensor:
    """World positions of End Sites.

    Parameters
    ----------
    world_rotations:
        ``(..., J, 3, 3)`` world rotation matrices (from :func:`forward_kinematics`).
    world_positions:
        ``(..., J, 3)``.
    joints:
        ``E`` joint indices carrying the End Sites.
    offsets:
        ``(E, 3)`` End Site offsets in their joint's frame.

    Returns
    -------
    ``(..., E, 3)`` End Site world positions.
    """
    idx = torch.as_tensor(joints, dtype=torch.long)
    offsets = offsets.to(world_positions.dtype)
    return world_positions[..., idx, :] + (world_rotations[..., idx, :, :] @ offsets[..., None])[..., 0]


@functools.lru_cache(maxsize=256)
def _root_paths(parents: tuple[int, ...], joints: tuple[int, ...]) -> torch.Tensor:
    """``(S, D)`` joint indices from the root down to each of ``joints``, padded at the end with ``J``."""
    paths = []
    for j in joints:
        path = [j]
        while parents[path[-1]] >= 0:
            path.append(parents[path[-1]])
        paths.append(path[::-1])
    depth = max(len(p) for p in paths)
    with torch.inference_mode(False):  # cached: must serve autograd too when first built under inference mode
        return torch.tensor([p + [len(parents)] * (depth - len(p)) for p in paths], dtype=torch.long)


def forward_kinematics_joints(
    rotations: torch.Tensor,
    translations: torch.Tensor,
    parents: list[int] | torch.Tensor,
    joints: list[int] | tuple[int, ...],
) -> tuple[torch.Tensor, torch.Tensor]:
    """World rotations and positions of selected joints only: :func:`forward_kinematics` for few frames.

    The same convention and result as :func:`forward_kinematics` at ``joints``, evaluated as products of
    4x4 transforms along each joint's root path, one batched product per depth level: a dozen operations
    whatever the number of joints, which is what a single streamed frame needs (online retargeting); for
    long clips of whole skeletons :func:`forward_kinematics` is faster.

    Parameters
    ----------
    rotations:
        ``(..., J, 4)`` local quaternions (normalised on the way) or ``(..., J, 3, 3)`` local rotation matrices.
    translations:
        ``(..., J, 3)`` local translations, row 0 the root's world position (as in :func:`forward_kinematics`).
    parents:
        ``(J,)`` parent indices, ``-1`` for the root.
    joints:
        ``S`` joint indices wanted (any order, repeats allowed).

    Returns
    -------
    world_rotations:
        ``(..., S, 3, 3)``.
    world_positions:
        ``(..., S, 3)``.
    """
    parents_t = tuple(int(p) for p in (parents.tolist() if isinstance(parents, torch.Tensor) else parents))
    paths = _root_paths(parents_t, tuple(int(j) for j in joints))
    local = rotations if rotations.shape[-1] == 3 else quat_to_matrix(rotations)
    lead = local.shape[:-3]
    translations = translations.to(local.dtype).expand(*lead, -1, -1)
    top = torch.cat([local, translations[..., None]], dim=-1)  # (..., J, 3, 4)
    bottom = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=local.dtype).expand(*lead, local.shape[-3], 1, 4)
    pad = torch.eye(4, dtype=local.dtype).expand(*lead, 1, 4, 4)  # index J: the identity
    h = torch.cat([torch.cat([top, bottom], dim=-2), pad], dim=-3)
    world = h.index_select(-3, paths[:, 0])
    for d in range(1, paths.shape[1]):
        world = world @ h.index_select(-3, paths[:, d])
    return world[..., :3, :3], world[..., :3, 3]
