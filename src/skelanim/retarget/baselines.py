r"""Baseline retargeting in canonical space: rest-aware copy, IK retargeting, and online foot contacts.

Everything here works on the canonical representation of :mod:`.rig` (world bone frames ``Q`` of the 22
canonical joints, ``(F, 22, 3, 3)``, and the hips position ``(F, 3)``) and is *causal*: frame ``t`` depends
on frames ``<= t`` only, through an explicit state, so a stream processed frame by frame gives the same
result as the whole clip at once.

* **copy** (the NKN paper's "copy quaternions and velocities", made rest-pose aware): the target's bone
  frames are the source's, ``Q^B = Q^A``; the hips position is the source's scaled by the leg-length ratio
  ``l_B / l_A`` (so are its velocities).
* **IK retargeting**: the copy's joint positions on the target skeleton (source poses at target
  proportions), with feet held where they touched down during the source's contacts (:class:`FootPins`);
  while only the toe is planted (the heel rising), the ankle hangs from the toe's pin by the copy's foot
  (:class:`ToeHang`), so the foot pivots about a toe that stays put; each leg's knee is placed by two-bone IK
  so the bones keep their lengths, then
  :func:`skelanim.ik.classical.swing_ik` (issue #3) turns those positions into rotations, starting from the
  copy's so that twists are kept.

Foot contacts online
--------------------
:func:`causal_contacts` labels a foot joint in contact when its height above its lowest point so far is
below ``0.05 h`` and its speed (backward difference) below ``0.25 h`` per second (``h`` the source height):
the thresholds of :func:`skelanim.ops.foot_contacts`, with the clip-wide floor and central differences
replaced by their causal counterparts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from skelanim.core.rotations import matrix_to_quat, quat_to_matrix
from skelanim.ik.classical import swing_ik
from skelanim.ik.frames import IKRig
from skelanim.ops.contacts import DEFAULT_HEIGHT_FRACTION, DEFAULT_SPEED_FRACTION
from skelanim.retarget.rig import SLOT, CanonicalRig, canonical_locals, canonical_skeleton, frames_from_locals
from skelanim.retarget.stance import scaled_hips

__all__ = ["FEET", "ContactState", "FootPins", "IKRetarget", "ToeHang", "causal_contacts", "copy_hips", "two_bone"]

#: Canonical slots whose contacts are tracked: left foot, right foot, left toe, right toe.
FEET: tuple[int, ...] = (SLOT["l_foot"], SLOT["r_foot"], SLOT["l_toe"], SLOT["r_toe"])


def copy_hips(hips: Tensor, source: CanonicalRig, target: CanonicalRig) -> Tensor:
    """``(..., 3)`` source hips positions above the floor scaled by the leg-length ratio ``l_B / l_A``, standing
    on the target's own soles (:func:`~.stance.scaled_hips`)."""
    return scaled_hips(hips, source.leg_length, target.leg_length, source.sole, target.sole)


@dataclass
class ContactState:
    """Running floor (lowest height so far) and previous positions of the tracked joints."""

    floor: Tensor | None = None
    previous: Tensor | None = None


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
    if y.shape[0] == 1:  # a streamed frame (also keeps the traced step exportable: ONNX has no cummin)
        floor = torch.minimum(start, y)
    else:
        floor = torch.cummin(torch.cat([start, y]), dim=0).values[1:]
    prev = positions[:1] if state.previous is None else state.previous
    prev = torch.where(torch.isnan(prev), positions[:1], prev)  # a traced stream starts with NaN
    step = positions - torch.cat([prev, positions[:-1]])
    speed = step.norm(dim=-1) * fps
    contact = (y - floor < DEFAULT_HEIGHT_FRACTION * height) & (speed < DEFAULT_SPEED_FRACTION * height)
    return contact, ContactState(floor[-1:].clone(), positions[-1:].clone())


@dataclass
class _HeldOffsets:
    """Per-joint offsets from given targets (online): set while a joint is held to a target of its own, then
    decaying by ``decay`` per 1/30 s, so the joint rejoins the given target smoothly."""

    decay: float = 0.6
    offset: list[list[float]] = field(default_factory=list)

    def _start(self, joints: int) -> None:
        """Called once, with the number of joints, before the first frame."""

    def _held(self, t: int, j: int, given: list[float], decay: float) -> list[float] | None:
        """Where joint ``j`` is held at frame ``t`` (its given target ``given``), or ``None`` when it is free."""
        raise NotImplementedError

    def _follow(self, given: Tensor, fps: float) -> Tensor:
        """Targets ``(F, K, 3)``: the given ``(F, K, 3)`` plus each joint's held or decaying offset."""
        f, k, _ = given.shape
        if not self.offset:
            self.offset = [[0.0, 0.0, 0.0] for _ in range(k)]
            self._start(k)
        decay = self.decay ** (30.0 / fps)
        rows = given.tolist()
        out = []
        for t in range(f):
            row = []
            for j in range(k):
                p = rows[t][j]
                held = self._held(t, j, p, decay)
                if held is None:
                    self.offset[j] = [o * decay for o in self.offset[j]]
                else:
                    self.offset[j] = [held[i] - p[i] for i in range(3)]
                row.append([p[i] + self.offset[j][i] for i in range(3)])
            out.append(row)
        return torch.tensor(out, dtype=given.dtype)


@dataclass
class FootPins(_HeldOffsets):
    """Where each tracked joint is held while in contact (online).

    At touch-down the joint's current target is pinned; while in contact the target stays there; after
    lift-off the offset from the copy decays by ``decay`` per 1/30 s, so the foot rejoins the copy smoothly.
    """

    pin: list[list[float] | None] = field(default_factory=list)
    was: list[bool] = field(default_factory=list)
    _contact: list[list[bool]] = field(default_factory=list, repr=False)

    def __call__(self, copy: Tensor, contact: Tensor, fps: float) -> Tensor:
        """Targets ``(F, K, 3)`` from copy positions ``(F, K, 3)`` and contacts ``(F, K)``."""
        self._contact = contact.tolist()
        return self._follow(copy, fps)

    def _start(self, joints: int) -> None:
        self.pin = [None] * joints
        self.was = [False] * joints

    def _held(self, t: int, j: int, given: list[float], decay: float) -> list[float] | None:
        touching = bool(self._contact[t][j])
        if not touching:
            self.pin[j] = None
        elif not self.was[j] or self.pin[j] is None:  # touch-down: pinned where the decayed offset puts it
            self.pin[j] = [given[i] + self.offset[j][i] * decay for i in range(3)]
        self.was[j] = touching
        return self.pin[j]


@dataclass
class ToeHang(_HeldOffsets):
    """The ankles' targets while only their toes are planted (online; one entry per leg).

    A foot pivoting on its planted toe keeps the toe still and swings the ankle about it; the copy's ankle
    follows the source's instead, which pivots about the source's toe on the source's foot. So while a toe is
    planted and its ankle is not, the ankle's target is the toe's pin minus the copy's ankle-to-toe vector; after
    that the difference from the given target decays by ``decay`` per 1/30 s, as :class:`FootPins` does.
    """

    _hung: list[list[list[float]]] = field(default_factory=list, repr=False)
    _toe_only: list[list[bool]] = field(default_factory=list, repr=False)

    def __call__(self, ankle: Tensor, hung: Tensor, toe_only: Tensor, fps: float) -> Tensor:
        """Targets ``(F, K, 3)`` from ankle targets ``(F, K, 3)``, the ankles hung from the toe pins ``(F, K, 3)``
        and ``(F, K)`` flags of frames whose toe alone is planted."""
        self._hung, self._toe_only = hung.tolist(), toe_only.tolist()
        return self._follow(ankle, fps)

    def _held(self, t: int, j: int, given: list[float], decay: float) -> list[float] | None:
        return self._hung[t][j] if self._toe_only[t][j] else None


def two_bone(
    hip: Tensor, knee: Tensor, target: Tensor, upper: Tensor | float, lower: Tensor | float
) -> tuple[Tensor, Tensor]:
    """Analytic two-bone IK: knee and foot positions reaching for ``target`` with fixed bone lengths.

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
        else lies on the line towards it).
    """
    reach = target - hip
    dist = reach.norm(dim=-1, keepdim=True).clamp_min(1e-9)
    u = reach / dist
    a, b = torch.as_tensor(upper, dtype=hip.dtype)[..., None], torch.as_tensor(lower, dtype=hip.dtype)[..., None]
    d = torch.minimum(torch.maximum(dist, (a - b).abs() + 1e-6 * (a + b)), (a + b) * (1 - 1e-6))
    along = (a * a - b * b + d * d) / (2 * d)
    side = torch.sqrt((a * a - along * along).clamp_min(0.0))
    pole = knee - hip
    pole = pole - (pole * u).sum(-1, keepdim=True) * u
    pole_n = pole.norm(dim=-1, keepdim=True)
    fallback = torch.linalg.cross(u, torch.tensor([1.0, 0.0, 0.0], dtype=hip.dtype).expand_as(u))
    pole = torch.where(pole_n > 1e-9, pole / pole_n.clamp_min(1e-12), fallback / fallback.norm(dim=-1, keepdim=True).clamp_min(1e-12))
    return hip + u * along + pole * side, hip + u * d


class IKRetarget:
    """IK retargeting on a target rig (stateful, causal; see the module docstring).

    Parameters
    ----------
    target : CanonicalRig
        The target rig.
    """

    def __init__(self, target: CanonicalRig) -> None:
        self.target = target
        self.rig = IKRig(canonical_skeleton(target.offsets))
        self.pins = FootPins()
        self.hang = ToeHang()
        off = target.offsets
        self.lengths = {s: (float(off[SLOT[f"{s}_leg"]].norm()), float(off[SLOT[f"{s}_foot"]].norm())) for s in "lr"}
        self.has_toe = [bool(target.present[SLOT[f"{s}_toe"]]) for s in "lr"]

    def reset(self) -> None:
        """Start a new stream."""
        self.pins = FootPins()
        self.hang = ToeHang()

    def __call__(self, frames: Tensor, hips: Tensor, contacts: Tensor, fps: float) -> Tensor:
        """Target bone frames.

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

        Returns
        -------
        Tensor
            ``(F, 22, 3, 3)`` target bone frames (float64).
        """
        frames = frames.to(torch.float64)
        local = canonical_locals(frames)
        init = matrix_to_quat(local)
        _, pos = self.target.canonical_fk(local, hips.to(torch.float64))
        feet = list(FEET)
        targets = self.pins(pos[:, feet], contacts, fps)
        sides = [k for k in range(2) if self.has_toe[k]]
        if sides:  # ankles hang from planted toes
            ankles, toes = [feet[k] for k in sides], [feet[2 + k] for k in sides]
            hung = targets[:, [2 + k for k in sides]] - (pos[:, toes] - pos[:, ankles])
            toe_only = contacts[:, [2 + k for k in sides]].bool() & ~contacts[:, sides].bool()
            targets[:, sides] = self.hang(targets[:, sides], hung, toe_only, fps)
        wanted = pos.clone()
        for k, s in enumerate("lr"):
            upper, lower = self.lengths[s]
            knee, foot = two_bone(pos[:, SLOT[f"{s}_upleg"]], pos[:, SLOT[f"{s}_leg"]], targets[:, k], upper, lower)
            wanted[:, SLOT[f"{s}_leg"]] = knee
            wanted[:, SLOT[f"{s}_foot"]] = foot
            if self.has_toe[k]:
                wanted[:, SLOT[f"{s}_toe"]] = targets[:, 2 + k]
        quats, _ = swing_ik(wanted, self.rig, init)
        return frames_from_locals(quat_to_matrix(quats))
