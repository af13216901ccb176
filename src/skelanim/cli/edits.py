"""The preprocessing ``convert`` and ``convert-all`` apply on the way: trim, mirror, smooth, face a direction, move
to the origin (each one :mod:`skelanim.ops` function; this module parses and checks the options and names the file
in every refusal).

Order, whatever the order on the command line: ``--figure``, ``--start``/``--end``, ``--mirror``, ``--smooth``,
then ``files.convert_file``'s ``--fps`` and ``--scale``, then ``--face`` and ``--to-origin`` (so a resampled clip is
turned about its own first frame). Smoothing runs at the source's frame rate, before any resampling.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from skelanim.core.motion import Motion

#: The options of :class:`Edits`, each a factory of its typer option (``convert`` and ``convert-all`` share them).
EDIT_OPTIONS: dict[str, Callable[[], Any]] = {
    "start": lambda: typer.Option(None, "--start", help="Keep the frames from this time on, in seconds of SRC "
                                  "(frame i is at i / fps)."),
    "end": lambda: typer.Option(None, "--end", help="Keep the frames up to this time, in seconds of SRC (a time past "
                                "the end keeps the rest). A looping clip cut short no longer loops."),
    "mirror": lambda: typer.Option(False, "--mirror", help="Mirror left and right (left limbs become right ones)."),
    "keep_skeleton": lambda: typer.Option(False, "--keep-skeleton", help="With --mirror: keep the skeleton, each joint "
                                          "reflected in its own axes, so that models trained on the rig read the "
                                          "result (without it, the mirror image of the rig)."),
    "smooth": lambda: typer.Option(None, "--smooth", help="Low-pass the motion at this cutoff in Hz: zero-phase "
                                   "Butterworth on positions and on rotations (6 is common for mocap)."),
    "face": lambda: typer.Option(None, "--face", help="Turn about the up axis so that the body faces this way at the "
                                 "first frame: x y z -x -y or -z, a horizontal one."),
    "to_origin": lambda: typer.Option(False, "--to-origin", help="Move the body to the horizontal origin at the first "
                                      "frame, its lowest point onto the ground."),
}

#: How near (a share of a frame) a frame's time ``i / fps`` may lie outside ``--start``/``--end`` and still be kept:
#: times typed to the millisecond name frames whose times a file's rounded frame time puts microseconds off.
TRIM_TOLERANCE = 1e-3


@contextlib.contextmanager
def naming_the_file(src: Path) -> Iterator[None]:
    """A :class:`~skelanim.errors.SkeletonError` raised inside (a skeleton the step cannot work on) names ``src``
    in its one line, as the CLI prints it."""
    from skelanim.errors import SkeletonError

    try:
        yield
    except SkeletonError as err:
        err.path = err.path or str(src)
        err.args = (err.one_line(),)
        raise


@dataclass(frozen=True)
class Edits:
    """Checked preprocessing options (``None``/``False``: not asked for)."""

    start: float | None = None
    end: float | None = None
    mirror: bool = False
    keep_skeleton: bool = False
    smooth: float | None = None
    face: str | None = None
    to_origin: bool = False

    @property
    def trims(self) -> bool:
        return self.start is not None or self.end is not None

    @property
    def turns(self) -> bool:
        """Whether an option works along the up axis (``--up`` then says which it is)."""
        return self.face is not None or self.to_origin


def check_edits(*, start: float | None = None, end: float | None = None, mirror: bool = False,
                keep_skeleton: bool = False, smooth: float | None = None, face: str | None = None,
                to_origin: bool = False) -> Edits:  # fmt: skip
    """The options as :class:`Edits`, each refusal a usage error naming its option (before any file is read)."""
    if keep_skeleton and not mirror:
        raise typer.BadParameter("keeps the skeleton of a mirrored motion: give --mirror too", param_hint="--keep-skeleton")
    for value, option in ((start, "--start"), (end, "--end")):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise typer.BadParameter(f"a time in seconds, 0 or more, not {value:g}", param_hint=option)
    if start is not None and end is not None and end < start:
        raise typer.BadParameter(f"{end:g} s is before --start {start:g} s", param_hint="--end")
    if smooth is not None and not (math.isfinite(smooth) and smooth > 0):
        raise typer.BadParameter(f"a cutoff in Hz above 0, not {smooth:g}", param_hint="--smooth")
    direction = None
    if face is not None:
        direction = face.strip().lower().lstrip("+")
        if direction.lstrip("-") not in ("x", "y", "z") or direction.count("-") > 1:
            raise typer.BadParameter(f"expected x, y, z, -x, -y or -z, got {face!r}", param_hint="--face")
        direction = direction if direction.startswith("-") else "+" + direction
    return Edits(start=start, end=end, mirror=mirror, keep_skeleton=keep_skeleton, smooth=smooth, face=direction,
                 to_origin=to_origin)  # fmt: skip


def _frame_span(motion: Motion, edits: Edits, src: Path) -> slice:
    """The frames ``--start``/``--end`` keep: ``start <= i / fps <= end`` (to :data:`TRIM_TOLERANCE` of a frame: a
    DeepMimic clip's 0.033332 s frames put frame 6 at 0.199992 s, which ``--start 0.2`` had left out)."""
    count, fps = motion.num_frames, motion.fps
    first = 0 if edits.start is None else max(0, math.ceil(edits.start * fps - TRIM_TOLERANCE))
    last = count - 1 if edits.end is None else min(count - 1, math.floor(edits.end * fps + TRIM_TOLERANCE))
    if first > last:
        hint = "--start" if edits.start is not None and first > count - 1 else "--end"
        raise typer.BadParameter(f"{src} has no frame in that time span ({count} frames at {fps:g} fps, 0 to "
                                 f"{(count - 1) / fps:g} s)", param_hint=hint)  # fmt: skip
    return slice(first, last + 1)


def edit_before_resampling(motion: Motion, edits: Edits, src: Path) -> Motion:
    """``--start``/``--end``, ``--mirror`` and ``--smooth`` on ``src``'s motion, in that order."""
    from skelanim import ops

    if edits.trims:
        span = _frame_span(motion, edits, src)
        if span != slice(0, motion.num_frames):
            motion = motion[span]  # a cut loop no longer loops (Motion's own rule)
    if edits.mirror:
        motion = ops.mirror(motion, same_skeleton=edits.keep_skeleton)
    if edits.smooth is not None:
        if not edits.smooth < motion.fps / 2:
            raise typer.BadParameter(f"{src} is sampled at {motion.fps:g} fps: the cutoff must be below "
                                     f"{motion.fps / 2:g} Hz, not {edits.smooth:g}", param_hint="--smooth")  # fmt: skip
        motion = ops.smooth(motion, "butterworth", cutoff=edits.smooth)
    return motion


def edit_after_resampling(motion: Motion, edits: Edits, src: Path, up_axis: str | None) -> Motion:
    """``--face`` then ``--to-origin`` about the up axis ``up_axis`` (``None``: the motion's guess)."""
    from skelanim import ops
    from skelanim.errors import ShapeError

    if edits.face is not None:
        try:
            with naming_the_file(src):  # no left/right pairs to find the facing by
                motion = ops.face_forward(motion, forward=edits.face, up_axis=up_axis)
        except ShapeError as err:  # along the up axis
            raise typer.BadParameter(f"{src}: {err}", param_hint="--face") from None
    if edits.to_origin:
        motion = ops.to_origin(motion, up_axis=up_axis)
    return motion
