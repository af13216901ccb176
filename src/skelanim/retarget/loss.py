r"""NKN training losses, computed together by :class:`NKNTrainer` (so a DDP-wrapped forward sees them all).

For a batch of source windows ``A`` (motion, skeleton) and target skeletons ``B``, with positions from the
FK layer (:func:`~.rig.canonical_fk` on each skeleton's canonical offsets) and lengths in leg lengths:

========================  ==================================================================================
``rec``                   retarget ``A -> A``: positions and rotations equal the input (reconstruction)
``cyc``                   retarget ``A -> B -> A``: positions and rotations equal the input (cycle)
``skate``                 frames where a source foot/toe is planted (online contacts, this frame and the last):
                          the target's foot/toe moves not at all horizontally (speed squared, leg lengths/s)
``pen``                   target feet and toes never below the floor (``y = 0``)
``reg``                   the correction to the rest-aware copy stays small (rotations and hips)
``twist``                 the correction does not turn bones about their own axis (angle squared)
``smooth``                the correction changes slowly from frame to frame
``adv``                   a discriminator (least squares) cannot tell target windows from real motion of the
                          target's family at its proportions; the generator's term goes through a copy of
                          the discriminator with frozen weights, the discriminator learns from detached
                          windows, so one optimiser trains both. Only samples whose target has captured motion
                          count (``batch["captured"]``): a bone-length variant's or a motionless family's
                          "real" window is another skeleton's motion copied onto it, which would teach the
                          network that the copy (feet skating included) is real (the NKN authors' ``aeReg``
                          mask likewise gates the term)
========================  ==================================================================================
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn
from torch.func import functional_call

from skelanim.retarget.baselines import FEET
from skelanim.retarget.model import NKN, Discriminator, NKNConfig, skeleton_features
from skelanim.retarget.rig import canonical_fk, canonical_frames, stride_leg
from skelanim.retarget.stance import scaled_hips, sole_height, toeless

__all__ = ["LossWeights", "NKNTrainer", "twist_angle"]


@dataclass
class LossWeights:
    """Weights of the loss terms (see the module docstring)."""

    rec: float = 1.0
    cyc: float = 1.0
    skate: float = 10.0
    pen: float = 10.0
    reg: float = 1.0
    twist: float = 0.1
    smooth: float = 20.0
    adv: float = 0.02

    def to_dict(self) -> dict[str, float]:
        """JSON-friendly copy."""
        return asdict(self)


def twist_angle(rotation: Tensor, axis: Tensor, ref: Tensor) -> Tensor:
    """Signed angle ``(...)`` by which ``(..., 3, 3)`` rotations turn ``ref`` about ``axis`` (both ``(..., 3)``,
    unit, orthogonal): ``atan2(axis . (ref x R ref), ref . R ref)``."""
    turned = (rotation @ ref[..., None])[..., 0]
    axis, ref = axis.expand_as(turned), ref.expand_as(turned)
    return torch.atan2((axis * torch.linalg.cross(ref, turned)).sum(-1), (ref * turned).sum(-1))


def _pos_err(a: Tensor, b: Tensor, leg: Tensor) -> Tensor:
    return (((a - b) / leg[:, None, None, None]) ** 2).sum(-1).mean()


class NKNTrainer(nn.Module):
    axis: Tensor
    ref: Tensor

    """The network and its discriminator with all losses in ``forward`` (what :func:`skelanim.nn.fit` trains).

    Parameters
    ----------
    config : NKNConfig
        Network sizes.
    weights : LossWeights
        Loss weights.
    """

    def __init__(self, config: NKNConfig | None = None, weights: LossWeights | None = None) -> None:
        super().__init__()
        self.net = NKN(config)
        self.disc = Discriminator(config)
        self.weights = weights or LossWeights()
        frames = canonical_frames().float()
        self.register_buffer("axis", frames[..., 0].clone(), persistent=False)
        self.register_buffer("ref", frames[..., 1].clone(), persistent=False)

    def _score(self, params: dict[str, Tensor] | None, pos: Tensor, local: Tensor, off: Tensor, leg: Tensor,
               fps: float) -> Tensor:  # fmt: skip
        skel = skeleton_features(off, leg)
        if params is None:
            return self.disc(pos, local, skel, leg, fps)
        return functional_call(self.disc, params, (pos, local, skel, leg, fps))

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Total loss and its parts for a batch (keys as built by :class:`~.train.RetargetTask`)."""
        w, fps = self.weights, float(batch["fps"])
        la, ha, c = batch["src_local"], batch["src_hips"], batch["contacts"]
        oa, leg_a, ob, leg_b = batch["src_off"], batch["src_leg"], batch["tgt_off"], batch["tgt_leg"]
        _, pa = canonical_fk(la, ha, oa[:, None])
        lb, hb, _ = self.net(la, ha, c, oa, leg_a, ob, leg_b, fps)
        _, pb = canonical_fk(lb, hb, ob[:, None])
        la2, ha2, _ = self.net(lb, hb, c, ob, leg_b, oa, leg_a, fps)
        _, pa2 = canonical_fk(la2, ha2, oa[:, None])
        laa, haa, _ = self.net(la, ha, c, oa, leg_a, oa, leg_a, fps)
        _, paa = canonical_fk(laa, haa, oa[:, None])
        parts: dict[str, Tensor] = {
            "rec": _pos_err(paa, pa, leg_a) + 0.1 * ((laa - la) ** 2).sum((-1, -2)).mean(),
            "cyc": _pos_err(pa2, pa, leg_a) + 0.1 * ((la2 - la) ** 2).sum((-1, -2)).mean(),
        }
        feet = pb[:, :, list(FEET)]
        vel = (feet[:, 1:] - feet[:, :-1])[..., [0, 2]] * fps / leg_b[:, None, None, None]
        planted = c[:, 1:] * c[:, :-1]
        parts["skate"] = (planted * (vel**2).sum(-1)).sum() / planted.sum().clamp_min(1.0)
        parts["pen"] = (torch.relu(-feet[..., 1] / leg_b[:, None, None]) ** 2).mean()
        delta = la.transpose(-1, -2) @ lb
        copied = scaled_hips(ha, leg_a[:, None], leg_b[:, None], sole_height(oa)[:, None], sole_height(ob)[:, None],
                             source_toeless=toeless(oa)[:, None], target_toeless=toeless(ob)[:, None],
                             stride_ratio=(stride_leg(ob) / stride_leg(oa))[:, None]
                             if self.net.config.stride_travel else None)  # fmt: skip
        hips_off = (hb - copied) / leg_b[:, None, None]  # the network's own correction to the copy's hips
        parts["reg"] = ((lb - la) ** 2).sum((-1, -2)).mean() + (hips_off**2).sum(-1).mean()
        parts["twist"] = (twist_angle(delta[:, :, 1:], self.axis[1:], self.ref[1:]) ** 2).mean()
        change = torch.cat([(delta - torch.eye(3, dtype=delta.dtype, device=delta.device)).flatten(-3), hips_off], dim=-1)
        parts["smooth"] = ((change[:, 1:] - change[:, :-1]) ** 2).sum(-1).mean()
        total = sum(getattr(w, k) * v for k, v in parts.items())
        if w.adv > 0:
            _, preal = canonical_fk(batch["real_local"], batch["real_hips"], ob[:, None])
            d_real = self._score(None, preal, batch["real_local"], ob, leg_b, fps)
            d_fake = self._score(None, pb.detach(), lb.detach(), ob, leg_b, fps)
            captured = batch.get("captured", torch.ones_like(d_real, dtype=torch.bool)).to(d_real.dtype)
            count = captured.sum().clamp_min(1.0)
            parts["disc"] = (((d_real - 1) ** 2 + d_fake**2) * captured).sum() / count
            frozen = {k: v.detach() for k, v in self.disc.named_parameters()}
            parts["adv"] = (((self._score(frozen, pb, lb, ob, leg_b, fps) - 1) ** 2) * captured).sum() / count
            total = total + w.adv * parts["adv"] + parts["disc"]
        return total, {k: float(v.detach()) for k, v in parts.items()}
