r"""NKN: the online neural retargeting network and its motion discriminator.

After "Neural Kinematic Networks for Unsupervised Motion Retargetting" (Villegas et al., CVPR 2018), on the
canonical 22-joint layout of :mod:`.rig` so that one network serves every skeleton:

* **encoder**: a GRU over per-frame source features, causal;
* **decoder**: a GRU over the encoder state and the *target* skeleton (its canonical offsets divided by
  its leg length); it emits, per joint, a quaternion that multiplies the source's canonical local rotation
  (``q^B = q^A * delta``, ``delta = normalize(1 + out)``) and a hips offset in the heading frame (in target
  leg lengths) added to the copied source hips (their height scaled by the leg-length ratio, their travel by the
  stride legs' where :attr:`NKNConfig.stride_travel`, standing on the target's soles, :func:`.stance.scaled_hips`);
* the rotations then go through forward kinematics with the target's offsets (the FK layer,
  :meth:`.rig.CanonicalRig.canonical_fk`, in :mod:`.loss`).

Departure from the paper, on purpose: the decoder predicts a correction to the rest-aware copy instead of
rotations from scratch, and its last layer starts at zero, so an untrained network *is* the copy baseline.
A small model trained on two CPU cores then only has to learn what the copy gets wrong (feet that skate
or sink when proportions change) instead of re-learning motion.

Per-frame source features (``F_IN = 206``): the 22 canonical local rotations as 6D (the hips' with its
heading removed), the hips velocity in the heading frame and its height (in source leg lengths per second
and leg lengths), the 4 online foot contacts (:func:`.baselines.causal_contacts`), and the source skeleton's
canonical offsets in source leg lengths.

State for streaming: the two GRU hidden states and the previous hips position (:class:`NKNState`).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from skelanim.core.rotations import matrix_to_rot6d, quat_to_matrix
from skelanim.errors import FormatError
from skelanim.nn.checkpoint import config_error, load_model_files
from skelanim.retarget.rig import stride_leg
from skelanim.retarget.stance import scaled_hips, sole_height, toeless

__all__ = ["DEFAULT_MODEL", "NKN", "Discriminator", "NKNConfig", "NKNState", "heading", "load_nkn", "skeleton_features"]

#: The shipped model's folder.
DEFAULT_MODEL = Path(__file__).resolve().parent / "pretrained"
_LOADED: dict[str, NKN] = {}


J = 22
F_SKEL = J * 3
F_IN = J * 6 + 3 + 1 + 4 + F_SKEL


@dataclass
class NKNConfig:
    """Sizes of the network.

    Attributes
    ----------
    hidden : int
        GRU width of encoder and decoder.
    disc_hidden : int
        Channels of the discriminator's convolutions.
    calibrated_frames : bool
        Whether it was trained with the bone frames of skeletons whose zero pose is no body pose calibrated on
        their motion (:func:`~.rig.calibrate_rig`; every model trained since 2026-12-03); a model without them
        refuses calibrated rigs.
    stride_travel : bool
        Whether the copied hips it corrects travel by the ratio of the stride legs (:func:`~.rig.stride_leg`;
        models trained since 2026-12-05, session f, and new networks); an older model's basis travelled by the
        leg-length ratio, and it keeps that basis (it learned to correct it): a config without the key reads False.
    """

    hidden: int = 128
    disc_hidden: int = 64
    calibrated_frames: bool = False
    stride_travel: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly copy."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NKNConfig:
        """Inverse of :meth:`to_dict` (unknown keys ignored; a config saved before ``stride_travel`` was its
        attribute reads it False, as that model was trained)."""
        return cls(**({"stride_travel": False} | {k: v for k, v in data.items() if k in cls.__dataclass_fields__}))


@dataclass
class NKNState:
    """Streaming state: ``(1, B, H)`` hidden states and the previous ``(B, 3)`` source hips position; ``started``
    (a compiled stream's, ``(1,)``): 0 on the first frame, whose previous hips are then its own (so zeros start a
    stream), 1 after."""

    encoder: Tensor | None = None
    decoder: Tensor | None = None
    hips: Tensor | None = None
    started: Tensor | None = None


def heading(hips_frame: Tensor) -> Tensor:
    """Yaw-only rotation matrices ``(..., 3, 3)`` turning canonical +Z onto the facing direction of
    ``(..., 3, 3)`` hips bone frames (world up is +Y)."""
    forward = hips_frame[..., :, 2]
    # cos and sin of atan2(x, z) without the angle (fewer operations in a streamed frame); facing straight up or
    # down (no horizontal part) gives the identity, as atan2(0, 0) = 0 would
    sq = forward[..., 0] ** 2 + forward[..., 2] ** 2
    none = sq <= 1e-24
    scale = torch.rsqrt(torch.where(none, torch.ones_like(sq), sq))  # finite gradients at none too
    c = torch.where(none, torch.ones_like(sq), forward[..., 2] * scale)
    s = torch.where(none, torch.zeros_like(sq), forward[..., 0] * scale)
    o, i = torch.zeros_like(c), torch.ones_like(c)
    return torch.stack([c, o, s, o, i, o, -s, o, c], dim=-1).unflatten(-1, (3, 3))


def _gru(gru: nn.GRU, x: Tensor, h: Tensor | None) -> tuple[Tensor, Tensor]:
    """``nn.GRU`` over ``(B, T, D)``; one frame with a state goes through the fused cell (same weights, same
    result, less overhead per streamed frame)."""
    if x.shape[1] != 1 or h is None or gru.training or torch.onnx.is_in_onnx_export():
        return gru(x, h)  # exported, nn.GRU becomes ONNX's fused GRU node
    weights: list[Tensor] = [getattr(gru, n) for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")]
    out = torch._VF.gru_cell(x[:, 0], h[0], *weights)
    return out[:, None], out[None]


def _rotate(m: Tensor, v: Tensor) -> Tensor:
    return (m @ v[..., None])[..., 0]


def skeleton_features(offsets: Tensor, leg: Tensor) -> Tensor:
    """``(..., 66)`` skeleton description: ``(..., 22, 3)`` canonical offsets over ``(...)`` leg lengths."""
    return (offsets / leg[..., None, None]).flatten(-2)


class NKN(nn.Module):
    """The retargeting network (see the module docstring).

    Parameters
    ----------
    config : NKNConfig
        Sizes.
    """

    def __init__(self, config: NKNConfig | None = None) -> None:
        super().__init__()
        self.config = config or NKNConfig()
        #: Frame rate of the training clips (``config.json``'s ``train_fps``): the rate its recurrent steps learned.
        self.train_fps = 30.0
        h = self.config.hidden
        self.encoder_in = nn.Sequential(nn.Linear(F_IN, h), nn.ReLU())
        self.encoder = nn.GRU(h, h, batch_first=True)
        self.decoder = nn.GRU(h + F_SKEL, h, batch_first=True)
        last = nn.Linear(h, J * 4 + 3)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.head = nn.Sequential(nn.Linear(h, h), nn.ReLU(), last)

    def features(self, local: Tensor, hips: Tensor, contacts: Tensor, src_skel: Tensor, src_leg: Tensor,
                 fps: float, previous: Tensor | None, started: Tensor | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
        """Per-frame input features ``(B, T, F_IN)`` and the heading matrices ``(B, T, 3, 3)``."""
        yaw = heading(local[..., 0, :, :])
        inv = yaw.transpose(-1, -2)
        rot = torch.cat([(inv @ local[..., 0, :, :])[..., None, :, :], local[..., 1:, :, :]], dim=-3)
        prev = hips[:, :1] if previous is None else previous[:, None]
        if started is not None:  # a compiled stream's first frame: no previous hips (its given ones are zeros)
            prev = torch.where(started > 0.5, prev, hips[:, :1])
        vel = _rotate(inv, (hips - torch.cat([prev, hips[:, :-1]], dim=1)) * fps) / src_leg[:, None, None]
        height = hips[..., 1:2] / src_leg[:, None, None]
        t = local.shape[1]
        x = torch.cat([matrix_to_rot6d(rot).flatten(-2), vel, height, contacts.to(local.dtype),
                       src_skel[:, None, :].expand(-1, t, -1)], dim=-1)  # fmt: skip
        return x, yaw

    def forward(self, local: Tensor, hips: Tensor, contacts: Tensor, src_offsets: Tensor, src_leg: Tensor,
                tgt_offsets: Tensor, tgt_leg: Tensor, fps: float,
                state: NKNState | None = None) -> tuple[Tensor, Tensor, NKNState]:  # fmt: skip
        """Retarget a batch of sequences (or continue streams).

        Parameters
        ----------
        local : Tensor
            ``(B, T, 22, 3, 3)`` source canonical local rotation matrices.
        hips : Tensor
            ``(B, T, 3)`` source hips positions.
        contacts : Tensor
            ``(B, T, 4)`` source foot contacts (bool or float).
        src_offsets, tgt_offsets : Tensor
            ``(B, 22, 3)`` canonical offsets of source and target.
        src_leg, tgt_leg : Tensor
            ``(B,)`` leg lengths.
        fps : float
            Frame rate.
        state : NKNState, optional
            Streaming state from the previous call.

        Returns
        -------
        tuple
            ``(B, T, 22, 3, 3)`` target canonical local rotations, ``(B, T, 3)`` target hips positions, and
            the new state.
        """
        state = state or NKNState()
        src_skel = skeleton_features(src_offsets, src_leg)
        tgt_skel = skeleton_features(tgt_offsets, tgt_leg)
        x, yaw = self.features(local, hips, contacts, src_skel, src_leg, fps, state.hips, state.started)
        enc, h_enc = _gru(self.encoder, self.encoder_in(x), state.encoder)
        dec_in = torch.cat([enc, tgt_skel[:, None, :].expand(-1, enc.shape[1], -1)], dim=-1)
        dec, h_dec = _gru(self.decoder, dec_in, state.decoder)
        out = self.head(dec)
        delta = out[..., : J * 4].unflatten(-1, (J, 4))
        delta = delta + delta.new_tensor([1.0, 0.0, 0.0, 0.0])
        target_local = local @ quat_to_matrix(delta)  # quat_to_matrix normalises (a zero quaternion: identity)
        copied = scaled_hips(hips, src_leg[:, None], tgt_leg[:, None], sole_height(src_offsets)[:, None],
                             sole_height(tgt_offsets)[:, None], source_toeless=toeless(src_offsets)[:, None],
                             target_toeless=toeless(tgt_offsets)[:, None],
                             stride_ratio=(stride_leg(tgt_offsets) / stride_leg(src_offsets))[:, None]
                             if self.config.stride_travel else None)  # fmt: skip
        target_hips = copied + _rotate(yaw, out[..., J * 4 :]) * tgt_leg[:, None, None]
        return target_local, target_hips, NKNState(h_enc, h_dec, hips[:, -1].detach())


class Discriminator(nn.Module):
    """Judges windows of motion on a skeleton: real recordings against retargeted ones.

    Input per frame: joint positions relative to the hips in the heading frame and the hips velocity and
    height (all in leg lengths), with the skeleton's features; two strided 1-D convolutions, mean over time.

    Parameters
    ----------
    config : NKNConfig
        Sizes.
    """

    def __init__(self, config: NKNConfig | None = None) -> None:
        super().__init__()
        c = (config or NKNConfig()).disc_hidden
        self.net = nn.Sequential(
            nn.Conv1d(J * 3 + 4 + F_SKEL, c, 5, stride=2, padding=2), nn.LeakyReLU(0.2),
            nn.Conv1d(c, c, 5, stride=2, padding=2), nn.LeakyReLU(0.2),
        )  # fmt: skip
        self.out = nn.Linear(c, 1)

    def forward(self, positions: Tensor, local: Tensor, skel: Tensor, leg: Tensor, fps: float) -> Tensor:
        """Scores ``(B,)`` of windows.

        Parameters
        ----------
        positions : Tensor
            ``(B, T, 22, 3)`` canonical joint positions.
        local : Tensor
            ``(B, T, 22, 3, 3)`` canonical local rotations (the hips' gives the heading).
        skel : Tensor
            ``(B, 66)`` skeleton features.
        leg : Tensor
            ``(B,)`` leg lengths.
        fps : float
            Frame rate.
        """
        inv = heading(local[..., 0, :, :]).transpose(-1, -2)
        hips = positions[..., 0, :]
        rel = _rotate(inv[..., None, :, :], positions - hips[..., None, :]) / leg[:, None, None, None]
        vel = torch.cat([torch.zeros_like(hips[:, :1]), hips[:, 1:] - hips[:, :-1]], dim=1) * fps
        vel = _rotate(inv, vel) / leg[:, None, None]
        x = torch.cat([rel.flatten(-2), vel, hips[..., 1:2] / leg[:, None, None],
                       skel[:, None, :].expand(-1, rel.shape[1], -1)], dim=-1)  # fmt: skip
        return self.out(self.net(x.transpose(1, 2)).mean(-1))[:, 0]


def load_nkn(folder: str | os.PathLike | None = None) -> NKN:
    """Load an NKN model folder (``model.safetensors`` + ``config.json``); ``None``: the shipped default.

    Raises
    ------
    FormatError
        Missing or corrupt folder, or not an NKN model.
    """
    path = Path(folder) if folder is not None else DEFAULT_MODEL
    key = str(path.resolve())
    if key in _LOADED:
        return _LOADED[key]
    tensors, config = load_model_files(path)
    if config.get("format") != "skelanim-retarget-nkn":
        raise FormatError(f"not an NKN retargeting model (format {config.get('format')!r})", path=path / "config.json")
    try:
        net = NKN(NKNConfig.from_dict(config["architecture"]))
        net.train_fps = float(config.get("train_fps", net.train_fps))
        weights = {k[4:]: v for k, v in tensors.items() if k.startswith("net.")} or tensors
        net.load_state_dict(weights)
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as err:
        raise config_error(err, path) from None
    net.eval()
    _LOADED[key] = net
    return net
