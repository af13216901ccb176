"""Augmentation for training: the chordal mean pose of a data set, amplitude scaling about it, frame jitter,
ground travel scaling, and turn relabelling (a walk's heading made to sweep, or a turn's heading held)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from skelanim.core.rotations import matrix_to_rotvec, rotvec_to_matrix

__all__ = ["TurnClasses", "jitter_frames", "log_uniform", "scale_amplitude", "scale_travel", "turn_classes", "turn_relabel"]

TURN_DEGREES = (40.0, 100.0)
"""Range of the heading sweep, in degrees per window, given to a window relabelled as a turn (the Bandai
``walk-turn-*`` takes turn 90° in all; their 64-frame windows by a median of 46-99°, against at most 31°
for a straight walk)."""

STRAIGHT_DEGREES = 10.0
"""A window relabelled as straight sweeps ``U(-10°, 10°)``."""


def log_uniform(bounds: tuple[float, float], size: tuple[int, ...] = (), generator: torch.Generator | None = None) -> Tensor:
    """Factors drawn log-uniformly from ``[LO, HI]`` (playback speed, amplitude), of shape ``size``.

    ``LO == HI`` gives ``LO`` everywhere without drawing, so the generator's stream is untouched.
    """
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    if hi <= lo:
        return torch.full(size, float(bounds[0]))
    return torch.empty(size).uniform_(lo, hi, generator=generator).exp()


def scale_amplitude(rot: Tensor, mean: Tensor, factor: Tensor) -> Tensor:
    """Local joint rotations moved toward (``factor < 1``) or away from (``> 1``) a mean pose along the geodesic:
    ``R' = M (M^T R)^a`` for every joint but the body root (index 0, kept).

    Parameters
    ----------
    rot : Tensor
        ``(B, T, M, 3, 3)`` (body root in world).
    mean : Tensor
        ``(M, 3, 3)`` mean local rotations (:func:`~skelanim.core.rotations.mean_rotations`), or ``(B, M, 3, 3)``, one per window.
    factor : Tensor
        ``(B,)`` amplitude factors ``a``.

    Returns
    -------
    Tensor
        ``(B, T, M, 3, 3)``.
    """
    m = mean[..., 1:, :, :] if mean.dim() == 3 else mean[:, None, 1:]
    rel = matrix_to_rotvec(m.transpose(-1, -2) @ rot[:, :, 1:]) * factor[:, None, None, None]
    return torch.cat([rot[:, :, :1], m @ rotvec_to_matrix(rel)], dim=2)


def scale_travel(pelvis: Tensor, positions: Tensor, factor: Tensor, up: int) -> tuple[Tensor, Tensor]:
    """Windows whose body covers ``factor`` times as much ground, the limbs' motion unchanged: the pelvis's
    displacement from the window's first frame across the floor (the two axes other than ``up``) is scaled, its
    height kept, and every joint moved with it. The same steps at another ground speed: Bandai's elderly style
    jogs at a walk's speed (0.86 body heights a second against 1.2-2.8 for the other styles' runs), so a
    recogniser that told a run by its travel alone calls it a walk.

    Parameters
    ----------
    pelvis : Tensor
        ``(B, T, 3)`` body-root positions.
    positions : Tensor
        ``(B, T, M, 3)`` joint positions.
    factor : Tensor
        ``(B,)`` travel factors.
    up : int
        The up axis.

    Returns
    -------
    tuple of Tensor
        The moved ``pelvis`` ``(B, T, 3)`` and ``positions`` ``(B, T, M, 3)``.
    """
    shift = (pelvis - pelvis[:, :1]) * (factor.to(pelvis)[:, None, None] - 1.0)
    shift[..., up] = 0.0
    return pelvis + shift, positions + shift[:, :, None]


@dataclass(frozen=True)
class TurnClasses:
    """Content triples ``(X, X-turn-left, X-turn-right)`` of a vocabulary, for :func:`turn_relabel`.

    Attributes
    ----------
    base, left, right : Tensor
        ``(K,)`` class indices of each triple's straight, left-turn and right-turn content.
    sign : float
        Sign of the turning rate (heading change per frame) of a left turn in the data, measured on the
        training windows (:func:`turn_classes`), so the rig's axes need not be assumed.
    """

    base: Tensor
    left: Tensor
    right: Tensor
    sign: float


def jitter_frames(rot: Tensor, offsets: Tensor, parents: Sequence[int]) -> Tensor:
    """Local rotations ``(B, T, M, 3, 3)`` with each joint's frame turned by its own rotation and its children
    compensated: ``R'_k = D_p^T R_k D_k`` (``offsets`` ``(B, M, 3, 3)`` holds ``D``, one per sample and joint;
    the body root, joint 0, keeps its rotation). Each joint's world rotation becomes ``W_k D_k`` and each bone
    turns by its parent's ``D`` alone, not by everything above it: how a capture solver shares rotation between
    neighbouring joints (Bandai-Namco's upper arms against its clavicles) becomes noise, while the pose moves
    little."""
    d = offsets.clone()
    d[:, 0] = torch.eye(3, dtype=d.dtype)
    dp = d[:, [max(int(p), 0) for p in parents]]
    return dp[:, None].transpose(-1, -2) @ rot @ d[:, None]


def turn_classes(contents: Sequence[str], labels: Tensor, turning: Tensor) -> TurnClasses | None:
    """The ``(X, X-turn-left, X-turn-right)`` content triples present in ``contents`` and the sign of a left turn.

    Parameters
    ----------
    contents : sequence of str
        The vocabulary.
    labels : Tensor
        ``(N,)`` content index of each training window.
    turning : Tensor
        ``(N,)`` each window's mean turning rate (heading change per frame).

    Returns
    -------
    TurnClasses or None
        ``None`` without any triple, or when no window of a turn class is given to settle the sign.
    """
    triples = [(contents.index(c), contents.index(f"{c}-turn-left"), contents.index(f"{c}-turn-right"))
               for c in contents if f"{c}-turn-left" in contents and f"{c}-turn-right" in contents]  # fmt: skip
    if not triples:
        return None
    base, left, right = (torch.tensor(t) for t in zip(*triples))
    is_left, is_right = torch.isin(labels, left), torch.isin(labels, right)
    if not is_left.any() or not is_right.any():
        return None
    sign = 1.0 if float(turning[is_left].mean()) > float(turning[is_right].mean()) else -1.0
    return TurnClasses(base, left, right, sign)


def turn_relabel(turning: Tensor, content: Tensor, classes: TurnClasses, probability: float,
                 generator: torch.Generator) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Relabel windows of a turn triple by giving them another heading sweep.

    A chosen window (each with ``probability``, among those of a triple's classes) draws one of its triple's
    three classes; its turning rate keeps its sway about its own mean, and the mean is replaced by a sweep of
    ``U(40°, 100°)`` (:data:`TURN_DEGREES`) over the window to the drawn side for a turn, ``U(-10°, 10°)``
    (:data:`STRAIGHT_DEGREES`) for the straight class. In heading-frame features a body that walks the same
    steps while its heading turns differs only in the turning rate, so this is exact for everything else the
    recogniser sees: a turn is then told by turning, not by how a style carries its arms.

    Parameters
    ----------
    turning : Tensor
        ``(B, T)`` turning rate per frame (radians).
    content : Tensor
        ``(B,)`` content labels.
    classes : TurnClasses
        From :func:`turn_classes`.
    probability : float
        Chance that an eligible window is relabelled.
    generator : torch.Generator
        Random source.

    Returns
    -------
    tuple of Tensor
        The new turning rates ``(B, T)`` and labels ``(B,)``.
    """
    b, t = turning.shape
    triple = torch.full((b,), -1, dtype=torch.long)
    for k, members in enumerate(zip(classes.base, classes.left, classes.right)):
        triple[torch.isin(content, torch.stack(members))] = k
    chosen = (triple >= 0) & (torch.rand(b, generator=generator) < probability)
    if not chosen.any():
        return turning, content
    kind = torch.randint(0, 3, (b,), generator=generator)  # 0 straight, 1 left, 2 right
    lo, hi = (math.radians(d) for d in TURN_DEGREES)
    sweep = torch.empty(b).uniform_(lo, hi, generator=generator) * classes.sign
    sweep = torch.where(kind == 2, -sweep, sweep)
    straight = torch.empty(b).uniform_(-1.0, 1.0, generator=generator) * math.radians(STRAIGHT_DEGREES)
    sweep = torch.where(kind == 0, straight, sweep)
    new_turning = turning - turning.mean(dim=1, keepdim=True) + (sweep / t)[:, None]
    which = triple.clamp_min(0)
    new_label = torch.stack([classes.base[which], classes.left[which], classes.right[which]], dim=1).gather(1, kind[:, None])[:, 0]
    return (torch.where(chosen[:, None], new_turning, turning), torch.where(chosen, new_label, content))
