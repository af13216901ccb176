"""Motion predictors: a seq2seq GRU with residual decoding, a DCT-domain GCN, an all-MLP network, and the
zero- and constant-velocity baselines.

Representation
--------------
A window is expressed relative to its last observed frame (:func:`skelanim.data.features.to_reference_frame`):
``rot`` ``(B, T, M, 3, 3)`` (body root relative to the reference heading, other joints local) and ``pelvis``
``(B, T, 3)`` in heights. The learned models see each frame as ``D = 6 M + 3`` numbers: the 6D rotations and
the pelvis, standardised (:class:`~skelanim.learn.common.Normalizer`); they output the same, and rotations
come back by Gram-Schmidt (:func:`skelanim.core.rotations.rot6d_to_matrix`).

* :class:`Seq2SeqGRU` (Martinez et al. 2017): a GRU encodes the observed frames (each with its change from
  the previous frame); a GRU cell decodes, each step predicting the *change* from the previous frame
  (residual / velocity decoding) and feeding its own output back (no teacher forcing). The change is the
  network's output plus a learned per-coordinate fraction (initially 0.85) of the previous change, so an
  untrained decoder starts as a damped constant-velocity extrapolation instead of a frozen pose. Optional
  history attention (``attention > 0``, on in the shipped model): each decoder step matches its current frame
  against the observed ones and reads what came *next* after the matching frames, so a periodic motion (a
  gait cycle) can be continued from its own past. ``anchor`` (on in the shipped model): each step also sees
  the way to the periodic continuation's frame. ``spring`` (off): steps pulled toward the observed mean pose.
* :class:`DCTGCN` (Mao et al. 2019): the last ``observed`` frames (the whole observed second in the shipped
  model), padded to cover the horizon (with a damped
  constant-velocity extrapolation, learned damping, where Mao et al. repeat the last frame), are taken to the DCT domain per coordinate; each of the ``D`` coordinates is a graph node
  whose features are its DCT coefficients; residual graph-convolution blocks with a learnable dense
  ``(D, D)`` adjacency (one batched matmul per layer) refine them; the inverse DCT gives the trajectory
  (residual on the padded input).
* :class:`MotionMLP` (siMLPe, Guo et al. 2023): the observed frames in the DCT domain, a linear map over the
  coordinates, residual blocks of one linear map over the DCT coefficients and a layer norm over the
  coordinates (no other non-linearity), a linear map back and the inverse DCT: offsets from the last observed
  frame.
* :class:`MemberMean`: ``K`` networks of one kind whose predicted frame vectors are averaged (a deep ensemble,
  :mod:`skelanim.learn.ensemble`).
* :func:`window_amplitude`, :func:`amplitude_factor`: how much a window moves about its mean frame, and by
  how much less than a reference (amplitude normalisation, :class:`~skelanim.learn.predict.Predictor`).
* :func:`zero_velocity`: the last observed pose held. :func:`constant_velocity`: each joint keeps turning at
  its last observed angular velocity ``R[t+k] = R[t] (R[t-1]^T R[t])^k`` and the pelvis moves on at its last
  observed velocity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import torch
from torch import Tensor, nn

from skelanim.core.rotations import matrix_to_rot6d, matrix_to_rotvec, rot6d_to_matrix, rotvec_to_matrix

__all__ = ["AMPLITUDE_FLOOR", "DCTGCN", "MemberMean", "MotionMLP", "Seq2SeqGRU", "amplitude_factor", "constant_velocity",
           "dct_matrix", "frames_to_vectors", "periodic_continuation", "vectors_to_frames", "window_amplitude",
           "zero_velocity"]  # fmt: skip


def frames_to_vectors(rot: Tensor, pelvis: Tensor) -> Tensor:
    """``(..., T, M, 3, 3)`` rotations and ``(..., T, 3)`` pelvis to ``(..., T, 6 M + 3)`` vectors."""
    d6 = matrix_to_rot6d(rot)
    return torch.cat([d6.reshape(*d6.shape[:-2], -1), pelvis], dim=-1)


def vectors_to_frames(x: Tensor) -> tuple[Tensor, Tensor]:
    """Inverse of :func:`frames_to_vectors`: ``(..., T, D)`` to rotations ``(..., T, M, 3, 3)`` and pelvis ``(..., T, 3)``."""
    m = (x.shape[-1] - 3) // 6
    rot = rot6d_to_matrix(x[..., : 6 * m].reshape(*x.shape[:-1], m, 6))
    return rot, x[..., 6 * m :]


#: Amplitude normalisation enlarges a window's motion at most ``1 / AMPLITUDE_FLOOR`` times.
AMPLITUDE_FLOOR = 0.1


def window_amplitude(z: Tensor) -> tuple[Tensor, Tensor]:
    """Mean frame ``(B, 1, D)`` of frames ``(B, T, D)`` and their RMS distance from it ``(B, 1, 1)``: where a
    window's frames lie and how far they move about that."""
    centre = z.mean(1, keepdim=True)
    return centre, (z - centre).pow(2).mean((1, 2), keepdim=True).sqrt()


def amplitude_factor(size: Tensor, reference: float) -> Tensor:
    """``clamp(size / reference, AMPLITUDE_FLOOR, 1)``: how much less than ``reference`` a window moves (1 for a
    window that moves as much or more)."""
    return (size / reference).clamp(AMPLITUDE_FLOOR, 1.0)


def zero_velocity(rot: Tensor, pelvis: Tensor, horizon: int) -> tuple[Tensor, Tensor]:
    """Hold the last observed frame.

    Parameters
    ----------
    rot : Tensor
        ``(B, T_in, M, 3, 3)`` observed rotations.
    pelvis : Tensor
        ``(B, T_in, 3)``.
    horizon : int
        Frames to predict ``T_out``.

    Returns
    -------
    tuple of Tensor
        ``(B, T_out, M, 3, 3)`` and ``(B, T_out, 3)``.
    """
    return (rot[:, -1:].expand(-1, horizon, *rot.shape[2:]).clone(), pelvis[:, -1:].expand(-1, horizon, 3).clone())


def constant_velocity(rot: Tensor, pelvis: Tensor, horizon: int) -> tuple[Tensor, Tensor]:
    """Extrapolate the last observed angular and linear velocities (module docstring); shapes as :func:`zero_velocity`."""
    k = torch.arange(1, horizon + 1, dtype=rot.dtype, device=rot.device)
    delta = matrix_to_rotvec(rot[:, -2].transpose(-1, -2) @ rot[:, -1])  # (B, M, 3)
    steps = rotvec_to_matrix(k[None, :, None, None] * delta[:, None])  # (B, T_out, M, 3, 3)
    out_rot = rot[:, -1:] @ steps
    out_pelvis = pelvis[:, -1:] + k[None, :, None] * (pelvis[:, -1:] - pelvis[:, -2:-1])
    return out_rot, out_pelvis


class Seq2SeqGRU(nn.Module):
    """Seq2seq GRU with residual decoding, on standardised frame vectors.

    Parameters
    ----------
    dim : int
        Frame vector size ``D``.
    hidden : int
        GRU width.
    layers : int
        Encoder GRU layers (the decoder cell starts from the top layer's state).
    attention : int
        Width of the history attention (0: none). Each decoder step compares its current frame (and last
        change) with every observed frame and reads, weighted by the match, *what came next* after those frames
        (their following change) and the encoder state there: a periodic motion can copy its own past.
    anchor : bool
        Also give each decoder step (its cell and its output layer) the way from its current frame to the
        frame it predicts in the observed motion's periodic continuation (:func:`periodic_continuation`): an
        absolute target the network may pull toward, which attention's per-step changes lack, so the rollout
        need not drift. The output layer starts at zero, so an untrained decoder ignores it.
    half_period : bool
        The anchor's continuation may also repeat a half period mirrored (``mirror`` argument of
        :meth:`forward`; :func:`periodic_continuation`): a gait cycle is longer than the observed second shows twice.
    spring : bool
        Each step is also pulled back toward the mean of the observed frames by a learned per-coordinate
        fraction ``s`` of the distance (initially 0.018): with the damped velocity, a damped oscillator about
        the observed mean pose, so a rollout without evidence of travel stays near the observed poses instead
        of drifting (a hand that waves, a body that stands).
    """

    def __init__(self, dim: int, *, hidden: int = 192, layers: int = 1, attention: int = 0,
                 anchor: bool = False, spring: bool = False, half_period: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.dim, self.attention, self.anchor, self.spring = dim, int(attention), bool(anchor), bool(spring)
        self.half_period = bool(half_period)
        context = (dim + hidden if self.attention else 0) + (dim if self.anchor else 0)
        self.encoder = nn.GRU(2 * dim, hidden, num_layers=layers, batch_first=True)
        self.decoder = nn.GRUCell(2 * dim + context, hidden)
        self.out = nn.Linear(hidden + context, dim)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)
        self.damping = nn.Parameter(torch.full((dim,), 1.7))  # sigmoid(1.7) = 0.85
        if self.spring:
            self.stiffness = nn.Parameter(torch.full((dim,), -4.0))  # sigmoid(-4) = 0.018
        if self.attention:
            self.key = nn.Linear(2 * dim, self.attention)
            self.query = nn.Linear(2 * dim, self.attention)

    def forward(self, x: Tensor, horizon: int, step_scale: Tensor,
                mirror: tuple[Tensor, Tensor, Tensor] | None = None) -> Tensor:  # fmt: skip
        """Predict.

        Parameters
        ----------
        x : Tensor
            ``(B, T_in, D)`` standardised observed frames.
        horizon : int
            ``T_out``.
        step_scale : Tensor
            ``(D,)`` scale of one output step (the std of frame-to-frame changes over the std of values).
        mirror : (Tensor, Tensor, Tensor), optional
            The left/right mirror of standardised frames (:func:`periodic_continuation`); used with ``half_period``.

        Returns
        -------
        Tensor
            ``(B, T_out, D)`` standardised predicted frames.
        """
        vel = torch.cat([torch.zeros_like(x[:, :1]), x[:, 1:] - x[:, :-1]], dim=1)
        feats = torch.cat([x, vel / step_scale], -1)  # (B, T_in, 2 D)
        enc, h = self.encoder(feats)
        state = h[-1]
        prev, last = x[:, -1], vel[:, -1]
        outs = []
        keep = torch.sigmoid(self.damping)
        if self.attention:
            keys = self.key(feats[:, :-1])  # (B, T_in - 1, A): observed frames that have a successor
            values = torch.cat([vel[:, 1:] / step_scale, enc[:, :-1]], -1)  # (B, T_in - 1, D + H): what came next
            scale = self.attention**-0.5
        targets = periodic_continuation(x, horizon, mirror=_half(self, mirror)) if self.anchor else None  # (B, T_out, D)
        centre, pull = (x.mean(1), torch.sigmoid(self.stiffness)) if self.spring else (None, None)
        for k in range(horizon):
            inp = torch.cat([prev, last / step_scale], -1)
            parts = []
            if self.attention:
                weights = torch.softmax(torch.einsum("ba,bta->bt", self.query(inp), keys) * scale, -1)
                parts.append(torch.einsum("bt,btc->bc", weights, values))
            if targets is not None:
                parts.append(targets[:, k] - prev)
            ctx = torch.cat(parts, -1) if parts else inp[:, :0]
            state = self.decoder(torch.cat([inp, ctx], -1), state)
            step = self.out(torch.cat([state, ctx], -1)) * step_scale + keep * last
            if centre is not None and pull is not None:
                step = step - pull * (prev - centre)
            prev, last = prev + step, step
            outs.append(prev)
        return torch.stack(outs, dim=1)


def _half(net: Seq2SeqGRU | DCTGCN, mirror: tuple[Tensor, Tensor, Tensor] | None) -> tuple[Tensor, Tensor, Tensor] | None:
    """The mirror a ``half_period`` network needs (an error without it), ``None`` for the others."""
    if not net.half_period:
        return None
    if mirror is None:
        raise ValueError("a half_period predictor needs the mirror of its frames")
    return mirror


def dct_matrix(n: int) -> Tensor:
    """``(n, n)`` orthonormal DCT-II matrix: ``coeffs = D @ x`` and ``x = D.T @ coeffs``."""
    k = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(n, dtype=torch.float64)[None, :]
    d = math.sqrt(2.0 / n) * torch.cos(math.pi * (i + 0.5) * k / n)
    d[0] /= math.sqrt(2.0)
    return d.float()


class GraphConv(nn.Module):
    """``Y = A X W + b`` with a learnable dense adjacency ``A`` ``(N, N)``; ``X`` ``(B, N, F)``."""

    def __init__(self, nodes: int, fin: int, fout: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(fout)
        self.adjacency = nn.Parameter(torch.empty(nodes, nodes).uniform_(-bound, bound))
        self.weight = nn.Parameter(torch.empty(fin, fout).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.zeros(fout))

    def forward(self, x: Tensor) -> Tensor:
        """``(B, N, Fin)`` to ``(B, N, Fout)``."""
        return self.adjacency @ (x @ self.weight) + self.bias


class GraphResBlock(nn.Module):
    """Two graph convolutions with layer norm, tanh and dropout, and a residual."""

    def __init__(self, nodes: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.gc1, self.gc2 = GraphConv(nodes, hidden, hidden), GraphConv(nodes, hidden, hidden)
        self.n1, self.n2 = nn.LayerNorm([nodes, hidden]), nn.LayerNorm([nodes, hidden])
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """``(B, N, H)`` to ``(B, N, H)``."""
        y = self.drop(torch.tanh(self.n1(self.gc1(x))))
        y = self.drop(torch.tanh(self.n2(self.gc2(y))))
        return x + y


#: Frames over which the DCT-GCN's ``periodic`` pad fades from the velocity extrapolation to the periodic copy.
PERIODIC_FADE = 6


def periodic_continuation(seq: Tensor, horizon: int, shortest: int = 8,
                          mirror: tuple[Tensor, Tensor, Tensor] | None = None) -> Tensor:  # fmt: skip
    """Continue each sequence by repeating its last period (or, with ``mirror``, its last half period mirrored).

    The period ``L`` (``shortest <= L < T``) is the lag with the least mean ``|x_t - x_{t-L}|``; frame ``k``
    of the future is ``x[T - L + (k mod L)] + (1 + k div L) (x[T-1] - x[T-1-L])``: the last period again,
    shifted by the drift over one period (how far the last frame is from its counterpart one period before;
    0 for an exactly periodic motion), once per period begun, so a periodic motion with a steady drift (a
    walk's travel) goes on as it went where that lag is its period. The lag's score includes the drift over the
    lag, so under a large drift a shorter or longer lag can score better than the true period and be chosen (a
    synthetic period of 24 frames drifting 0.05 per frame got a lag of 8); on real walks the drift-free score
    was worse, so it stays.

    A gait cycle (about 1 s) is longer than what 1 s of observation can show twice, but each half of it is
    the other half's left/right mirror image. With ``mirror`` (the map ``m``, an involution) the lags ``h``
    are also tried as half periods, matched by the mean ``|x_t - m(x_{t-h})|``; where such a lag matches
    best, frame ``k`` is ``x[T - h + (k mod h)]``, mirrored when ``k div h`` is even, plus
    ``(1 + k div h) (x[T-1] - m(x[T-1-h]))``.

    Parameters
    ----------
    seq : Tensor
        ``(B, T, D)`` observed frames.
    horizon : int
        ``H`` frames to produce.
    shortest : int
        Shortest lag considered.
    mirror : (Tensor, Tensor, Tensor), optional
        ``(index, scale, shift)``, each ``(D,)``: the mirror image of a frame is
        ``x[..., index] * scale + shift`` (:func:`skelanim.learn.mirror.vector_mirror`).

    Returns
    -------
    Tensor
        ``(B, H, D)``.
    """
    length = seq.shape[1]
    if length <= shortest:
        raise ValueError(f"a periodic continuation needs more than {shortest} observed frames, got {length}")
    lags = torch.arange(shortest, length, device=seq.device)
    errors = torch.stack([(seq[:, lag:] - seq[:, :-lag]).abs().mean((1, 2)) for lag in range(shortest, length)], 1)
    mirrored = None
    if mirror is not None:
        m_index, m_scale, m_shift = mirror
        mirrored = seq[..., m_index] * m_scale.to(seq.dtype) + m_shift.to(seq.dtype)  # (B, T, D)
        half = torch.stack([(seq[:, lag:] - mirrored[:, :-lag]).abs().mean((1, 2)) for lag in range(shortest, length)], 1)
        errors = torch.cat([errors, half], 1)
    best = errors.argmin(1)
    period = lags[best % len(lags)]  # (B,)
    flipped = best >= len(lags)  # a half period, mirrored
    steps = torch.arange(horizon, device=seq.device)
    index = length - period[:, None] + steps[None] % period[:, None]  # (B, H)
    take = index[..., None].expand(-1, -1, seq.shape[2])
    take_before = (length - 1 - period)[:, None, None].expand(-1, 1, seq.shape[2])
    copy, before = seq.gather(1, take), seq.gather(1, take_before)  # before: x[T-1-L]
    if mirrored is not None:
        mirror_now = flipped[:, None] & (steps[None] // period[:, None] % 2 == 0)  # (B, H)
        copy = torch.where(mirror_now[..., None], mirrored.gather(1, take), copy)
        before = torch.where(flipped[:, None, None], mirrored.gather(1, take_before), before)
    periods = (1 + steps[None] // period[:, None])[..., None].to(seq.dtype)  # (B, H, 1): periods completed
    return copy + periods * (seq[:, -1:] - before)  # the last period's drift carried on


class DCTGCN(nn.Module):
    """DCT-domain graph convolutional predictor (Mao et al. 2019), on standardised frame vectors.

    Parameters
    ----------
    dim : int
        Frame vector size ``D`` (= graph nodes).
    observed : int
        Observed frames used (the last ones).
    horizon : int
        Frames predicted.
    coefficients : int, optional
        DCT coefficients kept (default all ``observed + horizon``).
    hidden : int
        Node feature width.
    blocks : int
        Residual blocks.
    dropout : float
        Dropout inside blocks.
    pad : {"velocity", "periodic"}
        How the future is filled before the DCT: the damped constant-velocity extrapolation, or that
        extrapolation cross-faded over :data:`PERIODIC_FADE` frames into the observed motion's own last period
        (:func:`periodic_continuation`; needs ``observed > 8``).
    half_period : bool
        The periodic pad may also repeat a half period mirrored (as :class:`Seq2SeqGRU`).
    """

    def __init__(self, dim: int, *, observed: int = 10, horizon: int = 25, coefficients: int | None = None,
                 hidden: int = 96, blocks: int = 2, dropout: float = 0.1, pad: str = "velocity",
                 half_period: bool = False) -> None:  # fmt: skip
        super().__init__()
        if pad not in ("velocity", "periodic"):
            raise ValueError(f"pad must be 'velocity' or 'periodic', got {pad!r}")
        if pad == "periodic" and observed <= 8:
            raise ValueError(f"the periodic pad needs more than 8 observed frames, got {observed}")
        self.observed, self.horizon, self.pad, self.half_period = observed, horizon, pad, bool(half_period)
        length = observed + horizon
        coefficients = length if coefficients is None else min(coefficients, length)
        d = dct_matrix(length)[:coefficients]
        self.register_buffer("dct", d, persistent=False)
        self.inp = GraphConv(dim, coefficients, hidden)
        self.n0 = nn.LayerNorm([dim, hidden])
        self.blocks = nn.ModuleList(GraphResBlock(dim, hidden, dropout) for _ in range(blocks))
        self.outp = GraphConv(dim, hidden, coefficients)
        nn.init.zeros_(self.outp.weight)
        self.damping = nn.Parameter(torch.full((dim,), 1.7))

    def forward(self, x: Tensor, horizon: int | None = None,
                mirror: tuple[Tensor, Tensor, Tensor] | None = None) -> Tensor:  # fmt: skip
        """Predict.

        Parameters
        ----------
        x : Tensor
            ``(B, T_in, D)`` standardised observed frames (``T_in >= observed``).
        horizon : int, optional
            Must equal the model's horizon when given.
        mirror : (Tensor, Tensor, Tensor), optional
            As for :class:`Seq2SeqGRU`, used with ``half_period``.

        Returns
        -------
        Tensor
            ``(B, observed + horizon, D)``: the reconstructed observed frames, then the predicted ones.
        """
        if horizon is not None and horizon != self.horizon:
            raise ValueError(f"this DCT-GCN predicts {self.horizon} frames, not {horizon}")
        seq = x[:, -self.observed :]
        keep = torch.sigmoid(self.damping)
        steps = torch.arange(1, self.horizon + 1, dtype=x.dtype, device=x.device)
        factors = torch.cumsum(keep[None, :] ** steps[:, None], 0)  # (H, D)
        future = seq[:, -1:] + factors[None] * (seq[:, -1:] - seq[:, -2:-1])
        if self.pad == "periodic":  # cross-faded from the extrapolation (continuous velocity) over PERIODIC_FADE frames
            fade = (steps / PERIODIC_FADE).clamp(max=1.0)[None, :, None]
            future = future + fade * (periodic_continuation(seq, self.horizon, mirror=_half(self, mirror)) - future)
        padded = torch.cat([seq, future], dim=1)  # (B, L, D)
        coeffs = torch.einsum("kl,bld->bdk", self.dct, padded)  # (B, D, K)
        h = torch.tanh(self.n0(self.inp(coeffs)))
        for block in self.blocks:
            h = block(h)
        out = coeffs + self.outp(h)
        return torch.einsum("kl,bdk->bld", self.dct, out)


class MotionMLP(nn.Module):
    """An all-MLP predictor after siMLPe (Guo et al. 2023, "Back to MLP"), on standardised frame vectors.

    The last ``observed`` frames go to the DCT domain; a linear map mixes the ``D`` coordinates; ``blocks``
    residual blocks each mix the ``K`` DCT coefficients with one linear map and normalise over the coordinates
    (siMLPe's "spatial" layer norm; no other non-linearity); a last linear map over the coordinates (initialised
    at zero) and the inverse DCT give offsets from the last observed frame for the first ``horizon`` frames.

    Parameters
    ----------
    dim : int
        Frame vector size ``D``.
    observed : int
        Observed frames used (the last ones); the DCT length ``K``.
    horizon : int
        Frames predicted (at most ``observed``).
    blocks : int
        Residual blocks (48 in the paper).
    """

    dct: Tensor  # buffer

    def __init__(self, dim: int, *, observed: int = 25, horizon: int = 25, blocks: int = 48) -> None:
        super().__init__()
        if not 1 <= horizon <= observed:
            raise ValueError(f"the MLP predictor predicts at most its {observed} observed frames, not {horizon}")
        self.observed, self.horizon = observed, horizon
        self.register_buffer("dct", dct_matrix(observed), persistent=False)
        self.fc_in, self.fc_out = nn.Linear(dim, dim), nn.Linear(dim, dim)
        nn.init.zeros_(self.fc_out.weight)
        nn.init.zeros_(self.fc_out.bias)
        self.temporal = nn.ModuleList(nn.Linear(observed, observed) for _ in range(blocks))  # over coefficients
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(blocks))  # over coordinates

    def forward(self, x: Tensor, horizon: int | None = None, mirror: object = None) -> Tensor:
        """``(B, T_in, D)`` standardised observed frames (``T_in >= observed``) to the ``(B, horizon, D)`` future
        ones (``horizon``, when given, must equal the model's; ``mirror`` is ignored)."""
        if horizon is not None and horizon != self.horizon:
            raise ValueError(f"this MLP predictor predicts {self.horizon} frames, not {horizon}")
        seq = x[:, -self.observed :]
        h = self.fc_in(self.dct @ seq)  # (B, K, D): DCT coefficients of each coordinate, coordinates mixed
        batch, k, d = h.shape
        flat = h.transpose(0, 1).reshape(k, batch * d)  # (K, B D): one matrix product per block mixes coefficients
        for temporal, norm in zip(self.temporal, self.norms, strict=True):
            linear = cast(nn.Linear, temporal)  # a ModuleList holds nn.Module as far as the checker knows
            mixed = torch.addmm(linear.bias[:, None], linear.weight, flat).view(k, batch, d)
            flat = flat + norm(mixed).view(k, batch * d)
        h = flat.view(k, batch, d).transpose(0, 1)
        offsets = self.dct[:, : self.horizon].T @ self.fc_out(h)  # (B, horizon, D)
        return seq[:, -1:] + offsets


class MemberMean(nn.Module):
    """``K`` predictor networks of one kind whose outputs are averaged (a deep ensemble).

    The members work on the same standardised frame vectors, so the mean of their outputs is the mean of
    their predicted vectors; rotations come back by Gram-Schmidt of the mean 6D vectors.

    Parameters
    ----------
    nets : sequence of nn.Module
        :class:`Seq2SeqGRU`, :class:`DCTGCN` or :class:`MotionMLP` networks of one configuration.
    """

    def __init__(self, nets: Sequence[nn.Module]) -> None:
        super().__init__()
        if len(nets) < 2:
            raise ValueError(f"an ensemble needs at least two members, got {len(nets)}")
        self.members = nn.ModuleList(nets)

    def forward(self, x: Tensor, *args: object) -> Tensor:
        """``(B, T_in, D)`` (and the members' other arguments) to the members' mean output ``(B, T', D)``."""
        return torch.stack([net(x, *args) for net in self.members]).mean(0)
