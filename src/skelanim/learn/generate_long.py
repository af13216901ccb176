"""Motion longer than the generator's window: windows chained by latent optimisation.

The CVAE decodes fixed windows of ``T`` frames (64 at 25 fps). A longer motion is built window by window, each
overlapping the one before by ``overlap`` frames: the next window's latent ``z`` starts from a prior draw
(:meth:`~skelanim.learn.generate.Generator.draw_latent`) and is moved by gradient steps so that its first
``overlap`` decoded frames match the last ``overlap`` frames of the motion so far (squared error of the
standardised frame vectors), held near that draw by ``½ |L⁻¹ (z - z₀)|²`` in the prior's whitened metric, which
keeps ``z`` a typical latent of the content (:func:`seam_fit`). This is the latent-space constraint satisfaction
of Holden et al. 2016 ("A deep learning framework for character motion synthesis and editing") with a
continuation constraint. The overlap is then cross-faded (raised-cosine weights) and the window's remaining
frames appended.

Frame vectors are heading-frame rotations and *per-frame* root features (velocities in the heading frame,
yaw rate, height; :mod:`skelanim.data.features`), so the chained vectors integrate to one continuous root path
with no re-alignment. :func:`sample_plan` changes the condition from window to window (walk, then run), so one
content flows into the next at a seam.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from tqdm import tqdm

from skelanim.learn.generate import Generator

__all__ = ["chain_windows", "crossfade_weights", "default_overlap", "sample_long", "sample_plan", "seam_fit"]

#: Frames two chained windows share, at most (half the window where that is less: :func:`default_overlap`).
OVERLAP = 16


def default_overlap(length: int) -> int:
    """The overlap of chained windows of ``length`` frames: :data:`OVERLAP`, or half the window where that is
    less (a generator trained with ``--window 16`` or 8 had refused every motion, even one of one window)."""
    return max(1, min(OVERLAP, length // 2))


def crossfade_weights(overlap: int) -> Tensor:
    """``(overlap,)`` weights of the new window in the overlap: raised cosine from near 0 to near 1
    (``w_k = sin²(π (k + 1) / (2 (overlap + 1)))``), symmetric, ``w_k + w_{overlap-1-k} = 1``."""
    k = torch.arange(overlap, dtype=torch.float64)
    return torch.sin(math.pi * (k + 1) / (2 * (overlap + 1))).pow(2)


def chain_windows(previous: Tensor, window: Tensor, overlap: int) -> Tensor:
    """Append ``window`` ``(B, T, D)`` to ``previous`` ``(B, F, D)``, cross-fading the ``overlap`` frames they
    share: returns ``(B, F + T - overlap, D)``."""
    w = crossfade_weights(overlap).to(previous.device, previous.dtype)[None, :, None]
    blend = previous[:, -overlap:] * (1 - w) + window[:, :overlap] * w
    return torch.cat([previous[:, :-overlap], blend, window[:, overlap:]], 1)


def seam_fit(
    model: Generator,
    z: Tensor,
    cond: Tensor,
    target: Tensor,
    content: Tensor,
    *,
    steps: int = 150,
    lr: float = 0.05,
    anchor_weight: float = 1e-3,
) -> Tensor:
    """Latents ``(B, L)`` whose decoded first ``K`` frames match ``target`` ``(B, K, D)`` (standardised).

    Works on whitened latents ``w = L_c⁻¹ (z - μ_c)`` of each sample's fitted prior (``content`` ``(B,)``) and
    minimises ``mean |decode(z)[:, :K] - target|² + anchor_weight · ½ |w - w₀|²`` with Adam, the decoder frozen,
    from the prior draw ``z`` (``w₀``). The anchor is the draw, not the prior's mean: pulled toward the mean,
    ``z`` would give the content's average motion (slower and smoother than any sample). ``cond`` ``(B, 2 E)``
    is the condition.
    """
    vae, k = model.vae, target.shape[1]
    mean, chol = model.latent_mean[content], model.latent_chol[content]
    w0 = torch.linalg.solve_triangular(chol, (z - mean)[:, :, None], upper=False)[:, :, 0].detach()
    w = w0.clone().requires_grad_(True)
    opt = torch.optim.Adam([w], lr=lr)
    with torch.enable_grad():
        for _ in range(steps):
            opt.zero_grad()
            z_w = mean + (chol @ w[:, :, None])[:, :, 0]
            fit = (vae.decode(z_w, cond)[:, :k] - target).pow(2).mean((1, 2))
            loss = (fit + anchor_weight * 0.5 * (w - w0).pow(2).sum(1)).sum()
            w.grad = torch.autograd.grad(loss, w)[0]
            opt.step()
    return (mean + (chol @ w[:, :, None])[:, :, 0]).detach()


@torch.no_grad()
def sample_long(
    model: Generator,
    contents: Sequence[str],
    styles: Sequence[str],
    frames: int,
    *,
    overlap: int | None = None,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
    steps: int = 150,
    progress: bool = False,
) -> Tensor:
    """Raw frame vectors ``(B, frames, D)`` of new motions of any length (module docstring), on the CPU (a model
    on a GPU generates there).

    Up to the model's window length this is :meth:`Generator.sample` (cropped). ``overlap`` frames of each
    window (``1 <= overlap < length``; default :func:`default_overlap`, and only checked where windows are
    chained) are fitted to the motion so far by ``steps`` gradient steps on ``z``; ``progress`` shows a bar
    over the windows.
    """
    return _chain(model, lambda _: (list(contents), list(styles)), frames, overlap=overlap, generator=generator,
                  temperature=temperature, steps=steps, progress=progress)  # fmt: skip


@torch.no_grad()
def sample_plan(
    model: Generator,
    plan: Sequence[tuple[str, str, int]],
    *,
    n: int = 1,
    overlap: int | None = None,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
    steps: int = 150,
    progress: bool = False,
) -> Tensor:
    """Raw frame vectors ``(n, F, D)`` (on the CPU) of motions that play the ``(content, style, frames)`` segments of ``plan``
    in turn, ``F`` the sum of their frames: each window is conditioned on the segment that holds the middle of
    the frames it adds, and fitted to the motion so far as in :func:`sample_long`, so one content flows into
    the next across a seam. Options as for :func:`sample_long`.
    """
    if not plan or any(frames < 1 for *_, frames in plan):
        raise ValueError("a plan needs at least one segment, each of at least 1 frame")
    ends = list(itertools.accumulate(frames for *_, frames in plan))

    def classes(middle: float) -> tuple[list[str], list[str]]:
        content, style, _ = plan[min(bisect.bisect_right(ends, middle), len(plan) - 1)]
        return [content] * n, [style] * n

    return _chain(model, classes, ends[-1], overlap=overlap, generator=generator, temperature=temperature,
                  steps=steps, progress=progress)  # fmt: skip


def _chain(
    model: Generator,
    classes: Callable[[float], tuple[list[str], list[str]]],
    frames: int,
    *,
    overlap: int | None,
    generator: torch.Generator | None,
    temperature: float,
    steps: int,
    progress: bool,
) -> Tensor:
    """The window loop of :func:`sample_long` and :func:`sample_plan`; ``classes(m)`` gives the contents and
    styles ``(B,)`` of the window whose new frames are centred on frame ``m``."""
    length = model.length
    if frames < 1:
        raise ValueError(f"frames must be at least 1, got {frames}")
    overlap = default_overlap(length) if overlap is None else overlap
    if frames > length and not 1 <= overlap < length:  # one window needs no overlap
        raise ValueError(f"overlap must be between 1 and {length - 1} frames (the model's window is {length}), "
                         f"got {overlap}")  # fmt: skip
    model.eval()

    def condition(middle: float) -> tuple[Tensor, Tensor]:
        contents, styles = classes(middle)
        return torch.tensor(model.contents.indices(contents)), model.condition(contents, styles)

    content, cond = condition((min(frames, length) - 1) / 2)
    x = model.vae.decode(model.draw_latent(content, generator, temperature), cond)
    more = math.ceil((frames - length) / (length - overlap)) if frames > length else 0
    for _ in tqdm(range(more), desc="windows", unit="window", disable=not progress or more == 0):
        content, cond = condition(x.shape[1] + (length - overlap - 1) / 2)
        z0 = model.draw_latent(content, generator, temperature)
        z = seam_fit(model, z0, cond, x[:, -overlap:], content, steps=steps)
        x = chain_windows(x, model.vae.decode(z, cond), overlap)
    return model.norm.inverse(x[:, :frames]).cpu()
