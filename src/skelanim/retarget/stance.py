r"""Level feet: the foot's bone frame points where the sole lies level, not along the ankle-to-toe bone.

Skeletons put the ankle and toe joints at different places in the foot: Bandai-Namco's ankle joint stands
5.5 % of the height above its toe joint, so on a foot flat on the ground its ankle-to-toe bone points 40 degrees
below level; CMU's, Xia's and pymo's 11-17 degrees, the production rig's 5-15. A bone frame along that bone
(:mod:`.rig`) copies the *bone's* direction, so a flat Bandai foot landed on the CMU skeleton 25 degrees toe-down
(and on the DeepMimic humanoid on its boxes' front corners). So the foot and toe frames are turned, about the
foot's lateral axis, by the skeleton's own **stance pitch**, the angle of its ankle-to-toe bone below level on a
foot that stands: a level foot then maps to a level foot, and a raised heel to the same raised heel.

The stance pitch is measured

* on a zero pose that is a body pose (:func:`~.rig.physical_zero_pose`; a T- or A-pose standing on its feet):
  in that pose, which stands flat-footed (CMU 10.5 degrees; the built-in canonical T-pose 19.7);
* on a skeleton calibrated on its own motion (Bandai-Namco's, the production rig's zero poses are no body
  pose): the most common pitch of the motion's standing frames, those where the foot's ankle and toe joints are
  both in their lowest quarter relative to the root, both feet pooled, no more than 60 degrees off level
  (Bandai-Namco: 39.7 degrees from its normal walk; the take decides, 24.7-48.1 over dataset 1's runs and dashes,
  51.4 from a punch, so a retarget follows the feet of the take it is given);
* nowhere else: a zero pose that is no body pose and no motion leave the frames as the bone lies (a foot whose
  bone points more than 45 degrees off level in a body pose is not standing, and is left as well).

Level feet also say how high a standing skeleton's ankles are: its **sole height**, the ankle joint's height
above the toe joint on a level foot (:func:`sole_height`; Bandai-Namco 5.5 % of the height, CMU 2 %). The copied
hips (:func:`scaled_hips`) scale the leg above it by the leg-length ratio (their travel by the ratio of the stride
legs, thigh plus shin, :func:`~.rig.stride_leg`) and stand on the target's own sole,
instead of scaling the source's sole too: scaled, Bandai-Namco's high ankles would lift every other skeleton's
level toes 3-4 % of its height off the floor. Where a clip's feet stand (:func:`standing_level`) and where its floor
lies (:func:`floor_level`) are measured here too.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from skelanim.core.rotation_convert import rotvec_to_matrix
from skelanim.retarget.mapping import CANONICAL_JOINTS

__all__ = ["CLEARANCE", "MIN_SOLE", "STANDING_QUANTILE", "floor_level", "level_feet", "scaled_hips", "sole_height",
           "standing_level", "toeless"]

#: The share of frames, lowest first, in which a calibration motion's foot counts as standing.
STANDING_QUANTILE = 0.25
#: A rest-pose foot bone further than this from level (degrees) is not a standing foot.
_MAX_REST_PITCH = 45.0
#: A foot bone further than this from level (degrees) in a calibration motion's frame is not standing there
#: (Bandai-Namco's stands at 25-51 degrees in its takes; its lifted feet reach 70-80 in the lowest frames of a
#: clip of one or two frames).
_MAX_STANCE_PITCH = 60.0
#: Width (degrees) of the kernel whose mode is the stance pitch measured in motion.
_MODE_WIDTH = 2.0
#: A sole (ankle above toes, :func:`sole_height`) at most this fraction of the leg's length is none (feet not level):
#: the test had been ``> 0``, which a rounding of 6.5e-16 on Bandai's uncalibrated feet crossed, moving hips 3 %.
MIN_SOLE = 1e-3
_SLOT = {n: i for i, n in enumerate(CANONICAL_JOINTS)}
_TOES = [_SLOT["l_toe"], _SLOT["r_toe"]]
_UP = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)


def _pitch_and_axis(bone: Tensor, up: Tensor) -> tuple[Tensor, Tensor]:
    """Angle ``(...,)`` (radians) of ``(..., 3)`` bone vectors below the plane normal to ``up`` ``(3,)``, and the
    unit axis ``(..., 3)`` (``bone x up``) about which turning the bone by that angle makes it level."""
    unit = bone / bone.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    pitch = torch.asin((-(unit @ up)).clamp(-1.0, 1.0))
    axis = torch.linalg.cross(unit, up.expand_as(unit), dim=-1)
    return pitch, axis / axis.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def level_feet(
    frames: Tensor,
    index: np.ndarray,
    rest_world: Tensor,
    rest_pos: Tensor,
    up: Tensor,
    posed: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """``(22, 3, 3)`` rest bone frames with each foot's and toe's turned level by the stance pitch (module doc).

    Parameters
    ----------
    frames : Tensor
        ``(22, 3, 3)`` rest bone frames (world, rest pose); the foot's first axis lies along its bone.
    index : ndarray
        ``(22,)`` skeleton joint per canonical joint (``-1``: missing).
    rest_world, rest_pos : Tensor
        ``(J, 3, 3)`` world rotations and ``(J, 3)`` positions of the rest pose.
    up : Tensor
        ``(3,)`` the body's up in the rest pose (hips to chest); used when ``posed`` is ``None``.
    posed : tuple of Tensor, optional
        ``(S, J, 3, 3)`` world rotations and ``(S, J, 3)`` positions of the skeleton's own motion, world up +Y
        (:func:`~.rig.calibration_poses`): the stance pitch is measured there instead of in the rest pose.
    """
    sides = [s for s in "lr" if index[_SLOT[f"{s}_foot"]] >= 0 and index[_SLOT[f"{s}_toe"]] >= 0]
    out = frames.clone()
    if not sides:
        return out
    if posed is None:
        for s in sides:
            ankle, toe = int(index[_SLOT[f"{s}_foot"]]), int(index[_SLOT[f"{s}_toe"]])
            pitch, axis = _pitch_and_axis(rest_pos[toe] - rest_pos[ankle], up)
            if abs(math.degrees(float(pitch))) <= _MAX_REST_PITCH:
                turn = rotvec_to_matrix(axis * pitch)
                for slot in (_SLOT[f"{s}_foot"], _SLOT[f"{s}_toe"]):
                    out[slot] = turn @ frames[slot]
        return out
    world, pos = posed
    pitches, axes = [], []
    flat = math.radians(_MAX_STANCE_PITCH)
    for s in sides:
        ankle, toe = int(index[_SLOT[f"{s}_foot"]]), int(index[_SLOT[f"{s}_toe"]])
        low_ankle, low_toe = pos[:, ankle, 1], pos[:, toe, 1]
        lowest_ankle, lowest_toe = low_ankle <= torch.quantile(low_ankle, STANDING_QUANTILE), low_toe <= torch.quantile(
            low_toe, STANDING_QUANTILE
        )
        standing = lowest_ankle & lowest_toe
        if not bool(standing.any()):  # heel and toes lowest in other frames (a foot that rocks): either (none had
            standing = lowest_ankle | lowest_toe  # made the stance NaN, and every frame the retargeter gave with it)
        pitch, axis = _pitch_and_axis(pos[standing, toe] - pos[standing, ankle], _UP)
        pitches.append(pitch)
        axes.append((world[standing, ankle].transpose(-1, -2) @ axis.unsqueeze(-1)).squeeze(-1))  # ankle's own axes
    # the most common pitch (a Gaussian kernel's mode): a foot that stands flat holds one pitch, and heel strikes
    # and toe-offs among the lowest frames of a run spread on either side of it. A foot bone more than
    # _MAX_STANCE_PITCH off level is not standing, whatever its frame: in a clip of one or two frames every frame is
    # among the lowest, and a lifted foot's 79 degrees had become the stance pitch (toes 0.15 heights out of place)
    pooled = torch.cat(pitches)
    pooled = pooled[pooled.abs() <= flat]
    if len(pooled) == 0:  # no foot stands in this motion: the rest pose's feet, as without one
        return level_feet(frames, index, rest_world, rest_pos, up)
    near = ((pooled[:, None] - pooled[None, :]) / math.radians(_MODE_WIDTH)).square()
    pitch = pooled[torch.exp(-0.5 * near).sum(1).argmax()]
    for s, side_pitch, local in zip(sides, pitches, axes):
        held = (side_pitch - pitch).abs() <= math.radians(2 * _MODE_WIDTH)  # the frames at the stance pitch, else
        held = held if bool(held.any()) else side_pitch.abs() <= flat  # those near level, else all (its axis only)
        mean = (local[held] if bool(held.any()) else local).mean(0)
        axes_rest = rest_world[int(index[_SLOT[f"{s}_foot"]])] @ (mean / mean.norm().clamp_min(1e-12))
        turn = rotvec_to_matrix(axes_rest * pitch)
        for slot in (_SLOT[f"{s}_foot"], _SLOT[f"{s}_toe"]):
            out[slot] = turn @ frames[slot]
    return out


def sole_height(offsets: Tensor) -> Tensor:
    """``(...)`` the ankle's height above the toe joint of a level foot, from ``(..., 22, 3)`` canonical offsets
    (whose foot frames are level, :func:`level_feet`): the toes' mean drop below the ankles; 0 without toes."""
    return -offsets[..., _TOES, 1].mean(-1)


def toeless(offsets: Tensor) -> Tensor:
    """``(...)`` bool: the skeleton of ``(..., 22, 3)`` canonical offsets has no toe joints (both toe offsets zero,
    as :mod:`.rig` leaves a missing joint)."""
    return offsets[..., _TOES, :].abs().amax((-1, -2)) == 0


def scaled_hips(
    hips: Tensor,
    source_leg: Tensor | float,
    target_leg: Tensor | float,
    source_sole: Tensor | float,
    target_sole: Tensor | float,
    *,
    source_toeless: Tensor | bool = False,
    target_toeless: Tensor | bool = False,
    stride_ratio: Tensor | float | None = None,
) -> Tensor:
    """``(..., 3)`` target hips from ``(..., 3)`` source hips above the floor (up +Y): scaled by the leg-length
    ratio ``l_B / l_A``, with the height's sole part each skeleton's own (module doc). The floor is where the
    lowest tracked foot joints stand: the toes, or the ankles of a skeleton without toes (``*_toeless``, sole 0),
    so a toeless source's ankles land where a toed target's ankles stand over its toes, and a toed source's toes
    put a toeless target's ankles on its floor (until 2026-12-05 only pairs that both had toes kept their own
    soles: the DeepMimic humanoid's walk sank its full sole, 5 % of the height, into Bandai's floor). A toed
    skeleton without a sole (at most :data:`MIN_SOLE` of its leg: feet not level, a rig not calibrated on motion)
    keeps none on either side: the whole height scales. ``stride_ratio`` (default: the leg ratio) scales the
    horizontal travel instead: the ratio of the legs that make the strides (:func:`~.rig.stride_leg`). Legs, soles,
    flags and ratio are floats (bools) or tensors that broadcast with ``hips[..., 0]``."""
    ratio = torch.as_tensor(target_leg, dtype=hips.dtype) / torch.as_tensor(source_leg, dtype=hips.dtype)
    travel = ratio if stride_ratio is None else torch.as_tensor(stride_ratio, dtype=hips.dtype)
    source_sole = torch.as_tensor(source_sole, dtype=hips.dtype)
    target_sole = torch.as_tensor(target_sole, dtype=hips.dtype)
    has_sole = (source_sole > MIN_SOLE * torch.as_tensor(source_leg, dtype=hips.dtype),
                target_sole > MIN_SOLE * torch.as_tensor(target_leg, dtype=hips.dtype))  # fmt: skip
    kept = (has_sole[0] | torch.as_tensor(source_toeless)) & (has_sole[1] | torch.as_tensor(target_toeless))
    lift = torch.where(kept, target_sole - ratio * source_sole, torch.zeros_like(ratio))
    return torch.cat([hips[..., :1] * travel[..., None], hips[..., 1:2] * ratio[..., None] + lift[..., None],
                      hips[..., 2:] * travel[..., None]], dim=-1)  # fmt: skip


#: How far a clip's lowest foot or toe joint may be from y = 0 (fraction of the source's height) for y = 0 to count
#: as its floor in :func:`floor_level` (CMU's toe joints stand 2.6 % above it, Xia's dip 1.5 % below); farther (the
#: production rig's floor is a metre below its origin), that joint is the floor.
CLEARANCE = 0.1


def floor_level(feet_heights: Tensor, height: float) -> float:
    """A clip's floor from the heights ``(F, 4)`` of its :data:`~.baselines.FEET` joints (up +Y) and its height:
    0 where their lowest point is within :data:`CLEARANCE` of the height of it, else that point."""
    level = float(feet_heights.min())
    return 0.0 if abs(level) <= CLEARANCE * height else level


def standing_level(feet_heights: Tensor) -> float:
    """The height a clip's feet stand on, from the heights ``(F, 4)`` of its :data:`~.baselines.FEET` joints (up
    +Y): the :data:`STANDING_QUANTILE` quantile of each frame's lowest one.

    What retargeting maps from and to: skeletons put their toe joints at different heights above the ground (the
    production rig's stand on its floor, CMU's 2.6-5 % of the height above it), so a source's standing toes land
    where the target's own captures stand theirs (a floor guess with the toe joints' clearance scaled instead sank
    the production rig's walk 3 % of CMU's height into CMU's floor, and floated CMU's above the production rig's).
    A quantile, not the minimum: a few frames sunk by the capture do not lift the rest."""
    lowest = feet_heights.min(dim=-1).values
    return float(torch.quantile(lowest.to(torch.float64), STANDING_QUANTILE))
