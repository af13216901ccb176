"""Shared network layers: dense graph attention over a skeleton and a forward-kinematics layer.

Graph attention
---------------
:class:`GraphAttention` is multi-head GAT attention (Velickovic et al. 2018) written *densely*: a joint
attends to the joints allowed by a ``(J, J)`` mask (the tree's edges plus self loops, optionally more hops).
For the small graphs of a skeleton (``J`` of 20-100) a masked ``(J, J)`` score matrix per head costs less
than gather/scatter message passing and is a handful of batched matmuls, which keeps CPU inference fast
and exports to ONNX as plain ops. Scores are additive as in GAT::

    e[i, j] = LeakyReLU(a_dst . W x_i + a_src . W x_j) + mask_bias[i, j]
    out_i   = W_o concat_heads( sum_j softmax_j(e[i, :]) W x_j )

:class:`GATBlock` wraps it with a residual and LayerNorm, then a small feed-forward layer with a residual
and LayerNorm (post-norm).

Forward kinematics
------------------
:class:`ForwardKinematics` is a thin ``nn.Module`` around :func:`skelanim.core.kinematics.forward_kinematics`
(the project's one FK implementation) with the tree and rest offsets held as buffers.

Gradient reversal
-----------------
:func:`grad_reverse` is the identity forward and multiplies the gradient by ``-scale`` backward (Ganin &
Lempitsky 2015): a classifier placed behind it learns to tell the classes apart while everything before it
learns to make them indistinguishable (domain-adversarial training).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import matrix_to_quat

__all__ = ["ForwardKinematics", "GATBlock", "GraphAttention", "grad_reverse", "graph_mask", "mask_bias"]

#: Additive score for masked-out pairs (finite, so softmax and ONNX stay NaN-free).
MASKED = -1.0e4


class _GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, scale: float) -> Tensor:  # Any: forward keeps its own attributes on ctx
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        return -ctx.scale * grad, None


def grad_reverse(x: Tensor, scale: float = 1.0) -> Tensor:
    """Identity on ``x`` (any shape) whose gradient is multiplied by ``-scale`` on the way back."""
    return _GradReverse.apply(x, scale)


def graph_mask(parents: list[int] | np.ndarray, *, hops: int = 1) -> Tensor:
    """Which joints may attend to which: tree neighbours within ``hops`` edges, self included.

    Parameters
    ----------
    parents : list of int or ndarray
        ``(J,)`` parent indices, ``-1`` for the root.
    hops : int
        Neighbourhood radius in tree edges (0 = the joint alone, 1 = parent and children).

    Returns
    -------
    Tensor
        ``(J, J)`` bool, symmetric, ``True`` on the diagonal.
    """
    if hops < 0:
        raise ValueError(f"hops is a radius in tree edges (>= 0), got {hops}")
    parents = [int(p) for p in parents]
    n = len(parents)
    adj = torch.eye(n, dtype=torch.bool)
    for j, p in enumerate(parents):
        if p >= 0:
            adj[j, p] = adj[p, j] = True
    reach = torch.eye(n, dtype=torch.bool)  # hops 0 (it had been read as 1)
    for _ in range(hops):
        reach = reach | ((reach.float() @ adj.float()) > 0)
    return reach


def mask_bias(mask: Tensor) -> Tensor:
    """``(J, J)`` float additive bias: 0 where ``mask`` is true, :data:`MASKED` elsewhere."""
    return torch.where(mask, torch.zeros(()), torch.full((), MASKED)).to(torch.float32)


def _masked_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last axis in the form exported to ONNX (same values as ``torch.softmax``).

    onnxruntime's ``Softmax`` takes a slow path on the masked scores (about :data:`MASKED`): 32 us instead of
    11 us for one ``(1, 4, 22, 22)`` call, three times per IK-GAT pose. Here the scores are shifted by the row
    maximum and clipped at -80, so a masked entry weighs ``exp(-80)`` (about 2e-35, far below float32
    resolution next to the row sum, which is at least 1) instead of ``exp(MASKED) = 0``.

    Parameters
    ----------
    scores : Tensor
        ``(..., J, J)`` scores including the :func:`mask_bias` bias.

    Returns
    -------
    Tensor
        ``(..., J, J)`` attention weights, rows summing to 1.
    """
    shifted = (scores - scores.amax(-1, keepdim=True)).clamp_min(-80.0)
    weights = shifted.exp()
    return weights / weights.sum(-1, keepdim=True)


class GraphAttention(nn.Module):
    """Multi-head additive graph attention over a dense ``(J, J)`` mask.

    Parameters
    ----------
    dim : int
        Feature size ``D`` (input and output).
    heads : int
        Number of heads; ``D`` must be divisible by it.
    negative_slope : float
        LeakyReLU slope of the scores.
    """

    def __init__(self, dim: int, heads: int, negative_slope: float = 0.2) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads, self.head_dim, self.negative_slope = heads, dim // heads, negative_slope
        self.proj = nn.Linear(dim, dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(heads, self.head_dim))
        self.att_dst = nn.Parameter(torch.empty(heads, self.head_dim))
        self.out = nn.Linear(dim, dim)
        bound = 1.0 / math.sqrt(self.head_dim)
        nn.init.uniform_(self.att_src, -bound, bound)
        nn.init.uniform_(self.att_dst, -bound, bound)

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        """Attend over the graph.

        Parameters
        ----------
        x : Tensor
            ``(B, J, D)`` joint features, or ``(B J, D)`` (the joints of all poses as rows: the linear layers are
            then plain 2-D products, one ONNX ``Gemm`` each).
        bias : Tensor
            ``(J, J)`` additive mask from :func:`mask_bias`.

        Returns
        -------
        Tensor
            Same shape as ``x``.
        """
        shape, j, d = x.shape, bias.shape[-1], x.shape[-1]
        projected = self.proj(x)  # (B, J, D) or (B J, D)
        h = projected.reshape(-1, j, self.heads, self.head_dim).transpose(1, 2)  # (B, H, J, dh)
        # a_dst . h and a_src . h of every head as one product with a block-diagonal (D, 2H) matrix
        blocks = torch.eye(self.heads, dtype=x.dtype, device=x.device)[:, :, None]
        pairs = torch.cat([blocks * self.att_dst[:, None, :], blocks * self.att_src[:, None, :]]).reshape(-1, d)
        scores = (projected @ pairs.T).reshape(-1, j, 2 * self.heads).transpose(1, 2)  # (B, 2H, J)
        dst, src = scores.contiguous().split(self.heads, 1)  # (B, H, J) each
        scores = dst[..., :, None] + src[..., None, :]
        if torch.is_grad_enabled():
            scores = nn.functional.leaky_relu(scores, self.negative_slope) + bias
        else:  # inference: in place, two fewer (B, H, J, J) temporaries
            scores = nn.functional.leaky_relu_(scores, self.negative_slope).add_(bias)
        exporting = torch.onnx.is_in_onnx_export()  # (B, H, J, J) weights, rows = receiving joint
        att = _masked_softmax(scores) if exporting else torch.softmax(scores, dim=-1)
        return self.out((att @ h).transpose(1, 2).reshape(shape))


class GATBlock(nn.Module):
    """Graph attention and a feed-forward layer, each with a residual and LayerNorm (post-norm).

    Parameters
    ----------
    dim : int
        Feature size ``D``.
    heads : int
        Attention heads.
    ffn_mult : int
        Hidden size of the feed-forward layer is ``ffn_mult * D``.
    """

    def __init__(self, dim: int, heads: int, ffn_mult: int = 2) -> None:
        super().__init__()
        self.attn = GraphAttention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn_mult * dim), nn.GELU(), nn.Linear(ffn_mult * dim, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x: Tensor, bias: Tensor) -> Tensor:
        """``(B, J, D)`` (or ``(B J, D)``) features and ``(J, J)`` mask bias to features of the same shape."""
        x = self.norm1(x + self.attn(x, bias))
        return self.norm2(x + self.ffn(x))


class ForwardKinematics(nn.Module):
    """Differentiable FK for a fixed tree and rest offsets (wraps :func:`~skelanim.core.kinematics.forward_kinematics`).

    Parameters
    ----------
    parents : list of int or ndarray
        ``(J,)`` parent indices, parents first, ``-1`` for the root.
    offsets : Tensor
        ``(J, 3)`` rest offsets (bone vectors in the parent's frame). The module's buffer is float32, what every
        device runs (MPS has no float64); float64 offsets are also kept as given, for float64 rotations, whose FK
        then has its full precision (they had used the float32 offsets: 1.9e-6 off on a 123.46-unit bone).
    """

    offsets: Tensor  # buffer

    def __init__(self, parents: list[int] | np.ndarray, offsets: Tensor | np.ndarray) -> None:
        super().__init__()
        self.parents = [int(p) for p in parents]
        given = torch.as_tensor(offsets)
        self.register_buffer("offsets", given.float().clone(), persistent=False)
        self.offsets64 = given.clone() if given.dtype == torch.float64 else None  # not a buffer: stays off devices

    def forward(self, rotations: Tensor, root_position: Tensor) -> tuple[Tensor, Tensor]:
        """World rotations and positions.

        Parameters
        ----------
        rotations : Tensor
            ``(..., J, 4)`` local quaternions or ``(..., J, 3, 3)`` local rotation matrices.
        root_position : Tensor
            ``(..., 3)`` world position of joint 0.

        Returns
        -------
        tuple of Tensor
            ``(..., J, 3, 3)`` world rotation matrices and ``(..., J, 3)`` world positions.
        """
        quats = matrix_to_quat(rotations) if rotations.shape[-1] == 3 else rotations
        fine = self.offsets64
        if quats.dtype == torch.float64 and fine is not None and torch.equal(fine.to(self.offsets), self.offsets):
            offsets = fine.to(quats.device)  # the buffer still holds these offsets' rounding: not changed since
        else:
            offsets = self.offsets.to(quats.dtype)
        trans = offsets.expand(*quats.shape[:-1], 3)
        trans = torch.cat([root_position[..., None, :].to(quats.dtype), trans[..., 1:, :]], dim=-2)
        return forward_kinematics(quats, trans, self.parents)
