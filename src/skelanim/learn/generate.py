"""Motion generation: a conditional VAE refined by a temporal GAN, sampling, latent interpolation, BVH output.

Training (:mod:`skelanim.learn.generate_train`) runs the shared loop (:func:`skelanim.nn.fit`) twice on windows
of ``length`` frames in the heading frame (:mod:`skelanim.learn.cvae`):

1. **VAE**: ``L = |x_hat - x|_1 + w_pos |FK(x_hat) - FK(x)|_1 + w_vel |dFK(x_hat) - dFK(x)|_1 + w_skate S(x_hat)
   + beta KL_fb`` with standardised features ``x``, FK positions (with the root path integrated from the root
   features) in heights, ``d`` their change per second (a velocity term: the limbs' motion, which a
   collapsed model averages away), ``KL_fb = sum_d max(KL_d, free_bits)`` with ``KL_d`` the batch-mean KL of
   latent dimension ``d`` (free bits, Kingma et al. 2016: below the floor a dimension's KL costs nothing, so
   the optimiser has no reason to switch it off; with ``free_bits = 0`` it is the plain KL), and ``S``
   the horizontal speed of the reconstructed feet where the *real* window's feet were planted
   (:meth:`Generator.skating` with contacts). Weights taken from the output itself (the elevation above each
   foot's lowest point, as :func:`skelanim.metrics.kinematic.foot_skating` measures) let the model lower
   the term by lifting its feet: an earlier generator trained that way kept its feet within 2.8 cm of their
   lowest point in 3-14 % of frames (real data: 78 %).
2. **GAN refinement**: the same, plus a conditional :class:`~skelanim.learn.cvae.TemporalDiscriminator`
   trained with the least-squares GAN loss on real windows against samples decoded from the prior, and the
   decoder trained to fool it (``w_adv``), optionally to keep its prior samples off the (self-weighted)
   skating term (``w_fake_skate``, off by default), to match the real windows' per-joint limb speed
   (``w_speed``; :func:`limb_speed`), their per-frame foot contacts (``w_contact``; :func:`soft_contacts`) and to make a frozen recogniser label them with the
   requested content (``recognition``; :meth:`.generate_train.GenerateTask.recognition`). Both players
   share one optimizer step: the generator's adversarial term is evaluated through a copy of the
   discriminator with detached parameters (:func:`torch.func.functional_call`) and the discriminator's
   term on detached samples, so each loss only moves its own player.

After each stage the latent prior is fitted (:meth:`Generator.fit_latent`): sampling draws ``z`` for a content
from the Gaussian with the mean and covariance of that content's aggregate posterior (the mixture of its
training windows' posteriors) instead of ``N(0, I)``, an ex-post density estimate (Ghosh et al. 2020). The
condition does not make ``z`` independent of the content, and decoded, the standard normal's draws keep about
half of the limbs' speed that the fitted Gaussians' keep (EXPERIMENTS.md, thirteenth run). The GAN stage
draws its samples from the fitted Gaussians too.

Output motion is rotations on the training skeleton: decoded 6D rotations (Gram-Schmidt), the root path
integrated from the root features (:func:`skelanim.data.features.from_heading_frame`), positions by FK, so
bone lengths are exact (:meth:`skelanim.data.rig.Rig.to_motion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.func import functional_call

from skelanim.core.motion import Motion
from skelanim.core.rotations import matrix_to_rot6d, rot6d_to_matrix
from skelanim.data.clips import clip_from_motion
from skelanim.data.dataset import MotionDataset
from skelanim.data.features import from_heading_frame, to_heading_frame
from skelanim.data.labels import Vocabulary
from skelanim.data.rig import Rig
from skelanim.learn.common import (
    Normalizer,
    load_model,
    resolved_options,
    rig_fk,
)
from skelanim.learn.cvae import MotionCVAE, TemporalDiscriminator
from skelanim.nn.device import module_device
from skelanim.ops.normalize import scale, turned_up

__all__ = [
    "FORMAT",
    "Generator",
    "foot_elevation",
    "limb_speed",
    "lsgan_terms",
    "settle_on_floor",
    "soft_contacts",
    "speed_gaps",
]

FORMAT = "skelanim-generator"
#: Foot-contact threshold ``H`` as a fraction of the rig height (2.8 cm for a 1.4 m rig).
SKATE_THRESHOLD = 0.02
#: Tensor name prefixes a generator folder may leave out: the discriminator (sampling does not use it) and the
#: fitted latent prior (a folder from before it samples from ``N(0, I)``).
OPTIONAL_TENSORS = ("disc.", "latent_mean", "latent_chol")


def limb_speed(pos: Tensor, fps: float) -> Tensor:
    """Speed of every joint relative to the first (the pelvis) between frames: ``(B, T, M, 3)`` positions to
    ``(B, T - 1, M)`` (position units per second; the first joint's column is 0)."""
    rel = pos - pos[..., :1, :]
    return (rel[:, 1:] - rel[:, :-1]).norm(dim=-1) * fps


def lsgan_terms(disc: nn.Module, real: Tensor, fake: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """Least-squares GAN terms of one discriminator (Mao et al. 2017): ``(B, T, D)`` real and fake windows and
    the ``(B, cond)`` condition to the generator's term (through a copy of ``disc`` with detached parameters,
    so it moves only the generator) and the discriminator's (on detached samples and condition)."""
    frozen = {k: v.detach() for k, v in disc.named_parameters()}
    g = (functional_call(disc, frozen, (fake, c.detach())) - 1).pow(2).mean()
    d = (disc(real, c.detach()) - 1).pow(2).mean() + disc(fake.detach(), c.detach()).pow(2).mean()
    return g, d


def speed_gaps(fake: Tensor, real: Tensor, fps: float) -> tuple[Tensor, Tensor]:
    """How far ``fake``'s limb speeds are from ``real``'s: ``(B, T, M, 3)`` positions each to two scalars.

    The first is the L1 between the per-joint means over batch and time (:func:`limb_speed`); the second
    compares each frame's batch mean with the real per-joint mean, so a window cannot make up its mean with
    fast frames at its ends and still ones inside.
    """
    speed_fake, speed_real = limb_speed(fake, fps).mean(0), limb_speed(real, fps).mean((0, 1))
    return (speed_fake.mean(0) - speed_real).abs().mean(), (speed_fake - speed_real).abs().mean()


def foot_elevation(pos: Tensor, feet: Sequence[int], up: int) -> Tensor:
    """Height of each foot above its own lowest point in the window: ``(B, T, M, 3)`` to ``(B, T, K)``."""
    feet_up = pos[..., list(feet), up]
    return feet_up - feet_up.min(dim=1, keepdim=True).values


def soft_contacts(pos: Tensor, feet: Sequence[int], up: int) -> Tensor:
    """Differentiable foot contacts of ``(B, T, M, 3)`` positions in heights: ``(B, T, K)`` in ``[0, 1]``, about
    1 where a foot is within :data:`SKATE_THRESHOLD` of its lowest point in the window (the contact test of
    ``contact_share`` in :func:`~skelanim.learn.generate_eval.evaluate_generation`), 0.5 at the threshold,
    falling off over a quarter of it."""
    return torch.sigmoid((SKATE_THRESHOLD - foot_elevation(pos, feet, up)) / (SKATE_THRESHOLD / 4))


class Generator(nn.Module):
    """The CVAE, its discriminator, normaliser, vocabularies and rig.

    Parameters
    ----------
    rig : Rig
        The learning skeleton.
    contents, styles : sequence of str
        Condition classes.
    length : int
        Frames per window (multiple of 8).
    fps : float
        Frame rate.
    options : dict, optional
        :class:`~skelanim.learn.cvae.MotionCVAE` options.
    labels : str, optional
        How its training files' names carried their labels (``--labels``: a preset or a regular expression), so
        that ``skelanim generate --interpolate`` reads other files' names alike; ``None``: the known schemes.
    """

    latent_mean: Tensor  # buffers
    latent_chol: Tensor

    def __init__(self, rig: Rig, contents: Sequence[str], styles: Sequence[str], *, length: int = 64, fps: float = 25.0,
                 options: dict[str, Any] | None = None, labels: str | None = None) -> None:  # fmt: skip
        super().__init__()
        self.rig, self.length, self.fps, self.labels = rig, int(length), float(fps), labels
        self.options = resolved_options(MotionCVAE, options)
        self.contents, self.styles = Vocabulary("content", tuple(contents)), Vocabulary("style", tuple(styles))
        dim = 6 * rig.num_joints + 4
        self.norm = Normalizer((dim,))
        self.vae = MotionCVAE(dim, self.length, len(contents), len(styles), **self.options)
        self.disc = TemporalDiscriminator(dim, self.vae.content_embed.embedding_dim * 2)
        self.fk = rig_fk(rig)
        latent, classes = self.vae.latent, len(self.contents.names)
        self.register_buffer("latent_mean", torch.zeros(classes, latent))
        self.register_buffer("latent_chol", torch.eye(latent).repeat(classes, 1, 1))

    def draw_latent(self, content: Tensor, generator: torch.Generator | None = None, temperature: float = 1.0) -> Tensor:
        """``(B, latent)`` draws from the latent prior of each content ``(B,)`` (:meth:`fit_latent`; ``N(0, I)``
        before it), the noise scaled by ``temperature``. The noise is drawn on the CPU (``generator`` is a CPU
        generator), so a seed gives the same draws on every device; the result is on the model's."""
        device = self.latent_mean.device
        eps = (torch.randn(len(content), self.vae.latent, generator=generator) * temperature).to(device)
        content = content.to(device)
        return self.latent_mean[content] + (self.latent_chol[content] @ eps[:, :, None])[:, :, 0]

    @torch.no_grad()
    def fit_latent(self, x: Tensor, content: Tensor, style: Tensor, *, shrink: float | None = None,
                   batch: int = 512) -> None:  # fmt: skip
        """Fit each content's latent prior to its aggregate posterior over standardised windows ``x`` ``(N, T, D)``
        of classes ``(N,)``: the mean of its posterior means, and the mixture's covariance (the sample covariance of
        the posterior means, with Bessel's ``n - 1``, plus the mean posterior variance) shrunk toward all windows' one, ``(n S_c + k S) / (n + k)``
        for ``n`` windows of the content and ``k = shrink`` (default: the latent size), so that a content of a
        few windows gets a usable covariance. A content without windows keeps ``N(0, I)``."""
        was_training = self.training
        self.eval()
        stats = [self.vae.encode(x[i : i + batch], self.vae.condition(content[i : i + batch], style[i : i + batch]))
                 for i in range(0, len(x), batch)]  # fmt: skip
        self.train(was_training)
        mu, var = torch.cat([m for m, _ in stats]).double(), torch.cat([lv.exp() for _, lv in stats]).double()

        def mixture_cov(m: Tensor, v: Tensor) -> Tensor:
            spread = torch.cov(m.T) if len(m) > 1 else torch.zeros(m.shape[1], m.shape[1], dtype=m.dtype)
            return spread + torch.diag(v.mean(0))

        k = float(self.vae.latent if shrink is None else shrink)
        overall, eye = mixture_cov(mu, var), torch.eye(mu.shape[1], dtype=mu.dtype)
        for c in content.unique().tolist():
            sel = content == c
            n = float(sel.sum())
            cov = (n * mixture_cov(mu[sel], var[sel]) + k * overall) / (n + k) + 1e-6 * eye
            self.latent_mean[c] = mu[sel].mean(0).float()
            self.latent_chol[c] = torch.linalg.cholesky(cov).float()

    def config(self) -> dict[str, Any]:
        """JSON description to rebuild the module."""
        return {"format": FORMAT, "rig": self.rig.to_dict(), "contents": list(self.contents.names),
                "styles": list(self.styles.names), "length": self.length, "fps": self.fps,
                "options": self.options, **({"labels": self.labels} if self.labels is not None else {})}  # fmt: skip

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Generator:
        """Untrained module from :meth:`config` output."""
        labels = config.get("labels")
        return cls(Rig.from_dict(config["rig"]), config["contents"], config["styles"], length=config["length"],
                   fps=config["fps"], options=config.get("options"), labels=labels if isinstance(labels, str) else None)  # fmt: skip

    @classmethod
    def load(cls, folder: str | Path | None = None, *, default: str = "generate") -> Generator:
        """Load a model folder (the shipped default when ``folder`` is ``None``), in eval mode. The
        discriminator may be absent (shipped folders leave it out: sampling does not use it)."""
        return load_model(cls, folder, default, FORMAT, optional=OPTIONAL_TENSORS)

    # ------------------------------------------------------------------ features
    def to_vectors(self, rot: Tensor, pelvis: Tensor, yaw: Tensor) -> Tensor:
        """World arrays ``(B, T, M, 3, 3)``, ``(B, T, 3)``, ``(B, T)`` to raw frame vectors ``(B, T, D)``."""
        rig = self.rig
        rot_c, root = to_heading_frame(rot, pelvis, yaw, up=rig.up, floor=rig.floor, height=rig.height)
        d6 = matrix_to_rot6d(rot_c)
        return torch.cat([d6.reshape(*d6.shape[:-2], -1), root], -1)

    def to_world(
        self, x: Tensor, *, yaw0: Tensor | float = 0.0, start: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Raw frame vectors ``(B, T, D)`` to world rotations, pelvis (file units) and yaw."""
        rig = self.rig
        rot_c = rot6d_to_matrix(x[..., :-4].reshape(*x.shape[:-1], -1, 6))
        return from_heading_frame(
            rot_c, x[..., -4:], up=rig.up, floor=rig.floor, height=rig.height, yaw0=yaw0, start=start
        )

    def positions(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """World positions ``(B, T, M, 3)`` in heights (FK on the rig) from raw vectors, with rot, pelvis, yaw."""
        rot, pelvis, yaw = self.to_world(x)
        _, pos = self.fk(rot, pelvis / self.rig.height)
        return pos, rot, pelvis, yaw

    def skating(self, pos: Tensor, contacts: Tensor | None = None) -> Tensor:
        """Differentiable foot skating of ``(B, T, M, 3)`` positions in heights; scalar.

        With ``contacts`` ``(B, T, K)`` (the real window's foot contacts) the horizontal foot speed counts
        where the real foot was planted in both frames of a step: the weights do not depend on the output,
        so lifting a foot cannot lower the term. Without, the weights come from the output's own elevation
        above each foot's lowest point (module docstring), which a model can lower by hovering. Either way the
        value is the mean over all ``B (T - 1) K`` foot steps, the unplanted ones counting 0 (not a mean over the
        planted ones only): a window with fewer planted steps weighs less, as in the metric.
        """
        up = self.rig.up
        feet = pos[..., self.rig.feet, :]
        step = feet[..., 1:, :, :] - feet[..., :-1, :, :]
        horiz = torch.cat([step[..., :up], step[..., up + 1 :]], -1).norm(dim=-1) * self.fps
        if contacts is not None:
            weight = (contacts[..., :-1, :] * contacts[..., 1:, :]).to(horiz.dtype)
            return (horiz * weight).mean()
        rest = feet[..., up].min(dim=-2, keepdim=True).values.detach()  # each foot's own lowest point
        elevation = (feet[..., :-1, :, up] + feet[..., 1:, :, up]) / 2 - rest
        weight = (2 - torch.pow(2.0, elevation.clamp_min(0) / SKATE_THRESHOLD)).clamp(0, 1)
        return (horiz * weight).mean()

    def forward(
        self, x: Tensor, content: Tensor, style: Tensor, eps: Tensor, prior: Tensor | None = None,
        contacts: Tensor | None = None, positions: Tensor | None = None,
    ) -> dict[str, Tensor]:
        """The training terms of one batch (what :class:`.generate_train.GenerateTask` weighs and sums).

        Parameters
        ----------
        x : Tensor
            ``(B, T, D)`` standardised real windows.
        content, style : Tensor
            ``(B,)`` class indices.
        eps : Tensor
            ``(B, latent)`` noise of the reparameterisation.
        prior : Tensor, optional
            ``(B, latent)`` prior draws; given, the GAN terms are added.
        contacts : Tensor, optional
            ``(B, T, K)`` foot contacts of the real windows, weighting the reconstructions' skating.
        positions : Tensor, optional
            ``(B, T, M, 3)`` world positions of the real windows (:meth:`positions` of ``x``), when the caller
            has them already (:class:`.generate_train.GenerateTask` computes them once per window).

        Returns
        -------
        dict of str to Tensor
            Scalars ``rec`` (L1, standardised), ``kl`` (batch mean), ``pos`` (L1 of FK positions with the integrated
            root path, heights), ``vel`` (L1 of their per-second changes, heights/s), ``skate`` (:meth:`skating` of the reconstructions) and, with ``prior``, ``g_adv`` (the
            decoder's LSGAN term through a parameter-detached discriminator), ``d`` (the discriminator's, on
            detached samples), ``fake_skate``, ``speed`` (L1 between the prior samples' and the real windows'
            per-joint mean :func:`limb_speed`, same classes, heights/s), ``speed_frames`` (the same for each frame's
            batch mean: a window cannot make up its mean speed with fast frames at its ends), ``contact_frames`` (each
            frame's batch-mean :func:`soft_contacts` of the prior samples against the real windows' mean, per foot: feet that leave the ground more often than real ones pay, at every frame) and ``fake`` (the ``(B, T, D)`` standardised prior samples, not a
            scalar); ``kl_dim`` is the ``(latent,)`` batch-mean KL per dimension (for free bits).
        """
        c = self.vae.condition(content, style)
        mu, logvar = self.vae.encode(x, c)
        x_hat = self.vae.decode(mu + eps * torch.exp(0.5 * logvar), c)
        pos_hat, *_ = self.positions(self.norm.inverse(x_hat))
        pos = positions if positions is not None else self.positions(self.norm.inverse(x))[0]
        kl_dim = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).mean(0)
        vel = ((pos_hat[:, 1:] - pos_hat[:, :-1]) - (pos[:, 1:] - pos[:, :-1])).abs().mean() * self.fps
        terms = {"rec": (x_hat - x).abs().mean(), "kl": kl_dim.sum(), "kl_dim": kl_dim,
                 "pos": (pos_hat - pos).abs().mean(), "vel": vel, "skate": self.skating(pos_hat, contacts)}  # fmt: skip
        if prior is not None:
            fake = self.vae.decode(prior, c)
            terms["g_adv"], terms["d"] = lsgan_terms(self.disc, x, fake, c)
            pos_fake = self.positions(self.norm.inverse(fake))[0]
            terms["fake_skate"] = self.skating(pos_fake)
            terms["speed"], terms["speed_frames"] = speed_gaps(pos_fake, pos.detach(), self.fps)
            real_contact = soft_contacts(pos, self.rig.feet, self.rig.up).detach().mean((0, 1))
            terms["contact_frames"] = (soft_contacts(pos_fake, self.rig.feet, self.rig.up).mean(0) - real_contact).abs().mean()
            terms["fake"] = fake
        return terms

    # ------------------------------------------------------------------ sampling
    def condition(self, contents: Sequence[str], styles: Sequence[str]) -> Tensor:
        """``(B, 2 E)`` condition of class names (one content and one style per motion; a single name is one
        motion's, not a sequence of letters)."""
        contents, styles = _names(contents), _names(styles)
        if len(contents) != len(styles):
            raise ValueError(f"one style per content: {len(contents)} contents and {len(styles)} styles given")
        device = module_device(self)
        return self.vae.condition(torch.tensor(self.contents.indices(contents), device=device),
                                  torch.tensor(self.styles.indices(styles), device=device))  # fmt: skip

    @torch.no_grad()
    def sample(self, contents: Sequence[str], styles: Sequence[str], *, generator: torch.Generator | None = None,
               temperature: float = 1.0) -> Tensor:  # fmt: skip
        """Raw frame vectors ``(B, T, D)`` of new motions of the given classes (one per entry), on the CPU."""
        self.eval()
        contents, styles = _names(contents), _names(styles)
        c = self.condition(contents, styles)
        z = self.draw_latent(torch.tensor(self.contents.indices(contents)), generator, temperature)
        return self.norm.inverse(self.vae.decode(z, c)).cpu()

    def to_motions(self, x: Tensor, metadata: Sequence[dict[str, Any]] | None = None) -> list[Motion]:
        """Raw frame vectors ``(B, T, D)`` to motions on the rig's skeleton."""
        rot, pelvis, _ = self.to_world(x.double())
        return [self.rig.to_motion(rot[i], pelvis[i], self.fps, metadata=(metadata[i] if metadata else None))
                for i in range(x.shape[0])]  # fmt: skip

    @torch.no_grad()
    def encode_motion(self, motion: Motion, content: str, style: str) -> Tensor:
        """Posterior mean ``(latent,)`` of a motion's first ``length`` frames (held at its end when shorter), on the
        model's device; motion in other units or at another size is read at the rig's
        (:meth:`~skelanim.data.rig.Rig.size_factor`; a metres copy of a walk had interpolated toward a 524 cm
        stride where its centimetre original gave 306), and along another up axis is turned onto the rig's
        (:func:`~skelanim.ops.normalize.turned_up`)."""
        if (factor := self.rig.size_factor(motion.skeleton)) != 1.0:
            motion = scale(motion, factor)
        motion = turned_up(motion, self.rig.up)[0]  # a Z-up copy reads as its original (as the recogniser's motions)
        ds = MotionDataset(clips=[clip_from_motion(motion, fps=self.fps, up=self.rig.up)], rig=self.rig, fps=self.fps)
        g = ds.gather(torch.zeros(1, 2, dtype=torch.long), self.length, keys=("rot", "pelvis", "yaw"))
        x = self.norm(self.to_vectors(g["rot"], g["pelvis"], g["yaw"]).to(module_device(self)))
        return self.vae.encode(x, self.condition([content], [style]))[0][0]

    @torch.no_grad()
    def interpolate(
        self, a: Motion, b: Motion, labels_a: tuple[str, str], labels_b: tuple[str, str], steps: int
    ) -> list[Motion]:
        """``steps`` motions decoded along the straight line between the latents (and conditions) of ``a`` and ``b``."""
        self.eval()
        za, zb = self.encode_motion(a, *labels_a), self.encode_motion(b, *labels_b)
        ca, cb = self.condition([labels_a[0]], [labels_a[1]]), self.condition([labels_b[0]], [labels_b[1]])
        t = torch.linspace(0, 1, steps)[:, None]
        on = t.to(za.device)
        x = self.norm.inverse(self.vae.decode(za * (1 - on) + zb * on, ca * (1 - on) + cb * on))
        return self.to_motions(x.cpu(), [{"interpolation": float(v)} for v in t[:, 0]])


def _names(names: str | Sequence[str]) -> Sequence[str]:
    """Class names, one per motion: a single name is one motion's (``sample("walk", "angry")`` had read the
    letters as four contents and five styles)."""
    return [names] if isinstance(names, str) else names


def settle_on_floor(motion: Motion, rig: Rig) -> tuple[Motion, float]:
    """A generated motion put on the floor of its training captures: moved along the up axis as a whole so that
    its lowest body joint over all frames lies on ``rig.floor`` (the median over the captures of their lowest).

    The decoder's pelvis height and leg poses sink whole motions: 16 of the shipped generator's samples (8 walks, 8
    of bow, dash, slash and run; seed 3) reached 0.6 to 7.6 cm below the floor (median 3.0), where the lowest joint
    of the captures' own 64-frame windows at 25 fps lies on it to 0.1 cm (10th to 90th percentile). One shift for
    the whole clip moves no frame against another, so foot skating and jerk are unchanged (8 walks: 0.1155 and 38.1
    before and after; lifting the frames left below a quantile's level frame by frame raised skating 5-11 %), and
    it left the walks' and the other contents' 5 % lowest frames 0.3 cm above the floor (median).

    Parameters
    ----------
    motion : Motion
        A motion on ``rig.skeleton`` (:meth:`Generator.to_motions`), up along ``rig.up``.
    rig : Rig
        The generator's rig (its ``floor``, ``up`` and body root ``root``: a dummy root at the origin is no body
        joint).

    Returns
    -------
    Motion
        The motion moved (its skeleton, rotations and metadata kept).
    float
        The height added to every frame, in the rig's units (negative: lowered).
    """
    from skelanim.learn.forecast import raise_frames

    lowest = float(motion.positions()[:, rig.root :, rig.up].min())  # the body joints, as the rig measures its floor
    shift = rig.floor - lowest
    lift = torch.full((motion.num_frames,), shift, dtype=torch.float64)
    # the body under a dummy root (rig.root 1) moves in its own translations; a body root at 0 moves itself
    return raise_frames(motion, lift, 0, axis=rig.up, children=rig.root > 0), shift
