"""A dataset over folders of motion files: clips, labels, splits, windows and normalisation statistics.

>>> ds = MotionDataset(["../shared/data/mocap/bandai_namco_1"], fps=25)        # doctest: +SKIP
>>> parts = ds.split_by_style(test=BANDAI_TEST_STYLES, val=BANDAI_VAL_STYLES)  # doctest: +SKIP
>>> win = parts["train"].windows(48, stride=8)                                  # doctest: +SKIP
>>> batch = parts["train"].gather(win[:32], 48)                                 # doctest: +SKIP

Windows are ``(clip, start)`` pairs; :meth:`MotionDataset.gather` reads frames ``start .. start + T - 1``
of all of them at once from arrays concatenated over clips, clamping to each clip's last frame (so a clip
shorter than the window is padded by holding its last pose, when ``pad_short`` allowed it).
"""

from __future__ import annotations

import fnmatch
import glob
import math
import numbers
import os
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NoReturn

import torch
from torch import Tensor
from tqdm import tqdm

from skelanim.core.rotations import quat_multiply, quat_to_matrix
from skelanim.data.cache import cache_outside
from skelanim.data.clips import Clip, load_clip
from skelanim.data.labels import LabelError, Vocabulary, parse_labels
from skelanim.data.rig import Rig, require_rig, require_up
from skelanim.errors import SkeletonError

__all__ = ["BANDAI_TEST_STYLES", "BANDAI_VAL_STYLES", "STYLE_SYNONYMS", "MotionDataset", "expand_paths", "feature_stats", "with_synonyms"]

#: Styles held out for testing on the Bandai data (two of dataset 1, one of dataset 2).
BANDAI_TEST_STYLES = ("angry", "childish", "elderly")
#: Styles held out for validation (model selection) on the Bandai data.
BANDAI_VAL_STYLES = ("proud", "youthful")
#: Style names that are one style spelt two ways (Bandai-Namco's dataset 1 says ``masculinity``, dataset 2
#: ``masculine``): :meth:`MotionDataset.split_by_style` holds them out together.
STYLE_SYNONYMS: tuple[frozenset[str], ...] = (frozenset({"masculine", "masculinity"}),)


def with_synonyms(styles: Iterable[str]) -> set[str]:
    """``styles`` with every other spelling :data:`STYLE_SYNONYMS` knows for them."""
    names = set(styles)
    return names.union(*(group for group in STYLE_SYNONYMS if group & names))
#: The label keys the models read (a dataset's clips may lack any of them: ``""``).
LABEL_KEYS = ("content", "style")
#: What a folder given to the training and evaluation commands is read for (clips of one skeleton: BVH).
MOTION_SUFFIXES = (".bvh",)
#: The message where a folder held none of them.
NO_MOTION_FILES = "no .bvh files (a folder is read for BVH clips; name a file of another format itself)"


def expand_paths(paths: Sequence[str | os.PathLike], suffixes: Sequence[str] = MOTION_SUFFIXES) -> list[Path]:
    """Files named by ``paths``: files as given, folders as their motion files, glob patterns expanded.

    Returns
    -------
    list of Path
        Sorted by name, without duplicates: one file named twice (a folder and a pattern, a relative and an
        absolute path, a link to it) is kept once, under its first name in that order, so that no split can put
        it on both sides. Raises ``FileNotFoundError`` for an entry that matches nothing. A folder is read for files
        of ``suffixes`` (by default :data:`MOTION_SUFFIXES`, BVH alone); where ``.txt`` is among them, a ``.txt``
        file in a folder is a motion (a DeepMimic clip) only where it holds JSON: a notes or label file beside the clips
        (Bandai-Namco's ``content_label.txt``) is left out; named or matched by a pattern it is taken as given. Hidden
        files (``.name``: a killed write's temporary file) are left out of a folder, as a shell's ``DIR/*.bvh`` leaves them.
    """
    out: set[Path] = set()
    for entry in paths:
        p = Path(entry).expanduser()
        if p.is_dir():
            out.update(f for f in p.iterdir() if not f.name.startswith(".") and f.suffix.lower() in suffixes
                       and (f.suffix.lower() != ".txt" or _holds_json(f)))  # fmt: skip
        elif p.is_file():
            out.add(p)
        else:
            hits = [Path(h) for h in glob.glob(str(p))]
            if not hits:
                raise FileNotFoundError(2, "no such file, folder or matching pattern", str(entry))
            out.update(h for h in hits if h.is_file())
    unique: dict[Path, Path] = {}
    for f in sorted(out, key=lambda f: (f.name, str(f))):
        unique.setdefault(f.resolve(), f)
    return list(unique.values())


def _holds_json(path: Path) -> bool:
    """Whether a file's first non-blank character opens a JSON object (a DeepMimic clip)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(256).lstrip()
    except OSError:
        return True  # unreadable: kept, so that loading it says why
    return head.startswith((b"{", b"\xef\xbb\xbf{"))


def feature_stats(x: Tensor, dims: Sequence[int], min_std: float = 1e-3) -> tuple[Tensor, Tensor]:
    """Mean and standard deviation over ``dims`` (the std floored at ``min_std``).

    Parameters
    ----------
    x : Tensor
        Any shape.
    dims : sequence of int
        Dimensions reduced (kept as size 1).
    min_std : float
        Floor of the std, so constant channels do not blow up.

    Returns
    -------
    tuple of Tensor
        ``mean`` and ``std``, shaped like ``x`` with ``dims`` of size 1.
    """
    mean = x.mean(dim=tuple(dims), keepdim=True)
    samples = math.prod(x.shape[d] for d in dims)
    # one sample has no spread (torch's std is NaN there, with a warning): the floor
    std = x.std(dim=tuple(dims), keepdim=True) if samples > 1 else torch.zeros_like(mean)
    std = std.clamp_min(min_std)
    return mean, std


class MotionDataset:
    """Clips of motion files that share one skeleton topology.

    Parameters
    ----------
    files : path or sequence of path
        Files, folders or glob patterns (one, or several).
    fps : float
        Frame rate every clip is resampled to.
    cache : bool or path
        ``True`` caches parsed clips in :func:`~skelanim.data.cache.cache_dir`, a path caches there,
        ``False`` disables the cache.
    rig : Rig, optional
        The learning skeleton (a model's); default measured from these clips (:meth:`measure_rig`). Given, every
        clip must be on its skeleton (the same rig), of its size within a factor of 2 and along its up axis, else a
        :class:`SkeletonError` names the first file that is not (a model would read it joint for joint as its own).
    label_parser : callable, optional
        ``parse(path) -> dict``; default :func:`~skelanim.data.labels.parse_labels`; ``None`` for no labels.
    progress : bool
        Show a progress bar while loading.
    clips : list of Clip, optional
        Use these instead of loading ``files`` (subsets share clips).
    rig_owner : str
        Whose rig it is, for those errors (``"the predictor"``).
    """

    def __init__(self, files: Sequence[str | os.PathLike] | str | os.PathLike = (), *, fps: float = 25.0, cache: bool | str | os.PathLike = True,
                 rig: Rig | None = None, label_parser: Callable[[str | os.PathLike], dict[str, str]] | None = parse_labels,
                 progress: bool = False, clips: list[Clip] | None = None, rig_owner: str = "the rig") -> None:  # fmt: skip
        self.fps = float(fps)
        if isinstance(files, (str, os.PathLike)):  # one folder, file or pattern (a Path had been a TypeError)
            files = [files]
        if clips is None:
            paths = expand_paths(files)
            where = None
            if cache:
                where = cache_outside(paths, None if cache is True else cache)
            bar = tqdm(paths, desc="loading clips", disable=not progress, leave=False, dynamic_ncols=True)
            try:
                clips = [load_clip(p, fps=self.fps, cache=where, label_parser=label_parser) for p in bar]
            except LabelError as err:
                if label_parser is not parse_labels:
                    raise
                raise LabelError(f"{err.message} (the default reads Bandai-Namco names; label_parser=None reads files "
                                 "of any name, unlabelled, or skelanim.data.labels.label_parser names a pattern)",
                                 path=err.path) from None  # fmt: skip
        self.clips: list[Clip] = list(clips)
        if not self.clips:
            raise FileNotFoundError(2, NO_MOTION_FILES, ", ".join(str(f) for f in files) or "(none given)")
        first = self.clips[0]
        for clip in self.clips[1:]:
            if (difference := first.skeleton.rig_difference(clip.skeleton)) is not None:
                raise SkeletonError(f"skeleton differs from {first.path} ({first.skeleton.num_joints} joints): "
                                    f"{difference.removeprefix('its ')}", path=clip.path)
        if rig is not None:  # a model's: its clips must be on its skeleton, at its size, along its up axis
            require_up(self.clips, rig.up)
            require_rig(self.clips, rig.skeleton, rig_owner)
        self.rig = rig if rig is not None else self.measure_rig()
        self._rig_given = rig is not None  # a measured rig is measured again on a split's training part
        self._frames: dict[str, Tensor] | None = None

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, index: object) -> NoReturn:
        """Not a sequence of samples: a torch ``DataLoader`` takes :class:`~skelanim.data.windows.WindowDataset`."""
        raise TypeError("a MotionDataset holds clips, not samples: index its clips (ds.clips[i]), or give a torch "
                        "DataLoader skelanim.data.WindowDataset(ds, length, stride), one window per item")

    @property
    def names(self) -> list[str]:
        """Clip names (file stems)."""
        return [c.name for c in self.clips]

    @property
    def lengths(self) -> Tensor:
        """``(N,)`` frames per clip."""
        return torch.tensor([c.num_frames for c in self.clips], dtype=torch.long)

    def labels(self, key: str) -> list[str]:
        """Label ``key`` (``"content"``, ``"style"``) of every clip (``""`` where a clip has none).

        Raises
        ------
        LabelError
            Where no clip has ``key`` but clips have other labels and ``key`` is none of :data:`LABEL_KEYS` (a
            misspelt key; a content-only pattern gives every clip the style ``""``, which trains a model without
            styles; clips without labels, read with ``label_parser=None``, give ``""`` for any key).
        """
        if key not in LABEL_KEYS and not any(key in c.labels for c in self.clips) and (
                known := sorted({k for c in self.clips for k in c.labels})):  # fmt: skip
            raise LabelError(f"no clip has the label {key!r}; labels here: {', '.join(known)}")
        return [c.labels.get(key, "") for c in self.clips]

    def vocabulary(self, key: str) -> Vocabulary:
        """The sorted distinct values of label ``key``."""
        return Vocabulary.build(key, self.labels(key))

    def measure_rig(self) -> Rig:
        """The :class:`Rig` of these clips: body root 1 only when every clip's joint 0 is a dummy; median
        height; median over clips of the lowest joint height as the floor; their up axis, which they must share
        (:class:`SkeletonError` naming the first clip along another: its windows would be read along the wrong
        axis, silently; the clips are read as their files lie, see :func:`skelanim.ops.normalize.turned_up`)."""
        first = self.clips[0]
        root = min(c.root for c in self.clips)
        up = first.up
        for clip in self.clips[1:]:
            if clip.up != up:
                raise SkeletonError(f"its up axis is {'XYZ'[clip.up]}, {first.path or first.name}'s {'XYZ'[up]}: the clips "
                                    "of a dataset must stand along one axis; turn them first (skelanim.ops.up_to_y)",
                                    path=clip.path or clip.name)  # fmt: skip
        heights = torch.tensor([c.height for c in self.clips], dtype=torch.float64)
        floors = torch.stack([c.positions[:, root:, up].min() for c in self.clips]).double()
        feet = [f - root for f in first.feet]
        # quantile, not torch.median: the mean of the two middle values of an even count, not the lower one
        return Rig(first.skeleton, root, up, float(heights.quantile(0.5)), float(floors.quantile(0.5)), feet)

    def subset(self, indices: Iterable[int]) -> MotionDataset:
        """A dataset of the clips ``indices`` (same rig, fps and loaded clips)."""
        part = MotionDataset(fps=self.fps, rig=self.rig, clips=[self.clips[i] for i in indices])
        part._rig_given = self._rig_given  # a subset's split measures its own training part, unless a model's rig is kept
        return part

    def _parts(self, parts: dict[str, list[int]]) -> dict[str, MotionDataset | None]:
        """The datasets of a split, ``None`` where a part is empty. They share the training part's rig, measured on
        it alone (:meth:`measure_rig`): the held-out clips' heights and floors had shaped the rig a model is
        trained with and stores. A rig given at construction (a model's) is kept."""
        rig = self.rig
        if parts["train"] and not self._rig_given:
            rig = MotionDataset(fps=self.fps, clips=[self.clips[i] for i in parts["train"]]).rig
        return {k: (MotionDataset(fps=self.fps, rig=rig, clips=[self.clips[i] for i in v]) if v else None)
                for k, v in parts.items()}  # fmt: skip

    # ------------------------------------------------------------------ splits
    def select(self, patterns: Sequence[str], *, invert: bool = False) -> MotionDataset:
        """Clips whose file name matches any ``fnmatch`` pattern (or none, with ``invert``)."""
        hits = [i for i, c in enumerate(self.clips)
                if any(fnmatch.fnmatch(Path(c.path).name, p) or fnmatch.fnmatch(c.name, p) for p in patterns) != invert]  # fmt: skip
        return self.subset(hits)

    def split_by_style(self, test: Sequence[str], val: Sequence[str] = ()) -> dict[str, MotionDataset | None]:
        """Train on some styles, validate and test on others.

        Returns
        -------
        dict
            ``{"train", "val", "test"}`` datasets (``None`` where no clip falls in a part).

        A style no clip has is left out silently (the default styles on a part of the data); the command line's
        ``--split style:S1,...`` refuses it (:func:`skelanim.learn.common.split_dataset`). A style of
        :data:`STYLE_SYNONYMS` takes its other spellings with it (testing on ``masculine`` had left dataset 1's
        ``masculinity`` files in training).
        """
        if isinstance(test, str) or isinstance(val, str):  # a bare string had matched every style it contains
            raise TypeError("test and val are sequences of style names (a list), not one string")
        tested, validated = with_synonyms(test), with_synonyms(val)
        styles = self.labels("style")
        parts = {"test": [i for i, s in enumerate(styles) if s in tested],
                 "val": [i for i, s in enumerate(styles) if s in validated and s not in tested]}  # fmt: skip
        taken = set(parts["test"]) | set(parts["val"])
        parts["train"] = [i for i in range(len(self)) if i not in taken]
        return self._parts(parts)

    def split_by_file(self, *, test_fraction: float = 0.2, val_fraction: float = 0.1, seed: int = 0,
                      stratify: str | None = "content") -> dict[str, MotionDataset | None]:  # fmt: skip
        """Random split by file, stratified by a label so every class keeps files in training.

        Within each class (files sorted by name, shuffled with ``seed``) ``round(n * test_fraction)`` files
        test and ``round(n * val_fraction)`` validate, but a class keeps at least one training file.

        Returns
        -------
        dict
            ``{"train", "val", "test"}`` datasets (``None`` where empty).
        """
        groups: dict[str, list[int]] = {}
        keys = self.labels(stratify) if stratify else [""] * len(self)
        for i, k in enumerate(keys):
            groups.setdefault(k, []).append(i)
        rng = random.Random(seed)
        parts: dict[str, list[int]] = {"train": [], "val": [], "test": []}
        for k in sorted(groups):
            members = sorted(groups[k], key=lambda i: self.clips[i].name)
            rng.shuffle(members)
            n = len(members)
            n_test = min(round(n * test_fraction), n - 1)
            n_val = min(round(n * val_fraction), n - 1 - n_test)
            parts["test"] += members[:n_test]
            parts["val"] += members[n_test : n_test + n_val]
            parts["train"] += members[n_test + n_val :]
        return self._parts({k: sorted(v) for k, v in parts.items()})

    # ------------------------------------------------------------------ frames and windows
    def frames(self) -> dict[str, Tensor]:
        """Per-frame arrays of all clips, concatenated (computed once).

        Returns
        -------
        dict of str to Tensor
            ``rot`` ``(F, M, 3, 3)`` (body root in world, others local), ``pelvis`` ``(F, 3)``, ``positions``
            ``(F, M, 3)``, ``yaw`` ``(F,)``, ``contacts`` ``(F, K)`` float, ``offset`` ``(N,)`` first frame of
            each clip and ``length`` ``(N,)``.
        """
        if self._frames is None:
            r = self.rig.root
            rots, pelvis, positions, yaws, contacts = [], [], [], [], []
            for c in self.clips:
                q = c.quats.double()
                root_world = q[:, 0]
                for j in range(1, r + 1):
                    root_world = quat_multiply(root_world, q[:, j])
                q_model = torch.cat([root_world[:, None], q[:, r + 1 :]], dim=1)
                rots.append(quat_to_matrix(q_model).float())
                pelvis.append(c.positions[:, r])
                positions.append(c.positions[:, r:])
                yaws.append(c.yaw)
                contacts.append(c.contacts.float())
            length = self.lengths
            offset = torch.cumsum(torch.cat([torch.zeros(1, dtype=torch.long), length[:-1]]), 0)
            self._frames = {"rot": torch.cat(rots), "pelvis": torch.cat(pelvis), "positions": torch.cat(positions),
                            "yaw": torch.cat(yaws), "contacts": torch.cat(contacts), "offset": offset, "length": length}  # fmt: skip
        return self._frames

    def windows(
        self, length: int, stride: int, *, pad_short: bool = True, clips: Sequence[int] | None = None
    ) -> Tensor:
        """Window starts over the clips.

        Parameters
        ----------
        length : int
            Frames per window ``T``.
        stride : int
            Frames between window starts.
        pad_short : bool
            Give a clip shorter than ``T`` one window (padded by :meth:`gather`); otherwise skip it.
        clips : sequence of int, optional
            Only these clips.

        Returns
        -------
        Tensor
            ``(W, 2)`` long: clip index and start frame. The last window of a clip is aligned to its end, so
            no frame is left out.
        """
        for name, value in (("length", length), ("stride", stride)):  # 0 or less had been a bare range() error,
            if isinstance(value, bool) or not (isinstance(value, numbers.Integral) and value >= 1):  # or windows past the clip's end
                raise ValueError(f"window {name} must be a whole number of frames, at least 1, got {value!r}")
        out: list[tuple[int, int]] = []
        for i in clips if clips is not None else range(len(self)):
            n = self.clips[i].num_frames
            if n < length:
                if pad_short:
                    out.append((i, 0))
                continue
            starts = list(range(0, n - length + 1, stride))
            if starts[-1] != n - length:
                starts.append(n - length)
            out.extend((i, s) for s in starts)
        return torch.tensor(out, dtype=torch.long).reshape(-1, 2)

    def gather(
        self, windows: Tensor, length: int, keys: Sequence[str] = ("rot", "pelvis", "positions", "yaw", "contacts")
    ) -> dict[str, Tensor]:
        """Frames of ``windows``.

        Parameters
        ----------
        windows : Tensor
            ``(B, 2)`` from :meth:`windows`.
        length : int
            ``T``.
        keys : sequence of str
            Arrays of :meth:`frames` to read.

        Returns
        -------
        dict of str to Tensor
            Each ``(B, T, ...)``. A window read longer than it was placed (a playback-speed augmentation or vote)
            that would run past its clip's end is moved back to end there; only a clip shorter than ``T`` is
            read from its first frame with its last frame repeated.
        """
        fr = self.frames()
        clip = windows[:, 0]
        start = torch.minimum(windows[:, 1], (fr["length"][clip] - length).clamp_min(0))
        t = start[:, None] + torch.arange(length)[None, :]
        t = torch.minimum(t, fr["length"][clip][:, None] - 1)
        index = fr["offset"][clip][:, None] + t
        return {k: fr[k][index] for k in keys}
