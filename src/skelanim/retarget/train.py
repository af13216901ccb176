"""Training NKN with the shared loop (:func:`skelanim.nn.fit`): seeded, resumable, DDP-ready, safetensors.

Each sample is drawn from its own seeded generator (see :mod:`skelanim.nn.train`): a source family and
window (Bandai half the time, and then half the time on a bone-length variant), a random turn about the
vertical, a target skeleton (Bandai, a Bandai variant, the CMU skeletons, the production rig, the DeepMimic
humanoid) and a real window of the target's family for the discriminator. Validation uses fixed windows of
held-out files and the same losses without the adversarial term; the best epoch is kept.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from skelanim.errors import FormatError, SkelanimError
from skelanim.nn.device import to_device
from skelanim.nn.resume import check_same_start
from skelanim.nn.train import TrainConfig, fit, seeded_generator
from skelanim.retarget.data import DEFAULT_FAMILIES, TRAIN_FPS, Family, leg_length, load_families, variant_offsets
from skelanim.retarget.loss import LossWeights, NKNTrainer
from skelanim.retarget.model import NKNConfig
from skelanim.retarget.rig import stride_leg
from skelanim.retarget.stance import scaled_hips, sole_height

__all__ = ["OWN_SOURCE_WEIGHT", "OWN_TARGET_DRAWS", "RetargetTask", "train"]

_SOURCE_WEIGHTS = {"bandai": 0.55, "xia": 0.1, "cmu_max": 0.1, "ccrig": 0.15, "deepmimic": 0.1}
_TARGETS = ("bandai", "variant", "variant", "cmu_mb", "cmu_max", "ccrig", "deepmimic")
#: A family of one's own (``train(extra=...)``): drawn as a source with this weight (before the draw's
#: normalisation) and as a target twice as often as each default family, as Bandai's variants are.
OWN_SOURCE_WEIGHT, OWN_TARGET_DRAWS = 0.3, 2


def _turn(local: Tensor, hips: Tensor, angle: float) -> tuple[Tensor, Tensor]:
    c, s = torch.cos(torch.tensor(angle)), torch.sin(torch.tensor(angle))
    yaw = torch.tensor([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    local = local.clone()
    local[:, 0] = yaw @ local[:, 0]
    return local, hips @ yaw.T


class RetargetTask:
    """The retargeting problem for :func:`skelanim.nn.fit`.

    Parameters
    ----------
    families : list of Family
        Training families (clips of at least ``window`` frames are used).
    val_families : list of Family
        Held-out clips for validation (same family names).
    window : int
        Frames per sample.
    samples : int
        Nominal samples per epoch.
    weights : LossWeights
        Loss weights (recorded in the config).
    config : NKNConfig
        Network sizes (recorded in the config).
    meta : dict
        Extra facts written under ``training`` in ``config.json`` (command, data, seed).
    """

    metric = "val_total"

    def __init__(self, families: list[Family], val_families: list[Family], *, window: int = 48, samples: int = 1024,
                 weights: LossWeights | None = None, config: NKNConfig | None = None,
                 meta: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.window, self.samples = window, samples
        self.families = {f.name: f for f in families}
        for f in [*families, *val_families]:
            f.clips = [c for c in f.clips if c["local"].shape[0] >= window]
        short = [f.name for f in families if not f.clips]
        if short:  # a family that has no window to draw (--window longer than its clips, or --max-files too few)
            raise SkelanimError(f"family {short[0]} has no training clip of {window} frames or more "
                                "(a shorter --window, or more --max-files)")  # fmt: skip
        own = [n for n in self.families if n not in DEFAULT_FAMILIES]  # a character's own rig and motion
        self.source_weights = {**_SOURCE_WEIGHTS, **dict.fromkeys(own, OWN_SOURCE_WEIGHT)}
        self.sources = [n for n in self.source_weights if n in self.families and self.families[n].clips]
        self.targets = [n for n in _TARGETS if n in self.families or (n == "variant" and "bandai" in self.families)]
        self.targets += [n for n in own for _ in range(OWN_TARGET_DRAWS)]
        self.weights, self.config, self.meta = weights or LossWeights(), config or NKNConfig(), meta or {}
        self.val_batches = self._fixed_batches(val_families or families, count=4, size=16)

    def to_device(self, device: torch.device) -> None:
        """Move the fixed validation batches (training batches are drawn on the CPU and moved by the loop)."""
        self.val_batches = to_device(self.val_batches, device)

    def num_samples(self) -> int:
        """Nominal samples per epoch."""
        return self.samples

    def _skeleton(self, name: str, g: torch.Generator) -> tuple[Tensor, Tensor, str]:
        if name == "variant":
            base = self.families["bandai"].rig
            off = variant_offsets(base.offsets, g).float()
            return off, leg_length(off), "bandai"
        rig = self.families[name].rig
        return rig.offsets.float(), torch.tensor(rig.leg_length, dtype=torch.float32), name

    def _window(self, family: Family, g: torch.Generator, offsets: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """A window of one of ``family``'s clips, turned about +Y at random; with ``(22, 3)`` canonical
        ``offsets`` (a variant of its skeleton) its hips are scaled onto them."""
        clip = family.clips[int(torch.randint(len(family.clips), (1,), generator=g))]
        start = int(torch.randint(clip["local"].shape[0] - self.window + 1, (1,), generator=g))
        sl = slice(start, start + self.window)
        angle = float(torch.rand((), generator=g)) * 6.2832
        local, hips = _turn(clip["local"][sl], clip["hips"][sl], angle)
        if offsets is not None:
            rig = family.rig
            hips = scaled_hips(hips, rig.leg_length, leg_length(offsets), rig.sole, sole_height(offsets),
                               stride_ratio=float(stride_leg(offsets)) / rig.stride_leg)  # fmt: skip
        return local, hips, clip["contacts"][sl]

    def _sample(self, g: torch.Generator) -> dict[str, Tensor]:
        probs = torch.tensor([self.source_weights[n] for n in self.sources])
        src_name = self.sources[int(torch.multinomial(probs, 1, generator=g))]
        use_variant = src_name == "bandai" and bool(torch.rand((), generator=g) < 0.5)
        src_off, src_leg, fam = self._skeleton("variant" if use_variant else src_name, g)
        local, hips, contacts = self._window(self.families[fam], g, src_off if use_variant else None)
        tgt_name = self.targets[int(torch.randint(len(self.targets), (1,), generator=g))]
        tgt_off, tgt_leg, tgt_fam = self._skeleton(tgt_name, g)
        family = self.families[tgt_fam] if self.families[tgt_fam].clips else self.families["xia"]
        real_local, real_hips, _ = self._window(family, g, tgt_off)
        # the discriminator's real window is captured motion of the target only for a family's own skeleton: a
        # variant's (or a motionless family's) is another skeleton's motion copied onto it
        captured = torch.tensor(tgt_name != "variant" and family.name == tgt_fam)
        return {"src_local": local, "src_hips": hips, "contacts": contacts, "src_off": src_off, "src_leg": src_leg,
                "tgt_off": tgt_off, "tgt_leg": tgt_leg, "real_local": real_local, "real_hips": real_hips,
                "captured": captured}  # fmt: skip

    @staticmethod
    def _stack(samples: list[dict[str, Tensor]]) -> dict[str, Tensor]:
        batch = {k: torch.stack([s[k] for s in samples]) for k in samples[0]}
        batch["fps"] = torch.tensor(TRAIN_FPS)
        return batch

    def batch(self, indices: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """A batch of ``len(indices)`` freshly drawn samples (the indices only fix the count)."""
        return self._stack([self._sample(generator) for _ in range(len(indices))])

    def _fixed_batches(self, families: list[Family], count: int, size: int) -> list[dict[str, Tensor]]:
        saved = self.families
        self.families = {**saved, **{f.name: f for f in families if f.clips}}
        for f in families:
            f.clips = [c for c in f.clips if c["local"].shape[0] >= self.window]
        g = seeded_generator(12345)
        batches = [self._stack([self._sample(g) for _ in range(size)]) for _ in range(count)]
        self.families = saved
        return batches

    def loss(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """The trainer's forward (all terms; see :mod:`.loss`)."""
        return model(batch)

    def validate(self, model: nn.Module) -> dict[str, float]:
        """Mean loss terms over the fixed validation batches; ``val_total`` leaves out the adversarial part."""
        sums: dict[str, float] = {}
        for b in self.val_batches:
            _, parts = model(b)
            for k, v in parts.items():
                sums[k] = sums.get(k, 0.0) + v / len(self.val_batches)
        w = self.weights
        out = {f"val_{k}": v for k, v in sums.items()}
        out["val_total"] = sum(getattr(w, k) * sums[k] for k in ("rec", "cyc", "skate", "pen", "reg", "twist", "smooth"))
        return out

    def model_config(self) -> dict[str, Any]:
        """What ``config.json`` records beside the weights."""
        return {"format": "skelanim-retarget-nkn", "architecture": self.config.__dict__.copy(),
                "loss_weights": self.weights.to_dict(), "train_fps": TRAIN_FPS, "window": self.window,
                "training": dict(self.meta)}  # fmt: skip


def train(
    mocap: str | os.PathLike,
    out: str | os.PathLike,
    *,
    loop: TrainConfig | None = None,
    config: NKNConfig | None = None,
    weights: LossWeights | None = None,
    families: list[str] | None = None,
    val_patterns: tuple[str, ...] = ("*_normal_001.bvh",),
    max_files: int | None = None,
    window: int = 48,
    samples: int = 1024,
    resume: bool = False,
    command: str = "",
    log: Any = None,
    extra: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] | None = None,
    init: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Train NKN on the shared mocap folder (and ``extra`` families) and write the best model folder to ``out``.

    Parameters
    ----------
    mocap : path
        The mocap folder.
    out : path
        Model folder (``model.safetensors``, ``config.json``, ``train_state.safetensors``).
    loop : TrainConfig
        Loop settings (epochs, batch size, learning rate, seed, ...).
    config : NKNConfig
        Network sizes.
    weights : LossWeights
        Loss weights.
    families : list of str, optional
        Which families of :data:`~.data.DEFAULT_FAMILIES` to use (default all).
    val_patterns : tuple of str
        File-name patterns held out for validation.
    max_files : int, optional
        At most this many files per family (quick runs).
    window, samples : int
        Frames per sample, samples per epoch.
    resume : bool
        Continue from ``out/train_state.safetensors``.
    command : str
        The command line, recorded in ``config.json``.
    log : callable, optional
        Line logger for :func:`~skelanim.nn.train.fit`.
    extra : dict, optional
        Families of one's own (:func:`~.data.load_families`' ``extra``: a character's rig and its captured motion),
        drawn as sources (weight :data:`OWN_SOURCE_WEIGHT`) and as targets (:data:`OWN_TARGET_DRAWS` draws), their
        real windows the discriminator's for their rig.
    init : path, optional
        Fine-tune this NKN model folder (``"shipped"``: :data:`~skelanim.retarget.DEFAULT_MODEL`): its network and
        discriminator weights and its architecture (``config`` is then not read); the loop, the loss weights and
        the data are this run's. ``config.json`` records it under ``training.init``.

    Returns
    -------
    dict
        :func:`~skelanim.nn.train.fit`'s result plus ``parameters`` and ``data_seconds``.
    """
    loop = loop or TrainConfig(epochs=20, batch_size=16, lr=1e-3, warmup_steps=100)
    start = _init_weights(init) if init is not None else None
    if start is not None:
        config = start[1]
        if resume:  # the run resumed started from this init (its state's weights win either way)
            check_same_start(Path(out), str(init))
    # the families' frames are calibrated (data.load_families); the copied hips travel by the stride legs
    config = replace(config or NKNConfig(), calibrated_frames=True, stride_travel=True)
    started = time.perf_counter()
    fams = load_families(mocap, families, max_files=max_files, extra=extra)
    val = []
    for f in fams:
        is_held = [any(Path(c["name"]).match(p) for p in val_patterns) for c in f.clips]
        held = [c for c, h in zip(f.clips, is_held) if h]
        if held and len(held) < len(f.clips):
            f.clips = [c for c, h in zip(f.clips, is_held) if not h]
            val.append(Family(f.name, f.rig, held, f.variants))
    data_seconds = time.perf_counter() - started
    meta = {"command": command, "seed": loop.seed, "families": {f.name: [c["name"] for c in f.clips] for f in fams},
            "validation": {f.name: [c["name"] for c in f.clips] for f in val}, "window": window}  # fmt: skip
    if start is not None:
        meta["init"] = start[2]
    task = RetargetTask(fams, val, window=window, samples=samples, weights=weights, config=config, meta=meta)
    torch.manual_seed(loop.seed)
    model = NKNTrainer(config, weights)
    if start is not None:
        model.load_state_dict(start[0], strict=False)  # an adversary it lacks starts fresh (seeded above)
    result = fit(model, task, Path(out), loop, resume=resume, log=log)
    result["parameters"] = sum(p.numel() for p in model.net.parameters())
    result["data_seconds"] = data_seconds
    return result


def _init_weights(init: str | os.PathLike) -> tuple[dict[str, Tensor], NKNConfig, dict[str, Any]]:
    """The ``init`` NKN folder's weights (float32), architecture and what ``training.init`` records of it; a folder
    that is not an NKN's, or whose weights do not fit its architecture, is one :class:`FormatError` naming it."""
    from skelanim.nn.checkpoint import load_model_files
    from skelanim.retarget.model import DEFAULT_MODEL

    path = DEFAULT_MODEL if str(init) == "shipped" else Path(init)
    tensors, config = load_model_files(path)
    if config.get("format") != "skelanim-retarget-nkn":
        raise FormatError(f"--init needs an NKN retargeting model, not {config.get('format')!r}", path=path)
    architecture = NKNConfig.from_dict(config.get("architecture") or {})
    if not (architecture.calibrated_frames and architecture.stride_travel):  # what training feeds it now
        raise FormatError("a model trained on uncalibrated bone frames or unscaled hip travel: training now feeds "
                          "calibrated frames and stride-scaled travel, which its weights were not made for", path=path)  # fmt: skip
    if not any(k.startswith("net.") for k in tensors):  # the network alone, as load_nkn also reads it
        tensors = {f"net.{k}": v for k, v in tensors.items()}
    missing, unexpected = NKNTrainer(architecture, LossWeights()).load_state_dict(tensors, strict=False)
    wrong = [k for k in missing if not k.startswith("disc.")] + list(unexpected)  # no adversary: a fresh one
    if wrong:
        raise FormatError(f"its weights do not fit its architecture ({', '.join(wrong[:3])}"
                          f"{', ...' if len(wrong) > 3 else ''})", path=path)  # fmt: skip
    training = config.get("training")
    said = training if isinstance(training, dict) else {}
    record = {"folder": str(init), "command": said.get("command"), "seed": said.get("seed")}
    return {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}, architecture, record
