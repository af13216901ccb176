"""Recognition networks: an ST-GCN over the joint graph and a temporal-CNN baseline over flattened joints.

ST-GCN (Yan et al. 2018)
------------------------
Input ``(B, T, V, C)`` per-joint features. Each block is a spatial graph convolution followed by a temporal
convolution, with batch norm, ReLU and a residual::

    y = sum_k  A_k  x  W_k        (spatial: K partitions of the joint graph)
    y = Conv(k_t x 1)(y)          (temporal, optionally strided)

The partitions are the *spatial configuration* of the paper: each joint's neighbours split into itself,
the neighbour nearer the body root (centripetal) and those farther away (centrifugal); the three together are
normalised by each joint's degree (``sum_k A_k`` has unit column sums; a single ``A_k`` does not) and each is
scaled by a learnable edge-importance mask. For speed on a CPU the ``K`` graph
products are **one dense matmul**: the ``1 x 1`` convolution gives ``K * C`` channels, which are laid out as
``(B, C, T, K * V)`` and multiplied by the stacked ``(K * V, V)`` adjacency; no gather/scatter, no per-edge
loop. The temporal convolutions do most of the work, so channels stay small (32-96) and time is halved
twice. The last block's output, averaged over frames and joints (``D = channels[-1]``), or with ``readout=n``
averaged over frames only and mapped from ``(C, V)`` to ``n`` features by a linear layer (the joint-aware
readout of the shipped model), is the feature vector used for FID.

Baseline
--------
:class:`TemporalCNN`: 1-D convolutions over time of the flattened ``V * C`` joint features, the same pooling
and heads.

Ensembles
---------
:class:`Members`: ``K`` networks of one kind side by side (trained separately, e.g. with other seeds);
their logits are stacked ``(K, B, classes)`` and their features concatenated ``(B, K * D)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from skelanim.learn.joints import CHANGE_CHANNELS, POSE_CHANNELS

__all__ = ["STGCN", "Members", "TemporalCNN", "spatial_partitions"]


def _heads(net: STGCN | TemporalCNN, f: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
    """Content and (optional) style logits of ``(B, D)`` features ``f``, and ``f``."""
    h = net.drop(f)
    return net.content_head(h), (net.style_head(h) if net.style_head is not None else None), f


def spatial_partitions(parents: Sequence[int]) -> Tensor:
    """The spatial-configuration adjacency of a tree.

    Parameters
    ----------
    parents : sequence of int
        ``(V,)`` parents, ``-1`` for the root (the centre of the partition).

    Returns
    -------
    Tensor
        ``(3, V, V)`` float: ``[self, centripetal, centrifugal]``; ``A[k, i, j]`` is the weight of joint ``i``
        in joint ``j``'s update, columns normalised by the node degree (self loop included).
    """
    v = len(parents)
    a = torch.zeros(3, v, v)
    for j in range(v):
        a[0, j, j] = 1.0
        p = int(parents[j])
        if p >= 0:
            a[1, p, j] = 1.0  # the parent is nearer the root: centripetal input of j
            a[2, j, p] = 1.0  # the child is farther: centrifugal input of p
    degree = a.sum(dim=(0, 1))  # inputs per joint
    return a / degree.clamp_min(1.0)[None, None, :]


class GraphBlock(nn.Module):
    """Spatial graph convolution + temporal convolution with a residual.

    Parameters
    ----------
    cin, cout : int
        Channels.
    adjacency : Tensor
        ``(K, V, V)`` partitions.
    kernel : int
        Temporal kernel (odd).
    stride : int
        Temporal stride.
    dropout : float
        Dropout after the temporal convolution.
    joint_affine : bool
        After the graph convolution's batch norm, a learned scale and shift per channel *and joint* (identity at
        the start), so the shared weights can respond differently at each joint.
    """

    def __init__(self, cin: int, cout: int, adjacency: Tensor, *, kernel: int = 9, stride: int = 1, dropout: float = 0.0,
                 separable: bool = True, adaptive: bool = False, joint_affine: bool = False) -> None:  # fmt: skip
        super().__init__()
        k, v, _ = adjacency.shape
        self.k, self.v, self.cout = k, v, cout
        self.adjacency: Tensor
        self.register_buffer("adjacency", adjacency.clone(), persistent=False)
        self.importance = nn.Parameter(torch.ones(k, v, v))
        # 2s-AGCN's B_k: a learned dense (K, V, V) term added to the tree's partitions (zero at the start), so a
        # joint may hear joints that are not its neighbours (the two hands); free in the one dense matmul.
        self.adaptive = nn.Parameter(torch.zeros(k, v, v)) if adaptive else None
        self.spatial = nn.Conv2d(cin, k * cout, 1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.joint_affine = nn.Parameter(torch.zeros(2, cout, 1, v)) if joint_affine else None
        pad = ((kernel - 1) // 2, 0)
        if separable:  # depthwise temporal filter + pointwise mix: ~kernel times fewer MACs than a dense one
            self.temporal: nn.Module = nn.Sequential(nn.Conv2d(cout, cout, (kernel, 1), (stride, 1), pad, groups=cout),
                                                     nn.Conv2d(cout, cout, 1))  # fmt: skip
        else:
            self.temporal = nn.Conv2d(cout, cout, (kernel, 1), (stride, 1), pad)
        self.bn2 = nn.BatchNorm2d(cout)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        if cin == cout and stride == 1:
            self.residual: nn.Module = nn.Identity()
        else:
            self.residual = nn.Sequential(nn.Conv2d(cin, cout, 1, (stride, 1)), nn.BatchNorm2d(cout))

    def forward(self, x: Tensor) -> Tensor:
        """``(B, Cin, T, V)`` to ``(B, Cout, T', V)``."""
        b, _, t, v = x.shape
        y = (
            self.spatial(x)
            .reshape(b, self.k, self.cout, t, v)
            .permute(0, 2, 3, 1, 4)
            .reshape(b, self.cout, t, self.k * v)
        )
        a = self.adjacency * self.importance
        if self.adaptive is not None:
            a = a + self.adaptive
        y = y @ a.reshape(self.k * v, v)
        y = self.bn1(y)
        if self.joint_affine is not None:
            y = y * (1.0 + self.joint_affine[0]) + self.joint_affine[1]
        y = torch.relu(y)
        y = self.drop(self.bn2(self.temporal(y)))
        return torch.relu(y + self.residual(x))


class STGCN(nn.Module):
    """ST-GCN classifier with content and (optional) style heads.

    Parameters
    ----------
    parents : sequence of int
        ``(V,)`` joint parents.
    in_channels : int
        Features per joint ``C``.
    num_contents, num_styles : int
        Classes (``num_styles = 0``: no style head).
    channels : sequence of int
        Output channels per block.
    strides : sequence of int
        Temporal stride per block.
    kernel : int
        Temporal kernel.
    dropout : float
        Dropout in the blocks and before the heads.
    pool : int
        Average-pool the input over this many frames first (2: 25 fps windows are read at 12.5 fps).
    separable : bool
        Depthwise + pointwise temporal convolutions.
    readout : int
        ``0``: the features are the last block averaged over frames and joints (Yan et al.). ``n > 0``:
        averaged over frames only, and the ``(C, V)`` map (which joint did what: a raised left hand and a
        raised right hand average to the same vector over joints) goes through a linear layer to ``n``
        features with a ReLU.
    adaptive : bool
        Add a learned dense adjacency to each block's partitions (Shi et al. 2019, 2s-AGCN).
    joint_input : int
        ``n > 0``: each joint's input features first go through *its own* linear map to ``n`` channels (batch
        norm, ReLU; one grouped 1 x 1 convolution), so the blocks' weights, shared by all joints, start from
        features that know which joint they belong to (the semantics SGN, Zhang et al. 2020, adds as joint
        embeddings). ``0``: the blocks read the raw features.
    joint_affine : bool
        Every block gets a per-joint scale and shift of its graph-convolution output (:class:`GraphBlock`).
    centre : bool
        Subtract from the pose channels (joint positions and 6D rotations, :data:`~skelanim.learn.joints.POSE_CHANNELS`) their mean over
        the window's frames: the network sees how the body moves about its window-mean posture, not the posture
        (a stooped back, arms carried forward), which a style changes and a content need not.
    rescale : bool
        With ``centre``: the centred pose channels and the position changes (:data:`~skelanim.learn.joints.CHANGE_CHANNELS`)
        are also divided by the window's RMS pose deviation (floored at :attr:`RESCALE_FLOOR`), so a small gesture
        (an elderly wave at chest height) is seen at the size of a full one; the root's channels keep their scale.
    """

    RESCALE_FLOOR = 0.05
    """Smallest window RMS (standardised units) divided by: the training windows' 1 % quantile is about 0.06."""

    def __init__(self, parents: Sequence[int], in_channels: int, num_contents: int, num_styles: int = 0, *,
                 channels: Sequence[int] = (32, 48, 64, 64), strides: Sequence[int] = (1, 2, 1, 2),
                 kernel: int = 5, dropout: float = 0.1, pool: int = 2, separable: bool = False,
                 readout: int = 0, adaptive: bool = False, joint_input: int = 0,
                 joint_affine: bool = False, centre: bool = False, rescale: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.pool = int(pool)
        self.centre, self.rescale = bool(centre), bool(rescale)
        if self.rescale and not self.centre:
            raise ValueError("rescale needs centre (it scales the deviations from the window mean)")
        a = spatial_partitions(parents)
        v = len(parents)
        self.data_bn = nn.BatchNorm1d(v * in_channels)
        self.joint_input = (
            nn.Sequential(nn.Conv1d(v * in_channels, v * joint_input, 1, groups=v), nn.BatchNorm1d(v * joint_input), nn.ReLU())
            if joint_input else None
        )  # fmt: skip
        blocks, cin = [], joint_input or in_channels
        for cout, stride in zip(channels, strides):
            blocks.append(GraphBlock(cin, cout, a, kernel=kernel, stride=stride, separable=separable, adaptive=adaptive,
                                     joint_affine=joint_affine))  # fmt: skip
            cin = cout
        self.blocks = nn.ModuleList(blocks)
        self.readout = nn.Sequential(nn.Linear(cin * v, readout), nn.ReLU()) if readout else None
        cin = readout or cin
        self.drop = nn.Dropout(dropout)
        self.content_head = nn.Linear(cin, num_contents)
        self.style_head = nn.Linear(cin, num_styles) if num_styles else None
        self.feature_dim = cin

    def features(self, x: Tensor) -> Tensor:
        """``(B, T, V, C)`` joint features to ``(B, D)`` features (``readout``)."""
        b, t, v, c = x.shape
        if self.centre:
            pose = x[..., list(POSE_CHANNELS)]
            x, deviation = x.clone(), pose - pose.mean(dim=1, keepdim=True)
            if self.rescale:
                rms = deviation.pow(2).mean(dim=(1, 2, 3), keepdim=True).sqrt().clamp_min(self.RESCALE_FLOOR)  # (B, 1, 1, 1)
                deviation = deviation / rms
                x[..., list(CHANGE_CHANNELS)] = x[..., list(CHANGE_CHANNELS)] / rms
            x[..., list(POSE_CHANNELS)] = deviation
        x = self.data_bn(x.reshape(b, t, v * c).transpose(1, 2))
        if self.pool > 1:
            x = nn.functional.avg_pool1d(x, self.pool, self.pool, ceil_mode=True)
        if self.joint_input is not None:
            x = self.joint_input(x)
        x = x.reshape(b, v, x.shape[1] // v, -1).permute(0, 2, 3, 1)
        for block in self.blocks:
            x = block(x)
        if self.readout is not None:
            return self.readout(x.mean(dim=2).flatten(1))
        return x.mean(dim=(2, 3))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
        """Logits.

        Parameters
        ----------
        x : Tensor
            ``(B, T, V, C)``.

        Returns
        -------
        tuple
            Content logits ``(B, num_contents)``, style logits ``(B, num_styles)`` or ``None``, features ``(B, D)``.
        """
        return _heads(self, self.features(x))


class TemporalCNN(nn.Module):
    """Baseline: 1-D temporal convolutions over flattened joint features.

    Parameters
    ----------
    num_joints, in_channels : int
        ``V`` and ``C`` (the input is ``(B, T, V, C)``, flattened to ``V * C`` channels).
    num_contents, num_styles : int
        Classes.
    channels : sequence of int
        Channels per layer.
    strides : sequence of int
        Temporal strides.
    kernel : int
        Temporal kernel.
    dropout : float
        Before the heads.
    """

    def __init__(self, num_joints: int, in_channels: int, num_contents: int, num_styles: int = 0, *,
                 channels: Sequence[int] = (64, 96, 128, 128), strides: Sequence[int] = (1, 2, 2, 1),
                 kernel: int = 5, dropout: float = 0.1) -> None:  # fmt: skip
        super().__init__()
        layers: list[nn.Module] = [nn.BatchNorm1d(num_joints * in_channels)]
        cin = num_joints * in_channels
        for cout, stride in zip(channels, strides):
            layers += [nn.Conv1d(cin, cout, kernel, stride, (kernel - 1) // 2), nn.BatchNorm1d(cout), nn.ReLU()]
            cin = cout
        self.net = nn.Sequential(*layers)
        self.drop = nn.Dropout(dropout)
        self.content_head = nn.Linear(cin, num_contents)
        self.style_head = nn.Linear(cin, num_styles) if num_styles else None
        self.feature_dim = cin

    def features(self, x: Tensor) -> Tensor:
        """``(B, T, V, C)`` to ``(B, D)``."""
        b, t, v, c = x.shape
        return self.net(x.reshape(b, t, v * c).transpose(1, 2)).mean(-1)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
        """As :meth:`STGCN.forward`."""
        return _heads(self, self.features(x))


class Members(nn.Module):
    """``K`` recognition networks of one kind whose outputs are reported side by side (a deep ensemble).

    Parameters
    ----------
    nets : sequence of nn.Module
        :class:`STGCN` or :class:`TemporalCNN` networks with the same classes.
    """

    def __init__(self, nets: Sequence[STGCN | TemporalCNN]) -> None:
        super().__init__()
        if len(nets) < 2:
            raise ValueError(f"an ensemble needs at least two members, got {len(nets)}")
        self.members = nn.ModuleList(nets)
        self.feature_dim = sum(int(net.feature_dim) for net in nets)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
        """``(B, T, V, C)`` to content logits ``(K, B, classes)``, style logits ``(K, B, styles)`` (or ``None``)
        and the members' features concatenated ``(B, K * D)``."""
        outs = [net(x) for net in self.members]
        styles = [o[1] for o in outs]
        style = None if any(s is None for s in styles) else torch.stack(styles)
        return torch.stack([o[0] for o in outs]), style, torch.cat([o[2] for o in outs], dim=-1)
