"""Pose augmentation for training: the chordal mean pose of a data set and amplitude scaling about it."""

from __future__ import annotations

import torch
from torch import Tensor

from skelanim.core.rotations import matrix_to_rotvec, rotvec_to_matrix

__all__ = ["mean_rotations", "scale_amplitude"]


def mean_rotations(rot: Tensor) -> Tensor:
    """Chordal mean of rotation matrices over the leading dims (the rotation nearest their average).

    Parameters
    ----------
    rot : Tensor
        ``(N, M, 3, 3)``.

    Returns
    -------
    Tensor
        ``(M, 3, 3)``.
    """
    u, _, vh = torch.linalg.svd(rot.double().mean(0))
    d = torch.sign(torch.linalg.det(u @ vh))
    u = torch.cat([u[..., :2], u[..., 2:] * d[:, None, None]], dim=-1)
    return (u @ vh).to(rot.dtype)


def scale_amplitude(rot: Tensor, mean: Tensor, factor: Tensor) -> Tensor:
    """Local joint rotations moved toward (``factor < 1``) or away from (``> 1``) a mean pose along the geodesic:
    ``R' = M (M^T R)^a`` for every joint but the body root (index 0, kept).

    Parameters
    ----------
    rot : Tensor
        ``(B, T, M, 3, 3)`` (body root in world).
    mean : Tensor
        ``(M, 3, 3)`` mean local rotations (:func:`mean_rotations`).
    factor : Tensor
        ``(B,)`` amplitude factors ``a``.

    Returns
    -------
    Tensor
        ``(B, T, M, 3, 3)``.
    """
    m = mean[1:]
    rel = matrix_to_rotvec(m.transpose(-1, -2) @ rot[:, :, 1:]) * factor[:, None, None, None]
    return torch.cat([rot[:, :, :1], m @ rotvec_to_matrix(rel)], dim=2)
