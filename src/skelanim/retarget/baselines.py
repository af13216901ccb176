r"""Baseline retargeting in canonical space: rest-aware copy, IK retargeting, and online foot contacts.

Everything here works on the canonical representation of :mod:`.rig` (world bone frames ``Q`` of the 22
canonical joints, ``(F, 22, 3, 3)``, and the hips position ``(F, 3)``) and is *causal*: frame ``t`` depends
on frames ``<= t`` only, through an explicit state, so a stream processed frame by frame gives the same
result as the whole clip at once.

* **copy** (the NKN paper's "copy quaternions and velocities", made rest-pose aware): the target's bone
  frames are the source's, ``Q^B = Q^A``; the hips' height is the source's scaled by the leg-length ratio
  ``l_B / l_A``, their travel (and velocity) by the ratio of the stride legs, thigh plus shin.
* **IK retargeting**: the copy's joint positions on the target skeleton (source poses at target
  proportions), with feet held where they touched down during the source's contacts (:func:`pin_step`);
  while only the toe is planted (the heel rising), the ankle hangs from the toe's pin by the copy's foot
  (:func:`hang_step`), so the foot pivots about a toe that stays put; each leg's knee is placed by two-bone IK
  so the bones keep their lengths, then
  :func:`skelanim.ik.classical.swing_ik` (issue #3) turns those positions into the legs' rotations, starting
  from the copy's so that twists are kept (every other joint keeps the copy's rotation: its position is the
  copy's, so solving it would return the copy's frame). One frame is a pure function of tensors and the stream
  state (:class:`PinState`), so a streamed frame runs as one compiled graph (:mod:`.online`), and it has no
  SVD (the legs are chains) for ONNX to lack.

Foot contacts online
--------------------
:func:`causal_contacts` labels a foot joint in contact when its height above its lowest point so far is
below ``0.05 h`` and its speed (backward difference) below ``0.25 h`` per second (``h`` the source height):
the thresholds of :func:`skelanim.ops.foot_contacts`, with the clip-wide floor and central differences
replaced by their causal counterparts.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from skelanim.core._tensor import _cross
from skelanim.core.rotations import matrix_to_quat, quat_to_matrix
from skelanim.ik.classical import swing_ik
from skelanim.ik.frames import IKRig
from skelanim.ops.contacts import DEFAULT_HEIGHT_FRACTION, DEFAULT_SPEED_FRACTION
from skelanim.retarget.rig import SLOT, CanonicalRig, canonical_locals, canonical_skeleton, frames_from_locals
from skelanim.retarget.stance import scaled_hips, toeless

__all__ = ["FEET", "RELEASE_DECAY", "SOFT_REACH", "ContactState", "IKRetarget", "PinState", "causal_contacts", "copy_hips", "hang_step",
           "pin_step", "two_bone"]

#: Canonical slots whose contacts are tracked: left foot, right foot, left toe, right toe.
FEET: tuple[int, ...] = (SLOT["l_foot"], SLOT["r_foot"], SLOT["l_toe"], SLOT["r_toe"])


def copy_hips(hips: Tensor, source: CanonicalRig, target: CanonicalRig) -> Tensor:
    """``(..., 3)`` source hips positions above the floor: their height scaled by the leg-length ratio ``l_B / l_A``
    standing on the target's own soles, their travel by the ratio of the stride legs, thigh plus shin
    (:func:`~.stance.scaled_hips`, :func:`~.rig.stride_leg`; by the leg-length ratio until 2026-12-05, which counts
    the drop from the hips to the legs: a Bandai-Namco walk on a CMU skeleton travelled 10.5 % farther than its
    strides and its feet slid)."""
    return scaled_hips(hips, source.leg_length, target.leg_length, source.sole, target.sole,
                       source_toeless=toeless(source.offsets), target_toeless=toeless(target.offsets),
                       stride_ratio=target.stride_leg / source.stride_leg)  # fmt: skip


@dataclass
class ContactState:
    """Running floor (lowest height so far) and previous positions of the tracked joints (``None``: a new stream).

    ``started``, for a compiled stream, whose state is always tensors: ``(1,)``, 0 on the stream's first frame
    (the floor and previous positions given are then ignored, so an all-zero state starts a stream), 1 after.
    """

    floor: Tensor | None = None
    previous: Tensor | None = None
    started: Tensor | None = None


def causal_contacts(
    positions: Tensor, fps: float, height: float, state: ContactState | None = None, *, up: int = 1
) -> tuple[Tensor, ContactState]:
    """Online foot-contact labels (see the module docstring).

    Parameters
    ----------
    positions : Tensor
        ``(F, K, 3)`` world positions of the tracked joints.
    fps : float
        Frame rate.
    height : float
        Body height (file units).
    state : ContactState, optional
        Carried from the previous call (a fresh state starts a stream).
    up : int
        Up axis.

    Returns
    -------
    tuple
        ``(F, K)`` bool contacts and the new state.
    """
    state = state or ContactState()
    y = positions[..., up]
    start = y[:1] if state.floor is None else torch.minimum(state.floor, y[:1])
    prev = positions[:1] if state.previous is None else state.previous
    if state.started is not None:  # a compiled stream: its first frame ignores the (zero) state
        begun = state.started > 0.5
        start, prev = torch.where(begun, start, y[:1]), torch.where(begun, prev, positions[:1])
    if y.shape[0] == 1:  # a streamed frame (also keeps the traced step exportable: ONNX has no cummin)
        floor = torch.minimum(start, y)
    else:
        floor = torch.cummin(torch.cat([start, y]), dim=0).values[1:]
    step = positions - torch.cat([prev, positions[:-1]])
    speed = step.norm(dim=-1) * fps
    contact = (y - floor < DEFAULT_HEIGHT_FRACTION * height) & (speed < DEFAULT_SPEED_FRACTION * height)
    return contact, ContactState(floor[-1:].clone(), positions[-1:].clone())


#: Per 1/30 s, the fraction of a released foot's offset from the copy that remains (:func:`pin_step`).
RELEASE_DECAY = 0.6
#: Soft reach of the legs' two-bone IK, a fraction of the leg (:func:`two_bone`): a target farther than the leg
#: minus this is approached ever more slowly and never quite reached, so the knee does not lock straight and
#: snap back (chosen on five pairs of other capture sources, see the retarget README).
SOFT_REACH = 0.02
#: A knee off the hip-to-target line by less than this share of the thigh is a straight leg (:func:`two_bone`): it
#: bends in the fixed fallback plane, not in the direction of rounding noise.
STRAIGHT_KNEE = 1e-4

#: The least forward offset (a share of the thigh's length, about 3 degrees of bend) of the plane :func:`two_bone`
#: bends a knee in, toward the side knees bend to (``bend``: the thigh's forward axis). A knee that bends that way
#: keeps its copy's plane; a straight one's plane is a hair's offset, which may point backward (CMU 131_01 onto
#: Bandai: a copied leg 0.1 % of the thigh behind its line had been bent 14 degrees the wrong way when IK shortened
#: it, 12 frames of 994 hyperextended by up to 3.5 % of the stature), and a source's hyperextended knee bent further
#: back.
KNEE_AHEAD = 0.05


@dataclass
class PinState:
    """Stream state of the IK retargeting's foot targets: tensors, so a compiled step carries it in and out.

    Attributes
    ----------
    pins : Tensor
        ``(K, 3)`` where each tracked joint of :data:`FEET` is held while in contact (stale where it is free).
    pinned : Tensor
        ``(K,)`` 1 where the joint was in contact, so held, on the previous frame; else 0.
    offsets : Tensor
        ``(K, 3)`` each tracked joint's target minus the copy's position (held, or decaying after lift-off).
    hang : Tensor
        ``(2, 3)`` each ankle's target minus its pinned target while it hangs from a planted toe (left, right).
    """

    pins: Tensor
    pinned: Tensor
    offsets: Tensor
    hang: Tensor

    @classmethod
    def fresh(cls, dtype: torch.dtype = torch.float64) -> PinState:
        """The state at the start of a stream: nothing pinned, no offsets (all zeros, so that an engine that
        zero-fills a state it was not given starts a fresh stream, and no NaN flag is needed)."""
        k = len(FEET)
        return cls(torch.zeros(k, 3, dtype=dtype), torch.zeros(k, dtype=dtype), torch.zeros(k, 3, dtype=dtype),
                   torch.zeros(2, 3, dtype=dtype))  # fmt: skip


def pin_step(
    copy: Tensor, contact: Tensor, decay: float, pins: Tensor, pinned: Tensor, offsets: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One frame of foot pins: where each tracked joint is held while in contact (online).

    At touch-down the joint's current target (the copy's position plus its decayed offset) is pinned; while in
    contact the target stays there, but for its height (``Y``, the canonical up), which follows the copy's where
    that is lower (a foot that touched down a little high settles onto the floor; it had hovered there); after
    lift-off the offset from the copy decays by ``decay`` per frame, so the foot rejoins the copy smoothly.

    Parameters
    ----------
    copy : Tensor
        ``(K, 3)`` the copy's positions of the tracked joints.
    contact : Tensor
        ``(K,)`` bool contacts.
    decay : float
        Remaining fraction of the offset per frame (:data:`RELEASE_DECAY` per 1/30 s).
    pins, pinned, offsets : Tensor
        ``(K, 3)``, ``(K,)``, ``(K, 3)``: :class:`PinState`'s, from the previous frame.

    Returns
    -------
    tuple of Tensor
        ``(K, 3)`` targets, and the new pins, pinned flags and offsets.
    """
    held = contact[..., None]
    pins = torch.where(held & (pinned[..., None] < 0.5), copy + offsets * decay, pins)  # touch-down
    # a held joint may settle lower with the copy (a pin frozen at its touch-down height kept feet hovering: an
    # audit, 1.1 % of the height above the copy's at the median on one walk), never slide along the floor
    settled = torch.where(contact, torch.minimum(pins[..., 1], copy[..., 1]), pins[..., 1])
    pins = torch.cat([pins[..., :1], settled[..., None], pins[..., 2:]], dim=-1)
    offsets = torch.where(held, pins - copy, offsets * decay)
    return copy + offsets, pins, contact.to(pins.dtype), offsets


def hang_step(given: Tensor, hung: Tensor, toe_only: Tensor, decay: float, offsets: Tensor) -> tuple[Tensor, Tensor]:
    """One frame of the ankles' targets while only their toes are planted (online; one row per leg).

    A foot pivoting on its planted toe keeps the toe still and swings the ankle about it; the copy's ankle
    follows the source's instead, which pivots about the source's toe on the source's foot. So while a toe is
    planted and its ankle is not, the ankle's target is the toe's pin minus the copy's ankle-to-toe vector
    (``hung``); the ankle eases onto that target and, after that, back onto the given one, the difference left
    shrinking by ``decay`` per frame, as :func:`pin_step`'s does (it had jumped onto the hung target at once,
    and the knee with it: 19 degrees in one frame of a 120 fps walk whose knee never turns 4.2).

    Parameters
    ----------
    given : Tensor
        ``(S, 3)`` the ankles' targets from :func:`pin_step`.
    hung : Tensor
        ``(S, 3)`` the ankles hung from their toes' pins.
    toe_only : Tensor
        ``(S,)`` bool: the toe alone is planted.
    decay : float
        Remaining fraction of the offset per frame.
    offsets : Tensor
        ``(S, 3)`` the previous frame's offsets from ``given``.

    Returns
    -------
    tuple of Tensor
        ``(S, 3)`` targets and the new offsets.
    """
    wanted = hung - given
    offsets = torch.where(toe_only[..., None], wanted + (offsets - wanted) * decay, offsets * decay)
    return given + offsets, offsets


def two_bone(
    hip: Tensor, knee: Tensor, target: Tensor, upper: Tensor | float, lower: Tensor | float, *, soft: float = 0.0,
    bend: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Analytic two-bone IK: knee and foot positions reaching for ``target`` with fixed bone lengths.

    With ``soft`` > 0 (a fraction of the limb, :data:`SOFT_REACH`) the reach is soft: a target at distance ``d``
    beyond ``L - s`` (``L = upper + lower``, ``s = soft L``) is reached at ``L - s + s (1 - exp(-(d - L + s) / s))``,
    which grows smoothly to ``L`` (Nicholas's soft IK): as a target runs out of reach the knee straightens ever
    more slowly instead of locking straight, and bends back as smoothly.

    Parameters
    ----------
    hip, knee, target : Tensor
        ``(..., 3)`` hip position, current knee position (gives the bending plane), wanted foot position.
    upper, lower : Tensor
        ``(...)`` or scalar bone lengths.

    Returns
    -------
    tuple of Tensor
        ``(..., 3)`` new knee and foot positions (the foot reaches the target when it is within reach,
        else, or softly out of reach, lies on the line towards it).
    """
    reach = target - hip
    dist = reach.norm(dim=-1, keepdim=True).clamp_min(1e-9)
    u = reach / dist
    a, b = torch.as_tensor(upper, dtype=hip.dtype)[..., None], torch.as_tensor(lower, dtype=hip.dtype)[..., None]
    if soft > 0:
        span = soft * (a + b)
        near = a + b - span
        dist = torch.where(dist > near, near + span * (1 - torch.exp(-(dist - near) / span)), dist)
    d = torch.minimum(torch.maximum(dist, (a - b).abs() + 1e-6 * (a + b)), (a + b) * (1 - 1e-6))
    along = (a * a - b * b + d * d) / (2 * d)
    side = torch.sqrt((a * a - along * along).clamp_min(0.0))
    pole = knee - hip
    pole = pole - (pole * u).sum(-1, keepdim=True) * u
    if bend is None:
        fallback = _cross(u, torch.tensor([1.0, 0.0, 0.0], dtype=hip.dtype).expand_as(u))
    else:
        fallback = bend - (bend * u).sum(-1, keepdim=True) * u
        ahead = fallback / fallback.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        # at least KNEE_AHEAD of the thigh's length toward the side knees bend to: a knee bent that way keeps its own
        # plane, a straight or hyperextended one (the copy's tiny offset backward) is bent forward
        forward = (pole * ahead).sum(-1, keepdim=True)
        pole = pole + (forward.clamp_min(KNEE_AHEAD * a) - forward) * ahead
    pole_n = pole.norm(dim=-1, keepdim=True)
    # a knee within STRAIGHT_KNEE of the thigh's length off the hip-target line is a straight leg: its bending
    # plane is rounding noise, which float32 and float64 resolve differently (an audit's ONNX export put a
    # straight-legged T-pose's knee 6.85 cm from the Python step's), so it takes the fixed fallback plane
    bent = pole_n > STRAIGHT_KNEE * a
    pole = torch.where(bent, pole / pole_n.clamp_min(1e-12), fallback / fallback.norm(dim=-1, keepdim=True).clamp_min(1e-12))
    return hip + u * along + pole * side, hip + u * d


class IKRetarget:
    """IK retargeting on a target rig (causal; see the module docstring). The stream state is explicit
    (:class:`PinState` in and out), so one frame is a pure function of tensors that a compiled step can run.

    Parameters
    ----------
    target : CanonicalRig
        The target rig.
    """

    def __init__(self, target: CanonicalRig) -> None:
        self.target = target
        self.rig = IKRig(canonical_skeleton(target.offsets))
        off = target.offsets
        self.lengths = {s: (float(off[SLOT[f"{s}_leg"]].norm()), float(off[SLOT[f"{s}_foot"]].norm())) for s in "lr"}
        self.has_toe = [bool(target.present[SLOT[f"{s}_toe"]]) for s in "lr"]
        #: The joints IK turns: only the legs' targets move, every other joint keeps the copy's rotation.
        self.legs = tuple(SLOT[f"{s}_{part}"] for s in "lr" for part in ("upleg", "leg", "foot", "toe"))

    def __call__(
        self, frames: Tensor, hips: Tensor, contacts: Tensor, fps: float, state: PinState | None = None
    ) -> tuple[Tensor, PinState]:
        """Target bone frames and the new stream state.

        Parameters
        ----------
        frames : Tensor
            ``(F, 22, 3, 3)`` source (= copy) bone frames.
        hips : Tensor
            ``(F, 3)`` target hips positions (the copy's).
        contacts : Tensor
            ``(F, 4)`` source contacts of :data:`FEET`.
        fps : float
            Frame rate.
        state : PinState, optional
            From the previous call (``None``: a new stream).

        Returns
        -------
        tuple
            ``(F, 22, 3, 3)`` target bone frames (float64) and the stream state after the last frame.
        """
        frames = frames.to(torch.float64)
        contacts = contacts.bool()
        local = canonical_locals(frames)
        init = matrix_to_quat(local)
        _, pos = self.target.canonical_fk(local, hips.to(torch.float64))
        feet = list(FEET)
        state = state or PinState.fresh(pos.dtype)
        pins, pinned, offsets, hang = state.pins, state.pinned, state.offsets, state.hang
        decay = RELEASE_DECAY ** (30.0 / fps)
        # ankles hang from planted toes (a leg without a toe never has its toe alone planted: its ankle is free)
        toe_only = contacts[:, 2:] & ~contacts[:, :2] & torch.tensor(self.has_toe)
        foot_vectors = (pos[:, feet[2:]] - pos[:, feet[:2]]).unbind()  # (2, 3) each: ankle to toe
        rows = []
        for t, (copy, contact) in enumerate(zip(pos[:, feet].unbind(), contacts.unbind(), strict=True)):  # a recurrence
            row, pins, pinned, offsets = pin_step(copy, contact, decay, pins, pinned, offsets)
            ankles, hang = hang_step(row[:2], row[2:] - foot_vectors[t], toe_only[t], decay, hang)
            rows.append(torch.cat([ankles, row[2:]]))
        targets = torch.stack(rows)
        wanted = pos.clone()
        for k, s in enumerate("lr"):
            upper, lower = self.lengths[s]
            knee, foot = two_bone(pos[:, SLOT[f"{s}_upleg"]], pos[:, SLOT[f"{s}_leg"]], targets[:, k], upper, lower,
                                  soft=SOFT_REACH, bend=frames[:, SLOT[f"{s}_upleg"], :, 2])  # fmt: skip
            wanted[:, SLOT[f"{s}_leg"]] = knee
            wanted[:, SLOT[f"{s}_foot"]] = foot
            if self.has_toe[k]:
                wanted[:, SLOT[f"{s}_toe"]] = targets[:, 2 + k]
        quats, _ = swing_ik(wanted, self.rig, init, joints=self.legs)
        return frames_from_locals(quat_to_matrix(quats)), PinState(pins, pinned, offsets, hang)
