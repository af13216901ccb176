"""DeepMimic humanoid motion clips (``.txt``/``.json``): ``load`` and ``save``.

A clip is a JSON object ``{"Loop": "wrap" | "none", "Frames": [[44 numbers], ...]}`` (``"Loop"`` may be left out,
as DeepMimic's own reader allows: ``"none"``; other top-level keys, such as ``RightJoints``/``LeftJoints`` in
``run.txt``, are kept in ``metadata["deepmimic_extra"]`` and written back). Strict JSON: ``NaN`` and ``Infinity``
are refused on reading and never written. Each frame is laid out as

======  =============================================================================
index   value
======  =============================================================================
0       frame duration in seconds (time to the next frame; the last frame's is 0)
1:4     root position, metres, Y up
4:8     root orientation, world quaternion (w, x, y, z)
8:12    chest, local quaternion (w, x, y, z)
12:16   neck
16:20   right_hip
20      right_knee angle, radians about local +z (1-DoF)
21:25   right_ankle
25:29   right_shoulder
29      right_elbow angle, radians about local +z (1-DoF)
30:34   left_hip
34      left_knee angle
35:39   left_ankle
39:43   left_shoulder
43      left_elbow angle
======  =============================================================================

See :data:`FRAME_LAYOUT` for the same table in code.

The skeleton
------------
13 joints in frame order, which is also parents-first: :data:`BODY_NAMES`. Offsets come from the
humanoid URDF's joint origins scaled by :data:`URDF_SCALE` (0.25, pybullet's ``globalScaling`` in
DeepMimic), metres, Y up. By default the URDF bundled with the package is read
(:data:`BUNDLED_URDF`, ``skelanim/io/assets/humanoid.urdf``, a copy of pybullet's); pass ``urdf=`` to use
another file with the same bodies. Only if that bundled file cannot be found (a broken installation) are the
numbers in :data:`_FALLBACK_OFFSETS` used, a transcription of the same URDF.

The URDF's fixed ``*_wrist`` links become End Sites of the elbows. The URDF's base link is joined to
the ``root`` link by a fixed joint; if that joint had a translation it is folded into the offsets of
the root's children, so that the skeleton's root joint is the frame's root position (the pybullet base).

Rotations
---------
Quaternions are normalised on load (a zero quaternion is an error): several of pybullet's clips store
quaternions well off unit length (``kick`` by up to 42%, ``spin`` 10%, ``punch`` 8%). The 1-DoF joints
become the quaternion ``axis_angle_to_quat(+z, angle)``. On save a 1-DoF joint's rotation is projected onto the
z axis: the written angle is the signed angle of its twist about local z (``q = twist * swing``,
``twist = (w, 0, 0, z)`` normalised), in ``[-pi, pi]``. The off-axis part (swing) is dropped, with a warning
naming the joint and frame where it passes :data:`SWING_WARNING_DEGREES` (a knee bent sideways comes back straight),
and an exact 180-degree swing (``w = z = 0``, twist undefined) is written as 0.

Frame rate
----------
``fps`` is the rate that ``d``, the frame duration of the first frame, stands for (durations of all frames but
the last must be positive), read as a BVH ``Frame Time`` is (:func:`~skelanim.io.common.nominal_fps`): ``1 / d``
unless ``d`` is ``1 / n`` rounded to its digits. So ``0.041667`` s (``spin``) is 24 fps, while ``0.033332`` s
(a duration no whole rate rounds to) stays ``30.0012`` fps. ``d`` is kept in ``metadata["frame_duration"]`` so
that saving writes the file's own number back while it stands for the motion's rate. If the durations
differ by more than one part in a million, ``d`` is their median and all of them are kept in
``metadata["frame_durations"]`` (a Motion has one frame rate; saving writes uniform durations).
A single frame with duration 0 gets :data:`DEFAULT_FPS` and ``metadata["fps_assumed"] = True``.

Errors
------
Bad input raises :class:`skelanim.errors.FormatError` naming the file and the place: the JSON line for
malformed JSON, else the frame (0-based) and the value, e.g.
``walk.txt: frame 3: expected 44 values, found 43``.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from skelanim.core.motion import Motion
from skelanim.core.rotations import axis_angle_to_quat, quat_normalize, quat_to_rotvec
from skelanim.core.skeleton import Skeleton
from skelanim.errors import FormatError, SkeletonError
from skelanim.io.atomic import atomic_open
from skelanim.io.bundled import bundled_file
from skelanim.io.bvh_parse import MAX_LENGTH
from skelanim.io.common import nominal_fps, require_readable_rate, require_rotations, warn_at_caller
from skelanim.io.deepmimic_format import (
    BODY_NAMES,
    DEFAULT_FPS,
    FRAME_LAYOUT,
    FRAME_SIZE,
    LOOP_MODES,
    ONE_DOF_BODIES,
    VALUE_NAMES,
    frame_rate,
    json_type,
    parse_clip,
)
from skelanim.io.urdf import parse_urdf

__all__ = ["BODY_NAMES", "BUNDLED_URDF", "DEFAULT_FPS", "FRAME_LAYOUT", "FRAME_SIZE", "LOOP_MODES", "ONE_DOF_BODIES",
           "SWING_WARNING_DEGREES", "URDF_SCALE", "bundled_urdf_path", "humanoid_skeleton", "load", "save"]  # fmt: skip

#: The tree the frame layout assumes: body -> parent body.
_EXPECTED_PARENT: dict[str, str] = {
    "chest": "root",
    "neck": "chest",
    "right_hip": "root",
    "right_knee": "right_hip",
    "right_ankle": "right_knee",
    "right_shoulder": "chest",
    "right_elbow": "right_shoulder",
    "left_hip": "root",
    "left_knee": "left_hip",
    "left_ankle": "left_knee",
    "left_shoulder": "chest",
    "left_elbow": "left_shoulder",
}
#: pybullet's ``globalScaling`` for the DeepMimic humanoid URDF.
URDF_SCALE: float = 0.25
#: The DeepMimic humanoid URDF shipped with the package (pybullet's, unmodified; zlib notice beside it),
#: relative to the ``skelanim`` package folder (see :func:`skelanim.io.bundled.bundled_file`).
BUNDLED_URDF: str = "io/assets/humanoid.urdf"
_AXIS = (0.0, 0.0, 1.0)


# Documented fallback, used only when the bundled URDF cannot be found (a broken installation): the
# joint origins of pybullet's humanoid.urdf, unscaled (multiply by URDF_SCALE), and the wrist End Sites.
_FALLBACK_OFFSETS: dict[str, tuple[float, float, float]] = {
    "root": (0.0, 0.0, 0.0),
    "chest": (0.0, 0.944604, 0.0),
    "neck": (0.0, 0.895576, 0.0),
    "right_hip": (0.0, 0.0, 0.339548),
    "right_knee": (0.0, -1.686184, 0.0),
    "right_ankle": (0.0, -1.639480, 0.0),
    "right_shoulder": (-0.096200, 0.974000, 0.732440),
    "right_elbow": (0.0, -1.099152, 0.0),
    "left_hip": (0.0, 0.0, -0.339548),
    "left_knee": (0.0, -1.686184, 0.0),
    "left_ankle": (0.0, -1.639480, 0.0),
    "left_shoulder": (-0.096200, 0.974000, -0.732440),
    "left_elbow": (0.0, -1.099152, 0.0),
}
_FALLBACK_END_SITES: dict[str, tuple[float, float, float]] = {
    "right_elbow": (0.0, -1.035788, 0.0),
    "left_elbow": (0.0, -1.035788, 0.0),
}


# ---------------------------------------------------------------------------------------- skeleton


def bundled_urdf_path() -> Path | None:
    """Path of the humanoid URDF bundled with the package (:data:`BUNDLED_URDF`), or ``None`` if missing."""
    try:
        return bundled_file(BUNDLED_URDF)
    except FileNotFoundError:
        return None


def _skeleton_from_tables(
    offsets: dict[str, tuple[float, float, float]], end_sites: dict[str, tuple[float, float, float]], scale: float
) -> Skeleton:
    parents = [-1] + [BODY_NAMES.index(_EXPECTED_PARENT[b]) for b in BODY_NAMES[1:]]
    table = np.array([offsets[b] for b in BODY_NAMES], dtype=np.float64) * scale
    ends = {BODY_NAMES.index(b): torch.tensor(v, dtype=torch.float64) * scale for b, v in end_sites.items()}
    return Skeleton(list(BODY_NAMES), np.array(parents), torch.from_numpy(table), end_sites=ends)


@functools.lru_cache(maxsize=8)
def _tables_from_urdf(
    path: str, _stamp: tuple[int, int]
) -> tuple[dict[str, tuple[float, float, float]], dict[str, tuple[float, float, float]]]:
    """Unscaled offsets and End Sites of the DeepMimic bodies read from a URDF (cached per file version)."""
    model = parse_urdf(path)
    missing = [b for b in BODY_NAMES if b not in model.links]
    if missing:
        raise FormatError(f"not a DeepMimic humanoid: links {', '.join(missing)} are missing", path=path)

    # The chain from the URDF's base link down to the ``root`` body: fixed joints, no rotation.
    root_shift = np.zeros(3)
    link = "root"
    while (joint := model.joint_to(link)) is not None:
        if joint.type != "fixed" or any(joint.rpy):
            raise FormatError(
                f"the joints above the root body must be fixed and unrotated, found {joint.type} rpy={joint.rpy}",
                path=path,
                where=f"joint {joint.name!r}",
            )
        root_shift += joint.xyz
        link = joint.parent

    offsets: dict[str, tuple[float, float, float]] = {"root": (0.0, 0.0, 0.0)}
    for body in BODY_NAMES[1:]:
        joint = model.joint_to(body)
        assert joint is not None  # every body but the base has a parent joint
        where = f"joint {joint.name!r}"
        if joint.parent != _EXPECTED_PARENT[body]:
            raise FormatError(
                f"body {body!r} hangs from {joint.parent!r}, expected {_EXPECTED_PARENT[body]!r}",
                path=path,
                where=where,
            )
        if any(joint.rpy):
            raise FormatError(f"rotated joint origins (rpy={joint.rpy}) are not supported", path=path, where=where)
        if body in ONE_DOF_BODIES:
            axis = np.asarray(joint.axis)
            if joint.type not in ("revolute", "continuous") or not np.allclose(
                axis / max(np.linalg.norm(axis), 1e-300), _AXIS
            ):
                raise FormatError(
                    f"expected a revolute joint about +z, found {joint.type} about {joint.axis}", path=path, where=where
                )
        elif joint.type not in ("spherical", "floating"):
            raise FormatError(f"expected a spherical joint, found {joint.type}", path=path, where=where)
        xyz = np.asarray(joint.xyz, dtype=np.float64)
        if joint.parent == "root":
            xyz = xyz + root_shift
        offsets[body] = (float(xyz[0]), float(xyz[1]), float(xyz[2]))

    end_sites: dict[str, tuple[float, float, float]] = {}
    for joint in model.joints:
        is_leaf = not model.joints_from(joint.child)
        if joint.type == "fixed" and joint.parent in BODY_NAMES and joint.child not in BODY_NAMES and is_leaf:
            if joint.parent in end_sites:
                continue
            xyz = np.asarray(joint.xyz, dtype=np.float64) + (root_shift if joint.parent == "root" else 0.0)
            end_sites[joint.parent] = (float(xyz[0]), float(xyz[1]), float(xyz[2]))
    return offsets, end_sites


def humanoid_skeleton(urdf: str | os.PathLike | None = None) -> Skeleton:
    """The DeepMimic humanoid skeleton: 13 joints (:data:`BODY_NAMES`), metres, Y up.

    Parameters
    ----------
    urdf:
        A humanoid URDF with the DeepMimic bodies; ``None`` reads the bundled copy of pybullet's
        ``humanoid.urdf``. Joint origins are scaled by :data:`URDF_SCALE`.

    Returns
    -------
    Skeleton
        A new skeleton (safe to modify): ``offsets`` ``(13, 3)``, End Sites at the wrists.

    Raises
    ------
    FormatError
        The URDF is malformed or is not the DeepMimic humanoid (missing bodies, another tree, rotated
        joint origins, 1-DoF joints not about +z).
    """
    path = Path(urdf) if urdf is not None else bundled_urdf_path()
    if path is None:
        return _skeleton_from_tables(_FALLBACK_OFFSETS, _FALLBACK_END_SITES, URDF_SCALE)
    try:
        stat = path.stat()
    except OSError as exc:
        raise FormatError(f"cannot read the URDF: {exc.strerror or exc}", path=path) from None
    offsets, end_sites = _tables_from_urdf(str(path), (stat.st_mtime_ns, stat.st_size))
    return _skeleton_from_tables(offsets, end_sites, URDF_SCALE)


# ---------------------------------------------------------------------------------------- reading


def load(path: str | os.PathLike, *, urdf: str | os.PathLike | None = None) -> Motion:
    """Read a DeepMimic humanoid clip.

    Parameters
    ----------
    path:
        A DeepMimic motion file (JSON, usually ``.txt``).
    urdf:
        The humanoid URDF giving the bone offsets; ``None`` uses the bundled copy of pybullet's
        ``humanoid.urdf`` (see :func:`humanoid_skeleton`).

    Returns
    -------
    Motion
        ``rotations`` ``(F, 13, 4)`` unit quaternions (w, x, y, z), local except the root's, which is
        global; ``root_positions`` ``(F, 3)`` metres, Y up; ``fps``: the rate the frame duration stands for.
        ``metadata``: ``format="deepmimic"``, ``path`` (``str(path)``, as the BVH reader sets it), ``loop``,
        ``frame_duration``, ``units="m"``,
        ``up_axis="y"``, ``deepmimic_extra`` (other top-level keys), and, when they apply,
        ``frame_durations``, ``fps_assumed`` (see the module docstring) and ``deepmimic_urdf`` (the
        ``urdf`` given, which :func:`save` then checks the bone offsets against).

    Raises
    ------
    FormatError
        Not UTF-8, malformed JSON (with its line; ``NaN`` and ``Infinity`` too), missing ``Frames``, a frame
        without 44 numbers, a non-finite value, a negative or zero frame duration or one outside
        :data:`~skelanim.io.common.MIN_FRAME_TIME` to :data:`~skelanim.io.common.MAX_FRAME_TIME`, a zero
        quaternion, or a bad URDF.
    """
    skeleton = humanoid_skeleton(urdf)
    data, frames = parse_clip(path)
    num_frames = frames.shape[0]
    fps, time_meta = frame_rate(frames[:, 0], path)

    rotations = torch.empty(num_frames, len(BODY_NAMES), 4, dtype=torch.float64)
    table = torch.from_numpy(frames)
    for j, body in enumerate(BODY_NAMES):
        values = table[:, FRAME_LAYOUT[body]]
        if body in ONE_DOF_BODIES:
            rotations[:, j] = axis_angle_to_quat(torch.tensor(_AXIS, dtype=torch.float64), values[:, 0])
            continue
        norms = torch.linalg.vector_norm(values, dim=-1)
        zero = torch.nonzero(norms < 1e-12)
        if zero.numel():
            i = int(zero[0, 0])
            label = "root orientation" if body == "root" else body
            raise FormatError(
                f"{label} quaternion is zero (values {FRAME_LAYOUT[body].start}:{FRAME_LAYOUT[body].stop})",
                path=path,
                where=f"frame {i}",
            )
        rotations[:, j] = quat_normalize(values)

    metadata: dict[str, Any] = {
        "format": "deepmimic",
        "path": str(path),
        "loop": data["Loop"],
        "units": "m",
        "up_axis": "y",
        **time_meta,
        "deepmimic_extra": {k: v for k, v in data.items() if k not in ("Loop", "Frames")},
    }
    if urdf is not None:
        metadata["deepmimic_urdf"] = str(urdf)
    return Motion(skeleton, rotations, table[:, FRAME_LAYOUT["root_position"]].clone(), fps, metadata=metadata)


# ---------------------------------------------------------------------------------------- writing


def _retarget_hint(motion: Motion, path: str | os.PathLike) -> str:
    """The command that puts another skeleton's motion on the humanoid and writes it to ``path``."""
    source = motion.metadata.get("path") or "SRC"
    urdf = bundled_urdf_path() or "humanoid.urdf"
    figure = motion.metadata.get("bvh_figure")  # one figure of a file of several (ops.figures): retarget takes one
    if isinstance(figure, int) and not isinstance(figure, bool):
        return (f"skelanim convert {source} FIGURE.bvh --figure {figure}, then skelanim retarget FIGURE.bvh --to {urdf} "
                f"-o {path}")  # fmt: skip
    return f"skelanim retarget {source} --to {urdf} -o {path}"


def _require_humanoid(motion: Motion, path: str | os.PathLike, urdf: str | os.PathLike | None) -> list[int]:
    """The indices of :data:`BODY_NAMES` in ``motion``'s skeleton, after checking that the skeleton is the
    DeepMimic humanoid of ``urdf``: the 13 joints, the same tree and the same bone offsets (a clip stores
    no offsets; the reader takes them from the URDF). Raises :class:`SkeletonError` otherwise."""
    skeleton = motion.skeleton
    names = list(skeleton.names)
    missing = [b for b in BODY_NAMES if b not in names]
    if missing:
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        lacks = "has none of them" if len(missing) == len(BODY_NAMES) else "lacks " + ", ".join(missing)
        raise SkeletonError(
            f"a DeepMimic clip holds the DeepMimic humanoid's 13 joints ({', '.join(BODY_NAMES[:3])}, ...), "
            f"this skeleton {lacks} ({len(names)} joints: {shown}); to convert another skeleton, retarget it: "
            f"{_retarget_hint(motion, path)}",
            path=path,
        )
    index = [names.index(b) for b in BODY_NAMES]
    for j, body in enumerate(BODY_NAMES):
        parent = int(skeleton.parents[index[j]])
        expected = _EXPECTED_PARENT.get(body)
        found = names[parent] if parent >= 0 else None
        if found != expected:
            raise SkeletonError(
                f"joint {body!r} hangs from {found or 'nothing (a root)'}, the DeepMimic humanoid's from "
                f"{expected or 'nothing (it is the root)'}; retarget it: {_retarget_hint(motion, path)}",
                path=path,
            )
    reference = humanoid_skeleton(urdf).offsets.to(torch.float64)[1:]
    offsets = skeleton.offsets.detach().to("cpu", torch.float64)[index][1:]
    broken = torch.nonzero(~torch.isfinite(offsets).all(dim=-1))
    if broken.numel():
        raise FormatError("cannot write a non-finite bone offset", path=path,
                          where=f"joint {BODY_NAMES[int(broken[0, 0]) + 1]}")
    tolerance = 1e-4 * float(reference.norm(dim=-1).max())
    wrong = torch.nonzero((offsets - reference).norm(dim=-1) > tolerance)
    if wrong.numel():
        k = int(wrong[0, 0])
        ratio = float((offsets * reference).sum() / (reference * reference).sum())  # least-squares scale
        why = "the DeepMimic humanoid has fixed bone lengths (from its URDF; a clip stores none), so"
        if ratio > 0 and bool(((offsets - ratio * reference).norm(dim=-1) <= tolerance * max(ratio, 1.0)).all()):
            message = (f"{why} a DeepMimic clip cannot be scaled: this motion's bones are {ratio:.6g} times the "
                       "humanoid's; write another format (.bvh, .glb) to keep the scale")
        else:
            message = (f"{why} this motion cannot be written as a DeepMimic clip: joint {BODY_NAMES[k + 1]!r} has "
                       f"offset {[round(float(v), 6) for v in offsets[k]]}, the humanoid's is "
                       f"{[round(float(v), 6) for v in reference[k]]}; retarget it: {_retarget_hint(motion, path)}")
        raise SkeletonError(message, path=path)
    return index


#: A 1-DoF joint's rotation about other axes than its own (the swing :func:`save` drops) above this many degrees is
#: reported in a warning: a knee or elbow bent sideways, which the written clip straightens.
SWING_WARNING_DEGREES = 1.0


def _frames_from_motion(motion: Motion, index: list[int]) -> tuple[np.ndarray, tuple[str, int, float]]:
    """``(F, 44)`` frame values of ``motion`` (durations left at 0); ``index``: the joints of
    :data:`BODY_NAMES` in its skeleton. Also the largest swing the 1-DoF joints lose, as (body, frame, degrees)."""
    rotations = quat_normalize(motion.rotations.detach().to("cpu", torch.float64)[:, index])
    frames = torch.zeros(motion.num_frames, FRAME_SIZE, dtype=torch.float64)
    frames[:, FRAME_LAYOUT["root_position"]] = motion.root_positions.detach().to("cpu", torch.float64)
    worst = ("", 0, 0.0)
    for j, body in enumerate(BODY_NAMES):
        q = rotations[:, j]
        if body in ONE_DOF_BODIES:
            twist = q * q.new_tensor([1.0, 0.0, 0.0, 1.0])  # (w, 0, 0, z); zero -> identity -> angle 0
            frames[:, FRAME_LAYOUT[body]] = quat_to_rotvec(twist)[:, 2:3]
            # q = twist * swing with a unit twist: the swing's w is the twist's length, its angle 2 acos of that
            swing = torch.rad2deg(2.0 * torch.acos(twist.norm(dim=-1).clamp(max=1.0)))  # (F,)
            if swing.numel() and float(swing.max()) > worst[2]:
                worst = (body, int(swing.argmax()), float(swing.max()))
        else:
            frames[:, FRAME_LAYOUT[body]] = q
    return frames.numpy(), worst


def check_writable(motion: Motion, path: str | os.PathLike) -> None:
    """Raise the :class:`SkeletonError` :func:`save` would raise for ``motion``'s skeleton (not the DeepMimic
    humanoid), the :class:`ShapeError` of a rate whose frame duration the reader refuses and the :class:`FormatError`
    of a root position it refuses, before any work is done on it."""
    _require_humanoid(motion, path, motion.metadata.get("deepmimic_urdf"))
    require_readable_rate(motion.fps, path)
    root = np.zeros((motion.num_frames, FRAME_SIZE))
    root[:, FRAME_LAYOUT["root_position"]] = motion.root_positions.detach().to("cpu", torch.float64).numpy()
    _require_readable_root(root, path)


def _require_readable_root(frames: np.ndarray, path: str | os.PathLike) -> None:
    """A :class:`FormatError` at the first root position of the frame rows ``(F, FRAME_SIZE)`` beyond
    :data:`~skelanim.io.bvh_parse.MAX_LENGTH`, which the reader refuses as a corrupt number (such a clip had been
    written, and then not read back)."""
    columns = FRAME_LAYOUT["root_position"]
    huge = np.argwhere(np.abs(frames[:, columns]) > MAX_LENGTH)
    if huge.size:
        i, k = int(huge[0][0]), int(huge[0][1]) + columns.start
        raise FormatError(f"cannot write a {VALUE_NAMES[k]} of {frames[i, k]:g}, beyond +-{MAX_LENGTH:g}, which the "
                          "reader refuses as a corrupt number", path=path, where=f"frame {i}")  # fmt: skip


def save(motion: Motion, path: str | os.PathLike, *, loop: str | None = None,
         urdf: str | os.PathLike | None = None) -> None:
    """Write ``motion`` as a DeepMimic humanoid clip (atomically).

    Parameters
    ----------
    motion:
        A motion whose skeleton has joints named as :data:`BODY_NAMES` (any order, extra joints are
        ignored). Rotations ``(F, J, 4)``: the root's is written as the global orientation, the others
        as local quaternions; 1-DoF joints are projected onto their z axis (the twist angle; see the
        module docstring: off-axis rotation is dropped). Bone offsets and animated joint translations
        are not part of the format and are not written.
    path:
        Output file.
    loop:
        The ``"Loop"`` value, one of :data:`LOOP_MODES`; default ``motion.metadata["loop"]`` (as read), else
        ``"none"``.
    urdf:
        The humanoid URDF whose bone offsets the skeleton must have; default
        ``motion.metadata["deepmimic_urdf"]`` (set by :func:`load` with ``urdf=``), else the bundled one.

    Raises
    ------
    SkeletonError
        The skeleton is not the DeepMimic humanoid: a body is missing (the message says how to retarget
        another skeleton), the tree differs, or its bone offsets differ from the URDF's, e.g. a scaled
        motion (a clip stores no offsets, so it would read back with the URDF's: a different motion).
    FormatError
        The motion holds non-finite values (they cannot be written as JSON numbers).
    ValueError
        ``loop`` is not one of :data:`LOOP_MODES` (``loop=True`` had been written as ``"True"``, which DeepMimic
        refuses).
    """
    if loop is not None and loop not in LOOP_MODES:
        raise ValueError(f"loop must be one of {', '.join(map(repr, LOOP_MODES))}, got {loop!r}")
    index = _require_humanoid(motion, path, urdf if urdf is not None else motion.metadata.get("deepmimic_urdf"))
    require_readable_rate(motion.fps, path)
    require_rotations(motion, path)
    frames, (swung, swung_frame, swing) = _frames_from_motion(motion, index)
    bad = np.argwhere(~np.isfinite(frames))
    if bad.size:
        i, k = (int(v) for v in bad[0])
        raise FormatError(f"cannot write a non-finite {VALUE_NAMES[k]}", path=path, where=f"frame {i}")
    _require_readable_root(frames, path)
    if swing > SWING_WARNING_DEGREES:
        warn_at_caller(f"{os.fspath(path)}: DeepMimic's {swung} turns about one axis only; {swing:.1f} degrees of its "
                       f"rotation about other axes (frame {swung_frame}, the most of any 1-DoF joint) are dropped")
    duration = motion.metadata.get("frame_duration")
    if not (isinstance(duration, float) and duration > 0 and abs(nominal_fps(duration) - motion.fps) <= 1e-9 * motion.fps):
        duration = 1.0 / motion.fps  # the file's own number only while it stands for the motion's rate
    frames[:, 0] = duration
    if len(frames) > 1:
        frames[-1, 0] = 0.0
    loop_value = loop if loop is not None else motion.metadata.get("loop", "none")
    if loop_value not in LOOP_MODES:  # metadata of another source (glTF extras kept loop=True): a clip DeepMimic reads
        warn_at_caller(f"metadata loop {loop_value!r} is no DeepMimic loop mode: written as 'none' (loop= sets one)")
        loop_value = "none"
    extra = motion.metadata.get("deepmimic_extra") or {}
    if not isinstance(extra, dict):
        raise FormatError(f"metadata deepmimic_extra must be an object of top-level keys, found {json_type(extra)}",
                          path=path)
    lines = ["{", f'"Loop": {json.dumps(str(loop_value))},']
    for key, value in extra.items():
        if key in ("Loop", "Frames"):
            continue
        try:  # strict JSON: a NaN read by a lenient reader (or carried in glTF extras) is no value DeepMimic reads
            lines.append(f"{json.dumps(str(key))}: {json.dumps(value, allow_nan=False)},")
        except (TypeError, ValueError) as exc:
            raise FormatError(f"cannot write metadata deepmimic_extra[{str(key)!r}] as JSON: {exc}", path=path) from None
    lines += ['"Frames":', "["]
    rows = ["[" + ", ".join(repr(v) for v in row) + "]" for row in frames.tolist()]
    lines += [",\n".join(rows), "]", "}", ""]
    with atomic_open(path, "w") as handle:
        handle.write("\n".join(lines))
