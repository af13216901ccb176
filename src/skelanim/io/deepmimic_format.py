"""The DeepMimic clip format: the frame layout and the reading of a clip's JSON, checked value by value
(:func:`parse_clip`, :func:`frame_rate`); :mod:`skelanim.io.deepmimic` turns it into a :class:`Motion` and back."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from skelanim.errors import FormatError
from skelanim.io.bvh_parse import MAX_LENGTH
from skelanim.io.common import MAX_FRAME_TIME, MIN_FRAME_TIME, nominal_fps, read_utf8_text

__all__ = ["BODY_NAMES", "DEFAULT_FPS", "FRAME_LAYOUT", "FRAME_SIZE", "LOOP_MODES", "ONE_DOF_BODIES", "VALUE_NAMES",
           "frame_rate", "json_type", "parse_clip"]  # fmt: skip

#: The 13 bodies, in frame order (also the skeleton's joint order, parents first).
BODY_NAMES: tuple[str, ...] = (
    "root",
    "chest",
    "neck",
    "right_hip",
    "right_knee",
    "right_ankle",
    "right_shoulder",
    "right_elbow",
    "left_hip",
    "left_knee",
    "left_ankle",
    "left_shoulder",
    "left_elbow",
)
#: Bodies stored as one angle about local +z.
ONE_DOF_BODIES: frozenset[str] = frozenset({"right_knee", "right_elbow", "left_knee", "left_elbow"})
#: The ``"Loop"`` modes DeepMimic reads (a clip without ``"Loop"`` is ``"none"``, as in DeepMimic's ``cMotion::LoadJson``).
LOOP_MODES = ("none", "wrap", "mirror")
#: Frame rate given to a one-frame clip whose only duration is 0.
DEFAULT_FPS: float = 30.0


def _frame_layout() -> dict[str, slice]:
    layout = {"duration": slice(0, 1), "root_position": slice(1, 4), "root": slice(4, 8)}
    start = 8
    for body in BODY_NAMES[1:]:
        width = 1 if body in ONE_DOF_BODIES else 4
        layout[body] = slice(start, start + width)
        start += width
    return layout


#: Where each quantity lies in a frame: ``"duration"``, ``"root_position"``, then one entry per body
#: (``"root"`` is the root orientation); quaternion bodies span 4 values, 1-DoF bodies 1.
FRAME_LAYOUT: dict[str, slice] = _frame_layout()
#: Values per frame (44).
FRAME_SIZE: int = FRAME_LAYOUT[BODY_NAMES[-1]].stop


def _value_names() -> list[str]:
    names = ["frame duration", "root position x", "root position y", "root position z"]
    for body in BODY_NAMES:
        if body in ONE_DOF_BODIES:
            names.append(f"{body} angle")
        else:
            names.extend(f"{body} quaternion {c}" for c in "wxyz")
    return names


VALUE_NAMES: list[str] = _value_names()
assert FRAME_SIZE == 44 and len(VALUE_NAMES) == FRAME_SIZE


def json_type(value: Any) -> str:
    """A JSON value shown in a message (at most 40 characters)."""
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _non_finite_in(value: Any, where: str) -> str | None:
    """Where in a JSON value (``key[2]["a"]``) the first ``NaN``/``Infinity`` lies, or ``None``: Python's reader takes
    them, strict JSON (and DeepMimic's jsoncpp) does not."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite_in(item, f"{where}[{json.dumps(key)}]")
        if found is not None:
            return found
    return None


def parse_clip(path: str | os.PathLike) -> tuple[dict[str, Any], np.ndarray]:
    """Read and validate a clip: the JSON object (``"Loop"`` filled in where left out) and the ``(F, 44)`` float64
    frame array. A root position beyond :data:`~skelanim.io.bvh_parse.MAX_LENGTH` is refused as a corrupt number."""
    text = read_utf8_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (it reads as a BVH file: name it .bvh)" if text.lstrip().upper().startswith("HIERARCHY") else ""
        raise FormatError(f"invalid JSON: {exc.msg} (column {exc.colno}){hint}", path=path, line=exc.lineno) from None
    except RecursionError:
        raise FormatError("invalid JSON: nested too deeply", path=path) from None
    if not isinstance(data, dict):
        raise FormatError(f'expected a JSON object with "Frames", found {type(data).__name__}', path=path)
    if "Frames" not in data:
        raise FormatError(f"missing key 'Frames' (keys found: {', '.join(map(repr, data)) or 'none'})", path=path)
    data.setdefault("Loop", "none")
    for key, value in data.items():
        found = _non_finite_in(value, json.dumps(key)) if key != "Frames" else None  # frames: checked value by value
        if found is not None:
            raise FormatError(f"invalid JSON: {found} is not a finite number (NaN and Infinity are no JSON)", path=path)
    if data["Loop"] not in LOOP_MODES:  # DeepMimic reads no other (a CLI audit's "sometimes" had been copied on)
        found = json.dumps(data["Loop"]) if isinstance(data["Loop"], str) else json_type(data["Loop"])
        raise FormatError(f'"Loop" must be "none", "wrap" or "mirror", found {found}', path=path)
    frames = data["Frames"]
    if not isinstance(frames, list) or not frames:
        found = "an empty list" if isinstance(frames, list) else json_type(frames)
        raise FormatError(f'"Frames" must be a non-empty list of frames, found {found}', path=path)
    for i, frame in enumerate(frames):
        where = f"frame {i}"
        if not isinstance(frame, list):
            raise FormatError(
                f"expected a list of {FRAME_SIZE} values, found {json_type(frame)}", path=path, where=where
            )
        if len(frame) != FRAME_SIZE:
            raise FormatError(f"expected {FRAME_SIZE} values, found {len(frame)}", path=path, where=where)
        for k, value in enumerate(frame):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise FormatError(
                    f"value {k} ({VALUE_NAMES[k]}): expected a number, found {json_type(value)}",
                    path=path,
                    where=where,
                )
            try:
                finite = math.isfinite(value)
            except OverflowError:  # an integer beyond float range
                finite = False
            if not finite:
                raise FormatError(
                    f"value {k} ({VALUE_NAMES[k]}): not a finite number ({value})", path=path, where=where
                )
    array = np.array(frames, dtype=np.float64)
    huge = np.argwhere(np.abs(array[:, FRAME_LAYOUT["root_position"]]) > MAX_LENGTH)
    if huge.size:  # as the BVH reader refuses it: forward kinematics would overflow
        i, k = int(huge[0][0]), FRAME_LAYOUT["root_position"].start + int(huge[0][1])
        raise FormatError(f"value {k} ({VALUE_NAMES[k]}): {array[i, k]:g} is beyond +-{MAX_LENGTH:g}: not a position "
                          "(a corrupt number?)", path=path, where=f"frame {i}")  # fmt: skip
    return data, array


def frame_rate(durations: np.ndarray, path: str | os.PathLike) -> tuple[float, dict[str, Any]]:
    """fps and the metadata that records how it was found."""
    negative = np.flatnonzero(durations < 0)
    if negative.size:
        i = int(negative[0])
        raise FormatError(
            f"value 0 (frame duration): must not be negative, found {float(durations[i])}",
            path=path,
            where=f"frame {i}",
        )
    timed = durations[:-1] if len(durations) > 1 else durations
    if len(durations) == 1 and durations[0] == 0:
        return DEFAULT_FPS, {"fps_assumed": True}
    zero = np.flatnonzero(timed == 0)
    if zero.size:
        raise FormatError(
            "value 0 (frame duration): must be positive (only the last frame may have 0)",
            path=path,
            where=f"frame {int(zero[0])}",
        )
    out_of_range = np.flatnonzero((timed < MIN_FRAME_TIME) | (timed > MAX_FRAME_TIME))
    if out_of_range.size:
        i = int(out_of_range[0])
        raise FormatError(
            f"value 0 (frame duration): expected {MIN_FRAME_TIME:g} to {MAX_FRAME_TIME:g} seconds (a million frames "
            f"a second to one an hour), found {float(timed[i])}",
            path=path,
            where=f"frame {i}",
        )
    first = float(timed[0])
    meta: dict[str, Any] = {}
    if np.all(np.abs(timed - first) <= 1e-6 * first):
        duration = first
    else:
        duration = float(np.median(timed))
        meta["frame_durations"] = durations.tolist()
    meta["frame_duration"] = duration
    return nominal_fps(duration), meta
