"""Generation networks: a conditional VAE over motion windows and a temporal discriminator.

Both work on standardised frame vectors ``(B, T, D)`` in the heading frame (``D = 6 M + 4``: the 6D joint
rotations, the body root's without its heading, and the root features ``[v_a, v_b, dyaw, h]``; see
:func:`skelanim.data.features.to_heading_frame`), conditioned on a content and a style class.

* :class:`MotionCVAE` (Kingma & Welling 2014; Sohn et al. 2015): a 1-D convolutional encoder halves time three
  times to a ``latent``-dimensional Gaussian; the decoder maps ``(z, condition)`` back through three
  upsampling convolutions. The condition (two learned embeddings) is concatenated to the input of every
  layer of both; with ``z_every`` the latent is too (at every decoder layer and time step), so the decoder
  cannot reach its output without passing through ``z`` at each stage, a standard remedy for posterior
  collapse, where the decoder learns an average motion per condition and the latent carries ~nothing.
  With ``decoder="transformer"`` the decoder is instead a Transformer over ``T`` time queries (sinusoidal
  encodings of the frame index plus a projection of ``(z, condition)``) attending to a ``(z, condition)``
  token, after ACTOR (Petrovich et al. 2021). The convolutional decoder builds its ``T`` frames from
  ``T / 8`` latent slots by interpolation and so smooths the limbs' fast motion away; with the frame index
  at every query a Transformer can place each swing at its own frame.
* :class:`TemporalDiscriminator`: strided 1-D convolutions over the frame vectors and their frame-to-frame
  changes (which expose jitter), conditioned the same way, giving one real/fake score per stretch of
  frames (a "patch" discriminator in time).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

__all__ = ["MotionCVAE", "TemporalDiscriminator"]

#: ``padding_mode`` of :class:`torch.nn.Conv1d`.
PaddingMode = Literal["zeros", "reflect", "replicate", "circular"]
#: The decoders :class:`MotionCVAE` builds, and the paddings ``learn generate train --padding`` offers.
DECODERS, PADDINGS = ("conv", "transformer"), ("zeros", "replicate")


class _CondConv(nn.Module):
    """Conv1d over ``[x, condition]`` followed by LeakyReLU (or nothing for the last layer)."""

    def __init__(self, cin: int, cond: int, cout: int, kernel: int, stride: int = 1, act: bool = True,
                 padding: PaddingMode = "zeros") -> None:  # fmt: skip
        super().__init__()
        self.conv = nn.Conv1d(cin + cond, cout, kernel, stride, (kernel - stride + 1) // 2, padding_mode=padding)
        self.act = nn.LeakyReLU(0.2) if act else nn.Identity()

    def forward(self, x: Tensor, c: Tensor) -> Tensor:
        """``(B, Cin, T)`` and ``(B, cond)`` to ``(B, Cout, T / stride)``."""
        return self.act(self.conv(torch.cat([x, c[:, :, None].expand(-1, -1, x.shape[-1])], 1)))


def sinusoidal_codes(length: int, width: int) -> Tensor:
    """``(length, width)`` sinusoidal encodings of the frame index (Vaswani et al. 2017): ``sin`` in the even
    columns and ``cos`` in the odd ones, at wavelengths from ``2 pi`` to ``10000 * 2 pi`` frames."""
    t = torch.arange(length, dtype=torch.float32)[:, None]
    rate = torch.exp(-torch.arange(0, width, 2, dtype=torch.float32) * (9.210340371976184 / width))  # ln 10000
    out = torch.zeros(length, width)
    out[:, 0::2], out[:, 1::2] = torch.sin(t * rate), torch.cos(t * rate[: width // 2])
    return out


class MotionCVAE(nn.Module):
    """Conditional VAE over fixed-length windows.

    Parameters
    ----------
    dim : int
        Frame vector size ``D``.
    length : int
        Frames ``T`` (a multiple of 8).
    num_contents, num_styles : int
        Condition classes.
    latent : int
        Latent size.
    hidden : int
        Convolution channels.
    embed : int
        Size of each condition embedding.
    z_every : bool
        Feed ``z`` to every decoder layer (with the condition), not only to the first (convolutional decoder).
    decoder : str
        ``"conv"`` (upsampling convolutions) or ``"transformer"`` (module docstring).
    layers : int
        Transformer decoder layers (``hidden`` wide, 4 heads).
    padding : str
        Padding of the convolutional decoder's layers: ``"zeros"``, or ``"replicate"`` (each end's frame
        repeated), which does not give the first and last frames inputs no other frame has.
    """

    def __init__(self, dim: int, length: int, num_contents: int, num_styles: int, *, latent: int = 64, hidden: int = 128,
                 embed: int = 16, z_every: bool = False, decoder: str = "conv", layers: int = 4,
                 padding: PaddingMode = "zeros") -> None:  # fmt: skip
        super().__init__()
        if length % 8:
            raise ValueError(f"window length {length} must be a multiple of 8")
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be 'conv' or 'transformer', got {decoder!r}")
        self.dim, self.length, self.latent, self.hidden, self.z_every = dim, length, latent, hidden, z_every
        self.decoder = decoder
        self.content_embed = nn.Embedding(num_contents, embed)
        self.style_embed = nn.Embedding(num_styles, embed)
        cond = 2 * embed
        self.enc = nn.ModuleList([_CondConv(dim, cond, hidden, 5), _CondConv(hidden, cond, hidden, 4, 2),
                                  _CondConv(hidden, cond, hidden, 4, 2), _CondConv(hidden, cond, hidden, 4, 2)])  # fmt: skip
        self.to_stats = nn.Linear(hidden * (length // 8) + cond, 2 * latent)
        if decoder == "transformer":
            self.register_buffer("time_code", sinusoidal_codes(length, hidden), persistent=False)
            self.to_query, self.to_memory = nn.Linear(latent + cond, hidden), nn.Linear(latent + cond, hidden)
            layer = nn.TransformerDecoderLayer(hidden, 4, 2 * hidden, dropout=0.0, batch_first=True, norm_first=True)
            self.transformer = nn.TransformerDecoder(layer, layers)
            self.to_frame = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, dim))
            return
        self.from_latent = nn.Linear(latent + cond, hidden * (length // 8))
        dec_cond = cond + (latent if z_every else 0)
        self.dec = nn.ModuleList([_CondConv(hidden, dec_cond, hidden, 5, padding=padding) for _ in range(3)])
        self.out = _CondConv(hidden, dec_cond, dim, 5, act=False, padding=padding)

    def condition(self, content: Tensor, style: Tensor) -> Tensor:
        """``(B,)`` class indices (or ``(B, C)`` / ``(B, S)`` class weights) to the ``(B, 2 E)`` condition."""
        ce = content @ self.content_embed.weight if content.is_floating_point() else self.content_embed(content)
        se = style @ self.style_embed.weight if style.is_floating_point() else self.style_embed(style)
        return torch.cat([ce, se], -1)

    def encode(self, x: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
        """``(B, T, D)`` and ``(B, 2 E)`` to the posterior mean and log-variance ``(B, latent)`` each."""
        h = x.transpose(1, 2)
        for layer in self.enc:
            h = layer(h, c)
        mu, logvar = self.to_stats(torch.cat([h.flatten(1), c], -1)).chunk(2, -1)
        return mu, logvar.clamp(-10, 5)

    def decode(self, z: Tensor, c: Tensor) -> Tensor:
        """``(B, latent)`` and ``(B, 2 E)`` to ``(B, T, D)``."""
        zc = torch.cat([z, c], -1)
        if self.decoder == "transformer":
            queries = self.time_code + self.to_query(zc)[:, None]
            return self.to_frame(self.transformer(queries, self.to_memory(zc)[:, None]))
        h = self.from_latent(zc).reshape(z.shape[0], self.hidden, self.length // 8)
        cd = torch.cat([c, z], -1) if self.z_every else c
        for layer in self.dec:
            h = layer(nn.functional.interpolate(h, scale_factor=2, mode="linear", align_corners=False), cd)
        return self.out(h, cd).transpose(1, 2)

    def forward(self, x: Tensor, c: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Reconstruct: returns ``(x_hat, mu, logvar)``."""
        mu, logvar = self.encode(x, c)
        eps = torch.randn(mu.shape, generator=generator) if generator is not None else torch.randn_like(mu)
        return self.decode(mu + eps * torch.exp(0.5 * logvar), c), mu, logvar


class TemporalDiscriminator(nn.Module):
    """Conditional temporal patch discriminator.

    Parameters
    ----------
    dim : int
        Frame vector size ``D``.
    cond : int
        Condition size.
    hidden : int
        Channels.
    """

    def __init__(self, dim: int, cond: int, hidden: int = 128) -> None:
        super().__init__()
        self.layers = nn.ModuleList([_CondConv(2 * dim, cond, hidden, 5), _CondConv(hidden, cond, hidden, 4, 2),
                                     _CondConv(hidden, cond, hidden, 4, 2), _CondConv(hidden, cond, 1, 3, act=False)])  # fmt: skip

    def forward(self, x: Tensor, c: Tensor) -> Tensor:
        """``(B, T, D)`` and ``(B, cond)`` to ``(B, T / 4)`` scores."""
        vel = torch.cat([torch.zeros_like(x[:, :1]), x[:, 1:] - x[:, :-1]], 1)
        h = torch.cat([x, 4.0 * vel], -1).transpose(1, 2)
        for layer in self.layers:
            h = layer(h, c)
        return h[:, 0]
