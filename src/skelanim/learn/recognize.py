"""Action recognition: content (and style) of motion windows and files, with ST-GCN or the temporal-CNN
baseline (:mod:`skelanim.learn.stgcn`), trained by :mod:`skelanim.learn.recognize_train`.

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

Files
-----
A file is classified by averaging the class probabilities of its windows (stride ``stride``) and taking the
arg-max (:meth:`Recognizer.file_probabilities`). A model trained on both Bandai-Namco datasets, which
name their classes each in its own way, classifies a window or a file that names its dataset among that dataset's
contents (:meth:`Recognizer.within_label_spaces`; a file's mean is restricted, not each window before it). The pooled features of the last block are what
:meth:`Recognizer.embed` returns for FID and diversity.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from tqdm import tqdm

from skelanim.core.motion import Motion, as_motions
from skelanim.core.rotations import rot6d_to_matrix
from skelanim.data.clips import clip_from_motion
from skelanim.data.dataset import MotionDataset
from skelanim.data.labels import Vocabulary, known_labels
from skelanim.data.rig import Rig
from skelanim.errors import SkeletonError
from skelanim.learn.common import Normalizer, load_model, require_rig_up, resolved_options, skeleton_mismatch
from skelanim.learn.joints import (
    IN_CHANNELS,
    PATH_CHANNELS,
    ROTATION_CHANNELS,
    joint_features,
    mirror_features,
    mirror_labels,
    resample_features,
)
from skelanim.learn.mirror import rig_mirror
from skelanim.learn.stgcn import STGCN, Members, TemporalCNN
from skelanim.metrics.distribution import accuracy, group_means
from skelanim.nn.device import module_device, to_device
from skelanim.ops.normalize import scale, turned_up

__all__ = ["ARCHITECTURES", "FORMAT", "Recognizer", "content_log_probabilities", "evaluate_recognizer", "joint_features",
           "mirror_features", "mirror_labels"]

FORMAT = "skelanim-recognizer"
#: The recogniser architectures: the ST-GCN and the temporal-CNN baseline.
ARCHITECTURES = ("stgcn", "cnn")


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
        mapped by :func:`mirror_labels`); the classes without a mirror share the two images' mean mass on them in
        the window's own proportions, so a window's probabilities sum to 1 (they had kept the window's own
        probabilities, and rows summed to up to 1.29) and mirrored classes stay mirror-consistent.
    path : bool
        Inputs include the window path features (:func:`joint_features`).
    test_speeds : sequence of float
        :meth:`embed_dataset` averages each window's content probabilities over these playback speeds: the
        window read ``s`` times faster from its first frame and resampled (:func:`resample_features`); a read that
        would run past its clip's end is moved back to end there (:meth:`~skelanim.data.MotionDataset.gather`), as
        in the training speed augmentation. The features
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
    label_spaces : mapping of str to sequence of str, optional
        For a model trained on data pooled from datasets with their own class names
        (:func:`~skelanim.data.labels.label_spaces`): each dataset's contents. A file that names its dataset
        (``dataset-2_...``) is then classified among that dataset's contents only (:meth:`within_label_spaces`),
        as multi-dataset models are evaluated in each dataset's label space; any other file among all of them.
    """

    def __init__(self, arch: str, rig: Rig, contents: Sequence[str], styles: Sequence[str], *, window: int = 64,
                 fps: float = 25.0, arch_options: dict[str, Any] | None = None, test_mirror: bool = False,
                 path: bool = False, test_speeds: Sequence[float] = (1.0,), members: int = 1,
                 member_options: Sequence[dict[str, Any]] | None = None, rotations: bool = True,
                 label_spaces: Mapping[str, Sequence[str]] | None = None) -> None:  # fmt: skip
        super().__init__()
        self.rotations = bool(rotations)
        self.test_speeds = tuple(float(v) for v in test_speeds)
        if not self.test_speeds or min(self.test_speeds) <= 0:
            raise ValueError(f"test_speeds must be one or more positive speeds, got {list(test_speeds)}")
        self.arch, self.rig, self.window, self.fps = arch, rig, int(window), float(fps)
        self.test_mirror, self.path = bool(test_mirror), bool(path)
        self.contents, self.styles = Vocabulary("content", tuple(contents)), Vocabulary("style", tuple(styles))
        self.label_spaces = {str(k): tuple(v) for k, v in label_spaces.items()} if label_spaces else None
        for name, space in (self.label_spaces or {}).items():
            if not space or any(c not in self.contents for c in space):
                raise ValueError(f"label space {name!r} must be some of the model's contents, got {list(space)}")
        m = rig.num_joints
        self.in_channels = IN_CHANNELS + (PATH_CHANNELS if self.path else 0)
        self.norm = Normalizer((m, self.in_channels))
        if arch not in ARCHITECTURES:
            raise ValueError(f"unknown recogniser architecture {arch!r}; expected {' or '.join(map(repr, ARCHITECTURES))}")
        self.arch_options = resolved_options(STGCN if arch == "stgcn" else TemporalCNN, arch_options)
        self.members = int(members)
        if self.members < 1:
            raise ValueError(f"members must be >= 1, got {members}")
        self.member_options = [dict(o) for o in member_options] if member_options is not None else None
        if self.member_options is not None and len(self.member_options) != self.members:
            raise ValueError(f"member_options has {len(self.member_options)} entries for {self.members} members")

        def build(i: int) -> STGCN | TemporalCNN:
            options = {**self.arch_options, **(self.member_options[i] if self.member_options else {})}
            if arch == "stgcn":
                return STGCN(rig.parents, self.in_channels, len(contents), len(styles), **options)
            return TemporalCNN(m, self.in_channels, len(contents), len(styles), **options)

        self.net: STGCN | TemporalCNN | Members = (
            build(0) if self.members == 1 else Members([build(i) for i in range(self.members)])
        )

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
                "members": self.members, "member_options": self.member_options, "rotations": self.rotations,
                "label_spaces": {k: list(v) for k, v in self.label_spaces.items()} if self.label_spaces else None}  # fmt: skip

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Recognizer:
        """Build an untrained module from :meth:`config` output."""
        return cls(config["arch"], Rig.from_dict(config["rig"]), config["contents"], config["styles"],
                   window=config["window"], fps=config["fps"], arch_options=config.get("arch_options"),
                   test_mirror=bool(config.get("test_mirror", False)), path=bool(config.get("path", False)),
                   test_speeds=config.get("test_speeds", (1.0,)),
                   members=int(config.get("members", 1)), member_options=config.get("member_options"),
                   rotations=bool(config.get("rotations", True)), label_spaces=config.get("label_spaces"))  # fmt: skip

    @classmethod
    def load(cls, folder: str | Path | None = None, *, default: str = "recognize") -> Recognizer:
        """Load a model folder (the shipped default ``default`` when ``folder`` is ``None``), in eval mode."""
        return load_model(cls, folder, default, FORMAT)

    @torch.no_grad()
    def classify(self, x: Tensor, *, batch: int = 256) -> tuple[Tensor, Tensor]:
        """Content probabilities ``(B, C)`` and features ``(B, D)`` of raw windows ``(B, T, M, C)`` (with
        ``test_mirror``, probabilities averaged with the mirror image's; features of the window itself). Computed on
        the model's device, returned on the input's."""
        self.eval()
        device = module_device(self)
        probs, feats = [], []
        if self.test_mirror:
            perm, left, right, lateral = to_device(self.mirror_map(), device)
            to = mirror_labels(self.contents.names)
            has = to >= 0
        for i in range(0, x.shape[0], batch):
            xi = x[i : i + batch].float().to(device)
            logits, _, f = self(xi)
            p = content_log_probabilities(logits).exp()
            if self.test_mirror:
                xm = mirror_features(xi, perm, lateral, (left, right))
                pm = content_log_probabilities(self(xm)[0]).exp()
                p = p.clone()
                p[:, has] = 0.5 * (p[:, has] + pm[:, to[has]])
                own, seen = p[:, ~has].sum(-1, keepdim=True), pm[:, ~has].sum(-1, keepdim=True)
                p[:, ~has] *= 0.5 * (own + seen) / own.clamp_min(torch.finfo(p.dtype).tiny)  # sums to 1 again
            probs.append(p.to(x.device))
            feats.append(f.to(x.device))
        return torch.cat(probs), torch.cat(feats)

    def within_label_spaces(self, probs: Tensor, datasets: Sequence[str | None]) -> Tensor:
        """Content probabilities ``(N, C)`` of ``N`` windows or files, each restricted to the contents of its
        source dataset (``datasets[i]``, the ``dataset`` label of its file name) and renormalised. Rows whose
        dataset is ``None`` or unknown to :attr:`label_spaces`, and every row of a model without them, are
        returned unchanged. A right answer stays right: only classes the dataset does not have are removed."""
        spaces = self.label_spaces or {}
        known = [(i, name) for i, name in enumerate(datasets) if name is not None and name in spaces]
        if not known:
            return probs
        rows = [i for i, _ in known]
        allowed = torch.tensor([[c in spaces[name] for c in self.contents.names] for _, name in known],
                               device=probs.device)  # fmt: skip
        kept = probs[rows] * allowed
        out = probs.clone()
        out[rows] = kept / kept.sum(-1, keepdim=True).clamp_min(torch.finfo(kept.dtype).tiny)
        return out

    def mirror_map(self) -> tuple[Tensor, Tensor, Tensor, int]:
        """:func:`~skelanim.learn.mirror.rig_mirror` of the rig, its choices settled by the training windows'
        mean pose (the normaliser's mean 6D features): partners, reflections and the lateral axis (on the CPU,
        with the rig)."""
        return rig_mirror(self.rig, rot6d_to_matrix(self.norm.mean.detach()[:, 6:12].float().cpu()))

    def inputs(self, rot: Tensor, pelvis: Tensor, yaw: Tensor, positions: Tensor) -> Tensor:
        """This model's raw input ``(B, T, M, C)`` of windows given as arrays (:func:`joint_features`)."""
        return joint_features(rot, pelvis, yaw, positions, self.rig, path=self.path)

    def embed_arrays(self, rot: Tensor, pelvis: Tensor, yaw: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Probabilities and features of windows given as arrays (shapes as :func:`joint_features`)."""
        return self.classify(self.inputs(rot.float(), pelvis.float(), yaw.float(), positions.float()))

    def embed_dataset(self, ds: MotionDataset, *, stride: int = 8, length: int | None = None,
                      speed_votes: bool = True, progress: bool = False) -> dict[str, Tensor]:  # fmt: skip
        """Classify every window of a dataset (with :attr:`test_speeds` votes unless ``speed_votes`` is false,
        e.g. when only the features are wanted; a window of a clip whose ``dataset`` label the model's
        :attr:`label_spaces` know among that dataset's contents, :meth:`within_label_spaces`).

        Returns
        -------
        dict of str to Tensor
            ``windows`` ``(W, 2)``, ``probs`` ``(W, C)`` (within label spaces), ``unrestricted`` ``(W, C)`` (before
            them; :meth:`file_probabilities` votes with these), ``features`` ``(W, D)``.
        """
        if not self.rig.skeleton.same_rig(ds.rig.skeleton):
            raise SkeletonError(skeleton_mismatch("recogniser", self.rig.skeleton, ds.rig.skeleton), path=ds.clips[0].path)
        require_rig_up(ds, self.rig, "recogniser")
        length = length or self.window
        win = ds.windows(length, stride)
        keys = ("rot", "pelvis", "yaw", "positions")
        probs, feats = [], []
        chunks = range(0, len(win), 256)  # a bar where there are several (a long take's windows took minutes unseen)
        for i in tqdm(chunks, desc="recognise", unit="x256 windows", leave=False, disable=not progress or len(chunks) < 2):
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
        spaces = [ds.clips[int(i)].labels.get("dataset") for i in win[:, 0]]
        unrestricted = torch.cat(probs)
        return {"windows": win, "probs": self.within_label_spaces(unrestricted, spaces), "unrestricted": unrestricted,
                "features": torch.cat(feats)}  # fmt: skip

    def file_probabilities(self, out: dict[str, Tensor], ds: MotionDataset) -> tuple[Tensor, Tensor]:
        """The vote of each clip of ``ds`` from :meth:`embed_dataset`'s ``out``: the mean of its windows'
        probabilities, then restricted to its dataset's contents (:meth:`within_label_spaces`). Restricting the
        mean, not each window before it, keeps a file answer that is right without label spaces right (per window
        first, three windows voting `walk` had become a `run`).

        Returns
        -------
        tuple of Tensor
            Clip indices ``(N,)`` (sorted) and their content probabilities ``(N, C)``.
        """
        ids, means = group_means(out["unrestricted"].float(), out["windows"][:, 0])
        return ids, self.within_label_spaces(means, [ds.clips[int(i)].labels.get("dataset") for i in ids])

    def motions_dataset(self, motions: Sequence[Motion]) -> MotionDataset:
        """Motions resampled to the model's frame rate, turned so that their up direction is the rig's
        (:func:`~skelanim.ops.normalize.turned_up`: a Z-up copy of a Y-up capture gets the original's features), and
        scaled to the rig's size where they are in other units or of another size
        (:meth:`~skelanim.data.rig.Rig.size_factor`), as a dataset on its rig; :class:`SkeletonError` naming the
        first motion on a skeleton other than the rig's (its file where the motion has one, else its position), as
        the predictors and the generator raise (it had been a bare ``ValueError``)."""
        motions = [self.rig.adopt(m) for m in as_motions(motions)]  # its joints in another order, or without the dummy root
        for i, m in enumerate(motions):
            if not self.rig.skeleton.same_rig(m.skeleton):
                path = m.metadata.get("path")
                raise SkeletonError(skeleton_mismatch("recogniser", self.rig.skeleton, m.skeleton), path=path,
                                    where=None if path else f"motion {i}")  # fmt: skip
        motions = [turned_up(m, self.rig.up)[0] for m in motions]  # the features are read along the rig's up axis
        motions = [m if (f := self.rig.size_factor(m.skeleton)) == 1.0 else scale(m, f) for m in motions]  # rig's size
        clips = [clip_from_motion(m, fps=self.fps, name=f"motion{i}", path=str(m.metadata.get("path", "")),
                                  labels=known_labels(m.metadata["path"]) if m.metadata.get("path") else None,
                                  up=self.rig.up)
                 for i, m in enumerate(motions)]  # fmt: skip
        return MotionDataset(clips=clips, rig=self.rig, fps=self.fps)

    def embed_motions(self, motions: Sequence[Motion], *, stride: int = 8) -> tuple[Tensor, list[str]]:
        """Window features ``(W, D)`` of motions and each motion's voted content (for
        :func:`skelanim.metrics.compare.compare_sets`); :class:`SkeletonError` for a skeleton other than the rig's."""
        ds = self.motions_dataset(motions)
        out = self.embed_dataset(ds, stride=stride)
        _, probs = self.file_probabilities(out, ds)
        return out["features"], [self.contents.names[int(p)] for p in probs.argmax(-1)]

    def recognize_motions(self, motions: Sequence[Motion], *, stride: int = 8, progress: bool = False) -> dict[str, Tensor]:
        """Content probabilities of motions, per motion and per window (with the model's mirror and speed votes).

        A motion shorter than :attr:`window` is one window, padded by holding its last pose. A motion's
        probabilities are the mean of its windows' (the vote of :func:`evaluate_recognizer`).

        Returns
        -------
        dict of str to Tensor
            ``probs`` ``(N, C)`` per motion; ``windows`` ``(W, 2)`` (motion index, first frame at the model's
            frame rate, stride ``stride``) and ``window_probs`` ``(W, C)``. Class names: :attr:`contents`.
        """
        ds = self.motions_dataset(motions)
        out = self.embed_dataset(ds, stride=stride, progress=progress)
        _, means = self.file_probabilities(out, ds)  # every motion has a window
        return {"probs": means, "windows": out["windows"], "window_probs": out["probs"]}


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
    probs = out["probs"]
    truth = torch.tensor([model.contents.names.index(n) if n in model.contents else -1 for n in names])
    pred_w = probs.argmax(-1)
    ids, file_probs = model.file_probabilities(out, ds)
    pred_f = file_probs.argmax(-1)
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
