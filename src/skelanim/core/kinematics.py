"""Forward kinematics: local rotations and translations to world rotations and positions.

For joint ``j`` with parent ``p`` (see the README's *Conventions*)::

    R_world[j] = R_world[p] @ R_local[j]
    p_world[j] = p_world[p] + R_world[p] @ t_local[j]

where ``t_local[j]`` is the rest offset, or the animated translation for joints whose channels animate
it, and the root's world position is the root translation. Everything is batched over leading
dimensions ``(..., J)`` and differentiable.
"""

from __future__ import annotations

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
