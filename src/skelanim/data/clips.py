"""One motion file as the arrays models are built from, resampled, checked and cached.

:func:`load_clip` reads a file once (:func:`skelanim.load`), resamples it to the requested fps
(:func:`skelanim.ops.resample`), checks that every value is finite, and keeps per frame: local quaternions,
world joint positions (FK of the file itself), the heading (:func:`skelanim.ops.facing_directions`) and foot
contacts (:func:`skelanim.ops.foot_contacts`). The result is cached on disk (:mod:`skelanim.data.cache`).

A clip keeps its file's up axis. A model given motions (recognition, prediction) turns each onto its rig's up
first (:func:`skelanim.ops.normalize.turned_up`): a Z-up copy of a Y-up capture is the same motion to it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_normalize
from skelanim.core.skeleton import Skeleton
from skelanim.data.cache import cache_key, read_cached, write_cached
from skelanim.data.features import yaw_from_directions
from skelanim.data.labels import parse_labels
from skelanim.data.rig import body_root
from skelanim.errors import FormatError, SkelanimError

__all__ = ["Clip", "clip_from_motion", "load_clip"]


@dataclass
class Clip:
    """A motion file's frames at a fixed rate.

    Attributes
    ----------
    name : str
        File stem.
    path : str
        Source file.
    labels : dict of str to str
        Parsed from the name (empty when the name carries none).
    fps : float
        Frame rate of the arrays.
    skeleton : Skeleton
        The file's skeleton.
    quats : Tensor
        ``(F, J, 4)`` float32 local unit quaternions.
    positions : Tensor
        ``(F, J, 3)`` float32 world joint positions (the file's own FK).
    yaw : Tensor
        ``(F,)`` float32 heading angles (:func:`~skelanim.data.features.yaw_from_directions`).
    contacts : Tensor
        ``(F, K)`` bool foot contacts of ``feet``.
    feet : list of int
        ``K`` foot joints (full-skeleton indices).
    up : int
        Up axis.
    height : float
        :attr:`Motion.height`.
    root : int
        :func:`~skelanim.data.rig.body_root` of this file.
    """

    name: str
    path: str
    labels: dict[str, str]
    fps: float
    skeleton: Skeleton
    quats: Tensor
    positions: Tensor
    yaw: Tensor
    contacts: Tensor
    feet: list[int]
    up: int
    height: float
    root: int

    @property
    def num_frames(self) -> int:
        """Frames ``F``."""
        return int(self.quats.shape[0])

    def tensors(self) -> dict[str, Tensor]:
        """The arrays, for caching."""
        return {
            "quats": self.quats,
            "positions": self.positions,
            "yaw": self.yaw,
            "contacts": self.contacts.to(torch.uint8),
        }

    def meta(self) -> dict[str, Any]:
        """The scalars, for caching."""
        return {"name": self.name, "path": self.path, "labels": self.labels, "fps": self.fps,
                "skeleton": self.skeleton.to_dict(), "feet": self.feet, "up": self.up, "height": self.height,
                "root": self.root}  # fmt: skip

    @classmethod
    def from_cache(cls, tensors: dict[str, Tensor], meta: dict[str, Any]) -> Clip:
        """Inverse of :meth:`tensors` + :meth:`meta`."""
        return cls(meta["name"], meta["path"], dict(meta["labels"]), float(meta["fps"]), Skeleton.from_dict(meta["skeleton"]),
                   tensors["quats"], tensors["positions"], tensors["yaw"], tensors["contacts"].bool(),
                   [int(f) for f in meta["feet"]], int(meta["up"]), float(meta["height"]), int(meta["root"]))  # fmt: skip


def _check_finite(motion: Motion, path: str) -> None:
    for name, t in (("rotations", motion.rotations), ("root positions", motion.root_positions),
                    ("joint translations", motion.joint_translations)):  # fmt: skip
        if t is None:
            continue
        bad = ~torch.isfinite(t.reshape(t.shape[0], -1)).all(-1)
        if bool(bad.any()):
            frame = int(bad.nonzero()[0])
            raise FormatError(f"non-finite {name} (expected finite numbers)", path=path, where=f"frame {frame}")


def clip_from_motion(motion: Motion, *, fps: float, name: str = "motion", path: str = "",
                     labels: dict[str, str] | None = None, up: int | None = None) -> Clip:  # fmt: skip
    """Build a :class:`Clip` from a loaded motion.

    Parameters
    ----------
    motion : Motion
        The motion (not modified).
    fps : float
        Target frame rate; the motion is resampled unless it is already at it (to 1e-6 relative).
    name, path : str
        Identification.
    labels : dict, optional
        Labels of the clip.
    up : int, optional
        Its up axis where it is known (a motion turned onto a rig's, or retargeted onto it); by default
        :meth:`Motion.up_axis`'s guess, which reads a lying clip on a rig whose rest pose lies down (a crawl
        retargeted onto Bandai-Namco's) as up along its length.

    Returns
    -------
    Clip

    Raises
    ------
    FormatError
        On non-finite values, or a motion with fewer than 2 frames.
    """
    from skelanim.ops.contacts import find_feet, foot_contacts
    from skelanim.ops.normalize import facing_directions
    from skelanim.ops.resample import resample

    where = path or motion.metadata.get("path") or name  # errors name the file the motion was read from
    _check_finite(motion, where)
    if motion.num_frames < 2:
        raise FormatError(f"{motion.num_frames} frame(s); a clip needs at least 2", path=where)
    if abs(motion.fps - fps) > 1e-6 * fps:
        before, rate = motion.num_frames, motion.fps
        motion = resample(motion, fps)
        if motion.num_frames < 2:  # 2 or 3 frames at 120 fps had become a 1-frame clip at 25
            raise FormatError(f"{before} frames at {rate:g} fps are {motion.num_frames} at {fps:g} fps; a clip needs "
                              "at least 2", path=where)  # fmt: skip
    motion = motion.normalized_rotations()
    known = None if up is None else int(up)  # a known up is the rig's, pointing up: no sign to find
    up = motion.up_axis() if known is None else known
    height = motion.height_along(up)
    positions = motion.positions()
    # else the motion's own up direction, signed: an upside-down source (Y down) had been given no foot contacts
    yaw = yaw_from_directions(facing_directions(motion, up_axis=known), up)
    feet = find_feet(motion.skeleton)
    contacts = foot_contacts(motion, joints=feet, height=height, up_axis=known)
    assert isinstance(contacts, torch.Tensor)  # a motion's contacts are a tensor
    return Clip(name, path, dict(labels or {}), float(fps), motion.skeleton, quat_normalize(motion.rotations).float(),
                positions.float(), yaw.float(), contacts.bool(), feet, up, float(height), body_root(motion))  # fmt: skip


def load_clip(path: str | os.PathLike, *, fps: float, cache: Path | None = None,
              label_parser: Callable[[str | os.PathLike], dict[str, str]] | None = parse_labels) -> Clip:  # fmt: skip
    """Read a motion file as a :class:`Clip`, through the on-disk cache.

    Parameters
    ----------
    path : path
        Motion file (any format :func:`skelanim.load` reads).
    fps : float
        Target frame rate.
    cache : Path, optional
        Cache directory (:func:`~skelanim.data.cache.cache_dir`); ``None`` disables caching.
    label_parser : callable, optional
        ``label_parser(path) -> dict``; ``None`` for no labels. A file whose name does not parse raises.

    Returns
    -------
    Clip
    """
    import skelanim

    path = Path(path)
    labels = label_parser(path) if label_parser is not None else {}
    key = cache_key(path, fps=float(fps)) if cache is not None else None
    if cache is not None and key is not None:
        cached = _from_cache(read_cached(cache, key))
        if cached is not None:
            cached.name, cached.path, cached.labels = path.stem, str(path), labels  # this file's, not the first reader's
            return cached
    try:
        motion = skelanim.load(path)
    except SkelanimError:
        raise
    except (ValueError, IndexError) as err:
        raise FormatError(f"could not read motion: {err}", path=path) from None
    clip = clip_from_motion(motion, fps=fps, name=path.stem, path=str(path), labels=labels)
    if cache is not None and key is not None:
        try:
            write_cached(cache, key, clip.tensors(), clip.meta())
        except OSError as err:  # a read-only cache: the clip is read without it (it had stopped the whole load)
            warnings.warn(f"the clip cache {cache} cannot be written ({err.strerror or err}): clips are read without "
                          "it; SKELANIM_CACHE names another folder", stacklevel=2)  # fmt: skip
    return clip


def _from_cache(hit: tuple[dict[str, Tensor], dict[str, Any]] | None) -> Clip | None:
    """The clip of a cache entry, or ``None`` where the entry cannot be one (it is then parsed anew and rewritten):
    a missing tensor or key, arrays of different frame counts, non-finite values (a bare KeyError, or misaligned
    frames, had come out of such an entry)."""
    if hit is None:
        return None
    tensors, _ = hit
    try:
        clip = Clip.from_cache(*hit)
    except (KeyError, TypeError, ValueError, SkelanimError):
        return None
    frames = {int(t.shape[0]) for t in tensors.values() if t.ndim}
    if len(frames) != 1 or not all(bool(torch.isfinite(t).all()) for t in tensors.values() if t.is_floating_point()):
        return None
    return clip
