"""Helpers shared by the format modules: the frame rate a written frame duration stands for, reading text
files as UTF-8 with a one-line error, refusing
non-finite values before anything is written, and warnings that point at the code that called
:func:`skelanim.load`/:func:`skelanim.save`, not at this package.

Every writer checks its input with :func:`require_finite_motion` (or :func:`require_finite_positions`)
before it opens the output, so a motion holding NaN or infinity raises
:class:`~skelanim.errors.ShapeError` naming the frame and joint, and no file is written.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import warnings
from collections.abc import Sequence
from types import FrameType
from typing import Any

import numpy as np
import torch

from skelanim.core.motion import Motion
from skelanim.errors import FormatError, ShapeError

__all__ = ["MAX_FRAME_TIME", "MIN_FRAME_TIME", "first_non_finite", "nominal_fps", "read_utf8_text", "require_finite_motion",
           "require_finite_positions", "require_readable_rate", "warn_at_caller"]  # fmt: skip

_IO_DIR = os.path.dirname(os.path.realpath(__file__))
_PACKAGE_INIT = os.path.join(os.path.dirname(_IO_DIR), "__init__.py")
_AXES = "xyz"
#: The shortest and longest frame duration a file may give (a BVH ``Frame Time``, a DeepMimic frame's duration; seconds):
#: beyond them a resample or a video of a few frames would need millions of frames (a 1e4 s frame resampled to 30 fps:
#: 300,000 a frame), and a stream none.
MIN_FRAME_TIME, MAX_FRAME_TIME = 1e-6, 3600.0


def nominal_fps(frame_time: float) -> float:
    """The frame rate a frame duration written in a file stands for (a BVH ``Frame Time``, a DeepMimic frame's
    duration).

    ``1 / frame_time``, unless the value is ``1 / n`` rounded to the digits it is written with (half a unit
    in its last digit, of the shortest text that reads back as it) for exactly one whole rate ``n``, or for
    exactly one NTSC rate ``n * 1000 / 1001`` and no whole one: then that rate. A value whose last digit is
    worth more than 0.2 % of it is taken as written (``0.033`` is 30.3 fps, ``0.0167`` 59.88, ``0.04`` 25).
    ``0.0333``, ``0.033333`` and ``0.0333333`` are 30 fps, ``0.0083333`` 120, ``0.033367`` 29.97 (30000 / 1001).
    """
    mantissa, _, exponent = repr(float(frame_time)).lower().partition("e")
    decimals = len(mantissa.partition(".")[2]) - int(exponent or 0)
    return rate_within(frame_time, 0.5 * 10.0**-decimals)


def rate_within(step: float, uncertainty: float) -> float:
    """The frame rate a time step known to ``+- uncertainty`` stands for: the one whole rate ``n`` (else the one
    NTSC rate ``n * 1000 / 1001``) with ``|1 / n - step| <= uncertainty``, else ``1 / step``, also when the
    uncertainty is more than 0.2 % of the step (too few digits to tell a rounding from a value meant as written).
    :func:`nominal_fps`'s rule, for a step whose uncertainty is known otherwise (a CSV's time column)."""
    exact = 1.0 / step
    if uncertainty > 2e-3 * step:
        return exact
    low, high = 1.0 / (step + uncertainty), (1.0 / (step - uncertainty) if step > uncertainty else math.inf)
    for unit in (1.0, 1000.0 / 1001.0):  # whole rates first, then NTSC ones
        first, last = math.ceil(low / unit), math.floor(high / unit)
        if last - first > 2:  # the inner ones fit for sure: not one (never list them: a 1e-12 s step spans 1e9)
            continue
        fitting = [n * unit for n in range(first, last + 1) if low <= n * unit <= high]
        if len(fitting) == 1:
            return fitting[0]
    return exact


#: What a UTF-16 file (it starts with a byte-order mark) is told, where UTF-8 text is read.
UTF16_MESSAGE = "the file is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8"


def is_utf16(data: bytes) -> bool:
    """Whether ``data`` starts with a UTF-16 byte-order mark (``FF FE`` or ``FE FF``)."""
    return data[:2] in (b"\xff\xfe", b"\xfe\xff")


def read_utf8_text(path: str | os.PathLike) -> str:
    """The text of ``path`` (UTF-8, a leading byte-order mark dropped); :class:`FormatError` naming the line and
    byte of the first undecodable byte (OS errors pass through: the CLI names the file)."""
    with open(path, "rb") as handle:
        raw = handle.read()
    if is_utf16(raw):
        raise FormatError(UTF16_MESSAGE, path=path, line=1)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise FormatError(f"not UTF-8 text (byte {exc.start}: 0x{raw[exc.start]:02x})", path=path, line=line) from None


def first_non_finite(values: Any) -> tuple[int, ...] | None:
    """Index of the first non-finite entry of ``values`` (tensor or array), or ``None``."""
    array = values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
    bad = np.argwhere(~np.isfinite(array))
    return tuple(int(v) for v in bad[0]) if bad.size else None


def require_finite_positions(positions: Any, names: Sequence[str], path: str | os.PathLike | None) -> None:
    """Raise :class:`ShapeError` at the first non-finite value of ``positions`` ``(F, J, 3)``.

    The error names ``path``, the frame, the joint (from ``names``) and the axis.
    """
    bad = first_non_finite(positions)
    if bad is not None:
        f, j, a = bad
        raise ShapeError(f"cannot write a non-finite position ({_AXES[a]}); nothing was written", path=path,
                         where=f"frame {f}, joint {names[j]}")


def require_readable_rate(fps: float, path: str | os.PathLike | None) -> None:
    """Raise :class:`ShapeError` where ``1 / fps`` is outside :data:`MIN_FRAME_TIME` to :data:`MAX_FRAME_TIME`:
    a file written with it would be refused by the readers (BVH, DeepMimic)."""
    frame_time = 1.0 / fps if fps > 0 else math.inf
    if not MIN_FRAME_TIME <= frame_time <= MAX_FRAME_TIME:
        raise ShapeError(f"{fps:g} fps cannot be written: a frame lasts {MIN_FRAME_TIME:g} to {MAX_FRAME_TIME:g} "
                         "seconds in a file the readers take (a million frames a second to one an hour); resample "
                         "it first", path=path)  # fmt: skip


#: A rotation quaternion's norm below which it is no rotation (all zeros, as the DeepMimic reader refuses too).
ZERO_QUATERNION = 1e-12


def require_finite_motion(motion: Motion, path: str | os.PathLike | None) -> None:
    """Raise :class:`ShapeError` if ``motion`` holds a non-finite value anywhere a writer reads, or a zero quaternion.

    Checked in this order: bone offsets, End Site offsets (naming the joint), then rotations ``(F, J, 4)``
    and local translations ``(F, J, 3)`` (the root position and animated joint translations), naming
    the frame and joint; then rotations whose quaternion is zero (:data:`ZERO_QUATERNION`).
    """
    skeleton = motion.skeleton
    bad = first_non_finite(skeleton.offsets)
    if bad is not None:
        raise ShapeError("cannot write a non-finite bone offset; nothing was written", path=path,
                         where=f"joint {skeleton.names[bad[0]]}")
    for j, offset in sorted(skeleton.end_sites.items()):
        if first_non_finite(offset) is not None:
            raise ShapeError("cannot write a non-finite End Site offset; nothing was written", path=path,
                             where=f"joint {skeleton.names[j]}")
    for label, values in (("rotation", motion.rotations), ("translation", motion.local_translations())):
        bad = first_non_finite(values)
        if bad is not None:
            f, j = bad[0], bad[1]
            what = "root position" if label == "translation" and j == 0 else label
            raise ShapeError(f"cannot write a non-finite {what}; nothing was written", path=path,
                             where=f"frame {f}, joint {skeleton.names[j]}")
    require_rotations(motion, path)


def require_rotations(motion: Motion, path: str | os.PathLike | None) -> None:
    """Raise :class:`ShapeError` at the first zero quaternion of ``motion`` (no rotation at all: normalising it had
    written the identity, or FK some other pose, without a word), naming the frame and joint."""
    zero = torch.nonzero(motion.rotations.detach().norm(dim=-1) < ZERO_QUATERNION)
    if zero.numel():
        f, j = (int(v) for v in zero[0])
        raise ShapeError("cannot write a zero quaternion (it is no rotation); nothing was written", path=path,
                         where=f"frame {f}, joint {motion.skeleton.names[j]}")


def warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside ``skelanim/io`` and ``skelanim/__init__.py``:
    the code that called :func:`skelanim.load` (or a format's ``load``), however deep the call chain."""
    frame: FrameType | None = sys._getframe(0)
    level = 1
    while frame is not None and _in_library(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


@functools.lru_cache(maxsize=256)
def _in_library(filename: str) -> bool:
    """Whether ``filename`` is a module of ``skelanim/io`` or ``skelanim/__init__.py``."""
    real = os.path.realpath(filename)
    return os.path.dirname(real) == _IO_DIR or real == _PACKAGE_INIT
