"""BVH (Biovision hierarchy) files of any exporter: :func:`load`/:func:`loads` and :func:`save`/:func:`dumps`.

Reading
-------
* Every joint keeps its channel list (any order, any subset of the six channels, or none) in
  :attr:`Skeleton.channels <skelanim.Skeleton>`, so a file writes back with the same layout.
* Rotation channels are intrinsic Euler angles in the listed order (``Zrotation Xrotation Yrotation``
  means ``Rz @ Rx @ Ry``), degrees on disk; in memory they become unit quaternions ``(F, J, 4)``, when
  :attr:`Motion.rotations` is first read (:class:`~skelanim.core.motion.EulerRotations`: until then
  :meth:`Motion.positions` works from the angles, so a load that only wants positions converts nothing).
  A joint with fewer than three rotation channels rotates about those axes only.
* Position channels *replace* the joint's rest offset, component by component (an axis without a
  position channel keeps its ``OFFSET`` value): the root's go to :attr:`Motion.root_positions`, other
  joints' to :attr:`Motion.joint_translations` (``(F, J, 3)``, set only when some non-root joint has
  position channels, e.g. Bandai-Namco files with 6 channels on every joint). A root without position
  channels stays at its ``OFFSET``.
* ``End Site`` offsets go to :attr:`Skeleton.end_sites` (one per joint; a joint's further End Sites are
  counted in ``metadata["bvh_dropped_end_sites"]``); an End Site some exporters name (``End Site Head_End``) keeps
  its name in ``metadata["bvh_end_site_labels"]`` (joint name to label), and is written back so.
* A joint name an earlier joint had is read with the first free suffix ``.001``, ``.002`` ... (as Blender does),
  with a warning; ``metadata["bvh_renamed_joints"]`` maps each new name to the line of the name's first use.
* ``fps`` is the rate the ``Frame Time`` stands for (:func:`nominal_fps`): exporters round ``1 / 30`` to
  ``0.033333`` or ``0.0333333``, which is read as 30 fps, not 30.00003, so resampling to the file's own rate
  is the identity.
* ``metadata`` holds ``format="bvh"``, ``frame_time`` (the file's value, written back verbatim while it
  stands for ``fps``), ``path``, ``bvh_values`` (the ``(F, C)`` channel values as read, degrees: the
  writer uses them only to choose among equivalent Euler angles) and ``bvh_extra_frames`` (the
  frame lines after the declared count, which are ignored with a warning, a cut-off one among them too).

Bad input raises :class:`~skelanim.errors.FormatError` naming the file, the line and what was expected;
no other exception type escapes :func:`load`/:func:`loads` for any input bytes. Parsing is in
:mod:`skelanim.io.bvh_parse` (hierarchy) and :mod:`skelanim.io.bvh_numbers` (the MOTION block, vectorised); the
channel columns and the angles written are worked out in :mod:`skelanim.io.bvh_channels`.

Writing
-------
:func:`dumps` writes the hierarchy with tabs, each joint's channels in its stored order. Every joint
without children ends with an ``End Site`` block, as strict readers (MotionBuilder, Blender's importer,
most parsers) require: its :attr:`Skeleton.end_sites` offset, or ``OFFSET 0 0 0`` for a leaf that has
none (e.g. the DeepMimic humanoid's ankles and neck). Read back, such a leaf has that zero End Site in
:attr:`Skeleton.end_sites`; joints, names, offsets, channels and joint positions are unchanged, and
End Sites read from a file are written back as they were. A BVH hierarchy nests each joint's children inside
it, so joints are written in depth-first order: a skeleton whose joint indices are not in that order (the
DeepMimic humanoid: ``root, chest, neck, right_hip, ...`` with the arms under the chest) reads back with the
same joints by name in another index order, so arrays indexed by joint number must be matched by name. A root
whose channels cannot hold its motion (no position channels on a root an op moved off its ``OFFSET``, no rotation
channels on one it turned: ``ops.to_origin``, ``face_forward``, a channel-less ``Reference`` joint) is written with
the channels it needs (:func:`~skelanim.io.bvh_channels.with_root_channels`); other joints keep their layout, and
lose with a warning what theirs cannot hold. Quaternions go
back to Euler angles in each joint's order; then, per joint, the Euler solution (of the two a
Tait-Bryan or proper Euler order allows) and each angle's turn count are chosen for continuity over
time, so continuous motion comes back with the same numbers (also angles beyond +-180 degrees) up to
the printed precision. Where a frame's rotation is still the one read from a file (to within half a printed
unit, ``0.5 * 10**-precision`` degrees, so larger edits are written), the solution and
turn count of the file's own angles are used instead, so files that wrap at +-180 (most exporters)
also come back with their own numbers. :func:`save` writes atomically (temporary file, then rename).

Joint names are written as they are, never altered: a name that would not read back unchanged (empty,
with ``{`` or ``}``, control characters, tabs, line breaks, leading, trailing or repeated spaces) is refused with a
:class:`~skelanim.errors.SkeletonError` naming the joint, as is a non-finite value or a length (offset, End Site,
root position, translation) beyond :data:`MAX_LENGTH` (:class:`~skelanim.errors.ShapeError` naming the frame and
joint). Rename such joints (:meth:`Motion.copy` with a new skeleton) before saving; names with single spaces between
words are fine.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from skelanim.core.motion import EulerRotations, Motion
from skelanim.core.skeleton import Skeleton
from skelanim.errors import FormatError, ShapeError, SkelanimError, SkeletonError
from skelanim.io.atomic import atomic_open
from skelanim.io.bvh_channels import channel_layout, frame_values, padded_order, with_root_channels
from skelanim.io.bvh_numbers import format_motion_values
from skelanim.io.bvh_parse import _FRAME_TIME_RE, _MOTION_RE, MAX_LENGTH, ParsedBVH, normalize_bytes, parse_bvh_bytes
from skelanim.io.common import nominal_fps, require_finite_motion, require_readable_rate, warn_at_caller

__all__ = ["MAX_LENGTH", "check_writable", "dumps", "load", "loads", "nominal_fps", "save"]

#: Frame lines formatted and written per block when writing.
FRAMES_PER_BLOCK = 2048


def _line_of(data: bytes, frame: int) -> int | None:
    """1-based line of MOTION frame ``frame`` (its non-blank line after ``Frame Time``); for error messages only.
    Lines as the parser sees them: ``\\n``, ``\\r\\n`` or classic Mac ``\\r`` line ends."""
    data = normalize_bytes(data)
    motion = _MOTION_RE.search(data)
    if motion is None:
        return None
    lines = data.split(b"\n")
    motion_line = data.count(b"\n", 0, motion.start())  # 0-based
    start = next((i for i in range(motion_line + 1, len(lines)) if _FRAME_TIME_RE.match(lines[i])), None)
    if start is None:
        return None
    rows = (i for i in range(start + 1, len(lines)) if lines[i].strip())
    return next((i + 1 for k, i in enumerate(rows) if k == frame), None)


def _refuse_huge(parsed: ParsedBVH, name: str, data: bytes) -> None:
    """A :class:`FormatError` at the first position value beyond :data:`MAX_LENGTH` (the parser refuses such an
    OFFSET, a joint's or an End Site's, at its line)."""
    first, positions, _, _ = channel_layout(parsed.channels)
    columns = [col for pos in positions for _, col in pos]
    huge = np.argwhere(np.abs(parsed.values[:, columns]) > MAX_LENGTH) if columns else np.zeros((0, 2))
    if huge.size:
        frame, col = int(huge[0][0]), columns[int(huge[0][1])]
        joint = int(np.searchsorted(first, col, side="right")) - 1
        channel = parsed.channels[joint][col - first[joint]]
        raise FormatError(f"{channel} of {parsed.names[joint]} on frame {frame} is {parsed.values[frame, col]:g}, "
                          f"beyond +-{MAX_LENGTH:g}: not a position (a corrupt number?)", path=name,
                          line=_line_of(data, frame=frame))  # fmt: skip


def _motion_from_parsed(parsed: ParsedBVH, name: str) -> Motion:
    values = parsed.values  # (F, C), degrees for rotations
    n_frames = values.shape[0]
    n_joints = len(parsed.names)
    _, positions, rotations, axes = channel_layout(parsed.channels)
    offsets = parsed.offsets

    root = np.repeat(offsets[None, 0], n_frames, axis=0)
    for axis, col in positions[0]:
        root[:, axis] = values[:, col]
    joint_translations = None
    if any(positions[j] for j in range(1, n_joints)):
        jt = np.repeat(offsets[None], n_frames, axis=0)
        for j in range(1, n_joints):
            for axis, col in positions[j]:
                jt[:, j, axis] = values[:, col]
        joint_translations = torch.from_numpy(jt)

    groups: dict[str, list[int]] = {}
    for j in range(n_joints):
        if axes[j]:
            groups.setdefault(padded_order(axes[j]), []).append(j)
    # kept as the Euler angles read; Motion converts them to quaternions when they are first asked for
    rotations_read = EulerRotations(
        torch.from_numpy(values), n_joints,
        [(order, joints, [rotations[j] + [-1] * (3 - len(rotations[j])) for j in joints])
         for order, joints in groups.items()],
        degrees=True,
    )

    end_sites = {j: torch.from_numpy(v) for j, v in parsed.end_sites.items()}
    try:
        skeleton = Skeleton(list(parsed.names), parsed.parents, torch.from_numpy(offsets), parsed.channels,
                            end_sites)
    except SkelanimError as exc:  # cannot happen for a parsed file, but keep the error type promise
        raise FormatError(exc.message, path=name) from None
    # the angles read are shared with the lazy rotations above: keep them from being edited in place
    values.flags.writeable = False
    metadata = {
        "format": "bvh",
        "path": name,
        "frame_time": parsed.frame_time,
        "bvh_values": values,
    }
    if parsed.scene_root is not None:  # several ROOTs, under a joint the file does not have
        metadata["bvh_scene_root"] = parsed.scene_root
    if parsed.extra_end_sites:
        metadata["bvh_dropped_end_sites"] = parsed.extra_end_sites
    labels = {parsed.names[j]: label for j, label in parsed.end_site_names.items() if label.split() != ["End", "Site"]}
    if labels:  # named End Sites (End Site Head_End), written back so
        metadata["bvh_end_site_labels"] = labels
    if parsed.renamed:
        metadata["bvh_renamed_joints"] = {new: first for new, _, first in parsed.renamed}
        new, line, first = parsed.renamed[0]
        warn_at_caller(f"{name}:{line}: {len(parsed.renamed)} joint name(s) used before (the first at line {first}) "
                       f"read with a suffix, e.g. {new!r}")  # fmt: skip
    if parsed.extra_frames:
        metadata["bvh_extra_frames"] = parsed.extra_frames
        warn_at_caller(
            f"{name}: {parsed.extra_frames} line(s) after the {n_frames} frames declared by 'Frames:' were ignored"
        )
    return Motion.from_euler(skeleton, rotations_read, torch.from_numpy(root), nominal_fps(parsed.frame_time),
                             joint_translations, metadata)


def loads(text: str | bytes, path: str | os.PathLike | None = None) -> Motion:
    """Parse BVH text.

    Parameters
    ----------
    text:
        The file content (``str`` or ``bytes``).
    path:
        Name for error messages and ``metadata["path"]`` (default ``"<string>"``).

    Returns
    -------
    Motion
        ``F`` frames of ``J`` joints: rotations ``(F, J, 4)``, root positions ``(F, 3)``, joint
        translations ``(F, J, 3)`` or None, fps ``1 / Frame Time``.

    Raises
    ------
    FormatError
        Any malformed input, with file, 1-based line and what was expected.
    """
    name = "<string>" if path is None else str(path)
    try:
        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
        parsed = parse_bvh_bytes(data, name)
        _refuse_huge(parsed, name, data)
        return _motion_from_parsed(parsed, name)
    except FormatError:
        raise
    except (SkelanimError, ValueError, IndexError, TypeError, OverflowError, MemoryError, RecursionError,
            UnicodeError) as exc:  # a bug if reached: still honour the one-error-type promise
        raise FormatError(f"could not parse ({type(exc).__name__}: {exc})", path=name) from exc


def load(path: str | os.PathLike) -> Motion:
    """Read a BVH file; see :func:`loads`. A missing or unreadable file raises :class:`FormatError`."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise FormatError("no such file", path=str(path)) from None
    except IsADirectoryError:
        raise FormatError("expected a BVH file, found a directory", path=str(path)) from None
    except OSError as exc:
        raise FormatError(f"cannot read the file: {exc.strerror or exc}", path=str(path)) from None
    return loads(data, path)


# ---------------------------------------------------------------------------------------------- writing


def _dfs_order(parents: np.ndarray) -> list[int]:
    """Joints in depth-first pre-order (children in index order), iteratively."""
    children: list[list[int]] = [[] for _ in parents]
    for j, p in enumerate(parents.tolist()):
        if p >= 0:
            children[p].append(j)
    order, stack = [], [0]
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(children[j]))
    return order


def _fmt(x: float) -> str:
    """Shortest text that reads back as exactly ``x`` (positional notation)."""
    text = np.format_float_positional(float(x), unique=True, trim="-")
    return "0" if text == "-0" else text


def _end_site(skeleton: Skeleton, j: int, has_children: set[int]) -> np.ndarray | None:
    """The ``End Site`` offset to write under joint ``j``, or ``None`` for no End Site block.

    The skeleton's own End Site where it has one (any joint, as read); otherwise a joint without children
    gets a zero End Site, as strict readers (MotionBuilder, Blender, most parsers) require every chain
    of the hierarchy to end with one. A joint with children and no End Site gets none.
    """
    if j in skeleton.end_sites:
        return skeleton.end_sites[j].numpy()
    if j not in has_children:
        return np.zeros(3)
    return None


def _name_problem(name: str) -> str | None:
    """Why joint ``name`` would not read back from a BVH file unchanged, or ``None`` if it would."""
    if not name:
        return "the name is empty"
    if "{" in name or "}" in name:
        return "braces delimit joint blocks"
    if " ".join(name.split()) != name:
        return ("a name is read as the words on its line joined by single spaces, so tabs, line breaks, "
                "leading, trailing and repeated spaces are lost")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "control characters are not text (the reader refuses them)"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "the name is not valid Unicode text"
    return None


def check_writable(motion: Motion, path: str | os.PathLike | None) -> None:
    """Refuse what a BVH file cannot hold (or its reader would reject): joint names that do not read back
    unchanged (:class:`SkeletonError` naming the joint), non-finite values and lengths beyond :data:`MAX_LENGTH`
    (:class:`ShapeError` naming the frame and joint)."""
    for j, name in enumerate(motion.skeleton.names):
        problem = _name_problem(name)
        if problem is not None:
            raise SkeletonError(f"joint name {name!r} cannot be written to a BVH file: {problem}; rename the joint",
                                path=path, where=f"joint {j}")
    if motion.num_frames == 0:  # the reader, as most others, refuses "Frames: 0"
        raise ShapeError("a motion without frames cannot be written to a BVH file", path=path)
    require_readable_rate(motion.fps, path)
    require_finite_motion(motion, path)
    sk, beyond = motion.skeleton, f"beyond +-{MAX_LENGTH:g}, which the reader refuses as a corrupt number"
    for j, what, xyz in [*((j, "a bone offset", v) for j, v in enumerate(sk.offsets)),
                         *((j, "an End Site offset", v) for j, v in sorted(sk.end_sites.items()))]:  # fmt: skip
        if float(xyz.abs().max()) > MAX_LENGTH:
            raise ShapeError(f"cannot write {what} of {float(xyz.abs().max()):g}, {beyond}; nothing was written",
                             path=path, where=f"joint {sk.names[j]}")  # fmt: skip
    lengths = motion.local_translations().detach().abs().amax(-1).cpu()  # (F, J); joint 0's: the root position
    if float(lengths.max()) > MAX_LENGTH:
        f, j = np.argwhere(lengths.numpy() > MAX_LENGTH)[0].tolist()
        what = "joint translation" if j else "root position"
        raise ShapeError(f"cannot write a {what} of {float(lengths[f, j]):g}, {beyond}; nothing was written", path=path,
                         where=f"frame {f}, joint {sk.names[j]}")


def dumps(motion: Motion, *, precision: int = 6) -> str:
    """BVH text for ``motion``.

    Parameters
    ----------
    motion:
        Any :class:`Motion`; each joint is written with the channels in ``motion.skeleton.channels``.
    precision:
        Decimals of the channel values (offsets are written exactly); more for a figure under 1 unit tall,
        whose positions are kept to 1e-6 of its rest height.

    Returns
    -------
    str
        The file content, ``\\n`` line ends, tab indentation, joints in depth-first order.

    Raises
    ------
    SkeletonError
        A joint name that a BVH file cannot hold: empty, with braces or control characters, or with
        whitespace other than single spaces between words (it would read back changed, or not at all).
    ShapeError
        A non-finite offset, rotation or translation, a length beyond :data:`MAX_LENGTH`, or no frames (the
        reader would reject the file).
    """
    check_writable(motion, None)
    return _text(motion, precision)


def _end_site_label(label: object) -> str:
    """The End Site line to write: a label read from a file (``End Site Head_End``) where it still reads back as
    one, else ``End Site``."""
    if not isinstance(label, str):
        return "End Site"
    words = label.split(" ")
    name = " ".join(words[2:])
    if [w.lower() for w in words[:2]] != ["end", "site"] or not name or _name_problem(name) is not None:
        return "End Site"
    return "End Site " + name


def _text(motion: Motion, precision: int) -> str:
    """The BVH text of a motion that passed :func:`check_writable`."""
    return "".join(_text_blocks(motion, precision))


def _text_blocks(motion: Motion, precision: int) -> Iterator[str]:
    """The BVH text of a motion that passed :func:`check_writable`, in blocks: the header, then the frames
    :data:`FRAMES_PER_BLOCK` lines at a time (a long take is never held as one list of Python numbers)."""
    if not isinstance(precision, (int, np.integer)) or not 0 <= precision <= 17:
        raise ValueError(f"precision must be an integer in [0, 17], got {precision!r}")
    skeleton = motion.skeleton
    height = skeleton.height()
    if 0 < height < 1:  # positions kept to 1e-6 of a figure under 1 unit tall (convert --scale 1e-9 had written 0s)
        precision = min(17, max(int(precision), math.ceil(6 - math.log10(height))))
    parents = skeleton.parents
    order = _dfs_order(parents)
    # a file's several ROOTs read under a scene joint (bvh_parse.SCENE_ROOT) are written as ROOTs again, where the
    # joint is still at the origin, unturned; one an op moved (rotate, normalize) is written as the one ROOT, with
    # the channels that hold its motion (its own had none: the turn and the move had been lost)
    named = motion.metadata.get("bvh_scene_root") == skeleton.names[0]
    scene = named and (not skeleton.offsets[0].any() and not motion.root_positions.any()
                       and bool((motion.rotations[:, 0, 0].abs() == 1).all()))  # fmt: skip
    if not scene:  # a root moved or turned where its channels cannot say so (to_origin, face on a static root, a
        # scene joint an op moved): given the channels that hold it
        motion = with_root_channels(motion, precision)
        skeleton = motion.skeleton
    depth = [-1 if scene else 0] * skeleton.num_joints
    for j in order[1:]:
        depth[j] = depth[int(parents[j])] + 1
    offsets = skeleton.offsets.numpy()
    has_children = {int(p) for p in parents.tolist() if p >= 0}
    labels = motion.metadata.get("bvh_end_site_labels")
    labels = labels if isinstance(labels, dict) else {}
    lines = ["HIERARCHY"]
    open_joints: list[int] = []
    for j in order[1:] if scene else order:
        while open_joints and open_joints[-1] != int(parents[j]):
            k = open_joints.pop()
            lines.append("\t" * depth[k] + "}")
        ind = "\t" * depth[j]
        lines.append(f"{ind}{'ROOT' if depth[j] == 0 else 'JOINT'} {skeleton.names[j]}")
        lines.append(ind + "{")
        lines.append(f"{ind}\tOFFSET {' '.join(_fmt(v) for v in offsets[j])}")
        chans = skeleton.channels[j]
        lines.append(f"{ind}\tCHANNELS {len(chans)}{''.join(' ' + c for c in chans)}")
        end = _end_site(skeleton, j, has_children)
        if end is not None:
            label = _end_site_label(labels.get(skeleton.names[j]))
            lines += [f"{ind}\t{label}", f"{ind}\t{{", f"{ind}\t\tOFFSET {' '.join(_fmt(v) for v in end)}",
                      f"{ind}\t}}"]
        open_joints.append(j)
    while open_joints:
        k = open_joints.pop()
        lines.append("\t" * depth[k] + "}")
    frame_time = motion.metadata.get("frame_time")
    if not isinstance(frame_time, float) or (abs(frame_time * motion.fps - 1.0) > 1e-12
                                              and nominal_fps(frame_time) != motion.fps):  # fmt: skip
        frame_time = 1.0 / motion.fps
    lines += ["MOTION", f"Frames: {motion.num_frames}", f"Frame Time: {_fmt(frame_time)}"]
    values = frame_values(motion, order[1:] if scene else order, precision)  # a scene joint's channels: not written
    yield "\n".join(lines) + "\n"
    for start in range(0, motion.num_frames, FRAMES_PER_BLOCK):
        yield format_motion_values(values[start:start + FRAMES_PER_BLOCK], precision)


def save(motion: Motion, path: str | os.PathLike, *, precision: int = 6) -> None:
    """Write ``motion`` as a BVH file, atomically (see :func:`dumps`, which lists the errors raised; they
    name ``path`` here, and nothing is written)."""
    check_writable(motion, path)
    blocks = _text_blocks(motion, precision)
    header = next(blocks)  # checks the precision and computes every frame's values before the file is opened
    with atomic_open(path, "w") as handle:
        handle.write(header)
        for block in blocks:
            handle.write(block)
