"""Checks of joint positions before IK: joint names and order, shapes, the units (bone lengths against the model
skeleton's) and the proportions, each a typed error naming the file and what to do; and warnings where left and
right look swapped (:func:`check_sides`) or, for the refinement, a bone is off the model's proportions
(:func:`warn_proportions`)."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from skelanim.core.skeleton import Skeleton
from skelanim.errors import ShapeError, SkeletonError

__all__ = ["UNIT_TOLERANCE", "body_scale", "bone_ratios", "check_positions", "check_proportions", "check_sides",
           "check_units", "facing_cosine", "warn_proportions"]  # fmt: skip

#: Largest factor by which the input's bone lengths may differ from the model skeleton's (median over bones)
#: before :func:`check_units` calls it a units mismatch: people's proportions differ by far less, units by 2.54
#: (inches and centimetres) to 1000.
UNIT_TOLERANCE = 2.0


def check_positions(
    positions: Any, skeleton: Skeleton, names: Sequence[str] | None = None, *, source: str | os.PathLike | None = None,
    ik_root: int | None = None,
) -> Tensor:
    """Validate positions against the model's skeleton and put joints in its order.

    Parameters
    ----------
    positions : array, Tensor or JointPositions
        ``(F, J, 3)`` world positions (a :class:`~skelanim.io.positions.JointPositions` brings its names).
    skeleton : Skeleton
        The model's skeleton.
    names : sequence of str, optional
        Joint names of ``positions``; generic names (``joint_0``...) or none mean the model's order. Named
        joints the model does not have (end sites of ``skelanim positions --end-sites``, fingers) are left out.
    source : str, optional
        File name for error messages.

    Returns
    -------
    Tensor
        ``(F, J, 3)`` float64 in the skeleton's joint order.

    Raises
    ------
    ShapeError
        Wrong shape or joint count, non-finite values (naming frame and joint), or positions in other units
        than the skeleton's (:func:`check_units`).
    SkeletonError
        Joint names that are not the model's (listing what it expects).
    """
    if hasattr(positions, "positions") and hasattr(positions, "names"):
        names = names or positions.names
        positions = positions.positions
    try:
        x = torch.as_tensor(np.ascontiguousarray(positions) if not isinstance(positions, Tensor) else positions)
    except (TypeError, ValueError, RuntimeError):
        raise ShapeError(f"positions must be an array of numbers (frames, joints, 3), got {type(positions).__name__}",
                         path=source) from None  # fmt: skip
    if x.is_complex() or not (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)):
        raise ShapeError(f"positions must be real numbers, got {x.dtype}", path=source)
    x = x.detach().to(torch.float64)  # the solvers pass no gradient back (onnxruntime, LM steps, SVDs)
    expected = f"the model expects {skeleton.num_joints} joints: {', '.join(skeleton.names)}"
    if x.ndim == 2 and x.shape[-1] == 3:
        x = x[None]
    if x.ndim != 3 or x.shape[-1] != 3:
        raise ShapeError(f"positions must be (frames, joints, 3), got {tuple(x.shape)}", path=source)
    if x.shape[0] == 0:
        raise ShapeError("no frames", path=source)
    if names is not None and not all(n == f"joint_{i}" for i, n in enumerate(names)) and list(names) != skeleton.names:
        if len(names) != x.shape[1]:
            raise ShapeError(f"{len(names)} joint names for {x.shape[1]} joints", path=source)
        missing = [n for n in skeleton.names if n not in names]
        dummies = [skeleton.names[j] for j in range(ik_root or 0)]
        if ik_root == 1 and missing == dummies:  # only the static dummy root (convert
            # --simple-channels writes Bandai's without its joint_Root): placed where the IK root's OFFSET puts it,
            # as training places it; it had been refused as positions of another skeleton
            body = x[:, [list(names).index(n) for n in skeleton.names[1:]]]
            dummy = body[:, :1] - skeleton.offsets[1].to(body.dtype)
            x = torch.cat([dummy, body], dim=1)
            names = list(skeleton.names)
            missing = []
        if missing:
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise SkeletonError(f"{x.shape[1]} joints given, their names not the model's (missing {len(missing)}: "
                                f"{', '.join(missing[:5])}{more}); {expected} (positions of another skeleton: "
                                "skelanim retarget it --to a file of the model's skeleton first)", path=source)  # fmt: skip
        x = x[:, [list(names).index(n) for n in skeleton.names]]  # other joints (end sites, fingers) are left out
    if x.shape[1] != skeleton.num_joints:
        raise ShapeError(f"{x.shape[1]} joints given; {expected}", path=source)
    bad = ~torch.isfinite(x).all(-1)
    if bool(bad.any()):
        f, j = (int(v) for v in torch.nonzero(bad)[0])
        raise ShapeError(f"position is not finite (NaN or inf); every frame needs all {skeleton.num_joints} joints",
                         path=source, where=f"frame {f}, joint {skeleton.names[j]}")  # fmt: skip
    scale = check_units(x, skeleton, ik_root=ik_root, source=source)
    check_proportions(x, skeleton, scale, ik_root=ik_root, source=source)
    check_sides(x, skeleton, source=source)
    return x


#: Mean cosine between the toes' direction and the body's forward direction below which left and right look
#: swapped. Every Bandai-Namco capture reads at least -0.04 (a run: feet pointed down; median 0.68; Xia 0.82, CMU
#: iClone 0.93); swapped labels read about minus the true value.
SIDES_COSINE = -0.3


def facing_cosine(positions: Tensor, skeleton: Skeleton) -> float:
    """Mean over frames of the cosine between where the toes point (ankle to toe, both feet) and the body's
    forward direction, ``cross(left hip - right hip, head - hips)``; a person's toes point forward, so this is
    positive, and left and right labels swapped (or a mirrored world) turn it negative. ``nan`` where the skeleton
    has no feet and toes or no head found by name. ``positions``: ``(F, J, 3)``."""
    from skelanim.core.skeleton import head_and_feet
    from skelanim.ops.contacts import find_feet

    try:
        left_foot, right_foot, left_toe, right_toe = find_feet(skeleton)
    except (SkeletonError, ValueError):
        return math.nan
    heads = head_and_feet(skeleton.names)[0]
    parents = skeleton.parents
    left_hip, right_hip = int(parents[parents[left_foot]]), int(parents[parents[right_foot]])
    if not heads or min(left_hip, right_hip) < 0:
        return math.nan
    up = positions[:, heads].mean(1) - 0.5 * (positions[:, left_hip] + positions[:, right_hip])
    forward = torch.linalg.cross(positions[:, left_hip] - positions[:, right_hip], up)
    toes = positions[:, left_toe] - positions[:, left_foot] + positions[:, right_toe] - positions[:, right_foot]
    return float(torch.nn.functional.cosine_similarity(forward, toes, dim=-1).mean())


def check_sides(positions: Tensor, skeleton: Skeleton, *, source: str | os.PathLike | None = None) -> None:
    """Warn where left and right joints look swapped: the toes point backwards of the body (:func:`facing_cosine`
    below :data:`SIDES_COSINE`). Bone lengths cannot tell (they are symmetric), and the solve of such positions
    places joints up to 8 % of the height off (an audit, a Bandai walk with its sides swapped)."""
    cosine = facing_cosine(positions, skeleton)
    if cosine < SIDES_COSINE:
        warnings.warn(f"{source or 'positions'}: the toes point backwards of the body (mean cosine {cosine:.2f}): "
                      "left and right joints look swapped, or the positions are mirrored (a left-handed "
                      "coordinate system); the solved pose cannot mirror a body", UserWarning, stacklevel=3)  # fmt: skip


#: A bone whose length differs from the model's by more than this factor (after the overall scale) is refused.
BONE_TOLERANCE = 2.0
#: ... and by more than this fraction of the height: a short bone between two noisy joints (1 % of the height of
#: noise on a single frame) can read 2.1 times its length, though no joint is out of place.
BONE_SLACK = 0.05
#: A body further than this fraction from the model's size is refined at the model's size (the position fit pulled
#: the model's bones toward joints they cannot reach: 5.2-5.9 degrees of error for a body 10 % off, against 2.3-2.6
#: so); a nearer one too, unless its measured size is within :data:`NOISE_SIZES` times what its noise alone makes
#: of the bones (:func:`noise_lengthening`; 1 % of the height of noise lengthens them by about 1 %).
OWN_SIZE = 0.03
#: See :data:`OWN_SIZE`.
NOISE_SIZES = 3.0
#: An overall scale further than this factor from 1 solves, with a warning: the pose will not reach the joints.
SCALE_WARNING = 1.25


def bone_ratios(positions: Tensor, skeleton: Skeleton, scale: float, *,
                ik_root: int | None = None) -> tuple[list[int], Tensor, Tensor]:  # fmt: skip
    """Each bone's median length over the frames of ``positions`` ``(F, J, 3)`` against ``scale`` times its rest
    length: the bones compared (child joints; longer than 0.1 % of the height, the links from the root down to
    ``ik_root`` left out, since the IK root moves freely), their ratios ``(B,)`` and length gaps ``(B,)`` (file
    units). None when ``scale`` is not positive."""
    height = skeleton.height()
    parents = [int(p) for p in skeleton.parents]
    above = set()
    j = ik_root if ik_root is not None else -1
    while j >= 0:
        above.add(j)
        j = parents[j]
    rest = skeleton.offsets.to(torch.float64).norm(dim=-1)
    bones = [j for j, p in enumerate(parents) if p >= 0 and j not in above and float(rest[j]) > 1e-3 * height]
    if not bones or not scale > 0:
        return [], torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64)
    idx = torch.tensor(bones)
    lengths = (positions[:, idx] - positions[:, [parents[j] for j in bones]]).norm(dim=-1)  # (F, B)
    median, expected = lengths.median(dim=0).values, scale * rest[idx]
    return bones, median / expected, (median - expected).abs()


#: A bone this far from the model's proportions (ratio after the overall scale, and length as a fraction of the
#: height) makes ``gat_refined`` warn: its position fit pulls the model's bones toward joints they cannot reach.
PROPORTION_WARNING = (0.05, 0.012)
#: ... judged on clips of at least this many frames: one frame's noise cannot be told from proportions.
PROPORTION_FRAMES = 8


def warn_proportions(positions: Tensor, skeleton: Skeleton, *, ik_root: int | None = None,
                     source: str | os.PathLike | None = None) -> None:  # fmt: skip
    """Warn, for the refinement, where a bone differs from the model's proportions by more than
    :data:`PROPORTION_WARNING` (5 % and 1.2 % of the height, after the body's overall scale) over a clip of at least
    :data:`PROPORTION_FRAMES` frames: the position fit then trades rotation accuracy for joints the model's bones
    cannot reach (an audit: shins 10 % long, 2.4 % of the height, gave 6.4 degrees refined against the network's
    4.3). Every Bandai capture is within 1e-6 of the height; with Gaussian noise of 1 % of the height, ten Bandai
    walks' bones over 5 % off were at most 0.8 % of the height off (median over frames), a single frame's up to 5 %,
    which is why single frames are not judged."""
    if positions.shape[0] < PROPORTION_FRAMES:
        return
    scale = body_scale(positions, skeleton)
    height = skeleton.height()
    bones, ratio, gap = bone_ratios(positions, skeleton, scale, ik_root=ik_root)
    worst = [(abs(float(r) - 1), b, float(r)) for b, r, g in zip(bones, ratio, gap, strict=True)
             if abs(float(r) - 1) > PROPORTION_WARNING[0] and float(g) > PROPORTION_WARNING[1] * scale * height]  # fmt: skip
    if worst:
        _, joint, r = max(worst)
        warnings.warn(f"{source or 'positions'}: {len(worst)} bone(s) differ from the model's proportions (the bone "
                      f"to {skeleton.names[joint]} is {r:.3g} times it, after the overall scale): the refinement's "
                      "position fit pulls the model's bones toward joints they cannot reach and may answer worse "
                      "than the network alone (gat)", UserWarning, stacklevel=3)  # fmt: skip


def check_proportions(positions: Tensor, skeleton: Skeleton, scale: float, *, ik_root: int | None = None,
                      source: str | os.PathLike | None = None) -> None:  # fmt: skip
    """Refuse positions with a bone far from the model's length, and warn about a body of another size.

    :func:`check_units` compares the median bone; here every bone (longer than 0.1 % of the height, the links
    from the root down to ``ik_root`` left out: the IK root moves freely) is compared, its median length over
    frames divided by ``scale`` times its rest length. A ratio beyond :data:`BONE_TOLERANCE`, where the length is
    also :data:`BONE_SLACK` of the height off, is what joints in another order, or another skeleton's joints under
    these names, give (reversed Bandai joints: 11 of 20 bones); real people differ far less, and noise moves a
    short bone by a larger factor but a small length. A ``scale`` beyond :data:`SCALE_WARNING` is solved, with a
    ``UserWarning``: the model's bones cannot reach the joints of a body that much larger or smaller.

    Raises
    ------
    ShapeError
        Naming the first such joint, its ratio and how many bones are off.
    """
    height = skeleton.height()
    bones, ratio, gap = bone_ratios(positions, skeleton, scale, ik_root=ik_root)
    if not bones:
        return
    off = [(b, float(r)) for b, r, g in zip(bones, ratio, gap, strict=True)
           if float(g) > BONE_SLACK * scale * height and not 1 / BONE_TOLERANCE <= float(r) <= BONE_TOLERANCE]  # fmt: skip
    if off:
        joint, r = off[0]
        raise ShapeError(f"{len(off)} of {len(bones)} bones are not the model's lengths (the bone to "
                         f"{skeleton.names[joint]} is {r:.3g} times it): joints in another order, or another "
                         f"skeleton's; the model expects {', '.join(skeleton.names)}", path=source)  # fmt: skip
    if not 1 / SCALE_WARNING <= scale <= SCALE_WARNING:
        warnings.warn(f"{source or 'positions'}: the body's bones are {scale:.3g} times the model skeleton's; the "
                      "solved pose keeps the model's bone lengths, so its joints will miss the given ones",
                      UserWarning, stacklevel=3)  # fmt: skip


_UNIT_NAMES = {"m": ("metres", "m"), "cm": ("centimetres", "cm"), "mm": ("millimetres", "mm"), "in": ("inches", "in"),
               "cmu": ("CMU units", "CMU units")}  # fmt: skip


def _unit_name(height: float) -> tuple[str, str]:
    """The name and the symbol of the length unit a human figure ``height`` units tall is in."""
    from skelanim.core.units import guess_unit

    return _UNIT_NAMES[guess_unit(height)]


def noise_lengthening(sigma: float, skeleton: Skeleton) -> float:
    """How much longer position noise makes bones look, as :func:`body_scale` measures them: the median over its
    bones of ``2 sigma^2 / l^2`` (a bone of length ``l`` between two joints with independent noise ``sigma`` per
    axis, both in heights, reads ``l + 2 sigma^2 / l`` on average: the noise across the bone lengthens it)."""
    height = skeleton.height()
    rest = skeleton.offsets.to(torch.float64).norm(dim=-1) / height if height > 0 else torch.zeros(0)
    bones = [j for j, p in enumerate(skeleton.parents.tolist()) if p >= 0 and float(rest[j]) > 1e-3]
    return float((2.0 * sigma**2 / rest[bones].square()).median()) if bones else 0.0


def body_scale(positions: Tensor, skeleton: Skeleton) -> float:
    """The size of a body against the skeleton's: the median over bones (those longer than 0.1 % of the height)
    of each bone's median length over the ``(F, J, 3)`` positions' frames, divided by its rest length (1 without
    such bones)."""
    height = skeleton.height()
    parents = [int(p) for p in skeleton.parents]
    rest = skeleton.offsets.to(torch.float64).norm(dim=-1)
    bones = [j for j, p in enumerate(parents) if p >= 0 and float(rest[j]) > 1e-3 * height]
    if not bones or not height > 0:
        return 1.0
    idx = torch.tensor(bones)
    lengths = (positions[:, idx] - positions[:, [parents[j] for j in bones]]).norm(dim=-1)  # (F, B)
    return float((lengths.median(dim=0).values / rest[idx]).median())


def check_units(positions: Tensor, skeleton: Skeleton, *, ik_root: int | None = None,
                source: str | os.PathLike | None = None) -> float:  # fmt: skip
    """Refuse positions whose bones are far longer or shorter than the skeleton's: other length units.

    Positions are never rescaled (files keep their own units, see :mod:`skelanim.core.units`): the network
    and the classical solvers need the model's units, and a silent rescale would hide a wrong input.

    Parameters
    ----------
    positions : Tensor
        ``(F, J, 3)`` positions in the skeleton's joint order.
    skeleton : Skeleton
        The model's skeleton; its rest offsets are the bone lengths compared against.
    ik_root : int, optional
        As for :func:`check_proportions`, which settles bones that disagree among themselves first.
    source : str, optional
        File name for the error message.

    Returns
    -------
    float
        The scale of the input: the median over bones (those longer than 0.1% of the height) of each bone's
        median length over frames, divided by its rest length.

    Raises
    ------
    ShapeError
        When that scale is outside ``[1 / UNIT_TOLERANCE, UNIT_TOLERANCE]``; the message names the units the
        model expects and the factor that converts the input.
    """
    scale = body_scale(positions, skeleton)
    if 1.0 / UNIT_TOLERANCE <= scale <= UNIT_TOLERANCE:
        return scale
    height = skeleton.stature() or skeleton.height()  # a rest pose may lie down (Bandai's): its extent is no height
    name, symbol = _unit_name(height)
    expected = f"the model expects {name} (its skeleton is {height:.4g} {symbol} tall)"
    if not scale > 0:
        raise ShapeError(f"the bones between the joint positions have zero length; {expected}", path=source)
    if not math.isfinite(scale):  # lengths beyond float range: no factor brings them back
        raise ShapeError(f"the bones between the joint positions are too long to measure (beyond float range); "
                         f"{expected}", path=source)  # fmt: skip
    with warnings.catch_warnings():  # bones that disagree among themselves are no unit: joints in another order
        warnings.simplefilter("ignore")
        check_proportions(positions, skeleton, scale, ik_root=ik_root, source=source)
    from skelanim.core.units import metres_per_unit

    tall = height * scale * metres_per_unit(height * scale)  # metres, in the unit its size suggests
    looks = f"look like {_unit_name(height * scale)[0]}" if 0.3 < tall < 5.0 else "fit no length unit of a body"
    raise ShapeError(
        f"the joint positions {looks}: their bones are {scale:.3g} times the model "
        f"skeleton's; {expected}; multiply the positions by {1.0 / scale:.3g} (ik solve --scale {1.0 / scale:.3g})",
        path=source,
    )
