"""Joint positions on disk: ``.npz``, ``.npy`` and ``.csv``, read and written without pickle.

The in-memory form is :class:`JointPositions`: joint names, world positions as a **float64 NumPy**
array ``(F, J, 3)`` (an interchange container: NumPy is what other tools read; use
``torch.from_numpy`` to compute on it), the frame rate if known and the parent indices if known.

Formats
-------
``.npz``
    Keys ``positions`` ``(F, J, 3)`` float, ``joints`` ``(J,)`` unicode strings
    (``np.array(names, dtype=str)``), and optionally ``fps`` (scalar) and ``parents`` ``(J,)`` int
    (``-1`` for a root). Loaded with ``allow_pickle=False``. Only ``positions`` is required; missing
    names become ``joint_0, joint_1, ...``.
``.npy``
    The bare ``(F, J, 3)`` array; names, fps and parents are not stored (names load as
    ``joint_0, ...``, fps and parents as ``None``). Use ``.npz`` to keep them.
``.csv``
    One row per frame after a header ``frame,time,<joint>_x,<joint>_y,<joint>_z,...``. The ``time``
    column (seconds, ``frame / fps``) is written when fps is known and optional on reading. Read back,
    the times must step uniformly (each step within the rounding of the written times, see
    :func:`~skelanim.io.positions_csv._time_rounding`, of the median step), and fps is the rate the mean
    step stands for: a whole rate ``n`` (or an NTSC rate ``n * 1000 / 1001``) when ``1 / n`` is the only one
    within that rounding (the rule of :func:`~skelanim.io.common.nominal_fps`), so 24, 30, 60, 120 and
    30000/1001 fps come back exactly, else ``1 / step``. A one-frame file has no step: its fps is not stored (the format has
    no place for it) and reads back as ``None``. The ``frame`` column is optional on reading too; when
    present it must count up by 1 from its first value (a skipped, repeated or earlier frame number is an
    error at its line). Values are written with ``repr`` (shortest exact form), so float64 round trips are
    exact. Parents are not stored. A joint name the header would not give back (empty, with leading whitespace,
    which a header cell loses) is refused when writing. Reading and writing live in
    :mod:`skelanim.io.positions_csv` (numpy's reader for well-formed files, a row-by-row one that names the first
    bad cell).

Saving accepts a :class:`~skelanim.core.motion.Motion` (its forward-kinematics positions, optionally
with End Sites) or a :class:`JointPositions`, refuses non-finite positions (which the readers reject) and
writes atomically.

Errors
------
Bad files raise :class:`skelanim.errors.FormatError` with the file and the place: the CSV line (1-based)
and column, the array key and its shape, or the frame and joint of a non-finite value.
"""

from __future__ import annotations

import math
import os
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from skelanim.core._tensor import ArrayLike
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.core.units import motion_unit
from skelanim.errors import FormatError, ShapeError, UnsupportedFormatError
from skelanim.io.atomic import atomic_open
from skelanim.io.common import require_finite_positions, require_rotations
from skelanim.io.positions_csv import read_csv, write_csv

__all__ = ["SUFFIXES", "JointPositions", "load", "save"]

#: File suffixes this module reads and writes.
SUFFIXES: tuple[str, ...] = (".npz", ".npy", ".csv")
_AXES = ("x", "y", "z")


@dataclass
class JointPositions:
    """World positions of named joints over time.

    Attributes
    ----------
    names:
        ``J`` joint names (unique).
    positions:
        ``(F, J, 3)`` float64 NumPy array of world positions, in the source's units.
    fps:
        Frames per second, or ``None`` when unknown (``.npy`` files, CSV without a time column).
    parents:
        ``(J,)`` int64 parent indices (``-1`` for a root), or ``None`` when unknown.
    metadata:
        Free-form facts (e.g. ``{"source_format": "deepmimic"}`` from :meth:`from_motion`).

    Raises
    ------
    ShapeError
        On construction, when the shapes or names are inconsistent.
    """

    names: list[str]
    positions: np.ndarray
    fps: float | None = None
    parents: np.ndarray | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.names = [str(n) for n in self.names]
        positions = self.positions
        if hasattr(positions, "detach"):  # a torch tensor
            positions = positions.detach().cpu().numpy()
        self.positions = np.asarray(positions, dtype=np.float64)
        if self.positions.ndim != 3 or self.positions.shape[2] != 3:
            raise ShapeError(f"positions must be (F, J, 3), got {self.positions.shape}")
        if self.positions.shape[1] != len(self.names):
            raise ShapeError(f"{len(self.names)} names for {self.positions.shape[1]} joints")
        if len(set(self.names)) != len(self.names):
            dupes = sorted({n for n in self.names if self.names.count(n) > 1})
            raise ShapeError(f"duplicate joint names: {', '.join(dupes)}")
        if self.fps is not None:
            self.fps = float(self.fps)
            if not (math.isfinite(self.fps) and self.fps > 0):
                raise ShapeError(f"fps must be a positive number or None, got {self.fps}")
        if self.parents is not None:
            self.parents = np.asarray(self.parents, dtype=np.int64).reshape(-1)
            j = len(self.names)
            if (
                self.parents.shape != (j,)
                or np.any(self.parents < -1)
                or np.any(self.parents >= j)
                or np.any(self.parents == np.arange(j))
            ):
                raise ShapeError(
                    f"parents must be {j} indices in [-1, {j}), none its own parent; got {self.parents.tolist()}"
                )

    @property
    def num_frames(self) -> int:
        """Number of frames ``F``."""
        return int(self.positions.shape[0])

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return int(self.positions.shape[1])

    def __len__(self) -> int:
        return self.num_frames

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The ``(F, J, 3)`` positions, so that functions taking a positions array (metrics, smoothing) take this
        object too (``np.asarray(data)``)."""
        array = self.positions if dtype is None else self.positions.astype(dtype, copy=False)
        return array.copy() if copy else array

    def skeleton(self) -> Skeleton | None:
        """A skeleton of these joints (names, parents, frame 0's bone vectors as offsets) where the parents are known,
        for what finds joints by name and tree (:func:`skelanim.ops.find_feet`); ``None`` without parents."""
        if self.parents is None:
            return None
        parents = np.asarray(self.parents, dtype=np.int64)
        first = self.positions[0] if self.num_frames else np.zeros((self.num_joints, 3))
        offsets = np.stack([first[j] - (first[p] if p >= 0 else 0.0) for j, p in enumerate(parents)])
        return Skeleton(list(self.names), parents, torch.from_numpy(offsets))

    def index(self, name: str) -> int:
        """Index of the joint called ``name`` (``KeyError`` listing the names if unknown)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"unknown joint {name!r} (joints: {', '.join(self.names)})") from None

    @classmethod
    def from_motion(cls, motion: Motion, *args: bool, end_sites: bool = False) -> JointPositions:
        """Forward-kinematics positions of ``motion``.

        Parameters
        ----------
        motion:
            The motion.
        end_sites:
            Keyword only: append the skeleton's End Sites (named ``<joint>_end``, parent = their joint). Given
            positionally (``from_motion(motion, True)``, deprecated) it still works, with a ``DeprecationWarning``.

        Returns
        -------
        JointPositions
            ``positions`` ``(F, J, 3)`` or ``(F, J + E, 3)``; ``fps`` and ``parents`` from the motion;
            ``metadata["units"]`` the length unit every exporter reads it in (:func:`~skelanim.core.units.motion_unit`:
            the file's, else guessed from the body's :attr:`~skelanim.core.motion.Motion.stature`), which ``.npz`` files store.
        """
        if args:  # the old positional form, from_motion(motion, True)
            if len(args) > 1 or end_sites:
                raise TypeError(f"JointPositions.from_motion() takes the motion and the keyword end_sites=, got "
                                f"{1 + len(args)} positional arguments{' and end_sites=' if end_sites else ''}")  # fmt: skip
            warnings.warn("JointPositions.from_motion(motion, end_sites): pass end_sites= as a keyword; the positional "
                          "form is deprecated", DeprecationWarning, stacklevel=2)  # fmt: skip
            end_sites = bool(args[0])
        positions = motion.positions(end_sites=end_sites).detach().cpu().numpy().astype(np.float64, copy=False)
        names = list(motion.skeleton.names)
        parents = [int(p) for p in motion.skeleton.parents]
        if end_sites and motion.skeleton.end_sites:
            names += motion.end_site_names()
            parents += sorted(motion.skeleton.end_sites)
        metadata = {"source_format": motion.metadata["format"]} if "format" in motion.metadata else {}
        metadata["units"] = motion_unit(motion.metadata.get("units"), motion.stature)
        return cls(names, positions, float(motion.fps), np.array(parents, dtype=np.int64), metadata)


# ---------------------------------------------------------------------------------------- helpers


def _suffix(path: str | os.PathLike) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise UnsupportedFormatError(
            f"unknown suffix {suffix or '(none)'!r} for joint positions; expected one of {', '.join(SUFFIXES)}",
            path=path,
        )
    return suffix


def _default_names(count: int) -> list[str]:
    return [f"joint_{j}" for j in range(count)]


def _check_positions(array: Any, path: str | os.PathLike, key: str, names: list[str] | None = None) -> np.ndarray:
    """Validate an ``(F, J, 3)`` real array with finite values; return it as float64."""
    array = np.asarray(array)
    if array.dtype.kind not in "iuf":
        raise FormatError(f"{key}: expected a real number array, found dtype {array.dtype}", path=path)
    if array.ndim != 3 or array.shape[2] != 3:
        raise FormatError(f"{key}: expected shape (F, J, 3), found {array.shape}", path=path)
    if array.shape[0] == 0 or array.shape[1] == 0:  # as every motion reader: the CSV writer could not write it back
        what = "frame" if array.shape[0] == 0 else "joint"
        raise FormatError(f"{key}: expected at least one {what}, found shape {array.shape}", path=path)
    array = array.astype(np.float64, copy=False)
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        f, j, a = (int(v) for v in bad[0])
        joint = names[j] if names is not None and j < len(names) else f"joint {j}"
        raise FormatError(
            f"{key}: non-finite value {array[f, j, a]} ({_AXES[a]})", path=path, where=f"frame {f}, {joint}"
        )
    return array


def _as_joint_positions(obj: Motion | JointPositions, end_sites: bool, path: str | os.PathLike) -> JointPositions:
    if isinstance(obj, JointPositions):
        return obj
    if isinstance(obj, Motion):
        require_rotations(obj, path)  # FK of a zero quaternion is some pose, not the one meant
        return JointPositions.from_motion(obj, end_sites=end_sites)
    raise TypeError(f"expected a Motion or JointPositions, got {type(obj).__name__}")


# ---------------------------------------------------------------------------------------- npz / npy


def _numpy_reason(exc: Exception) -> str:
    """numpy's reason for refusing a file, without its advice to load pickled data (never done here)."""
    if "pickle" in str(exc):  # numpy's "... pickled (object) data ... allow_pickle=True", "Object arrays ..."
        return "it holds pickled Python objects, which are never loaded: save plain number and string arrays"
    return str(exc)


_NPZ_MAGIC, _NPY_MAGIC = b"PK\x03\x04", b"\x93NUMPY"


def _require_magic(path: str | os.PathLike, magic: bytes, what: str) -> None:
    """Refuse a file that does not start as ``what`` does (numpy would try to read it as a pickle); an .npz
    archive where an .npy array is expected, or the other way round, is named as such."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_NPY_MAGIC))
    except OSError:
        return  # np.load reports it
    if magic == _NPY_MAGIC and head.startswith(_NPZ_MAGIC):
        raise FormatError("expected a bare .npy array, found an .npz archive", path=path)
    if magic == _NPZ_MAGIC and head.startswith(_NPY_MAGIC):
        raise FormatError("expected an .npz archive, found a bare .npy array", path=path)
    if not head.startswith(magic):
        raise FormatError(f"not {what} (it does not start with {magic!r})", path=path)


def _load_npz(path: str | os.PathLike) -> JointPositions:
    _require_magic(path, _NPZ_MAGIC, "an .npz archive")
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise FormatError(f"not a readable .npz archive ({_numpy_reason(exc)})", path=path) from None
    with archive:
        try:
            keys = set(archive.files)
            if "positions" not in keys:
                raise FormatError(
                    f"missing array 'positions' (arrays found: {', '.join(sorted(keys)) or 'none'})", path=path
                )
            raw = {k: archive[k] for k in NPZ_KEYS if k in keys}
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:  # object arrays, truncated members
            raise FormatError(f"unreadable array in the archive ({_numpy_reason(exc)})", path=path) from None

    names: list[str] | None = None
    if "joints" in raw:
        joints = raw["joints"]
        if joints.dtype.kind not in "US" or joints.ndim != 1:
            raise FormatError(
                f"joints: expected a 1-D string array, found dtype {joints.dtype} shape {joints.shape}", path=path
            )
        names = []
        for k, j in enumerate(joints.tolist()):
            try:
                names.append(j.decode("utf-8") if isinstance(j, bytes) else str(j))
            except UnicodeDecodeError as exc:
                raise FormatError(
                    f"joints: name {k} is not UTF-8 (byte {exc.start}: 0x{j[exc.start]:02x}); "
                    "save names as a unicode array (np.array(names, dtype=str))",
                    path=path,
                ) from None
    positions = _check_positions(raw["positions"], path, "positions", names)
    if names is None:
        names = _default_names(positions.shape[1])
    elif len(names) != positions.shape[1]:
        raise FormatError(f"joints: {len(names)} names for {positions.shape[1]} joints in positions", path=path)
    if len(set(names)) != len(names):
        raise FormatError(f"joints: duplicate names {sorted({n for n in names if names.count(n) > 1})}", path=path)

    fps: float | None = None
    if "fps" in raw:
        value = raw["fps"]
        if (
            value.size != 1
            or value.dtype.kind not in "iuf"
            or not (math.isfinite(float(value.reshape(()))) and float(value.reshape(())) > 0)
        ):
            found = value.tolist() if value.size <= 4 else f"{value.size} values, shape {value.shape}"
            raise FormatError(f"fps: expected one positive number, found {found}", path=path)
        fps = float(value.reshape(()))
    parents: np.ndarray | None = None
    if "parents" in raw:
        value = raw["parents"]
        j = len(names)
        if value.dtype.kind not in "iu" or value.shape != (j,):
            raise FormatError(
                f"parents: expected ({j},) integers, found dtype {value.dtype} shape {value.shape}", path=path
            )
        wrong = np.flatnonzero((value < -1) | (value >= j) | (value == np.arange(j)))
        if wrong.size:
            k = int(wrong[0])
            raise FormatError(
                f"parents: joint {names[k]!r} has parent {int(value[k])}; "
                f"expected -1 or another joint's index below {j}",
                path=path,
            )
        parents = value.astype(np.int64)
    metadata: dict[str, Any] = {}
    if "units" in raw:  # the length unit (positions files of skelanim store it)
        value = raw["units"]
        if value.dtype.kind != "U" or value.size != 1:
            raise FormatError(f"units: expected one unit name, found dtype {value.dtype} shape {value.shape}", path=path)
        metadata["units"] = str(value.reshape(()))
    return JointPositions(names, positions, fps, parents, metadata)


def _load_npy(path: str | os.PathLike) -> JointPositions:
    _require_magic(path, _NPY_MAGIC, "an .npy array")
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise FormatError(f"not a readable .npy array ({_numpy_reason(exc)})", path=path) from None
    positions = _check_positions(array, path, "array")
    return JointPositions(_default_names(positions.shape[1]), positions)


#: The arrays a ``.npz`` of joint positions holds (read back by :func:`load`); others are the writer's extras.
NPZ_KEYS = ("positions", "joints", "fps", "parents", "units")


def _save_npz(data: JointPositions, path: str | os.PathLike, extra: Mapping[str, np.ndarray]) -> None:
    arrays: dict[str, np.ndarray] = {
        "positions": np.ascontiguousarray(data.positions, dtype=np.float64),
        "joints": np.array(data.names, dtype=str),
    }
    if data.fps is not None:
        arrays["fps"] = np.array(data.fps, dtype=np.float64)
    if data.parents is not None:
        arrays["parents"] = np.asarray(data.parents, dtype=np.int64)
    if isinstance(data.metadata.get("units"), str):
        arrays["units"] = np.array(data.metadata["units"], dtype=str)
    arrays.update(extra)
    with atomic_open(path, "wb") as handle:
        # numpy's stub lets ``**kwds`` fill ``allow_pickle: bool``; these keys are array names only
        np.savez(handle, **arrays)  # type: ignore[arg-type]


def _save_npy(data: JointPositions, path: str | os.PathLike) -> None:
    with atomic_open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(data.positions, dtype=np.float64), allow_pickle=False)


# ---------------------------------------------------------------------------------------- public


def load(path: str | os.PathLike) -> JointPositions:
    """Read joint positions from ``.npz``, ``.npy`` or ``.csv`` (never unpickling anything).

    Parameters
    ----------
    path:
        The file; the suffix picks the format (see the module docstring).

    Returns
    -------
    JointPositions
        ``positions`` ``(F, J, 3)`` float64.

    Raises
    ------
    UnsupportedFormatError
        Another suffix.
    FormatError
        Corrupt archive, object (pickled) arrays, wrong shape or dtype, non-finite values, a CSV with a
        bad header, a short row or a non-number (with its line).
    """
    suffix = _suffix(path)
    if suffix == ".npz":
        return _load_npz(path)
    if suffix == ".npy":
        return _load_npy(path)
    names, array, fps = read_csv(path)
    return JointPositions(names, array, fps)


def save(obj: Motion | JointPositions, path: str | os.PathLike, *, end_sites: bool = False,
         extra_arrays: Mapping[str, ArrayLike] | None = None) -> None:
    """Write joint positions to ``.npz``, ``.npy`` or ``.csv`` (atomically).

    Parameters
    ----------
    obj:
        A :class:`~skelanim.core.motion.Motion` (written as its forward-kinematics positions
        ``(F, J, 3)``, with its fps and parents) or a :class:`JointPositions`.
    path:
        Output file; the suffix picks the format.
    end_sites:
        For a Motion: append its End Sites as joints ``<joint>_end``. Ignored for JointPositions.
    extra_arrays:
        ``.npz`` only: more named arrays stored beside the positions (e.g. foot contacts); :func:`load` reads the
        positions and leaves them, ``numpy.load`` gives them all. Not one of :data:`NPZ_KEYS`.

    Raises
    ------
    UnsupportedFormatError
        Another suffix, or ``extra_arrays`` for a ``.npy``/``.csv`` file (which hold one array).
    TypeError
        ``obj`` is neither a Motion nor JointPositions.
    ShapeError
        A non-finite position (naming the frame, joint and axis), or no frames or joints; nothing is written, as
        the readers would refuse the file.
    SkeletonError
        ``.csv``: a joint name its header would not give back (empty, leading whitespace, a carriage return, not
        Unicode text), naming the joint; nothing is written. ``.npz`` keeps any name.
    """
    suffix = _suffix(path)
    extra = {str(k): np.asarray(v) for k, v in (extra_arrays or {}).items()}
    if extra and suffix != ".npz":
        raise UnsupportedFormatError(f"a {suffix} file holds the positions alone; write .npz to store "
                                     f"{', '.join(extra)} beside them", path=path)  # fmt: skip
    taken = sorted(set(extra) & set(NPZ_KEYS))
    if taken:
        raise ShapeError(f"extra arrays may not be named {', '.join(taken)} (the positions file's own)", path=path)
    pickled = [name for name, array in extra.items() if array.dtype.hasobject]
    if pickled:  # numpy would pickle them, and reading them back would need allow_pickle
        raise ShapeError(f"extra arrays {', '.join(pickled)} hold Python objects, not numbers or text", path=path)
    data = _as_joint_positions(obj, end_sites, path)
    if data.positions.shape[0] == 0 or data.positions.shape[1] == 0:
        raise ShapeError(f"positions of shape {tuple(data.positions.shape)} cannot be written: no frames or no joints "
                         "(the readers would refuse the file)", path=path)
    require_finite_positions(data.positions, data.names, path)
    if suffix == ".npz":
        _save_npz(data, path, extra)
    elif suffix == ".npy":
        _save_npy(data, path)
    else:
        write_csv(path, data.names, data.positions, data.fps)
