"""File formats, one module each, every module with ``load(path)`` and ``save(obj, path)``: a
:class:`~skelanim.core.motion.Motion` for the motion formats; joint positions
(:class:`~skelanim.io.positions.JointPositions`) for the position arrays.

:func:`load` and :func:`save` pick the module from the file suffix:

========================  ==========================================================
``.bvh``                  :mod:`skelanim.io.bvh` (BVH of any exporter)
``.txt`` / ``.json``      :mod:`skelanim.io.deepmimic` (DeepMimic humanoid clips)
``.glb`` / ``.gltf``      :mod:`skelanim.io.gltf` (skinned skeleton + animation for game engines)
``.fbx``                  :mod:`skelanim.io.fbx` (armature + animation, through Blender: it must be installed)
``.npy .npz .csv``        :mod:`skelanim.io.positions` (joint-position arrays: save a Motion (its FK positions)
                          or JointPositions; load with :func:`load_positions`)
========================  ==========================================================
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from skelanim.core.motion import Motion
from skelanim.errors import FormatError, UnsupportedFormatError

if TYPE_CHECKING:
    from skelanim.io.positions import JointPositions

# the format modules (skelanim.io.bvh, ...) are not listed: they are reached as attributes, imported on first use
__all__ = ["MOTION_FORMATS", "POSITION_FORMATS", "check_save", "load", "load_positions", "save"]

MOTION_FORMATS: dict[str, str] = {
    ".bvh": "skelanim.io.bvh",
    ".txt": "skelanim.io.deepmimic",
    ".json": "skelanim.io.deepmimic",
    ".glb": "skelanim.io.gltf",
    ".gltf": "skelanim.io.gltf",
    ".fbx": "skelanim.io.fbx",
}
POSITION_FORMATS: dict[str, str] = {
    ".npy": "skelanim.io.positions",
    ".npz": "skelanim.io.positions",
    ".csv": "skelanim.io.positions",
}


def _module_for(path: str | os.PathLike, table: dict[str, str], what: str) -> ModuleType:
    if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
        raise FormatError("not a regular file (a device, a pipe or a socket: it may never end)", path=path)
    suffix = Path(path).suffix.lower()
    if os.path.isdir(path) and suffix not in table:
        raise FormatError(f"is a folder; expected {what} ({', '.join(sorted(table))})", path=path)
    if suffix not in table:
        known = ", ".join(sorted(table))
        hint = ""
        if suffix in POSITION_FORMATS and table is MOTION_FORMATS:  # joint positions where a motion is read
            hint = (f" (a {suffix} file holds joint positions, no skeleton or rotations: skelanim ik solve turns them "
                    "into a motion, skelanim.load_positions reads them)")
        raise UnsupportedFormatError(f"unknown suffix {suffix or '(none)'!r} for {what}; expected one of {known}{hint}",
                                     path=path)  # fmt: skip
    return importlib.import_module(table[suffix])


def load(path: str | os.PathLike, **options) -> Motion:
    """Read a motion file; the format is chosen by suffix. Options go to the format's ``load``."""
    return _module_for(path, MOTION_FORMATS, "a motion file").load(path, **options)


def save(motion: Motion | JointPositions, path: str | os.PathLike, **options) -> None:
    """Write ``motion``; the format is chosen by suffix (``.npy/.npz/.csv`` write FK joint positions).
    The file is written atomically.

    A :class:`~skelanim.io.positions.JointPositions` (positions without a skeleton or rotations) can
    only be written as ``.npz``, ``.npy`` or ``.csv``; another suffix raises
    :class:`~skelanim.errors.UnsupportedFormatError` before anything is written.
    """
    if not isinstance(motion, Motion):
        suffix = Path(path).suffix.lower()
        if suffix not in POSITION_FORMATS:
            raise UnsupportedFormatError(
                f"joint positions (no skeleton or rotations) cannot be written as "
                f"{suffix or 'a file without a suffix'}; expected .npz, .npy or .csv",
                path=path,
            )
        module = _module_for(path, POSITION_FORMATS, "joint positions")
    else:
        module = _module_for(path, {**MOTION_FORMATS, **POSITION_FORMATS}, "a file to write")
    module.save(motion, path, **options)


def check_save(path: str | os.PathLike, motion: Motion | None = None) -> None:
    """Raise, before any work, what :func:`save` would raise for the format alone: an unknown suffix, or (given
    ``motion``, a motion on the skeleton that will be written) a format that cannot hold that skeleton, such as
    a DeepMimic clip of another skeleton. Writes nothing."""
    module = _module_for(path, {**MOTION_FORMATS, **POSITION_FORMATS}, "a file to write")
    check = getattr(module, "check_writable", None)
    if motion is not None and check is not None:
        check(motion, path)


def load_positions(path: str | os.PathLike, *, end_sites: bool = False, **options: Any) -> JointPositions:
    """Read joint positions (``.npy/.npz/.csv``, or any motion file through FK) as
    :class:`skelanim.io.positions.JointPositions`.

    ``end_sites``: for a motion file, append its End Sites (as :meth:`JointPositions.from_motion
    <skelanim.io.positions.JointPositions.from_motion>` and ``save(motion, "x.npz", end_sites=True)`` do); a
    positions file holds what was written, so ``end_sites=True`` is refused for it. Other ``options`` go to the
    format's ``load``.
    """
    from skelanim.io.positions import JointPositions

    suffix = Path(path).suffix.lower()
    if suffix in POSITION_FORMATS:
        if end_sites:
            raise UnsupportedFormatError(f"end_sites=True needs a motion file: a {suffix} file holds the points it "
                                         "was saved with (save(motion, path, end_sites=True) writes End Sites)",
                                         path=path)  # fmt: skip
        return _module_for(path, POSITION_FORMATS, "joint positions").load(path, **options)
    _module_for(path, {**MOTION_FORMATS, **POSITION_FORMATS}, "joint positions or a motion")  # names every suffix
    return JointPositions.from_motion(load(path, **options), end_sites=end_sites)

if not TYPE_CHECKING:  # modules imported on first use (skelanim.io.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
