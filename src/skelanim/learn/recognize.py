"""Action recognition: content (and style) of motion windows and files, with ST-GCN or the temporal-CNN
baseline (:mod:`skelanim.learn.stgcn`), trained with the shared loop (:func:`skelanim.nn.fit`).

Input
-----
Windows of ``window`` frames at ``fps`` (default 64 frames at 25 fps), as per-joint features
(:mod:`skelanim.learn.joints`). Each joint of a frame carries 16 numbers, all in the frame's own heading
frame (:func:`skelanim.data.features.heading_features`): its position relative to the pelvis (3), that
position's per-frame change (3), its 6D rotation (6), and the four
root features (pelvis step along and across the heading, turning rate, pelvis height) shared by every
joint; with ``path`` (``Recognizer(path=True)``) three more shared ones, the pelvis path and heading seen from
the window's middle frame (:func:`skelanim.data.features.window_path`), so that a turn is a heading that
sweeps across the window rather than a small mean in a swaying turning rate. They are standardised with
statistics of the training windows stored in the model
(:class:`~skelanim.learn.common.Normalizer`).

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
training mean pose, positions by FK), turn relabelling (``turn``, :func:`~skelanim.learn.augment.turn_relabel`:
a walk made to turn, a turn held straight, labels to match) and test-time mirror votes
(``Recognizer(test_mirror=True)``). Model selection: the window error on the validation styles, or the last
epoch (``TrainConfig(keep="last")``, the shipped recipe, with a moving average of the weights). The shipped
model is a deep ensemble of two networks (``members=2``, :mod:`skelanim.learn.ensemble`): one trained with
turn relabelling, one that centres its pose channels (``STGCN(centre=True)``).

Files
-----
A file is classified by averaging the class probabilities of its windows (stride ``stride``) and taking the
arg-max (:func:`skelanim.metrics.distribution.vote`). The pooled features of the last block are what
:meth:`Recognizer.embed` returns for FID and diversity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from skelanim.core.motion import Motion
from skelanim.core.rotations import mean_rotations, rot6d_to_matrix, rotvec_to_matrix
from skelanim.data.clips import clip_from_motion
from skelanim.data.dataset import MotionDataset
from skelanim.data.features import wrap_angle
from skelanim.data.labels import Vocabulary
from skelanim.data.rig import Rig
from skelanim.learn.augment import jitter_frames, log_uniform, scale_amplitude, turn_classes, turn_relabel
from skelanim.learn.common import (
    Normalizer,
    file_balance_weights,
    load_model,
    provenance,
    resolved_options,
    rig_fk,
    spread_sample,
)
from skelanim.learn.joints import (
    IN_CHANNELS,
    PATH_CHANNELS,
    ROTATION_CHANNELS,
    TURN_CHANNEL,
    joint_features,
    mirror_features,
    mirror_labels,
    resample_features,
)
from skelanim.learn.mirror import rig_mirror
from skelanim.learn.stgcn import STGCN, Members, TemporalCNN
from skelanim.metrics.distribution import accuracy, group_means, vote
from skelanim.nn.layers import grad_reverse
from skelanim.nn.train import TrainConfig, fit

__all__ = ["FORMAT", "RecognizeTask", "Recognizer", "content_log_probabilities", "evaluate_recognizer", "joint_features",
           "mirror_features", "mirror_labels", "train_recognizer"]

FORMAT = "skelanim-recognizer"
#: Range of the playback-speed augmentation.
SPEED = (0.4, 1.8)


def content_log_probabilities(logits: Tensor) -> Tensor:
    """Log class probabilities ``(B, C)`` of logits ``(B, C)``, or the log of the members' mean probability of
    ``(K, B, C)`` (a deep ensemble's prediction)."""
    log_p = torch.log_softmax(logits, -1)
    return torch.logsumexp(log_p, 0) - math.log(log_p.shape[0]) if log_p.dim() == 3 else log_p


class Recognizer(nn.Module):
    """A recognition network with its normaliser, vocabularies and rig.

    Parameters
    ----------
    arch : str
        ``"stgcn"`` or ``"cnn"``.
    rig : Rig
        The learning skeleton.
    contents, styles : sequence of str
        Class names (``styles`` may be empty: no style head).
    window : int
        Frames per window.
    fps : float
        Frame rate of the windows.
    arch_options : dict, optional
        Keyword arguments of :class:`~skelanim.learn.stgcn.STGCN` / :class:`~skelanim.learn.stgcn.TemporalCNN`.
    test_mirror : bool
        :meth:`classify` averages each window's content probabilities with those of its mirror image (classes
        mapped by :func:`mirror_labels`; classes without a mirror keep the window's own probability).
    path : bool
        Inputs include the window path features (:func:`joint_features`).
    test_speeds : sequence of float
        :meth:`embed_dataset` averages each window's content probabilities over these playback speeds: the
        window read ``s`` times faster from its first frame and resampled (:func:`resample_features`), where
        frames past a clip's end repeat its last frame, as in the training speed augmentation. The features
        are always the window's own; :meth:`classify` and :meth:`embed_arrays`, given fixed-length windows,
        do not vote. ``(1.0,)``: none.
    members : int
        ``K`` networks of this architecture side by side (:class:`~skelanim.learn.stgcn.Members`; made from
        separately trained models by :func:`skelanim.learn.ensemble.combine_recognizers`): content
        probabilities are the members' mean, features their concatenation.
    member_options : sequence of dict, optional
        ``K`` dicts: member ``i`` is built with ``arch_options`` updated by ``member_options[i]`` (an ensemble of
        networks that see the input differently, e.g. one with ``centre``).
    rotations : bool
        Whether the network sees the joints' 6D rotations (:data:`~skelanim.learn.joints.ROTATION_CHANNELS`); without
        them it reads positions and the root's motion only, which do not depend on how a capture solver shares
        rotation between joints (motion of other sources retargeted onto the rig).
    """

    def __init__(self, arch: str, rig: Rig, contents: Sequence[str], styles: Sequence[str], *, window: int = 64,
                 fps: float = 25.0, arch_options: dict[str, Any] | None = None, test_mirror: bool = False,
                 path: bool = False, test_speeds: Sequence[float] = (1.0,), members: int = 1,
                 member_options: Sequence[dict[str, Any]] | None = None, rotations: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.rotations = bool(rotations)
        self.test_speeds = tuple(float(v) for v in test_speeds)
        if not self.test_speeds or min(self.test_speeds) <= 0:
            raise ValueError(f"test_speeds must be one or more positive speeds, got {list(test_speeds)}")
        self.arch, self.rig, self.window, self.fps = arch, rig, int(window), float(fps)
        self.test_mirror, self.path = bool(test_mirror), bool(path)
        self.contents, self.styles = Vocabulary("content", tuple(contents)), Vocabulary("style", tuple(styles))
        m = rig.num_joints
        self.in_channels = IN_CHANNELS + (PATH_CHANNELS if self.path else 0)
        self.norm = Normalizer((m, self.in_channels))
        if arch not in ("stgcn", "cnn"):
            raise ValueError(f"unknown recogniser architecture {arch!r}; expected 'stgcn' or 'cnn'")
        self.arch_options = resolved_options(STGCN if arch == "stgcn" else TemporalCNN, arch_options)
        self.members = int(members)
        if self.members < 1:
            raise ValueError(f"members must be >= 1, got {members}")
        self.member_options = [dict(o) for o in member_options] if member_options is not None else None
        if self.member_options is not None and len(self.member_options) != self.members:
            raise ValueError(f"member_options has {len(self.member_options)} entries for {self.members} members")

        def build(i: int) -> nn.Module:
            options = {**self.arch_options, **(self.member_options[i] if self.member_options else {})}
            if arch == "stgcn":
                return STGCN(rig.parents, self.in_channels, len(contents), len(styles), **options)
            return TemporalCNN(m, self.in_channels, len(contents), len(styles), **options)

        self.net: nn.Module = build(0) if self.members == 1 else Members([build(i) for i in range(self.members)])

    @property
    def feature_dim(self) -> int:
        """Size ``D`` of :meth:`embed` features."""
        return int(self.net.feature_dim)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
        """``(B, T, M, C)`` raw joint features (:meth:`inputs`) to content logits ``(B, classes)``, style logits
        (or ``None``) and ``(B, D)`` features; logits ``(K, B, classes)`` with ``K`` members
        (:func:`content_log_probabilities` turns either into log probabilities)."""
        x = self.norm(x)
        if not self.rotations:
            x = x.index_fill(-1, torch.tensor(ROTATION_CHANNELS), 0.0)
        return self.net(x)

    def config(self) -> dict[str, Any]:
        """JSON description to rebuild the module."""
        return {"format": FORMAT, "arch": self.arch, "rig": self.rig.to_dict(), "contents": list(self.contents.names),
                "styles": list(self.styles.names), "window": self.window, "fps": self.fps,
                "arch_options": self.arch_options, "test_mirror": self.test_mirror, "path": self.path,
                "test_speeds": list(self.test_speeds),
                "members": self.members, "member_options": self.member_options, "rotations": self.rotations}  # fmt: skip

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Recognizer:
        """Build an untrained module from :meth:`config` output."""
        return cls(config["arch"], Rig.from_dict(config["rig"]), config["contents"], config["styles"],
                   window=config["window"], fps=config["fps"], arch_options=config.get("arch_options"),
                   test_mirror=bool(config.get("test_mirror", False)), path=bool(config.get("path", False)),
                   test_speeds=config.get("test_speeds", (1.0,)),
                   members=int(config.get("members", 1)), member_options=config.get("member_options"),
                   rotations=bool(config.get("rotations", True)))  # fmt: skip

    @classmethod
    def load(cls, folder: str | Path | None = None, *, default: str = "recognize") -> Recognizer:
        """Load a model folder (the shipped default ``default`` when ``folder`` is ``None``), in eval mode."""
        return load_model(cls, folder, default, FORMAT)

    @torch.no_grad()
    def classify(self, x: Tensor, *, batch: int = 256) -> tuple[Tensor, Tensor]:
        """Content probabilities ``(B, C)`` and features ``(B, D)`` of raw windows ``(B, T, M, C)`` (with
        ``test_mirror``, probabilities averaged with the mirror image's; features of the window itself)."""
        self.eval()
        probs, feats = [], []
        if self.test_mirror:
            perm, left, right, lateral = self.mirror_map()
            to = mirror_labels(self.contents.names)
            has = to >= 0
        for i in range(0, x.shape[0], batch):
            xi = x[i : i + batch].float()
            logits, _, f = self(xi)
            p = content_log_probabilities(logits).exp()
            if self.test_mirror:
                xm = mirror_features(xi, perm, lateral, (left, right))
                pm = content_log_probabilities(self(xm)[0]).exp()
                p = p.clone()
                p[:, has] = 0.5 * (p[:, has] + pm[:, to[has]])
            probs.append(p)
            feats.append(f)
        return torch.cat(probs), torch.cat(feats)

    def mirror_map(self) -> tuple[Tensor, Tensor, Tensor, int]:
        """:func:`~skelanim.learn.mirror.rig_mirror` of the rig, its choices settled by the training windows'
        mean pose (the normaliser's mean 6D features): partners, reflections and the lateral axis."""
        return rig_mirror(self.rig, rot6d_to_matrix(self.norm.mean.detach()[:, 6:12].float()))

    def inputs(self, rot: Tensor, pelvis: Tensor, yaw: Tensor, positions: Tensor) -> Tensor:
        """This model's raw input ``(B, T, M, C)`` of windows given as arrays (:func:`joint_features`)."""
        return joint_features(rot, pelvis, yaw, positions, self.rig, path=self.path)

    def embed_arrays(self, rot: Tensor, pelvis: Tensor, yaw: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Probabilities and features of windows given as arrays (shapes as :func:`joint_features`)."""
        return self.classify(self.inputs(rot.float(), pelvis.float(), yaw.float(), positions.float()))

    def embed_dataset(self, ds: MotionDataset, *, stride: int = 8, length: int | None = None,
                      speed_votes: bool = True) -> dict[str, Tensor]:  # fmt: skip
        """Classify every window of a dataset (with :attr:`test_speeds` votes unless ``speed_votes`` is false,
        e.g. when only the features are wanted).

        Returns
        -------
        dict of str to Tensor
            ``windows`` ``(W, 2)``, ``probs`` ``(W, C)``, ``features`` ``(W, D)``.
        """
        length = length or self.window
        win = ds.windows(length, stride)
        keys = ("rot", "pelvis", "yaw", "positions")
        probs, feats = [], []
        for i in range(0, len(win), 256):
            g = ds.gather(win[i : i + 256], length, keys=keys)
            p, f = self.embed_arrays(*(g[k] for k in keys))
            feats.append(f)
            if speed_votes and self.test_speeds != (1.0,):
                votes = torch.zeros_like(p)
                for speed in self.test_speeds:
                    read = max(2, round(length * speed))
                    if read == length:  # the window as it is: its probabilities are known
                        votes += p
                        continue
                    g = ds.gather(win[i : i + 256], read, keys=keys)
                    votes += self.classify(resample_features(self.inputs(*(g[k].float() for k in keys)), length))[0]
                p = votes / len(self.test_speeds)
            probs.append(p)
        return {"windows": win, "probs": torch.cat(probs), "features": torch.cat(feats)}

    def motions_dataset(self, motions: Sequence[Motion]) -> MotionDataset:
        """Motions resampled to the model's frame rate as a dataset on its rig; ``ValueError`` naming the first
        motion on a skeleton other than the rig's (by its position, and its file where the motion has one)."""
        for i, m in enumerate(motions):
            if not m.skeleton.same_topology(self.rig.skeleton):
                where = m.metadata.get("path") or f"motion {i}"
                raise ValueError(f"{where}: the recogniser was trained on a {self.rig.skeleton.num_joints}-joint "
                                 f"skeleton ({', '.join(self.rig.skeleton.names[:4])}, ...), not this "
                                 f"{m.skeleton.num_joints}-joint one")  # fmt: skip
        clips = [clip_from_motion(m, fps=self.fps, name=f"motion{i}", path=str(m.metadata.get("path", "")))
                 for i, m in enumerate(motions)]  # fmt: skip
        return MotionDataset(clips=clips, rig=self.rig, fps=self.fps)

    def embed_motions(self, motions: Sequence[Motion], *, stride: int = 8) -> tuple[Tensor, list[str]]:
        """Window features ``(W, D)`` of motions and each motion's voted content (for
        :func:`skelanim.metrics.compare.compare_sets`); ``ValueError`` for a skeleton other than the rig's."""
        out = self.embed_dataset(self.motions_dataset(motions), stride=stride)
        _, pred = vote(out["probs"], out["windows"][:, 0])
        return out["features"], [self.contents.names[int(p)] for p in pred]

    def recognize_motions(self, motions: Sequence[Motion], *, stride: int = 8) -> dict[str, Tensor]:
        """Content probabilities of motions, per motion and per window (with the model's mirror and speed votes).

        A motion shorter than :attr:`window` is one window, padded by holding its last pose. A motion's
        probabilities are the mean of its windows' (the vote of :func:`evaluate_recognizer`).

        Returns
        -------
        dict of str to Tensor
            ``probs`` ``(N, C)`` per motion; ``windows`` ``(W, 2)`` (motion index, first frame at the model's
            frame rate, stride ``stride``) and ``window_probs`` ``(W, C)``. Class names: :attr:`contents`.
        """
        out = self.embed_dataset(self.motions_dataset(motions), stride=stride)
        _, means = group_means(out["probs"].float(), out["windows"][:, 0])  # every motion has a window
        return {"probs": means, "windows": out["windows"], "window_probs": out["probs"]}


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
    meta : dict
        Provenance for ``config.json``.
    """

    metric = "val_error"

    def __init__(self, model: Recognizer, train_ds: MotionDataset, val_ds: MotionDataset | None, *, stride: int = 8,
                 style_weight: float = 0.5, mirror: bool = True, balance: float = 0.0, file_balance: float = 0.0,
                 amplitude: tuple[float, float] | None = None, posture: float = 0.0, style_adversary: float = 0.0,
                 turn: float = 0.0, std_floor: float = 0.0, frame_jitter: float = 0.0,
                 meta: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.model, self.train_ds, self.val_ds, self.meta = model, train_ds, val_ds, dict(meta or {})
        self.posture, self.frame_jitter = math.radians(posture), math.radians(frame_jitter)
        self.style_weight, self.style_adversary = style_weight, style_adversary
        self.windows = train_ds.windows(model.window, stride)
        clip = self.windows[:, 0]
        self.content = torch.tensor(model.contents.indices(train_ds.labels("content")))[clip]
        styles = train_ds.labels("style")
        self.style = torch.tensor([model.styles.index(s) if s in model.styles else -100 for s in styles])[clip]
        counts = torch.bincount(self.content, minlength=len(model.contents)).float().clamp_min(1.0)
        weight = counts.pow(-balance)[self.content] * file_balance_weights(clip, len(train_ds), file_balance)
        self.sample_weight = weight / weight.mean()  # the average training window weighs 1
        self.amplitude = amplitude
        if amplitude is not None or posture > 0 or frame_jitter > 0:  # they re-make the positions by FK
            self.fk = rig_fk(model.rig)
        if amplitude is not None:
            rot = train_ds.frames()["rot"]
            self.mean_pose = mean_rotations(spread_sample(rot, 20000))
        self.rig = model.rig
        self.mirror_of = mirror_labels(model.contents.names)  # (classes,)
        self.mirror = mirror
        self.turn, self.turns = float(turn), None
        if self.turn > 0:
            if model.path:  # the path features hold the heading's sweep too, which relabelling does not redo
                raise ValueError("turn relabelling and the window path features cannot be combined")
            yaw = train_ds.gather(self.windows, model.window, keys=("yaw",))["yaw"]
            rate = wrap_angle(yaw[:, 1:] - yaw[:, :-1]).mean(1)
            self.turns = turn_classes(model.contents.names, self.content, rate)
        sample = self._features(
            spread_sample(self.windows, 2000)
        )
        mean, std = sample.mean(dim=(0, 1)), sample.std(dim=(0, 1)).clamp_min(1e-3)  # (M, C) each
        if std_floor > 0:  # no channel far narrower than the same channel of the other joints
            std = torch.maximum(std, std_floor * std.median(dim=0).values)
        model.norm.set(mean, std)
        self.perm, left, right, self.lateral = model.mirror_map()
        self.reflections = (left, right)

    def _features(self, windows: Tensor, length: int | None = None, amplitude: Tensor | None = None,
                  posture: Tensor | None = None, jitter: Tensor | None = None) -> Tensor:  # fmt: skip
        g = self.train_ds.gather(windows, length or self.model.window, keys=("rot", "pelvis", "yaw", "positions"))
        rot, positions = g["rot"], g["positions"]
        if amplitude is not None:  # move the joints toward / away from the mean pose
            rot = scale_amplitude(rot, self.mean_pose, amplitude)
        if posture is not None:  # a constant offset of each joint's local rotation (body root kept)
            rot = torch.cat([rot[:, :, :1], rot[:, :, 1:] @ posture[:, None, 1:]], dim=2)
        if jitter is not None:  # each joint's frame turned, its children compensated
            rot = jitter_frames(rot, jitter, self.rig.parents)
        if amplitude is not None or posture is not None or jitter is not None:  # positions by FK
            h = self.rig.height
            positions = self.fk(rot, g["pelvis"] / h)[1] * h
        return self.model.inputs(rot, g["pelvis"], g["yaw"], positions)

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
        x = self._features(self.windows[indices], length, amplitude, posture, jitter)
        if length != t:
            x = resample_features(x, t)
        content = self.content[indices]
        if self.turns is not None:
            rate, content = turn_relabel(x[:, :, 0, TURN_CHANNEL], content, self.turns, self.turn, generator)
            x[..., TURN_CHANNEL] = rate[:, :, None]
        size = torch.empty(x.shape[0], 1, 1, 1).uniform_(0.9, 1.1, generator=generator)
        lengths = torch.tensor([1] * 6 + [0] * 6 + [1, 1, 0, 1] + [1, 1, 0], dtype=torch.bool)[: x.shape[-1]]
        x = x * torch.where(lengths, size, torch.ones(x.shape[-1]))  # lengths scale with the body
        x = x + 0.01 * torch.randn(x.shape, generator=generator) * self.model.norm.std
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
            net = model.net
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
            return {"val_error": float(self.loss(model, self.batch(torch.arange(min(256, len(self.windows))),
                                                                   torch.Generator().manual_seed(0)))[0])}  # fmt: skip
        result = evaluate_recognizer(model, self.val_ds)
        return {"val_error": 1.0 - result["top1_windows"], "val_top1_windows": result["top1_windows"],
                "val_top1_files": result["top1_files"]}  # fmt: skip

    def model_config(self) -> dict[str, Any]:
        """The model's config plus provenance."""
        return {**self.model.config(), "training": self.meta}


def evaluate_recognizer(model: Recognizer, ds: MotionDataset, *, stride: int = 8) -> dict[str, Any]:
    """Top-1 content accuracy per window and per file (vote), and per class.

    Parameters
    ----------
    model : Recognizer
        The model.
    ds : MotionDataset
        Labelled clips (contents unknown to the model count as errors).
    stride : int
        Window stride.

    Returns
    -------
    dict
        ``{"top1_files", "top1_windows", "per_class": {content: {"top1_files", "top1_windows", "files"}},
        "files": n, "windows": n, "predicted": {"files": (truth, predicted), "windows": (truth, predicted)}}``
        (content names, for a confusion matrix).
    """
    out = model.embed_dataset(ds, stride=stride)
    clip = out["windows"][:, 0]
    names = ds.labels("content")
    truth = torch.tensor([model.contents.names.index(n) if n in model.contents else -1 for n in names])
    pred_w = out["probs"].argmax(-1)
    ids, pred_f = vote(out["probs"], clip)
    per_class: dict[str, dict[str, float]] = {}
    for c in sorted(set(names)):
        fmask = torch.tensor([names[int(i)] == c for i in ids])
        wmask = torch.tensor([names[int(i)] == c for i in clip])
        per_class[c] = {"top1_files": accuracy(pred_f[fmask], truth[ids][fmask]),
                        "top1_windows": accuracy(pred_w[wmask], truth[clip][wmask]), "files": int(fmask.sum())}  # fmt: skip
    known = model.contents.names
    predicted = {"files": ([names[int(i)] for i in ids], [known[int(p)] for p in pred_f]),
                 "windows": ([names[int(i)] for i in clip], [known[int(p)] for p in pred_w])}  # fmt: skip
    return {"top1_files": accuracy(pred_f, truth[ids]), "top1_windows": accuracy(pred_w, truth[clip]),
            "per_class": per_class, "files": len(ids), "windows": len(clip), "predicted": predicted}  # fmt: skip


def train_recognizer(train_ds: MotionDataset, val_ds: MotionDataset | None, out: str | Path, *, arch: str = "stgcn",
                     window: int = 64, stride: int = 8, loop: TrainConfig | None = None,
                     arch_options: dict[str, Any] | None = None, mirror: bool = True, balance: float = 0.0,
                     file_balance: float = 0.0, amplitude: tuple[float, float] | None = None, test_mirror: bool = False,
                     test_speeds: Sequence[float] = (1.0,),
                     path: bool = False, posture: float = 0.0, style_weight: float = 0.5, style_adversary: float = 0.0,
                     turn: float = 0.0, std_floor: float = 0.0, rotations: bool = True, frame_jitter: float = 0.0,
                     resume: bool = False, command: str | None = None, log: Any = None) -> dict[str, Any]:  # fmt: skip
    """Train a recogniser; writes ``out/model.safetensors`` + ``config.json`` (best validation epoch).

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
    model = Recognizer(arch, train_ds.rig, sorted(set(train_ds.labels("content"))), sorted(set(train_ds.labels("style"))),
                       window=window, fps=train_ds.fps, arch_options=arch_options, test_mirror=test_mirror,
                       test_speeds=test_speeds, path=path, rotations=rotations)  # fmt: skip
    meta = provenance(command, [c.path for c in train_ds.clips], loop.seed)
    meta["validation"] = [c.name for c in val_ds.clips] if val_ds is not None else []
    meta["augmentation"] = {"speed": list(SPEED), "mirror": mirror, "balance": balance, "file_balance": file_balance,
                            "amplitude": list(amplitude) if amplitude is not None else None, "posture": posture,
                            "style_weight": style_weight, "style_adversary": style_adversary, "turn": turn,
                            "std_floor": std_floor, "frame_jitter": frame_jitter}  # fmt: skip
    task = RecognizeTask(model, train_ds, val_ds, stride=stride, mirror=mirror, balance=balance,
                         file_balance=file_balance, amplitude=amplitude, posture=posture, style_weight=style_weight,
                         style_adversary=style_adversary, turn=turn, std_floor=std_floor, frame_jitter=frame_jitter,
                         meta=meta)  # fmt: skip
    result = fit(model, task, out, loop, resume=resume, log=log)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    return result
