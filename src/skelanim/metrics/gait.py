"""Gait analysis: gait cycles from foot contacts, spatio-temporal parameters and flexion curves.

Definitions (all computed from world joint positions, :meth:`Motion.positions`)
----------------------------------------------------------------------------
* **Legs**: the ankle of each side is the foot joint of :func:`skelanim.ops.contacts.find_feet`; the
  knee is the first ancestor of the ankle farther from it than 1e-6 of the skeleton's height (a roll joint at
  the knee is skipped), the hip the same above the knee.
* **Contact** of a side: the ankle *or* the toe is in contact (:func:`skelanim.ops.contacts.foot_contacts`),
  then cleaned: gaps and contacts shorter than ``min_phase`` seconds are removed (flicker around the
  thresholds). The speed threshold is :data:`SPEED_FRACTION` heights per second, more permissive than
  ``foot_contacts``'s default (0.25): gait events need the *initial* contact, when the heel still moves.
  With 0.25 the stance share of normal walks came out near 47 % on the shared mocap (Bandai-Namco,
  Xia, PyMO walks) and heel strikes late in loading response; with 1.0 it is 60-63 %, the textbook
  share (Perry & Burnfield: about 60 % stance at a self-selected speed).
* **Heel strike**: a contact onset (a frame in contact whose previous frame is not). The first frame
  never counts, since the onset before it is unknown.
* **Gait cycle** (stride): from a heel strike to the next heel strike of the same foot. It counts when it
  lasts ``0.3``-``3`` s, the foot moved at least ``min_stride`` (fraction of the height) horizontally,
  and the other foot struck exactly once in between (feet alternate, as in walking; shuffles, hops and
  lunges in a mixed clip are left out).
* **Cadence**: steps per minute, ``120 / mean stride time`` (two steps per stride).
* **Stride length**: horizontal distance between the ankle's positions at the two strikes of a cycle.
* **Step width**: at each heel strike, the horizontal distance between the two ankles measured
  perpendicular to the direction of progression (the pelvis centre's horizontal velocity,
  smoothed over 0.5 s).
* **Walking speed**: horizontal displacement of the pelvis centre (midpoint of the hip joints) over a cycle
  divided by its duration.
* **Stance fraction**: share of a cycle's frames in which its foot is in contact; swing is the rest.
* **Knee flexion**: the angle between thigh (hip to knee) and shank (knee to ankle), degrees; 0 is a
  straight leg, positive bent.
* **Hip flexion**: the thigh's inclination from the downward vertical within the sagittal plane,
  degrees, positive when the knee is in front of the hip. The pelvis is taken as upright (a
  position-only, skeleton-independent definition: no trunk or pelvis frame is needed). The forward
  direction is ``cross(left_hip - right_hip, up)``; its sign is checked against the knees, which bend
  forward, so left-handed files work too.

Curves are time-normalised per cycle to 0-100 % in 101 samples (linear interpolation between frames).
Lengths are in the file's units; ``*_per_height`` values divide by the body height, and ``*_m`` / ``*_m_per_s``
values are in metres (by the motion's ``metadata["units"]`` where known, else the unit guessed from its
:attr:`~skelanim.core.motion.Motion.stature`, :func:`~skelanim.core.units.guess_unit`: CMU's files are in their own
unit). Up axis and height
come from :meth:`Motion.up_direction <skelanim.core.motion.Motion.up_direction>` (an upside-down source, Y
down, is read upright) and :attr:`Motion.height
<skelanim.core.motion.Motion.height>` (the animated pose, not only the rest pose).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.ndimage import gaussian_filter1d

from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.core.units import UNITS, guess_unit, motion_unit, signed_axis_name
from skelanim.errors import ShapeError, SkelanimError, SkeletonError
from skelanim.ops.contacts import find_feet, foot_contacts
from skelanim.ops.resample import repeat_loop

__all__ = [
    "GaitCycle", "GaitError", "GaitReport", "Leg", "angle_between", "bone_ancestor", "find_legs", "gait_analysis",
    "hip_flexion", "knee_flexion", "side_contacts",
]  # fmt: skip

SAMPLES = 101
SIDES = ("left", "right")
#: Where in a cycle of one foot the other foot's strike may fall (fractions of the cycle): about half-way in walking
#: and running; within 5 % of either end both feet land together (a jump, a hop), which is no gait cycle.
ALTERNATION = (0.05, 0.95)
#: A clip that loops (``metadata["loop"] == "wrap"``) shorter than this (seconds) is analysed as played in a row
#: (:func:`~skelanim.ops.repeat_loop`) to at least this long.
LOOPED_SECONDS = 4.0
#: Slowest mean pelvis speed over the gait cycles (heights/s) taken for a walk over the floor; below it the clip
#: walks in place (a treadmill capture), where contact detection by foot speed finds flickering, spurious strikes
#: (a Bandai walk held in place read 144 steps/min for its 110; the slowest walk of the shared mocap travels 0.27).
IN_PLACE_SPEED = 0.05
#: Contact speed threshold for gait events, in body heights per second (see the module docstring).
SPEED_FRACTION = 1.0
#: Contact height threshold, fraction of the body height (as :func:`~skelanim.ops.contacts.foot_contacts`).
HEIGHT_FRACTION = 0.05


class GaitError(SkelanimError):
    """No gait could be analysed: no legs, no heel strikes, or no valid gait cycle."""


@dataclass(frozen=True)
class Leg:
    """Joint indices of one leg; ``toe`` is ``None`` when the skeleton has no toe joints."""

    side: str
    hip: int
    knee: int
    ankle: int
    toe: int | None


@dataclass(frozen=True)
class GaitCycle:
    """One stride of one foot: frames ``start`` (heel strike) to ``end`` (its next heel strike)."""

    side: str
    start: int
    end: int
    stride_time: float
    stride_length: float
    speed: float
    stance_fraction: float


# ------------------------------------------------------------------------------------------ joints
def bone_ancestor(skeleton: Skeleton, joint: int) -> int | None:
    """The nearest ancestor at a non-zero rest distance from ``joint`` (``None`` for the root)."""
    tiny = 1e-6 * max(skeleton.height(), 1e-9)
    offset = skeleton.offsets[joint].clone()
    parent = int(skeleton.parents[joint])
    while parent >= 0 and float(offset.norm()) <= tiny:
        offset = offset + skeleton.offsets[parent]
        parent = int(skeleton.parents[parent])
    return parent if parent >= 0 and float(offset.norm()) > tiny else None


def find_legs(skeleton: Skeleton) -> dict[str, Leg]:
    """``{"left": Leg, "right": Leg}`` from the feet found by name (see the module docstring).

    Raises
    ------
    GaitError
        When no feet are found, or a foot has no knee and hip above it.
    """
    try:
        feet = find_feet(skeleton)
    except SkeletonError as err:
        raise GaitError(f"cannot analyse gait: {err.message}") from None
    legs = {}
    for k, side in enumerate(SIDES):
        ankle = feet[k]
        knee = bone_ancestor(skeleton, ankle)
        hip = None if knee is None else bone_ancestor(skeleton, knee)
        if knee is None or hip is None:
            raise GaitError(f"cannot analyse gait: no knee and hip above the {side} foot {skeleton.names[ankle]!r}")
        legs[side] = Leg(side, hip, knee, ankle, feet[2 + k] if len(feet) == 4 else None)
    return legs


# ------------------------------------------------------------------------------------------ angles
def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Unsigned angle in degrees between ``(..., 3)`` vectors (atan2 form, stable at 0 and 180)."""
    cross = np.linalg.norm(np.cross(a, b), axis=-1)
    return np.degrees(np.arctan2(cross, np.sum(a * b, axis=-1)))


def knee_flexion(positions: np.ndarray, leg: Leg) -> np.ndarray:
    """``(F,)`` knee flexion in degrees from ``(F, J, 3)`` positions (0 = straight)."""
    thigh = positions[:, leg.knee] - positions[:, leg.hip]
    shank = positions[:, leg.ankle] - positions[:, leg.knee]
    return angle_between(thigh, shank)


def _forward(positions: np.ndarray, legs: dict[str, Leg], up: int) -> np.ndarray:
    """``(F, 3)`` horizontal unit forward direction of the body (see the module docstring)."""
    up_vec = np.zeros(3)
    up_vec[up] = 1.0
    lateral = positions[:, legs["left"].hip] - positions[:, legs["right"].hip]
    fwd = np.cross(lateral, up_vec)
    fwd[:, up] = 0.0
    fwd /= np.maximum(np.linalg.norm(fwd, axis=-1, keepdims=True), 1e-12)
    # knees point forward: the knee lies in front of the hip-ankle line when the leg bends
    votes = 0.0
    for leg in legs.values():
        mid = 0.5 * (positions[:, leg.hip] + positions[:, leg.ankle])
        bend = knee_flexion(positions, leg)
        votes += float(np.sum(np.sum((positions[:, leg.knee] - mid) * fwd, axis=-1) * (bend > 10.0)))
    return -fwd if votes < 0 else fwd


def hip_flexion(positions: np.ndarray, leg: Leg, up: int, forward: np.ndarray) -> np.ndarray:
    """``(F,)`` hip flexion in degrees: the thigh's angle from the downward vertical in the sagittal plane,
    positive with the knee in front of the hip. ``forward`` is ``(F, 3)`` horizontal unit vectors."""
    thigh = positions[:, leg.knee] - positions[:, leg.hip]
    return np.degrees(np.arctan2(np.sum(thigh * forward, axis=-1), -thigh[:, up]))


# ------------------------------------------------------------------------------------------ contacts
def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and (exclusive) ends of the runs of True in a ``(F,)`` bool array."""
    d = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def _clean(contact: np.ndarray, min_len: int) -> np.ndarray:
    """Fill gaps shorter than ``min_len`` frames, then drop contacts shorter than that. Gaps touching
    either end and contacts touching the start are kept (their true length is unknown); a short contact
    at the very end is dropped, since its onset cannot be told from flicker."""
    c = contact.copy()
    for value in (False, True):
        for s, e in zip(*_runs(c == value)):
            if e - s < min_len and s > 0 and (e < len(c) or value):
                c[s:e] = not value
    return c


def side_contacts(
    motion: Motion,
    legs: dict[str, Leg] | None = None,
    *,
    min_phase: float = 0.1,
    up_axis: int | str | None = None,
    height: float | None = None,
) -> np.ndarray:
    """``(F, 2)`` bool contact of the left and right foot (ankle or toe), cleaned as the module says.
    ``up_axis`` (``"-y"`` for Y down) and ``height`` default to :meth:`Motion.up_direction` and
    :attr:`Motion.height`."""
    legs = find_legs(motion.skeleton) if legs is None else legs
    if up_axis is None:
        up_axis = signed_axis_name(*motion.up_direction())
    height = motion.height if height is None else height
    cols = []
    min_len = max(1, round(min_phase * motion.fps))
    for side in SIDES:
        leg = legs[side]
        joints = [leg.ankle] + ([leg.toe] if leg.toe is not None else [])
        labels = foot_contacts(
            motion,
            joints=joints,
            up_axis=up_axis,
            height=height,
            height_threshold=HEIGHT_FRACTION * height,
            speed_threshold=SPEED_FRACTION * height,
        )
        any_joint = np.asarray(np.asarray(labels).reshape(motion.num_frames, -1).any(axis=1), dtype=bool)
        cols.append(_clean(any_joint, min_len))
    return np.stack(cols, axis=1)


def _onsets(contact: np.ndarray) -> np.ndarray:
    return np.flatnonzero(contact[1:] & ~contact[:-1]) + 1


# ------------------------------------------------------------------------------------------ report
def _mean(values: list[float] | np.ndarray) -> float:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


def _mean_sd(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sd = curves.std(axis=0, ddof=1) if curves.shape[0] > 1 else np.zeros(curves.shape[1])
    return curves.mean(axis=0), sd


@dataclass
class GaitReport:
    """The result of :func:`gait_analysis`.

    Attributes
    ----------
    fps, duration, height:
        Of the motion (height in file units).
    units:
        The motion's ``metadata["units"]`` when known.
    contacts:
        ``(F, 2)`` bool foot contact, columns left and right.
    heel_strikes:
        ``{"left": (S_l,), "right": (S_r,)}`` frame indices.
    cycles:
        The ``C`` valid gait cycles, in time order.
    step_widths:
        ``(W,)`` step widths at heel strikes, file units.
    knee_flexion, hip_flexion:
        ``(C, 101)`` degrees per cycle (row ``i`` for ``cycles[i]``, its own side's leg), 0-100 % of the cycle.
    loop_plays:
        How many times a looping clip was played in a row to be analysed (1: as it is); frames, strikes, cycles
        and ``duration`` are of the played motion.
    stature:
        The motion's :attr:`~skelanim.core.motion.Motion.stature` (file units), from which the unit is guessed
        where the file does not name it, as every exporter guesses it; ``None``: from ``height``.
    """

    fps: float
    duration: float
    height: float
    units: str | None
    contacts: np.ndarray
    heel_strikes: dict[str, np.ndarray]
    cycles: list[GaitCycle]
    step_widths: np.ndarray
    knee_flexion: np.ndarray
    hip_flexion: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)
    loop_plays: int = 1
    stature: float | None = None

    @property
    def num_cycles(self) -> int:
        """Number of valid gait cycles ``C``."""
        return len(self.cycles)

    @property
    def stride_time(self) -> float:
        """Mean cycle duration in seconds."""
        return _mean([c.stride_time for c in self.cycles])

    @property
    def cadence(self) -> float:
        """Steps per minute, ``120 / stride_time``."""
        return 120.0 / self.stride_time

    @property
    def metres_per_unit(self) -> float:
        """Metres per length unit: the file's units where they are known (:data:`~skelanim.core.units.UNITS`),
        else the unit guessed from the stature (:func:`~skelanim.core.units.guess_unit`), as ``skelanim info`` and
        the exporters guess it."""
        return UNITS[motion_unit(self.units, self._unit_size)]

    @property
    def _unit_size(self) -> float:
        return self.height if self.stature is None else self.stature

    @property
    def stride_length(self) -> float:
        """Mean stride length, file units."""
        return _mean([c.stride_length for c in self.cycles])

    @property
    def step_width(self) -> float:
        """Mean step width, file units (NaN when no heel strike had a tracked other foot)."""
        return _mean(self.step_widths)

    @property
    def walking_speed(self) -> float:
        """Mean walking speed, file units per second."""
        return _mean([c.speed for c in self.cycles])

    @property
    def stance_fraction(self) -> float:
        """Mean share of a cycle spent in stance (0-1)."""
        return _mean([c.stance_fraction for c in self.cycles])

    @property
    def stance_swing_ratio(self) -> float:
        """Stance time over swing time (about 1.5 for a normal walk)."""
        s = self.stance_fraction
        return s / (1.0 - s) if s < 1.0 else float("inf")

    def curve(self, name: str, side: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation ``(101,)`` each of ``"knee_flexion"`` or ``"hip_flexion"`` over the
        cycles of ``side`` (``None``: both sides pooled). The sd is 0 for a single cycle."""
        curves = {"knee_flexion": self.knee_flexion, "hip_flexion": self.hip_flexion}.get(name)
        if curves is None:
            raise ShapeError(f"unknown curve {name!r}; expected knee_flexion or hip_flexion")
        rows = [i for i, c in enumerate(self.cycles) if side is None or c.side == side]
        if not rows:
            return np.full(SAMPLES, np.nan), np.full(SAMPLES, np.nan)
        return _mean_sd(curves[rows])

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (NaN becomes ``None``)."""

        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        h = self.height
        out: dict[str, Any] = {
            "cadence": num(self.cadence),
            "stride_time_s": num(self.stride_time),
            "stride_length": num(self.stride_length),
            "stride_length_per_height": num(self.stride_length / h),
            "step_width": num(self.step_width),
            "step_width_per_height": num(self.step_width / h),
            "walking_speed": num(self.walking_speed),
            "walking_speed_per_height": num(self.walking_speed / h),
            "stance_fraction": num(self.stance_fraction),
            "swing_fraction": num(1.0 - self.stance_fraction),
            "stance_swing_ratio": num(self.stance_swing_ratio),
            "num_cycles": self.num_cycles,
            "num_heel_strikes": int(sum(len(v) for v in self.heel_strikes.values())),
            "height": h,
            "units": self.units,
            "units_guess": guess_unit(self._unit_size),  # from the stature, as `skelanim info` guesses it
            # the lengths in metres, by the file's units where known, else by the guess
            "stride_length_m": num(self.stride_length * self.metres_per_unit),
            "step_width_m": num(self.step_width * self.metres_per_unit),
            "walking_speed_m_per_s": num(self.walking_speed * self.metres_per_unit),
            "fps": self.fps,
            "duration_s": self.duration,
            "loop_plays": self.loop_plays,
            "heel_strikes": {k: v.tolist() for k, v in self.heel_strikes.items()},
            "cycles": [asdict(c) for c in self.cycles],
        }
        for name in ("knee_flexion", "hip_flexion"):
            mean, sd = self.curve(name)
            out[name] = {"mean": [round(float(v), 3) for v in mean], "sd": [round(float(v), 3) for v in sd]}
        return out


def gait_analysis(
    motion: Motion,
    *,
    min_phase: float = 0.1,
    min_stride: float = 0.1,
    max_cycle: float = 3.0,
    min_cycle: float = 0.3,
) -> GaitReport:
    """Find gait cycles from foot contacts and measure them (definitions in the module docstring).

    Parameters
    ----------
    motion:
        A walking motion (any skeleton with left/right feet found by name, any up axis and units).
    min_phase:
        Contacts and gaps shorter than this (seconds) are treated as flicker.
    min_stride:
        Least stride length of a valid cycle, as a fraction of the skeleton height.
    max_cycle, min_cycle:
        Bounds on a valid cycle's duration, seconds, both included.

    Returns
    -------
    GaitReport

    Raises
    ------
    GaitError
        When the motion is empty, has no legs, has no valid gait cycle (not a walk) or walks in place (its pelvis
        under :data:`IN_PLACE_SPEED` heights/s over its cycles: a treadmill capture).
    """
    if motion.num_frames < 3:
        raise GaitError(f"cannot analyse gait of a motion with {motion.num_frames} frame(s)")
    plays = 1
    if motion.metadata.get("loop") == "wrap" and motion.duration < LOOPED_SECONDS:
        # a loop (DeepMimic's walk is one stride): played in a row until it lasts long enough to hold cycles
        plays = math.ceil(LOOPED_SECONDS / max(motion.duration, 1e-9))
        motion = repeat_loop(motion, plays)
    legs = find_legs(motion.skeleton)
    pos = motion.positions().numpy()
    (up, sign), height = motion.up_direction(), motion.height
    contacts = side_contacts(motion, legs, min_phase=min_phase, up_axis=signed_axis_name(up, sign), height=height)
    pos[..., up] *= sign  # an upside-down source (Y down) read upright: flexion and forward need up along +up
    forward = _forward(pos, legs, up)
    horiz = [a for a in range(3) if a != up]
    root = 0.5 * (pos[:, legs["left"].hip, horiz] + pos[:, legs["right"].hip, horiz])  # pelvis centre

    strikes = {side: _onsets(contacts[:, k]) for k, side in enumerate(SIDES)}
    cycles: list[GaitCycle] = []
    knees: list[np.ndarray] = []
    hips: list[np.ndarray] = []
    for k, side in enumerate(SIDES):
        leg = legs[side]
        knee = knee_flexion(pos, leg)
        hip = hip_flexion(pos, leg, up, forward)
        other = strikes[SIDES[1 - k]]
        for s, e in zip(strikes[side][:-1], strikes[side][1:]):
            time = (e - s) / motion.fps
            stride = float(np.linalg.norm(pos[e, leg.ankle, horiz] - pos[s, leg.ankle, horiz]))
            between = other[(other > s) & (other < e)]
            # one strike of the other foot, not at the ends of the cycle (walking and running put it near 50 %);
            # at an end the feet land together: a jump or a hop (CMU 01_01's strikes pair up a frame apart)
            alternates = len(between) == 1 and ALTERNATION[0] <= (between[0] - s) / (e - s) <= ALTERNATION[1]
            if not (min_cycle <= time <= max_cycle) or stride < min_stride * height or not alternates:
                continue
            speed = float(np.linalg.norm(root[e] - root[s])) / time
            cycles.append(GaitCycle(side, int(s), int(e), time, stride, speed, float(contacts[s:e, k].mean())))
            grid = np.linspace(s, e, SAMPLES)
            knees.append(np.interp(grid, np.arange(len(knee)), knee))
            hips.append(np.interp(grid, np.arange(len(hip)), hip))
    if not cycles:
        counts = ", ".join(f"{len(v)} {k}" for k, v in strikes.items())
        raise GaitError(
            f"no gait cycles found ({counts} heel strikes in {motion.duration:.2f} s; a cycle needs two strikes "
            f"of one foot {min_cycle:g}-{max_cycle:g} s and {min_stride:g} heights apart, with one strike of the "
            f"other foot between them, {ALTERNATION[0]:.0%}-{ALTERNATION[1]:.0%} of the way); is this a walk?"
        )
    speed = float(np.mean([c.speed for c in cycles]))
    if speed < IN_PLACE_SPEED * height:  # the feet are found planted where they stop: on a belt they slide with it
        raise GaitError(f"the pelvis travels {speed / height:.3f} heights/s over its gait cycles: a walk in place "
                        f"(a treadmill?), whose stance feet move with the ground; gait analysis needs the body to "
                        f"travel over a still floor (at least {IN_PLACE_SPEED:g} heights/s)")  # fmt: skip
    order = np.argsort([c.start for c in cycles], kind="stable")
    cycles = [cycles[i] for i in order]

    # step width: at each strike, the distance between the ankles across the direction of progression
    velocity = np.gradient(gaussian_filter1d(root, sigma=max(1.0, 0.5 * motion.fps), axis=0, mode="nearest"), axis=0)
    widths = []
    for k, side in enumerate(SIDES):
        other_ankle = legs[SIDES[1 - k]].ankle
        for s in strikes[side]:
            v = velocity[s] / max(float(np.linalg.norm(velocity[s])), 1e-12)
            lateral = np.array([-v[1], v[0]])
            if np.linalg.norm(velocity[s]) * motion.fps < 0.05 * height:  # standing still: no progression
                continue
            widths.append(abs(float((pos[s, legs[side].ankle, horiz] - pos[s, other_ankle, horiz]) @ lateral)))
    return GaitReport(
        fps=motion.fps,
        duration=motion.duration,
        height=height,
        units=motion.metadata.get("units"),
        contacts=contacts,
        heel_strikes=strikes,
        cycles=cycles,
        step_widths=np.asarray(widths),
        knee_flexion=np.stack(knees)[order],
        hip_flexion=np.stack(hips)[order],
        extra={"legs": {s: asdict(legs[s]) for s in SIDES}, "joint_names": motion.skeleton.names},
        loop_plays=plays,
        stature=motion.stature,
    )
