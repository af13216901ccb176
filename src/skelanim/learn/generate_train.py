"""Training the generator (:mod:`skelanim.learn.generate` describes the two stages and their losses): the
:class:`~skelanim.nn.train.Task` of both stages, :func:`train_generator` and :func:`refit_latent`.

Each stage's latent prior is fitted inside :func:`~skelanim.nn.train.fit` (its ``finish``, while the loop still holds
the output folder), and the GAN stage starts from the weights the VAE stage's ``finish`` wrote, kept in memory: no
folder is read back after its training let go of it."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn

from skelanim.data.dataset import MotionDataset, feature_stats
from skelanim.errors import SkelanimError
from skelanim.learn.common import keep_without_validation, load_weights, note_short_clips, provenance, spread_sample
from skelanim.learn.generate import OPTIONAL_TENSORS, Generator
from skelanim.learn.recognize import Recognizer, content_log_probabilities
from skelanim.metrics.distribution import fid
from skelanim.nn import distributed as ddp
from skelanim.nn.checkpoint import load_model_files, save_model_files
from skelanim.nn.device import module_device, to_device
from skelanim.nn.train import Finish, TrainConfig, fit

__all__ = ["GenerateTask", "refit_latent", "train_generator", "with_fitted_prior"]


class GenerateTask:
    """:class:`skelanim.nn.train.Task` for a :class:`Generator` (either stage; ``adversarial = 0`` is the VAE stage).

    Parameters
    ----------
    model : Generator
        The model.
    train_ds : MotionDataset
        Training clips.
    stride : int
        Window stride.
    beta, w_pos, w_vel, w_skate, adversarial : float
        Loss weights.
    free_bits : float
        KL floor per latent dimension (nats; 0: plain KL).
    w_fake_skate : float
        Weight of the (self-weighted, so hover-prone) skating term of the prior samples in the GAN stage.
    w_speed : float
        GAN stage: weight of the limb-speed statistics term (prior samples' per-joint mean speed against the
        real batch's), which a decoder that renders class-mean motion with still limbs pays for.
    w_speed_frames : float
        GAN stage: the same statistic matched frame by frame (each frame's batch mean against the real mean), so
        that fast frames at a window's ends cannot make up for slow ones inside it.
    w_contact : float
        GAN stage: weight of ``contact_frames`` (:meth:`Generator.forward`), the prior samples' per-frame foot
        contact share against the real one.
    real_contacts : bool
        Weight the reconstructions' skating by the real windows' contacts (otherwise self-weighted).
    embed : callable, optional
        ``embed(rot, pelvis, yaw, positions) -> (probs, features)`` of a recogniser, for the validation FID.
    reference : Tensor, optional
        ``(N, D')`` recogniser features of the training windows, which the FID compares with where there is no
        validation part (with one, its windows' own features, by ``embed``).
    val_ds : MotionDataset, optional
        Validation clips: :meth:`validate` scores the reconstruction of their windows and the FID of samples of
        their contents and styles against them (``val_*``), those of a content or style the model has no class
        for left out. Without one, or with fewer than two such windows, it scores training windows
        (``train_subset_*``; :attr:`validated` is false). The validation files had been held out and the
        training windows scored as ``val_*``.
    recognizer : Recognizer, optional
        A trained recogniser, frozen: in the GAN stage the prior samples pay ``w_recog`` times its
        cross-entropy against the requested content (a recognition loss, as in conditional GANs with an
        auxiliary classifier, here fixed rather than trained alongside).
    w_recog : float
        Weight of that term (0: off).
    meta : dict
        Provenance.
    """

    def __init__(self, model: Generator, train_ds: MotionDataset, *, stride: int = 8, beta: float = 2e-3,
                 w_pos: float = 2.0, w_vel: float = 0.0, w_skate: float = 1.0, free_bits: float = 0.0,
                 adversarial: float = 0.0, w_fake_skate: float = 0.0, w_speed: float = 0.0, w_speed_frames: float = 0.0,
                 w_contact: float = 0.0, real_contacts: bool = True,
                 embed: Callable[..., tuple[Tensor, Tensor]] | None = None, reference: Tensor | None = None,
                 recognizer: Recognizer | None = None, w_recog: float = 0.0,
                 meta: dict[str, Any] | None = None, val_ds: MotionDataset | None = None) -> None:  # fmt: skip
        self.model, self.ds, self.meta = model, train_ds, dict(meta or {})
        use = recognizer is not None and w_recog > 0
        self.recognizer: Recognizer | None = recognizer if use else None
        self.w_recog = w_recog if use else 0.0
        if self.recognizer is not None:
            self.recognizer.eval().requires_grad_(False)
            names = self.recognizer.contents.names
            self.recog_label = torch.tensor([names.index(c) if c in names else -100 for c in model.contents.names])
        self.beta, self.w_pos, self.w_skate, self.adversarial = beta, w_pos, w_skate, adversarial
        self.w_vel, self.free_bits, self.w_speed, self.w_speed_frames = w_vel, free_bits, w_speed, w_speed_frames
        self.w_fake_skate, self.real_contacts, self.w_contact = w_fake_skate, real_contacts, w_contact
        self.windows = train_ds.windows(model.length, stride)
        self.val = _known_windows(model, val_ds, stride) if val_ds is not None else None
        self.validated = self.val is not None
        if self.val is not None:  # the FID compares with the validation windows' own features
            self.embed = embed
            reference = self._features(self.val[0], self.val[1])
        if len(self.windows) < 2 or (reference is not None and len(reference) < 2):  # FID needs two of each
            embed = reference = None  # (it had failed after the first epoch: "features must be (N >= 2, D)")
        self.embed, self.reference = embed, reference
        self.prefix = "val" if self.validated else "train_subset"
        self.metric = f"{self.prefix}_fid" if embed is not None and reference is not None else f"{self.prefix}_rec"
        self._real: tuple[Tensor, Tensor, Tensor] | None = None
        clip = self.windows[:, 0]
        self.content = torch.tensor(model.contents.indices(train_ds.labels("content")))[clip]
        self.style = torch.tensor(model.styles.indices(train_ds.labels("style")))[clip]
        if adversarial == 0.0 and float(model.norm.std.sum()) == model.norm.std.numel():
            sample = self._vectors(spread_sample(self.windows, 3000))
            model.norm.set(*(t[0, 0] for t in feature_stats(sample, (0, 1))))

    def _vectors(self, windows: Tensor, model: Generator | None = None, ds: MotionDataset | None = None) -> Tensor:
        model = self.model if model is None else model
        g = (self.ds if ds is None else ds).gather(windows, model.length, keys=("rot", "pelvis", "yaw"))
        return model.to_vectors(g["rot"], g["pelvis"], g["yaw"])

    def _features(self, ds: MotionDataset, windows: Tensor) -> Tensor | None:
        """``(N, D')`` recogniser features of real windows of ``ds`` (``None`` without ``embed``)."""
        if self.embed is None:
            return None
        out = []
        for i in range(0, len(windows), 256):
            g = ds.gather(windows[i : i + 256], self.model.length, keys=("rot", "pelvis", "yaw", "positions"))
            with torch.no_grad():
                out.append(self.embed(g["rot"], g["pelvis"], g["yaw"], g["positions"])[1].cpu())
        return torch.cat(out)

    def _contacts(self, windows: Tensor) -> Tensor:
        return self.ds.gather(windows, self.model.length, keys=("contacts",))["contacts"]

    def to_device(self, device: torch.device) -> None:
        """Move the frozen recogniser of the recognition term (batches are built on the CPU, moved by the loop)."""
        if self.recognizer is not None:
            self.recognizer.to(device)
            self.recog_label = self.recog_label.to(device)

    def num_samples(self) -> int:
        """Training windows."""
        return len(self.windows)

    def _real_windows(self) -> tuple[Tensor, Tensor, Tensor]:
        """Every training window's standardised vectors ``(N, T, D)``, world positions ``(N, T, M, 3)`` (heights)
        and foot contacts ``(N, T, K)``, computed once by a batch's arithmetic (a window's numbers do not depend on
        its batch), so that a step does not redo its real windows' forward kinematics (a sixth of a VAE step)."""
        if self._real is None:  # on the model's device, kept on the CPU (where batches are built)
            device = module_device(self.model)
            with torch.no_grad():
                chunks = [self.windows[i : i + 256] for i in range(0, len(self.windows), 256)]
                xs = [self.model.norm(self._vectors(w).to(device)) for w in chunks]
                positions = [self.model.positions(self.model.norm.inverse(x))[0].cpu() for x in xs]
                self._real = (torch.cat(xs).cpu(), torch.cat(positions), torch.cat([self._contacts(w) for w in chunks]))
        return self._real

    def batch(self, indices: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """Standardised windows, their positions, contacts and classes, and the latent noise (from ``generator``)."""
        x_all, pos_all, contacts_all = self._real_windows()
        b = len(indices)
        return {"x": x_all[indices], "positions": pos_all[indices], "content": self.content[indices],
                "style": self.style[indices], "contacts": contacts_all[indices],
                "eps": torch.randn(b, self.model.vae.latent, generator=generator),
                "prior": self.model.draw_latent(self.content[indices], generator)}  # fmt: skip

    def loss(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """VAE (+ GAN) loss (module docstring); the terms come from one call of the (possibly DDP-wrapped) model."""
        prior = batch["prior"] if self.adversarial > 0 else None
        terms = model(batch["x"], batch["content"], batch["style"], batch["eps"], prior,
                      batch["contacts"] if self.real_contacts else None, batch.get("positions"))  # fmt: skip
        fake = terms.pop("fake", None)
        kl_dim = terms.pop("kl_dim")
        kl = kl_dim.clamp_min(self.free_bits).sum() if self.free_bits > 0 else terms["kl"]
        loss = terms["rec"] + self.w_pos * terms["pos"] + self.w_skate * terms["skate"] + self.beta * kl
        if self.w_vel > 0:
            loss = loss + self.w_vel * terms["vel"]
        if prior is not None:
            loss = loss + self.adversarial * terms["g_adv"] + 0.5 * terms["d"] + self.w_fake_skate * terms["fake_skate"]
            loss = loss + self.w_speed * terms["speed"] + self.w_speed_frames * terms["speed_frames"]
            loss = loss + self.w_contact * terms["contact_frames"]
            if self.recognizer is not None and fake is not None:
                terms["recog"] = self.recognition(fake, batch["content"])
                loss = loss + self.w_recog * terms["recog"]
        return loss, {k: float(v.detach()) for k, v in terms.items()}

    def recognition(self, fake: Tensor, content: Tensor) -> Tensor:
        """Cross-entropy of the frozen recogniser on standardised samples ``(B, T, D)`` against the requested
        contents ``(B,)`` (gradients reach the samples, not the recogniser); scalar."""
        gen, rec = self.model, self.recognizer
        assert rec is not None
        pos, rot, pelvis, yaw = gen.positions(gen.norm.inverse(fake))
        x = rec.inputs(rot, pelvis, yaw, pos * gen.rig.height)
        log_p, labels = content_log_probabilities(rec(x)[0]), self.recog_label[content]
        if not bool((labels >= 0).any()):  # no content the recogniser knows: nll_loss's mean over none is NaN
            return 0.0 * log_p.sum()
        return nn.functional.nll_loss(log_p, labels, ignore_index=-100)

    def validate(self, model: nn.Module) -> dict[str, float]:
        """Reconstruction error of (at most 512) validation windows and, with a recogniser, the FID of prior samples
        of their contents and styles to the validation windows' features, and the share of the samples it reads as
        the requested content; of training windows (``train_subset_*``) where there are no validation windows."""
        gen = cast(Generator, model)  # the loop validates the bare model
        device = module_device(gen)
        g = torch.Generator().manual_seed(1234)
        if self.val is not None:
            ds, windows, content, style = self.val
            pick = torch.randperm(len(windows), generator=g)[:512]
            with torch.no_grad():
                x = gen.norm(self._vectors(windows[pick], gen, ds).to(device))
        else:
            content, style = self.content, self.style
            pick = torch.randperm(len(self.windows), generator=g)[:512]
            x = to_device(self.batch(pick, g), device)["x"]
        condition = gen.vae.condition(content[pick].to(device), style[pick].to(device))
        with torch.no_grad():
            mu, _ = gen.vae.encode(x, condition)
            rec = float((gen.vae.decode(mu, condition) - x).abs().mean())
        out = {f"{self.prefix}_rec": rec}
        if self.embed is not None and self.reference is not None:
            x = gen.sample([gen.contents.names[i] for i in content[pick]], [gen.styles.names[i] for i in style[pick]],
                           generator=torch.Generator().manual_seed(7)).to(device)  # fmt: skip
            pos, rot, pelvis, yaw = gen.positions(x)
            probs, feats = self.embed(rot, pelvis, yaw, pos * gen.rig.height)
            out[f"{self.prefix}_fid"] = fid(feats.cpu(), self.reference)
            out[f"{self.prefix}_recognised"] = float((probs.argmax(-1).cpu() == content[pick]).float().mean())
        return out

    def fit_latent(self, sample: int = 3000, model: Generator | None = None) -> None:
        """Fit the latent prior of ``model`` (default: the task's; one with the same classes and window length) on at
        most ``sample`` training windows (:meth:`Generator.fit_latent`)."""
        model = self.model if model is None else model
        pick = spread_sample(torch.arange(len(self.windows)), sample)
        model.fit_latent(model.norm(self._vectors(self.windows[pick], model)), self.content[pick], self.style[pick])

    def model_config(self) -> dict[str, Any]:
        """The model's config plus provenance."""
        return {**self.model.config(), "training": self.meta}


def _known_windows(model: Generator, ds: MotionDataset, stride: int) -> tuple[MotionDataset, Tensor, Tensor, Tensor] | None:
    """``(ds, windows (N, 2), contents (N,), styles (N,))`` of ``ds``'s windows whose content and style ``model``
    has classes for (a style split validates on styles training never saw, which a conditional generator cannot be
    asked for), or ``None`` where fewer than two are left."""
    windows = ds.windows(model.length, stride)
    if len(windows) == 0:
        return None
    names = (ds.labels("content"), ds.labels("style"))
    known = torch.tensor([c in model.contents.names and s in model.styles.names for c, s in zip(*names, strict=True)])
    windows = windows[known[windows[:, 0]]]
    if len(windows) < 2:
        return None
    clip = windows[:, 0]
    content = torch.tensor([model.contents.names.index(c) if c in model.contents.names else -1 for c in names[0]])
    style = torch.tensor([model.styles.names.index(s) if s in model.styles.names else -1 for s in names[1]])
    return ds, windows, content[clip], style[clip]


def train_generator(train_ds: MotionDataset, out: str | Path, *, length: int = 64, stride: int = 8,
                    vae_loop: TrainConfig | None = None, gan_loop: TrainConfig | None = None,
                    embed: Callable[..., tuple[Tensor, Tensor]] | None = None, reference: Tensor | None = None,
                    options: dict[str, Any] | None = None, weights: dict[str, float] | None = None,
                    recognizer: Recognizer | None = None, init: str | Path | None = None, resume: bool = False,
                    command: str | None = None, log: Any = None, fit_prior: bool = True,
                    labels: str | None = None, val_ds: MotionDataset | None = None) -> dict[str, Any]:  # fmt: skip
    """Train the CVAE (``out/vae``), then refine it with the GAN (``out``); ``gan_loop=None`` skips stage 2
    and writes the VAE to ``out``. With ``recognizer`` and ``weights["recognition"] > 0`` the GAN stage adds
    the frozen recogniser's cross-entropy on the prior samples (:meth:`GenerateTask.recognition`). With
    ``init`` (a generator folder with the same classes and options, e.g. a shipped one) the VAE stage is
    skipped and the GAN stage starts from those weights (a discriminator missing there starts fresh). With
    ``fit_prior`` each stage's folder ends with its latent prior fitted to the aggregate posterior
    (:meth:`Generator.fit_latent`), and the GAN stage draws from it. A VAE stage stopped before its last epoch
    (``max_steps``) leaves the GAN stage for a ``resume`` that finishes it (the GAN stage had started from the
    unfinished VAE, and a resume then went on from that stale start). ``labels`` (the ``--labels`` the data was
    read with) is recorded in the model (:class:`Generator`). ``val_ds``: the validation clips both stages score
    (:class:`GenerateTask`); without them, or without two of their windows of the model's classes, each stage keeps
    its last epoch, with a note (an epoch is not chosen by a score of training windows).

    Returns
    -------
    dict
        ``{"vae": fit result, "gan": fit result or None, "parameters": int, "vae_finished": bool}``.
    """
    out = Path(out)
    vae_loop = vae_loop or TrainConfig(epochs=30, batch_size=64, lr=1e-3, warmup_steps=100)
    torch.manual_seed(vae_loop.seed)
    w = {"beta": 2e-3, "w_pos": 2.0, "w_vel": 0.0, "w_skate": 1.0, "free_bits": 0.0, "w_fake_skate": 0.0,
         "w_speed": 0.0, "w_speed_frames": 0.0, "w_contact": 0.0, "adversarial": 0.02, "recognition": 0.0, **(weights or {})}
    model = Generator(train_ds.rig, sorted(set(train_ds.labels("content"))), sorted(set(train_ds.labels("style"))),
                      length=length, fps=train_ds.fps, options=options, labels=labels)  # fmt: skip
    meta = provenance(command, [c.path for c in train_ds.clips], vae_loop.seed)
    meta["validation"] = [c.name for c in val_ds.clips] if val_ds is not None else []
    note_short_clips(train_ds, length, log)
    new_task = partial(GenerateTask, stride=stride, beta=w["beta"], w_pos=w["w_pos"], w_vel=w["w_vel"],
                       w_skate=w["w_skate"], free_bits=w["free_bits"], w_fake_skate=w["w_fake_skate"], embed=embed,
                       reference=reference, val_ds=val_ds)  # the options both stages share
    stage1 = Path(init) if init is not None else (out / "vae" if gan_loop is not None else out)
    if init is not None:
        if gan_loop is None:
            raise ValueError("init= needs a GAN stage (gan_loop)")
        start = Generator.load(init)
        keys = ("contents", "styles", "length", "fps", "options")
        if differ := [k for k in keys if start.config()[k] != model.config()[k]]:
            raise ValueError(f"{init}: the generator's {differ[0]} differ from this run's ({start.config()[differ[0]]} "
                             f"against {model.config()[differ[0]]})")  # fmt: skip
        vae: dict[str, Any] = {"history": [], "init": str(init)}
    else:
        task = new_task(model, train_ds, adversarial=0.0, meta={**meta, "stage": "vae", "weights": w})
        vae_loop = keep_without_validation(vae_loop, task.validated, log)
        written: dict[str, dict[str, Tensor]] = {}  # the weights the VAE folder ends with, kept by fit's finish
        vae = fit(model, task, stage1, vae_loop, resume=resume and (stage1 / "train_state.safetensors").exists(),
                  log=log, finish=_finish_stage(task, stage1, fit_prior, written) if fit_prior or gan_loop else None)
    vae_finished = init is not None or len(vae["history"]) >= vae_loop.epochs
    gan = None
    if gan_loop is not None and vae_finished:
        if init is not None:
            with warnings.catch_warnings():  # the given start, not a folder this run wrote; loaded (and any warning
                warnings.simplefilter("ignore")  # of an unfinished run given) once above
                tensors, _ = load_model_files(stage1)
        else:  # never the folder read back: another run may have written it since fit let go of it
            held = ddp.broadcast_object(written.get("tensors"))  # rank 0 ran finish
            if held is None:
                raise SkelanimError("the VAE stage ended without writing a model", path=stage1)
            tensors = held
        load_weights(model, {k: v.float() for k, v in tensors.items()}, stage1, optional=OPTIONAL_TENSORS)
        task = new_task(model, train_ds, adversarial=w["adversarial"], recognizer=recognizer, w_recog=w["recognition"],
                        w_speed=w["w_speed"], w_speed_frames=w["w_speed_frames"],
                        w_contact=w["w_contact"],
                        meta={**meta, "stage": "gan", "weights": w, "vae_history": vae["history"],
                              "init": None if init is None else str(init)})  # fmt: skip
        gan_loop = keep_without_validation(gan_loop, task.validated, log if init is not None else lambda note: None)
        if fit_prior and "latent_chol" not in tensors:
            task.fit_latent()  # a folder from before the fitted prior: fit it before the GAN draws from it
        gan = fit(model, task, out, gan_loop, resume=resume and (out / "train_state.safetensors").exists(), log=log,
                  finish=_finish_stage(task, out, True, {}) if fit_prior else None)
    return {"vae": vae, "gan": gan, "parameters": sum(p.numel() for p in model.parameters()),
            "vae_finished": vae_finished}


def with_fitted_prior(task: GenerateTask, tensors: dict[str, Tensor], config: dict[str, Any],
                      folder: str | Path) -> dict[str, Tensor]:  # fmt: skip
    """The weights ``tensors`` of a model folder (its ``config``; ``folder`` is named in errors) with their latent
    prior fitted on the task's windows (:meth:`GenerateTask.fit_latent`, on a generator of their own: ``task.model``
    is left as it is): the tensors given in their own dtypes (a shipped float16 folder stays one, a missing
    discriminator stays missing), the prior in float32."""
    with torch.random.fork_rng(devices=[]):  # the fresh module's initialisation draws nothing from the run's stream
        kept = Generator.from_config(config)
    load_weights(kept, {k: v.float() for k, v in tensors.items()}, Path(folder), optional=OPTIONAL_TENSORS)
    task.fit_latent(model=kept)
    return {k: (v.to(tensors[k].dtype) if k in tensors else v) for k, v in kept.state_dict().items()
            if k in tensors or k.startswith(("latent_mean", "latent_chol"))}  # fmt: skip


def _finish_stage(task: GenerateTask, folder: Path, fit_prior: bool, written: dict[str, dict[str, Tensor]]) -> Finish:
    """:func:`~skelanim.nn.train.fit`'s ``finish`` of a stage: while fit still holds the folder, the kept weights
    with their latent prior fitted (``fit_prior``), also left in ``written["tensors"]`` for the next stage. After
    fit the folder is not read again: another run may be writing it by then (two runs into one ``--out`` had mixed
    one's weights with the other's prior)."""

    def finish(tensors: dict[str, Tensor], config: dict[str, Any]) -> dict[str, Tensor]:
        state = with_fitted_prior(task, tensors, config, folder) if fit_prior else dict(tensors)
        written["tensors"] = state
        return state

    return finish


def refit_latent(folder: str | Path, task: GenerateTask, out: str | Path | None = None) -> None:
    """Fit the latent prior of the weights of the model folder ``folder`` on the task's windows
    (:func:`with_fitted_prior`) and write the folder again to ``out`` (default: ``folder``) with the same config, the
    tensors it held in their own dtypes (a shipped float16 folder stays one, a missing discriminator stays missing)
    and the prior in float32: ``skelanim learn generate fit-prior``. Training fits each stage's prior inside
    :func:`~skelanim.nn.train.fit` instead, while the loop still holds its folder."""
    tensors, config = load_model_files(folder)
    save_model_files(out if out is not None else folder, with_fitted_prior(task, tensors, config, folder), config)
