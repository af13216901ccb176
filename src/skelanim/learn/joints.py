"""The recogniser's input: per-joint features of motion windows, and their left/right mirror image.

Each joint of a frame carries 16 numbers, all in the frame's own heading frame
(:func:`skelanim.data.features.heading_features`): its position relative to the pelvis (3), that position's
per-frame change (3), its 6D rotation (6), and the four root features (pelvis step along and across the
heading, turning rate, pelvis height) shared by every joint; with ``path`` three more shared ones
(:func:`skelanim.data.features.window_path`). :func:`mirror_features` mirrors them (a signed permutation of the
channels, so it commutes with resampling or centring over the frames), :func:`mirror_labels` maps the contents.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from skelanim.data.features import heading_features, window_path
from skelanim.data.rig import Rig

__all__ = ["CHANGE_CHANNELS", "IN_CHANNELS", "PATH_CHANNELS", "POSE_CHANNELS", "RATE_CHANNELS", "ROTATION_CHANNELS",
           "SYMMETRIC_CONTENTS", "TURN_CHANNEL",
           "joint_features", "mirror_features", "mirror_labels", "resample_features"]

#: Per-joint features: position, its change, 6D rotation, root features.
IN_CHANNELS = 16
#: Channels that hold the joint's local rotation (6D).
ROTATION_CHANNELS = (6, 7, 8, 9, 10, 11)
#: Channels that hold the pose (position, 6D rotation) rather than its change or the root's motion.
POSE_CHANNELS = (0, 1, 2, *ROTATION_CHANNELS)
#: Channels that hold the change of the joint positions from the previous frame.
CHANGE_CHANNELS = (3, 4, 5)
#: Channels that are per-frame changes (the joints' and the root's), which scale with the playback speed.
RATE_CHANNELS = (3, 4, 5, 12, 13, 14)
#: The turning-rate channel (root features start at 12: step along, step across, turning rate, pelvis height).
TURN_CHANNEL = 14
#: Channels added by the window path features (:func:`joint_features` with ``path=True``).
PATH_CHANNELS = 3
#: Contents whose mirror image is the same content (besides ``*left*``/``*right*`` pairs, which swap).
SYMMETRIC_CONTENTS = ("walk", "run", "dash", "walk-back", "bow", "raise-up-both-hands", "wave-both-hands")


def resample_features(x: Tensor, frames: int) -> Tensor:
    """Joint features ``(B, L, M, C)`` of ``L`` frames played back in ``frames`` frames ``(B, frames, M, C)``:
    a window read about ``L / frames`` times faster than it was recorded. Output frame ``k`` is input frame
    ``k (L - 1) / (frames - 1)`` (linear interpolation), so the per-frame changes (:data:`RATE_CHANNELS`) are
    scaled by ``(L - 1) / (frames - 1)``."""
    b, length, m, c = x.shape
    flat = x.permute(0, 2, 3, 1).reshape(b, m * c, length)
    out = torch.nn.functional.interpolate(flat, size=frames, mode="linear", align_corners=True)
    out = out.reshape(b, m, c, frames).permute(0, 3, 1, 2).clone()
    out[..., list(RATE_CHANNELS)] *= (length - 1) / max(frames - 1, 1)
    return out


def mirror_labels(contents: Sequence[str]) -> Tensor:
    """Content index of each class's mirror image, ``-1`` where it has none in the vocabulary.

    ``walk-left`` and ``walk-right`` (any ``left``/``right`` pair present) swap; contents in
    :data:`SYMMETRIC_CONTENTS` keep their label; everything else (``bye`` is waved with the right hand,
    ``guide`` points with one) is never mirrored.

    Returns
    -------
    Tensor
        ``(C,)`` long.
    """
    out = []
    for name in contents:
        words = name.split("-")
        swapped = "-".join({"left": "right", "right": "left"}.get(w, w) for w in words)
        if swapped != name:
            out.append(contents.index(swapped) if swapped in contents else -1)
        else:
            out.append(contents.index(name) if name in SYMMETRIC_CONTENTS else -1)
    return torch.tensor(out, dtype=torch.long)


def mirror_features(x: Tensor, perm: Tensor, lateral: int, reflections: tuple[Tensor, Tensor] | None = None) -> Tensor:
    """Left/right mirror image of joint features (:func:`joint_features`).

    Positions and their changes flip their ``lateral`` component, the sideways pelvis step and the turning
    rate change sign, and joints trade places with their partners (``perm``); the window path features, if
    present, flip their sideways offset and heading change. Rotations ``R`` of joint ``j`` become
    ``L_j R_{P[j]} N_j`` with diagonal reflections (on 6D features, entry ``i`` of column ``k`` is multiplied
    by ``l_i n_k``): ``reflections`` from :func:`skelanim.learn.mirror.rig_mirror` (a rig whose joints have
    their own rest axes, :meth:`Recognizer.mirror_map`), or by default ``S R S`` with ``S`` the reflection of
    ``lateral``, exact for a skeleton whose joint axes are the world's at rest (the mirror image of
    :func:`skelanim.ops.mirror.mirror`).

    Parameters
    ----------
    x : Tensor
        ``(B, T, M, C)``, ``C`` = 16 or 19 (:func:`joint_features`).
    perm : Tensor
        ``(M,)`` left/right permutation of the model joints.
    lateral : int
        The heading-frame axis across the body.
    reflections : (Tensor, Tensor), optional
        ``left``, ``right`` ``(M, 3)``: the diagonals ``L_j``, ``N_j``.

    Returns
    -------
    Tensor
        ``(B, T, M, C)``.
    """
    m = x.shape[-2]
    s = torch.ones(3, dtype=x.dtype, device=x.device)
    s[lateral] = -1.0
    left, right = reflections if reflections is not None else (s.expand(m, 3), s.expand(m, 3))
    left, right = left.to(x), right.to(x)
    six = torch.cat([left * right[:, :1], left * right[:, 1:2]], dim=-1)  # (M, 6)
    root = x.new_tensor([1.0, -1.0, -1.0, 1.0])
    path = x.new_tensor([1.0, -1.0, -1.0])[: x.shape[-1] - IN_CHANNELS]
    shared = torch.cat([root, path]).expand(m, -1)
    return x[..., perm, :] * torch.cat([s.expand(m, 3), s.expand(m, 3), six, shared], dim=-1)


def joint_features(rot: Tensor, pelvis: Tensor, yaw: Tensor, positions: Tensor, rig: Rig, *,
                   path: bool = False) -> Tensor:  # fmt: skip
    """Per-joint recogniser input (module docstring).

    Parameters
    ----------
    rot : Tensor
        ``(B, T, M, 3, 3)`` model-joint rotations (body root in world).
    pelvis : Tensor
        ``(B, T, 3)``.
    yaw : Tensor
        ``(B, T)``.
    positions : Tensor
        ``(B, T, M, 3)`` world positions.
    rig : Rig
        Up axis, floor, height.
    path : bool
        Append the window path features (:func:`skelanim.data.features.window_path`).

    Returns
    -------
    Tensor
        ``(B, T, M, 16)`` (unnormalised): position, its change, 6D rotation, root features; ``(B, T, M, 19)``
        with ``path``.
    """
    f = heading_features(rot, pelvis, yaw, positions, up=rig.up, floor=rig.floor, height=rig.height)
    m = positions.shape[-2]
    root = f["root"]
    if path:
        root = torch.cat([root, window_path(pelvis, yaw, up=rig.up, height=rig.height)], dim=-1)
    root = root[..., None, :].expand(*root.shape[:-1], m, root.shape[-1])
    return torch.cat([f["positions"], f["velocities"], f["rot6d"], root], dim=-1)

