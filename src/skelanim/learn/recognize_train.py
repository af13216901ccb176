"""Training of the recognisers of :mod:`skelanim.learn.recognize` with the shared loop (:func:`skelanim.nn.fit`).

Training
--------
Cross-entropy with label smoothing on the content head plus half that on the style head (optionally with
class weights ``∝ n_c^-balance``; off by default: on the validation styles it cost accuracy). Augmentation,
drawn from the loop's per-batch generator: a playback-speed factor per batch (:data:`SPEED`, 0.4-1.8: the
window is read longer or shorter and resampled to ``window`` frames, because styles differ much in tempo),
a body-size factor per sample (0.9-1.1 on lengths), Gaussian noise, and a left/right mirror image for half
of the samples whose mirror has a label (:func:`mirror_features`, :func:`mirror_labels`: ``walk-left``
becomes ``walk-right``, ``walk`` stays ``walk``, and ``bye``, waved with the right hand, is never
mirrored). Options, off by default: window weights ``∝ (windows of its file)^-file_balance`` (short files
count more), amplitude augmentation (:func:`~skelanim.learn.augment.scale_amplitude`: joint rotations moved toward or away from the
training mean pose, positions by FK), ground travel scaling (:func:`~skelanim.learn.augment.scale_travel`: the
pelvis covers more or less ground per step), turn relabelling (``turn``, :func:`~skelanim.learn.augment.turn_relabel`:
a walk made to turn, a turn held straight, labels to match) and test-time mirror votes
(``Recognizer(test_mirror=True)``). Model selection: the window error on the validation styles, or the last
epoch (``TrainConfig(keep="last")``, the shipped recipe, with a moving average of the weights). The shipped
model is a deep ensemble of two networks (``members=2``, :mod:`skelanim.learn.ensemble`): one trained with
turn relabelling, one that centres its pose channels (``STGCN(centre=True)``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn

from skelanim.core.rotations import mean_rotations, rotvec_to_matrix
from skelanim.data.dataset import MotionDataset, feature_stats
from skelanim.data.features import wrap_angle
from skelanim.data.labels import label_spaces
from skelanim.learn.augment import jitter_frames, log_uniform, scale_amplitude, scale_travel, turn_classes, turn_relabel
from skelanim.learn.common import (
    file_balance_weights,
    keep_without_validation,
    note_short_clips,
    provenance,
    rig_fk,
    spread_sample,
)
from skelanim.learn.joints import TURN_CHANNEL, mirror_features, mirror_labels, resample_features
from skelanim.learn.recognize import Recognizer, evaluate_recognizer
from skelanim.learn.stgcn import STGCN, TemporalCNN
from skelanim.nn.device import module_device, to_device
from skelanim.nn.layers import grad_reverse
from skelanim.nn.train import TrainConfig, fit

__all__ = ["SPEED", "RecognizeTask", "train_recognizer"]

#: Range of the playback-speed augmentation.
SPEED = (0.4, 1.8)


class RecognizeTask:
    """:class:`skelanim.nn.train.Task` for a :class:`Recognizer`.

    Parameters
    ----------
    model : Recognizer
        The model (its vocabularies define the labels).
    train_ds, val_ds : MotionDataset
        Training and validation clips.
    stride : int
        Training window stride.
    style_weight : float
        Weight of the style head's cross-entropy (the content head's is 1).
    style_adversary : float
        If positive, the style head is an adversary: it still learns to name the style, but the network before
        it receives its gradient reversed and scaled by this factor (:func:`skelanim.nn.grad_reverse`), so the
        features learn to hide the style (domain-adversarial training; aimed at styles never seen).
    turn : float
        Chance that a window of a ``X`` / ``X-turn-left`` / ``X-turn-right`` content is relabelled with a new
        heading sweep (:func:`~skelanim.learn.augment.turn_relabel`; 0: never).
    std_floor : float
        No input channel's normalising standard deviation below this share of the median, over the joints, of
        the same channel (0: only the absolute floor 0.001). A channel all but constant in the training data
        (a twist the captures never use) would otherwise put a small difference of another capture tens of
        standard deviations out.
    statistics : bool
        Set the model's input normalisation from the training windows; ``False`` keeps the model's (fine-tuning:
        :mod:`skelanim.learn.finetune`; ``std_floor`` then cannot be asked).
    meta : dict
        Provenance for ``config.json``.
    """

    metric = "val_error"

    def __init__(self, model: Recognizer, train_ds: MotionDataset, val_ds: MotionDataset | None, *, stride: int = 8,
                 style_weight: float = 0.5, mirror: bool = True, balance: float = 0.0, file_balance: float = 0.0,
                 amplitude: tuple[float, float] | None = None, posture: float = 0.0, style_adversary: float = 0.0,
                 turn: float = 0.0, std_floor: float = 0.0, frame_jitter: float = 0.0,
                 travel: tuple[float, float] | None = None, statistics: bool = True,
                 meta: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.model, self.train_ds, self.val_ds, self.meta = model, train_ds, val_ds, dict(meta or {})
        self.validated = val_ds is not None
        if not self.validated:  # scored on training windows: not a validation score
            self.metric = "train_subset_loss"
        self.posture, self.frame_jitter = math.radians(posture), math.radians(frame_jitter)
        self.style_weight, self.style_adversary = style_weight, style_adversary
        if style_adversary > 0 and model.members > 1:
            raise ValueError(f"the style adversary trains one network's style head, not an ensemble of {model.members}")
        self.windows = train_ds.windows(model.window, stride)
        clip = self.windows[:, 0]
        self.content = torch.tensor(model.contents.indices(train_ds.labels("content")))[clip]
        styles = train_ds.labels("style")
        self.style = torch.tensor([model.styles.index(s) if s in model.styles else -100 for s in styles])[clip]
        counts = torch.bincount(self.content, minlength=len(model.contents)).float().clamp_min(1.0)
        weight = counts.pow(-balance)[self.content] * file_balance_weights(clip, len(train_ds), file_balance)
        self.sample_weight = weight / weight.mean()  # the average training window weighs 1
        self.amplitude, self.travel = amplitude, travel
        if amplitude is not None or posture > 0 or frame_jitter > 0:  # they re-make the positions by FK
            self.fk = rig_fk(model.rig)
        if amplitude is not None:
            rot = train_ds.frames()["rot"]
            self.mean_pose = mean_rotations(spread_sample(rot, 20000))
        self.rig = model.rig
        self.mirror_of = mirror_labels(model.contents.names)  # (classes,)
        self.mirror = mirror
        if mirror and bool((self.mirror_of < 0).all()):  # on by default: it had done nothing without a word
            warnings.warn("--mirror flips no window: no content has a mirror label (a symmetric content of the Bandai "
                          "set, learn.joints.SYMMETRIC_CONTENTS, or a pair named X-left/X-right); the contents "
                          f"here: {', '.join(model.contents.names[:6])}{', ...' if len(model.contents.names) > 6 else ''}",
                          stacklevel=2)  # fmt: skip
        self.turn, self.turns = float(turn), None
        if self.turn > 0:
            if model.path:  # the path features hold the heading's sweep too, which relabelling does not redo
                raise ValueError("turn relabelling and the window path features cannot be combined")
            yaw = train_ds.gather(self.windows, model.window, keys=("yaw",))["yaw"]
            rate = wrap_angle(yaw[:, 1:] - yaw[:, :-1]).mean(1)
            self.turns = turn_classes(model.contents.names, self.content, rate)
        if statistics:
            sample = self._features(spread_sample(self.windows, 2000))
            mean, std = (t[0, 0] for t in feature_stats(sample, (0, 1)))  # (M, C) each
            if std_floor > 0:  # no channel far narrower than the same channel of the other joints
                std = torch.maximum(std, std_floor * std.median(dim=0).values)
            model.norm.set(mean, std)
        elif std_floor > 0:
            raise ValueError("std_floor shapes the input statistics, which a fine-tuned model keeps")
        self.noise_std = model.norm.std.detach().cpu().clone()  # (M, C) a CPU copy: batches are built on the CPU
        self.perm, left, right, self.lateral = model.mirror_map()
        self.reflections = (left, right)

    def _features(self, windows: Tensor, length: int | None = None, amplitude: Tensor | None = None,
                  posture: Tensor | None = None, jitter: Tensor | None = None,
                  travel: Tensor | None = None) -> Tensor:  # fmt: skip
        g = self.train_ds.gather(windows, length or self.model.window, keys=("rot", "pelvis", "yaw", "positions"))
        rot, pelvis, positions = g["rot"], g["pelvis"], g["positions"]
        if amplitude is not None:  # move the joints toward / away from the mean pose
            rot = scale_amplitude(rot, self.mean_pose, amplitude)
        if posture is not None:  # a constant offset of each joint's local rotation (body root kept)
            rot = torch.cat([rot[:, :, :1], rot[:, :, 1:] @ posture[:, None, 1:]], dim=2)
        if jitter is not None:  # each joint's frame turned, its children compensated
            rot = jitter_frames(rot, jitter, self.rig.parents)
        if amplitude is not None or posture is not None or jitter is not None:  # positions by FK
            h = self.rig.height
            positions = self.fk(rot, pelvis / h)[1] * h
        if travel is not None:  # the same steps over more or less ground
            pelvis, positions = scale_travel(pelvis, positions, travel, self.rig.up)
        return self.model.inputs(rot, pelvis, g["yaw"], positions)

    def num_samples(self) -> int:
        """Training windows."""
        return len(self.windows)

    def batch(self, indices: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """Features of windows ``indices`` with speed, size and noise augmentation."""
        t = self.model.window
        speed = float(log_uniform(SPEED, (), generator))
        length = max(2, round(t * speed))
        amplitude = log_uniform(self.amplitude, (len(indices),), generator) if self.amplitude is not None else None
        posture = None
        if self.posture > 0:
            vec = torch.randn(len(indices), self.rig.num_joints, 3, generator=generator) * self.posture
            posture = rotvec_to_matrix(vec)
        jitter = None
        if self.frame_jitter > 0:
            vec = torch.randn(len(indices), self.rig.num_joints, 3, generator=generator) * self.frame_jitter
            jitter = rotvec_to_matrix(vec)
        travel = log_uniform(self.travel, (len(indices),), generator) if self.travel is not None else None
        x = self._features(self.windows[indices], length, amplitude, posture, jitter, travel)
        if length != t:
            x = resample_features(x, t)
        content = self.content[indices]
        if self.turns is not None:
            rate, content = turn_relabel(x[:, :, 0, TURN_CHANNEL], content, self.turns, self.turn, generator)
            x[..., TURN_CHANNEL] = rate[:, :, None]
        size = torch.empty(x.shape[0], 1, 1, 1).uniform_(0.9, 1.1, generator=generator)
        lengths = torch.tensor([1] * 6 + [0] * 6 + [1, 1, 0, 1] + [1, 1, 0], dtype=torch.bool)[: x.shape[-1]]
        x = x * torch.where(lengths, size, torch.ones(x.shape[-1]))  # lengths scale with the body
        x = x + 0.01 * torch.randn(x.shape, generator=generator) * self.noise_std
        if self.mirror:
            target = self.mirror_of[content]
            flip = (torch.rand(len(indices), generator=generator) < 0.5) & (target >= 0)
            x = torch.where(flip[:, None, None, None], mirror_features(x, self.perm, self.lateral, self.reflections), x)
            content = torch.where(flip, target, content)
        return {"x": x, "content": content, "style": self.style[indices], "weight": self.sample_weight[indices]}

    def loss(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Label-smoothed cross-entropy on content (+ ``style_weight`` x style)."""
        content, style, features = model(batch["x"])
        if style is not None and self.style_adversary > 0:  # the style head sees the features through a reversal
            # the loop trains through a DistributedDataParallel wrapper under torchrun: the heads are the network's
            plain = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
            net = cast(Recognizer, plain).net
            assert isinstance(net, (STGCN, TemporalCNN)) and net.style_head is not None  # one network (__init__)
            style = net.style_head(net.drop(grad_reverse(features, self.style_adversary)))
        ce = nn.functional.cross_entropy(content, batch["content"], label_smoothing=0.1, reduction="none")
        loss = (ce * batch["weight"]).mean()
        parts = {"acc": float((content.argmax(-1) == batch["content"]).float().mean())}
        if style is not None:
            loss = loss + self.style_weight * nn.functional.cross_entropy(style, batch["style"], label_smoothing=0.1,
                                                                          ignore_index=-100)  # fmt: skip
        return loss, parts

    def validate(self, model: nn.Module) -> dict[str, float]:
        """Window and file accuracy on the validation clips."""
        if self.val_ds is None:
            batch = self.batch(torch.arange(min(256, len(self.windows))), torch.Generator().manual_seed(0))
            return {self.metric: float(self.loss(model, to_device(batch, module_device(model)))[0])}
        result = evaluate_recognizer(cast(Recognizer, model), self.val_ds)  # the loop validates the bare model
        return {"val_error": 1.0 - result["top1_windows"], "val_top1_windows": result["top1_windows"],
                "val_top1_files": result["top1_files"]}  # fmt: skip

    def model_config(self) -> dict[str, Any]:
        """The model's config plus provenance."""
        return {**self.model.config(), "training": self.meta}


def train_recognizer(train_ds: MotionDataset, val_ds: MotionDataset | None, out: str | Path, *, arch: str = "stgcn",
                     window: int = 64, stride: int = 8, loop: TrainConfig | None = None,
                     arch_options: dict[str, Any] | None = None, mirror: bool = True, balance: float = 0.0,
                     file_balance: float = 0.0, amplitude: tuple[float, float] | None = None, test_mirror: bool = False,
                     test_speeds: Sequence[float] = (1.0,),
                     path: bool = False, posture: float = 0.0, style_weight: float = 0.5, style_adversary: float = 0.0,
                     turn: float = 0.0, std_floor: float = 0.0, rotations: bool = True, frame_jitter: float = 0.0,
                     travel: tuple[float, float] | None = None, resume: bool = False, command: str | None = None, log: Any = None,
                     init: Recognizer | None = None, init_record: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Train a recogniser; writes ``out/model.safetensors`` + ``config.json`` (best validation epoch).

    ``init``, a single-network recogniser, is fine-tuned instead: its architecture, window, frame rate,
    statistics and test-time settings are kept (``arch``, ``window``, ``arch_options``, ``test_mirror``,
    ``test_speeds``, ``path`` and ``rotations`` are not read; ``train_ds`` must be at its rate on its rig), its
    classes become the data's (:func:`~skelanim.learn.finetune.adapt_recognizer`), and ``init_record`` goes into
    ``config.json`` as ``init``.

    Parameters
    ----------
    train_ds, val_ds : MotionDataset
        Training and validation clips (validation may be ``None``).
    out : path
        Model folder.
    arch : str
        ``"stgcn"`` or ``"cnn"``.
    window, stride : int
        Window length and training stride (frames).
    loop : TrainConfig
        Loop settings (seed, epochs, batch size, ...).
    arch_options : dict, optional
        Network options.
    mirror : bool
        Left/right mirror augmentation (:func:`mirror_features`, labels by :func:`mirror_labels`).
    balance : float
        Class weights of the content loss ``∝ n_c^-balance`` (``n_c`` training windows of class ``c``; 0: none).
    file_balance : float
        Window weights ``∝ n_f^-file_balance`` (``n_f`` training windows of the window's file): short files,
        which give one or two windows, count more.
    amplitude : (float, float), optional
        Amplitude augmentation: each sample's joint rotations are moved toward or away from the training mean
        pose by a factor drawn log-uniformly from this range (:func:`scale_amplitude`; positions by FK).
    test_mirror : bool
        Store in the model that windows are classified together with their mirror image
        (:meth:`Recognizer.classify`), in validation too.
    test_speeds : sequence of float
        :class:`Recognizer`'s (validation uses them too).
    path : bool
        Give the model the window path features (:func:`joint_features`).
    posture : float
        Posture augmentation: each sample's local joint rotations (body root excepted) get one constant random
        rotation each, rotation vector ``~ N(0, posture^2)`` per axis (degrees), positions by FK, so that how a
        style holds its arms or back is not a cue to the content.
    style_weight, style_adversary : float
        Weight of the style head and gradient-reversal factor (:class:`RecognizeTask`).
    turn : float
        Turn relabelling chance (:class:`RecognizeTask`).
    std_floor : float
        Relative floor of the input normaliser's standard deviations (:class:`RecognizeTask`).
    rotations : bool
        Whether the network sees joint rotations (:class:`Recognizer`).
    frame_jitter : float
        Frame jitter (:func:`~skelanim.learn.augment.jitter_frames`): rotation vectors ``~ N(0, frame_jitter^2)``
        per axis (degrees), one per sample and joint; positions by FK.
    travel : (float, float), optional
        Ground travel augmentation: each sample's pelvis covers ground at a factor drawn log-uniformly from this
        range (:func:`~skelanim.learn.augment.scale_travel`), its steps unchanged, so that a run is not told from a
        walk by its speed over the ground alone.
    resume : bool
        Continue an interrupted run in ``out``.
    command : str, optional
        The command line, recorded in ``config.json``.
    log : callable, optional
        Per-epoch log sink.

    Returns
    -------
    dict
        :func:`skelanim.nn.fit`'s result plus ``parameters``.
    """
    loop = loop or TrainConfig(epochs=20, batch_size=64, lr=2e-3, warmup_steps=100)
    torch.manual_seed(loop.seed)
    contents, styles = sorted(set(train_ds.labels("content"))), sorted(set(train_ds.labels("style")))
    spaces = label_spaces([c.labels for c in train_ds.clips])
    if init is not None:
        from skelanim.learn.finetune import adapt_recognizer, require_fits

        require_fits(init, train_ds, "the recogniser")
        model = adapt_recognizer(init, contents, styles, spaces)
    else:
        model = Recognizer(arch, train_ds.rig, contents, styles, window=window, fps=train_ds.fps,
                           arch_options=arch_options, test_mirror=test_mirror, test_speeds=test_speeds, path=path,
                           rotations=rotations, label_spaces=spaces)  # fmt: skip
    meta = provenance(command, [c.path for c in train_ds.clips], loop.seed)
    if init is not None:
        meta["init"] = dict(init_record or {})
    meta["validation"] = [c.name for c in val_ds.clips] if val_ds is not None else []
    meta["augmentation"] = {"speed": list(SPEED), "mirror": mirror, "balance": balance, "file_balance": file_balance,
                            "amplitude": list(amplitude) if amplitude is not None else None, "posture": posture,
                            "style_weight": style_weight, "style_adversary": style_adversary, "turn": turn,
                            "std_floor": std_floor, "frame_jitter": frame_jitter,
                            "travel": list(travel) if travel is not None else None}  # fmt: skip
    task = RecognizeTask(model, train_ds, val_ds, stride=stride, mirror=mirror, balance=balance,
                         file_balance=file_balance, amplitude=amplitude, posture=posture, style_weight=style_weight,
                         style_adversary=style_adversary, turn=turn, std_floor=std_floor, frame_jitter=frame_jitter,
                         travel=travel, statistics=init is None, meta=meta)  # fmt: skip
    loop = keep_without_validation(loop, task.validated, log)
    note_short_clips(train_ds, model.window, log)
    result = fit(model, task, out, loop, resume=resume, log=log)
    result.update(metric=task.metric, keep=loop.keep)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    return result
