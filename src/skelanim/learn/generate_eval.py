"""Scores of a generator (:func:`evaluate_generation`): FID, recognition, diversity, foot skating, limb speed,
foot contacts and pose outliers of its samples against real windows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from skelanim.data.dataset import MotionDataset
from skelanim.data.features import yaw_matrix
from skelanim.learn.common import spread_sample
from skelanim.learn.generate import SKATE_THRESHOLD, Generator, foot_elevation, limb_speed
from skelanim.metrics.distribution import diversity, fid, outlier_share
from skelanim.metrics.kinematic import foot_skating
from skelanim.nn.device import module_device

__all__ = ["POSE_EVERY", "evaluate_generation", "heading_poses"]

#: Every how many frames a window's pose counts in ``pose_outliers`` (:func:`evaluate_generation`).
POSE_EVERY = 4


def heading_poses(pos: Tensor, yaw: Tensor, up: int) -> Tensor:
    """Every ``POSE_EVERY``-th frame's pose for :func:`~skelanim.metrics.distribution.outlier_share`: ``(B, T, M, 3)``
    positions and ``(B, T)`` headings to ``(B * ceil(T / POSE_EVERY), 3 M)`` positions relative to the first
    joint, turned so that the heading is zero (the same pose facing anywhere is the same row)."""
    pos, yaw = pos[:, ::POSE_EVERY].double(), yaw[:, ::POSE_EVERY].double()
    rel = (pos - pos[..., :1, :]) @ yaw_matrix(yaw, up)  # row vectors times R: R^T applied, the heading undone
    return rel.reshape(-1, rel.shape[-2] * 3)


@torch.no_grad()
def evaluate_generation(model: Generator, embed: Callable[..., tuple[Tensor, Tensor]], train_ds: MotionDataset,
                        test_ds: MotionDataset, *, stride: int = 8, max_samples: int = 2000, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """FID, recognition, diversity and foot skating of generated windows against real ones.

    ``A`` = real training windows (``stride``), ``B`` = real test windows, ``G`` = one generated window per
    window of ``A`` (its content and style; at most ``max_samples``, drawn evenly). ``fid = FID(G, B)``,
    ``fid_real = FID(A, B)`` (two disjoint real sets); ``recognised`` = share of ``G`` the recogniser assigns
    the requested content; ``diversity`` of ``G``'s features (:func:`~skelanim.metrics.distribution.diversity`);
    foot skating (heights per second) of ``G`` and of ``B``. Two checks that low skating is not bought by
    motion that hardly moves: ``limb_speed`` (mean speed of the joints relative to the pelvis, heights per
    second) and ``contact_share`` (share of foot frames within the skating threshold of the foot's lowest
    point in its window; a model that hovers its feet scores low here and on skating), for ``G`` and ``B``.
    One check that the poses themselves are real ones: ``pose_outliers``, the share of ``G``'s frames (every
    ``POSE_EVERY``-th) whose heading-aligned root-relative pose is farther from every frame of ``A`` than 99 %
    of ``B``'s frames are (:func:`~skelanim.metrics.distribution.outlier_share`; ``B`` itself: 0.01).

    Returns
    -------
    dict
        ``{"fid", "fid_real", "recognised", "diversity", "diversity_real", "foot_skating", "foot_skating_real",
        "limb_speed", "limb_speed_real", "contact_share", "contact_share_real", "pose_outliers", "samples",
        "real_windows"}``.
    """
    rig, t = model.rig, model.length

    def movement(pos: Tensor) -> Tensor:
        """Summed limb speed and contact share of ``(B, T, M, 3)`` positions in heights: ``(2,)``."""
        speed = limb_speed(pos, model.fps).mean(dim=(1, 2))
        contact = (foot_elevation(pos, rig.feet, rig.up) < SKATE_THRESHOLD).float().mean(dim=(1, 2))
        return torch.stack([speed.sum(), contact.sum()]).double()

    def real_features(ds: MotionDataset, win: Tensor) -> tuple[Tensor, float, Tensor, Tensor]:
        feats, skates, moves, poses = [], [], torch.zeros(2, dtype=torch.float64), []
        for i in range(0, len(win), 256):
            g = ds.gather(win[i : i + 256], t, keys=("rot", "pelvis", "yaw", "positions"))
            feats.append(embed(g["rot"], g["pelvis"], g["yaw"], g["positions"])[1])
            skate = foot_skating(g["positions"] / rig.height, rig.feet, model.fps, up_axis=rig.up, threshold=SKATE_THRESHOLD)
            skates.append(skate * len(g["rot"]))
            moves += movement(g["positions"] / rig.height)
            poses.append(heading_poses(g["positions"] / rig.height, g["yaw"], rig.up))
        return torch.cat(feats), sum(skates) / len(win), moves / len(win), torch.cat(poses)

    win_a = train_ds.windows(t, stride)
    win_a = spread_sample(win_a, max_samples)
    win_b = test_ds.windows(t, stride)
    feat_a, _, _, pose_a = real_features(train_ds, win_a)
    feat_b, skate_b, move_b, pose_b = real_features(test_ds, win_b)
    contents = [train_ds.clips[i].labels["content"] for i in win_a[:, 0].tolist()]
    styles = [train_ds.clips[i].labels["style"] for i in win_a[:, 0].tolist()]
    g = torch.Generator().manual_seed(seed)
    feats, hits, skate, move_g, pose_g = [], 0.0, 0.0, torch.zeros(2, dtype=torch.float64), []
    for i in range(0, len(contents), 256):
        x = model.sample(contents[i : i + 256], styles[i : i + 256], generator=g)  # on the CPU
        pos, rot, pelvis, yaw = (t.cpu() for t in model.positions(x.to(module_device(model))))  # FK where the model is
        probs, f = embed(rot, pelvis, yaw, pos * rig.height)
        feats.append(f)
        hits += float((probs.argmax(-1) == torch.tensor(model.contents.indices(contents[i : i + 256]))).sum())
        skate += foot_skating(pos, rig.feet, model.fps, up_axis=rig.up, threshold=SKATE_THRESHOLD) * len(x)
        move_g += movement(pos)
        pose_g.append(heading_poses(pos, yaw, rig.up))
    feat_g = torch.cat(feats)
    pose_outliers, _ = outlier_share(torch.cat(pose_g), pose_a, pose_b)
    n = len(contents)
    return {"fid": fid(feat_g, feat_b), "fid_real": fid(feat_a, feat_b), "recognised": hits / n,
            "diversity": diversity(feat_g), "diversity_real": diversity(feat_a), "foot_skating": skate / n,
            "foot_skating_real": skate_b, "limb_speed": float(move_g[0]) / n, "limb_speed_real": float(move_b[0]),
            "contact_share": float(move_g[1]) / n, "contact_share_real": float(move_b[1]),
            "pose_outliers": pose_outliers, "samples": n, "real_windows": len(win_b)}  # fmt: skip
