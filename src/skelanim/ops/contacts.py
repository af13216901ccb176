"""Foot contact labels from joint heights and speeds.

A foot joint is in contact at frame ``t`` when both

* its height above its own floor level is below ``height_threshold`` — the floor level of a joint is its
  lowest up-coordinate over the clip (so ankles and toes, which rest at different heights, are each
  compared with where they rest; the clip is assumed to touch flat ground at some point), and
* its speed ``|dp/dt|`` (central differences, one-sided at the ends, times ``fps``) is below
  ``speed_threshold``.

Both thresholds default to fractions of the body height ``h`` — ``0.05 h`` and ``0.25 h`` per second
(about 8.5 cm and 0.43 m/s for a 1.7 m person) — so they work in any unit. The up axis is the skeleton's
(:meth:`Motion.up_direction`, its sign included: an upside-down source's floor is at its largest
coordinate) for a motion, +Y by default for a bare array; the height is :attr:`Motion.stature`, the standing
body's size from its bone lengths, so that a crawl (posed a third as high) is judged by a walk's thresholds
(:attr:`Motion.height`, the pose's extent, where the joint names find no head or foot).

What the labels mean: a *planted* joint, low and nearly still, the frames where a foot can be pinned to the floor
(foot-skating cleanup, contact losses, IK foot locks). That is less than a gait's stance phase: at heel strike and
push-off the foot rolls faster than 0.25 h/s, so on the normal walks of the shared mocap (both Bandai-Namco
datasets, PyMO, DeepMimic) each side (ankle or toe) is labelled in 44-52 % of the frames, both in 0-6 % and neither
in 4-10 %, where a walk has about 20 % double support and no flight. For stance and swing as gait analysis counts
them, pass ``speed_threshold=1.0 * height`` (:data:`skelanim.metrics.gait.SPEED_FRACTION`, which ``skelanim gait``
uses): 54-67 % per side, both in 13-33 %, neither in none, on the same walks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import torch

from skelanim.core._tensor import ArrayLike, to_numpy
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.errors import ShapeError, SkeletonError
from skelanim.io.positions import JointPositions
from skelanim.ops._common import signed_up

__all__ = ["DEFAULT_HEIGHT_FRACTION", "DEFAULT_SPEED_FRACTION", "find_feet", "foot_contacts"]

#: Default height threshold as a fraction of the body height.
DEFAULT_HEIGHT_FRACTION = 0.05
#: Default speed threshold in body heights per second.
DEFAULT_SPEED_FRACTION = 0.25

_FOOT = re.compile(r"foot|ankle", re.IGNORECASE)
_TOE = re.compile(r"toe|ball", re.IGNORECASE)  # Unreal's ball_l
#: Helpers named like a foot that are no part of the leg (Unreal's ik_foot_l under ik_foot_root: contact throughout).
_NOT_A_LIMB = re.compile(r"(^|[^a-z])(ik|ctrl|target|pole|helper)([^a-z]|$)", re.IGNORECASE)


def _depth(skeleton: Skeleton, j: int) -> int:
    return len(skeleton.path_to_root(j)) - 1


def find_feet(skeleton: Skeleton) -> list[int]:
    """Foot joints found by name: the left/right pair named like ``foot``/``ankle`` and the pair named
    like ``toe`` or ``ball``, each the shallowest such pair (shortest name on ties), IK and control helpers
    (``ik_foot_l``) left out; without a toe pair, a pair of the feet's children named like a foot (SMPL's
    ``left_foot`` below ``left_ankle``).

    Returns
    -------
    list[int]
        ``[left foot, right foot, left toe, right toe]`` (the toe pair left out when there is none).

    Raises
    ------
    SkeletonError
        When no left/right foot or ankle pair is found.
    """
    names = skeleton.names
    pairs = [(l, r) for l, r in skeleton.left_right_pairs() if not _NOT_A_LIMB.search(names[l] + " " + names[r])]
    out: list[int] = []
    for pattern in (_FOOT, _TOE):
        cands = [(l, r) for l, r in pairs if pattern.search(names[l]) and pattern.search(names[r])]
        if pattern is _FOOT:
            cands = [(l, r) for l, r in cands if not _TOE.search(names[l])]
            if not cands:
                raise SkeletonError("no left/right foot or ankle joints found by name; pass joints= to foot_contacts")
        elif not cands:  # a foot named below the ankle (SMPL) is the toe
            cands = [(l, r) for l, r in pairs if _FOOT.search(names[l]) and _FOOT.search(names[r])
                     and int(skeleton.parents[l]) == out[0] and int(skeleton.parents[r]) == out[1]]  # fmt: skip
            if not cands:
                continue
        l, r = min(cands, key=lambda p: (_depth(skeleton, p[0]), len(names[p[0]]), p[0]))
        out.extend([l, r])
    return out


def foot_contacts(
    source: Motion | JointPositions | ArrayLike,
    fps: float | None = None,
    *,
    joints: Sequence[int | str] | None = None,
    height_threshold: float | None = None,
    speed_threshold: float | None = None,
    up_axis: int | str | None = None,
    height: float | None = None,
) -> ArrayLike:
    """Per-frame contact labels of foot joints.

    Parameters
    ----------
    source:
        A :class:`Motion`, world positions ``(F, J, 3)`` (numpy or torch), or a
        :class:`~skelanim.io.positions.JointPositions` (its fps, its names for ``joints``; where its parents are
        known, its feet found by name and its stature measured as a motion's; numpy out).
    fps:
        Frame rate; default ``motion.fps`` (required for arrays).
    joints:
        ``K`` joints to label, by index (or by name for a motion); default :func:`find_feet` (motions only).
    height_threshold:
        Height above each joint's floor level (file units) below which it may be in contact; default
        ``0.05 * height``.
    speed_threshold:
        Speed (file units per second) below which it may be in contact; default ``0.25 * height``.
    up_axis:
        ``0/1/2`` or ``"x"/"y"/"z"``, signed ``"-y"`` for data whose up points down (camera-space poses);
        default the motion's :meth:`Motion.up_direction` (sign included), or +Y for arrays.
    height:
        Body height for the defaults; default :attr:`Motion.stature` (the standing body's, from bone lengths,
        so a crawl's thresholds are a walk's; where the joint names find no head or foot, :attr:`Motion.height`
        measured along ``up_axis`` when it is given), or for arrays the extent of frame 0 along the up axis.

    Returns
    -------
    ``(F, K)`` bool: a torch tensor for a motion or tensor input, numpy for numpy input.
    """
    if isinstance(source, JointPositions):
        fps = source.fps if fps is None else fps
        skeleton = source.skeleton()
        if height is None and skeleton is not None:
            height = skeleton.stature()  # as a motion's: the body's size, not its pose's (None: the pose's)
        if joints is None:
            if skeleton is None:
                raise ShapeError("foot_contacts needs joints= (names or indices) for joint positions without parents")
            joints = find_feet(skeleton)
        try:
            joints = [source.index(j) if isinstance(j, str) else int(j) for j in joints]
        except KeyError as err:
            raise SkeletonError(str(err.args[0])) from None
        source = source.positions
    if isinstance(source, Motion):
        if source.num_frames < 1:
            raise ShapeError("foot_contacts needs a motion with at least one frame")
        fps = source.fps if fps is None else fps
        up, sign = signed_up(source, up_axis)
        idx = find_feet(source.skeleton) if joints is None else source.skeleton.indices(joints)
        size = source.skeleton.stature() if height is None else float(height)
        h = source.height_along(up) if size is None else size
        pos = source.positions()[:, idx].detach().numpy()
        as_numpy = False
    else:
        if fps is None:
            raise ShapeError("foot_contacts needs fps for a positions array")
        if joints is None:
            raise ShapeError("foot_contacts needs joints= (indices) for a positions array")
        arr = np.asarray(to_numpy(source), dtype=np.float64)
        if arr.ndim != 3 or arr.shape[-1] != 3 or arr.shape[0] < 1:
            raise ShapeError(f"positions must be (F, J, 3), got {arr.shape}")
        if any(isinstance(j, str) for j in joints):
            raise ShapeError("joints must be indices for a positions array (names need a skeleton)")
        up, sign = signed_up(None, up_axis)
        idx = [int(j) for j in joints]
        if any(not -arr.shape[1] <= j < arr.shape[1] for j in idx):
            raise ShapeError(f"joints {idx} must lie in 0 .. {arr.shape[1] - 1} (the positions have {arr.shape[1]} joints)")
        _require_finite(arr)
        h = float(arr[0, :, up].max() - arr[0, :, up].min()) if height is None else float(height)
        pos = arr[:, idx]
        as_numpy = not isinstance(source, torch.Tensor)
    if not (fps > 0 and np.isfinite(fps)):
        raise ShapeError(f"fps must be a positive number, got {fps}")
    hthr = DEFAULT_HEIGHT_FRACTION * h if height_threshold is None else float(height_threshold)
    sthr = DEFAULT_SPEED_FRACTION * h if speed_threshold is None else float(speed_threshold)

    _require_finite(pos)
    height_up = sign * pos[..., up]  # along +up: an upside-down source's floor is its largest coordinate
    elevation = height_up - height_up.min(axis=0, keepdims=True)
    if pos.shape[0] > 1:
        speed = np.linalg.norm(np.gradient(pos, axis=0), axis=-1) * fps
    else:
        speed = np.zeros(pos.shape[:2])
    contact = (elevation < hthr) & (speed < sthr)
    return contact if as_numpy else torch.from_numpy(contact)


def _require_finite(positions: np.ndarray) -> None:
    """A :class:`ShapeError` naming the first frame of ``(F, J, 3)`` positions that holds NaN or infinity (one NaN
    frame had made the feet's floor NaN and turned every label off without a word)."""
    bad = ~np.isfinite(positions).all(axis=(1, 2))
    if bad.any():
        raise ShapeError(f"foot_contacts: the positions are not finite (NaN or infinite) at frame {int(np.flatnonzero(bad)[0])}")
