"""Compare two sets of motions with every metric of :mod:`skelanim.metrics` (``skelanim evaluate A B``).

Per set (means over its motions weighted by their duration, as their frame counts at the common rate: a clip at
120 fps weighs as much as the same clip at 30; lengths divided by the set's median height):
``jerk`` (heights/s^3, the mean over the body's joints: a static dummy root, :func:`~skelanim.data.rig.body_root`,
left out; motions of 4 frames or more), ``foot_skating`` (heights/s; motions of 4 frames or more),
``ground_penetration`` (heights), each also raw, in the set's file units (``jerk_raw`` in units/s^3,
``foot_skating_raw`` in units/s, ``ground_penetration_raw`` in units: the normalised value times the set's
``height``; ``units`` names the unit, :func:`~skelanim.core.units.motion_unit`, and a set whose motions are in
different units has no raw values, ``None`` with a note), ``bone_length_error`` (relative, against the
skeleton's offsets, also where translation channels animate the bones, so a bone they stretch counts, in every frame
alike too; a bone whose offset is zero, its length carried by the channels alone, against its mean measured length;
the link from a static dummy root to the body is no bone) and, with a feature
extractor, ``diversity`` (the mean distance between feature vectors of the extractor's windows, 64 frames at
stride 8 for the recogniser, not of whole motions: a long clip weighs as many windows as it holds); with
expected contents, ``recognised`` (share of motions whose predicted content is the expected one). A measure no motion of a set can give is ``None``, with a note; a motion too short
for jerk or foot skating in a set of longer ones is left out of that mean.

Between the sets: ``fid`` (with a feature extractor) and, when the sets pair up (same count and skeleton
topology, else ``None`` with a note; paired in the given order, over the common frames), ``mpjpe`` (with root motion),
``mpjpe_root_relative`` (the body root subtracted per frame: joint 0, or its child where joint 0 is a static
dummy such as Bandai-Namco's ``joint_Root``, :func:`~skelanim.data.rig.body_root`, which is then left out of
the mean; both in heights) and
``angle_deg`` (local rotations), all over the body's joints (a static dummy root left out). A motion of B at
another frame rate than its pair is resampled to it first (frames are paired by time), and one whose skeleton is
of another height at rest (other units or size, more than :data:`SAME_HEIGHT` apart) is scaled to its pair's, each
with a note. ``paired_raw`` holds ``mpjpe`` and ``mpjpe_root_relative`` in A's file units (``units``).

Set A is the reference (real motion; B the generated, predicted or retargeted one): its floor (the median over
its motions of the lowest body joint, every motion turned so that its up direction, :meth:`Motion.up_direction`,
is +Y, so an upside-down source with Y down, or a set that mixes Z-up and Y-up files (with a note), is measured
upright; a static dummy root left out) and its median :attr:`Motion.height` are
B's too, so that B is judged against the ground of the real motion it is compared with, and a B sunk below it
shows its penetration, in whichever axes either set was written (a note names up axes that differ). Sets on
different skeletons or heights (more than :data:`SAME_HEIGHT` apart) cannot share them: each is then measured
against its own, with a note naming the difference; so is a set whose
own motions differ in height that much. Jerk and foot skating grow with the frame rate (finite differences of
capture noise): where the motions' rates differ, the faster ones' are taken at the slowest rate, with a note, at
the sample times within each clip's duration only (not the held last frame of
:func:`~skelanim.ops.resample.resample`). FID from no more windows than feature dimensions is noted as biased (their covariance is singular); a set
the feature extractor cannot take (another skeleton, a clip too short for it) has ``None`` feature metrics, with a
note. Foot skating measures each foot joint against its own lowest height in its motion, so a foot that hovers
while it slides is not excused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_to_matrix
from skelanim.core.units import motion_unit
from skelanim.data.rig import body_root
from skelanim.errors import SkelanimError, SkeletonError
from skelanim.metrics.distribution import diversity, fid
from skelanim.metrics.kinematic import angle_error, bone_length_error, foot_skating, ground_penetration, jerk, mpjpe

__all__ = ["FEET_THRESHOLD", "RAW", "SAME_HEIGHT", "compare_sets", "set_summary"]

#: Foot-contact threshold ``H`` of :func:`~skelanim.metrics.kinematic.foot_skating`, fraction of the height.
FEET_THRESHOLD = 0.02
#: Relative difference of the two sets' median heights up to which they share height and floor.
SAME_HEIGHT = 0.1
#: The measures of :func:`set_summary` that are lengths (per time): they come normalised and raw (``<name>_raw``).
RAW = ("jerk", "foot_skating", "ground_penetration")

Embedder = Callable[[Sequence[Motion]], tuple[Tensor, list[str]]]


def _feet(motion: Motion) -> list[int]:
    from skelanim.ops.contacts import find_feet

    try:
        return find_feet(motion.skeleton)
    except SkeletonError:  # skeletons without named feet skip foot skating (a bug elsewhere is not hidden)
        return []


def _bones(motion: Motion) -> list[int]:
    """Child joints of the skeleton's bones: every joint with a parent but the body's root below a static dummy
    (its link to the dummy is the root's travel, not a bone)."""
    first = body_root(motion)
    return [j for j in range(1, motion.skeleton.num_joints) if j > first]


def _rest_lengths(motion: Motion, positions: Tensor) -> Tensor:
    """``(J, 3)`` vectors whose lengths are the reference bone lengths of ``motion``: its skeleton's offsets, and
    for a bone whose offset is zero (its length carried by translation channels alone) its mean measured length
    (``positions`` ``(F, J, 3)``). The offsets also where translation channels animate the bones: each bone's own
    mean length had been the reference there, so a bone stretched by 10 % in every frame scored 0."""
    offsets = motion.skeleton.offsets.to(positions.dtype).clone()
    lengths = offsets.norm(dim=-1)
    parents = motion.skeleton.parents.tolist()
    for j in range(1, len(parents)):
        if parents[j] >= 0 and lengths[j] <= 1e-9 * max(float(lengths.max()), 1e-300) and positions.shape[0]:
            offsets[j] = 0.0
            offsets[j, 0] = (positions[:, j] - positions[:, parents[j]]).norm(dim=-1).mean()
    return offsets


def _within(motion: Motion, fps: float) -> Tensor:
    """``(F', J, 3)`` positions of ``motion`` taken at ``fps`` (:func:`~skelanim.ops.resample.sample_frames`) at the
    sample times within its duration only: :func:`~skelanim.ops.resample.resample` holds the last frame where the
    last sample time falls past the end, a frame at the wrong time (a cubic path with jerk 6 at 120 fps read 231 at
    30 fps from 43 frames)."""
    from skelanim.ops.resample import sample_frames, sample_times

    times = sample_times(motion.num_frames, motion.fps, fps)  # (F',), clamped to the last frame
    unclamped = torch.arange(len(times), dtype=torch.float64) * (motion.fps / fps)
    return sample_frames(motion, times[unclamped <= motion.num_frames - 1 + 1e-9], fps).positions()


def _median(values: Sequence[float]) -> float:
    """The median (the mean of the two middle values of an even count)."""
    return float(torch.tensor(values, dtype=torch.float64).quantile(0.5))


def _upright(motion: Motion, direction: tuple[int, float]) -> Motion:
    """``motion`` turned so that its up ``direction`` (:meth:`Motion.up_direction`) is +Y
    (:func:`~skelanim.core.units.up_to_y_matrix`, a proper rotation about the origin: the up coordinate keeps its
    value, an upside-down source's is negated), so the floor is the lowest point along Y for every motion of every
    set, a static dummy root is the identity again, and a motion pairs with its copy in other axes. No measure of one
    motion changes with the turn (speeds, jerk, bone lengths)."""
    from skelanim.ops.normalize import turned_up

    axis, sign = direction
    return turned_up(motion, 1, up_axis=("-" if sign < 0 else "") + "xyz"[axis])[0]


def _ground(motions: Sequence[Motion], positions: list[Tensor], heights: list[float]) -> tuple[int, float, float]:
    """Up axis (Y: the motions are turned upright, :func:`_upright`), median height (of the motions' ``heights``)
    and floor (the median lowest body joint along Y) of a set."""
    height = _median(heights)
    floor = _median([float(p[:, body_root(m) :, 1].min()) for m, p in zip(motions, positions)])
    return 1, height, floor


def _as_set(motions: Motion | Sequence[Motion]) -> list[Motion]:
    """``motions`` as a list: one bare :class:`Motion` is a set of one, as the plots and the viewer take it (iterated,
    a Motion gives its frames as one-frame motions)."""
    return [motions] if isinstance(motions, Motion) else list(motions)


def set_summary(
    motions: Motion | Sequence[Motion],
    *,
    up_axis: int,
    height: float,
    floor: float,
    positions: list[Tensor] | None = None,
    jerk_fps: float | None = None,
) -> dict[str, Any]:
    """Quality measures of one set (module docstring).

    Parameters
    ----------
    motions : Motion or sequence of Motion
        The set (one bare Motion is a set of one).
    up_axis : int
        Up axis (0, 1 or 2).
    height : float
        Normalising length.
    floor : float
        Ground level along the up axis.
    positions : list of Tensor, optional
        ``(F, J, 3)`` world positions of each motion (computed when absent).
    jerk_fps : float, optional
        Take the jerk and the foot skating of motions faster than this at this rate (resampled, at the sample
        times within the clip's duration only): both grow with the rate (a CMU walk at 120 fps skated 20 % more
        than the same walk at 30). A motion under 4 frames at the rate they are taken at is left out of both.
        Also the common rate of the weights (default the set's slowest).

    Returns
    -------
    dict of str to float or None
        ``motions``, ``frames`` (their own, summed), ``jerk``, ``foot_skating``, ``ground_penetration``,
        ``bone_length_error`` (``None`` where no motion can give it: jerk and foot skating need 4 frames, foot
        skating named feet; jerk over the body's joints, a static dummy root left out), each mean weighted by the
        motions' durations (a motion of ``F`` frames at ``fps`` weighs ``(F - 1) * rate / fps + 1``, its frame
        count at the common ``rate``: 1 for a single frame, and a clip at 120 fps no more than itself at 30, where
        its frame count had weighed 4 times as much); and the :data:`RAW` measures times ``height`` as
        ``<name>_raw`` (in ``height``'s units).
    """
    motions = _as_set(motions)
    positions = positions or [m.positions() for m in motions]
    common = jerk_fps if jerk_fps is not None else min((m.fps for m in motions), default=1.0)
    sums = {"jerk": 0.0, "foot_skating": 0.0, "ground_penetration": 0.0, "bone_length_error": 0.0}
    weights = dict.fromkeys(sums, 0.0)
    for m, p in zip(motions, positions, strict=True):
        f = p.shape[0]
        w = (f - 1) * common / m.fps + 1 if f else 0.0  # its duration, in frames at the common rate
        slow = jerk_fps if jerk_fps is not None and m.fps > jerk_fps * (1 + 1e-6) else None  # the rate to take
        at_rate = _within(m, slow) if slow is not None and f >= 4 else p
        rate = slow if slow is not None else m.fps
        if at_rate.shape[0] >= 4:  # counted at the rate taken: 8 frames at 120 fps are 2 at 30
            sums["jerk"] += w * jerk(at_rate[:, body_root(m) :], rate, height=height)  # a static dummy is no body joint
            weights["jerk"] += w
            feet = _feet(m)
            if feet:
                threshold = FEET_THRESHOLD * height
                sums["foot_skating"] += w * foot_skating(at_rate, feet, rate, up_axis=up_axis, threshold=threshold,
                                                         height=height)  # fmt: skip
                weights["foot_skating"] += w
        body = p[:, body_root(m) :]
        sums["ground_penetration"] += w * ground_penetration(body, up_axis=up_axis, floor=floor, height=height)
        sums["bone_length_error"] += w * bone_length_error(p, m.skeleton.parents.tolist(), _rest_lengths(m, p),
                                                           bones=_bones(m))  # fmt: skip
        weights["ground_penetration"] += w
        weights["bone_length_error"] += w
    frames = sum(p.shape[0] for p in positions)
    means = {k: (v / weights[k] if weights[k] else None) for k, v in sums.items()}
    raw = {f"{k}_raw": (None if (v := means[k]) is None else v * height) for k in RAW}
    return {"motions": len(motions), "frames": frames, **means, **raw}


def _paired(a: Sequence[Motion], b: Sequence[Motion], rest: dict[str, list[float]], height: float,
            notes: list[str]) -> dict[str, float] | None:
    """The paired measures; a motion of B whose skeleton stands more than :data:`SAME_HEIGHT` taller or shorter at
    rest than its pair's (other units or another size) is scaled to its pair's first, with a note. The rest height,
    not the motion's: a dash's crouch against a bow had been read as another size, and scaled by 1.14."""
    from skelanim.ops.resample import resample

    if len(a) != len(b):
        notes.append(f"no paired measures: the sets hold {len(a)} and {len(b)} motions")
        return None
    if not all(x.skeleton.same_topology(y.skeleton) for x, y in zip(a, b)):
        notes.append("no paired measures: a pair's skeletons differ in their joints")
        return None
    totals = {"mpjpe": 0.0, "mpjpe_root_relative": 0.0, "angle_deg": 0.0}
    frames = 0
    retimed = rescaled = 0
    for x, y, hx, hy in zip(a, b, rest["a"], rest["b"]):
        if abs(y.fps / x.fps - 1) > 1e-6:  # pair frames by time, not by index
            y, retimed = resample(y, x.fps), retimed + 1
        n = min(x.num_frames, y.num_frames)
        r = max(body_root(x), body_root(y))  # one joint for both: the hips where either has a dummy above them
        px, py = x[:n].positions()[:, r:], y[:n].positions()[:, r:]  # the dummy is not a body joint
        if hx > 0 and hy > 0 and abs(hy / hx - 1) > SAME_HEIGHT:  # centimetres against metres, or another size
            py, rescaled = py * (hx / hy), rescaled + 1
        totals["mpjpe"] += float(mpjpe(px, py, height=height).sum())
        totals["mpjpe_root_relative"] += float(mpjpe(px - px[:, :1], py - py[:, :1], height=height).sum())
        totals["angle_deg"] += float(
            angle_error(quat_to_matrix(x.rotations[:n, r:]), quat_to_matrix(y.rotations[:n, r:])).sum()
        )
        frames += n
    if retimed:
        notes.append(f"{retimed} motion(s) of set b resampled to their pair's frame rate for the paired measures")
    if rescaled:
        notes.append(f"{rescaled} motion(s) of set b differ from their pair in height (units or size): scaled to "
                     "their pair's height for the paired position measures")
    return {k: v / max(frames, 1) for k, v in totals.items()}


def compare_sets(a: Motion | Sequence[Motion], b: Motion | Sequence[Motion], *, embed: Embedder | None = None,
                 contents_a: Sequence[str] | None = None, contents_b: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """All metrics for two sets of motions (module docstring).

    Parameters
    ----------
    a, b : Motion or sequence of Motion
        The sets (non-empty; one bare Motion is a set of one; each motion is turned Y up first, so a set may mix up
        directions, with a note).
    embed : callable, optional
        ``embed(motions) -> (features (W, D), predicted content per motion)``, e.g. a recogniser's; when it
        cannot handle a set (another skeleton, a clip too short for it) it should raise ``ValueError`` or a
        :class:`~skelanim.errors.SkelanimError` and the feature metrics are left out (``null``) with the reason
        under ``"notes"``.
    contents_a, contents_b : sequence of str, optional
        Expected content of each motion (for ``recognised``).

    Returns
    -------
    dict
        ``{"a": {...}, "b": {...}, "fid": float | None, "paired": {...} | None, "paired_raw": {...} | None,
        "height": h, "floor": f, "units": u, "notes": [...]}``; each set's dict has the ``height`` and ``floor`` it
        was measured with and its ``units`` (the length unit of its files, ``None`` where they differ), and the
        top-level ones are ``None`` when the sets did not share them. ``paired_raw`` is ``mpjpe`` and
        ``mpjpe_root_relative`` in A's units (``None`` without paired measures or where A mixes units).
    """
    a, b = _as_set(a), _as_set(b)
    if not a or not b:
        raise ValueError("both sets need at least one motion")
    directions = {"a": [m.up_direction() for m in a], "b": [m.up_direction() for m in b]}
    originals = {"a": a, "b": b}  # for the feature extractor, which finds its own up axis (the recogniser turns
    # each motion onto its rig's up, Recognizer.motions_dataset)
    a = [_upright(m, d) for m, d in zip(a, directions["a"])]
    b = [_upright(m, d) for m, d in zip(b, directions["b"])]
    pos_a, pos_b = [m.positions() for m in a], [m.positions() for m in b]
    heights = {"a": [m.height for m in a], "b": [m.height for m in b]}  # each an FK of 64 frames: once
    for motion, height in zip([*a, *b], [*heights["a"], *heights["b"]]):
        if not height > 0:  # every length metric is a fraction of it
            raise SkeletonError("the motion has no height (all its joints at one level along its up axis): the "
                                "metrics are fractions of it", path=motion.metadata.get("path"))  # fmt: skip
    own = {"a": _ground(a, pos_a, heights["a"]), "b": _ground(b, pos_b, heights["b"])}
    notes: list[str] = []
    for key in ("a", "b"):
        ups = sorted({f"{'+' if s > 0 else '-'}{'XYZ'[axis]}" for axis, s in directions[key]})
        if len(ups) > 1:
            notes.append(f"set {key} mixes up directions ({', '.join(ups)}): each motion is turned Y up first")
    # sizes compared at rest: a crouch or a bow is no other size (a set of one Bandai skeleton spans 119 to 175 cm
    # in its motions' heights, 184 to 194 cm at rest)
    rest = {k: [m.skeleton.height() for m in s] for k, s in (("a", a), ("b", b))}
    size = {k: _median(v) for k, v in rest.items()}
    mixed = [k for k in ("a", "b") if size[k] > 0 and any(abs(h / size[k] - 1) > SAME_HEIGHT for h in rest[k])]
    for key in mixed:
        low, high = min(rest[key]), max(rest[key])
        notes.append(f"set {key} mixes skeletons of heights {low:.4g} to {high:.4g} at rest (other skeletons or "
                     f"units): its median motion height {own[key][1]:.4g} normalises them all; compare like with like")  # fmt: skip
    units = {k: {motion_unit(m.metadata.get("units"), m.stature) for m in s} for k, s in (("a", a), ("b", b))}
    for key in ("a", "b"):
        if len(units[key]) > 1:
            notes.append(f"set {key} mixes length units ({', '.join(sorted(units[key]))}): no raw values, only "
                         "height-normalised ones")  # fmt: skip
    axes = {k: ", ".join(sorted({"XYZ"[axis] for axis, _ in directions[k]})) for k in ("a", "b")}
    joints = a[0].skeleton.topology_difference(b[0].skeleton)  # None for the same skeleton
    same_size = size["b"] > 0 and abs(size["a"] / size["b"] - 1) <= SAME_HEIGHT
    shared = joints is None and not mixed and same_size  # up axes may differ: every motion is turned Y up above
    up, height, floor = own["a"]  # A is the reference
    unit = {k: next(iter(v)) if len(v) == 1 else None for k, v in units.items()}
    out: dict[str, Any] = {"height": height if shared else None, "floor": floor if shared else None,
                           "units": unit["a"] if shared else None, "notes": notes}  # fmt: skip
    if axes["a"] != axes["b"]:  # (sets that mix the same axes do not differ: each mix is noted above)
        notes.append(f"the sets differ in up axis ({axes['a']} in set a, {axes['b']} in set b): every motion is turned "
                     "Y up first")  # fmt: skip
    if not shared and not mixed:  # name what differs, with its values
        differ = [] if joints is None else [f"skeleton (set b's first motion: {joints})"]
        if not same_size:
            differ.append(f"size (heights {own['a'][1]:.4g} against {own['b'][1]:.4g}, skeletons "
                          f"{size['b'] / size['a']:.3g} times as tall at rest)")  # fmt: skip
        notes.append(f"the sets differ in {' and '.join(differ)}: each is measured against its own height and floor")
    rates = [m.fps for m in [*a, *b]]
    jerk_fps = min(rates) if max(rates) > min(rates) * (1 + 1e-6) else None
    if jerk_fps is not None:
        notes.append(f"the motions' frame rates differ: jerk and foot skating, which grow with the rate, are taken at "
                     f"{jerk_fps:g} fps")  # fmt: skip
    feats: dict[str, Tensor] = {}
    for key, motions, pos, contents in (("a", a, pos_a, contents_a), ("b", b, pos_b, contents_b)):
        ground = (up, height, floor) if shared else own[key]
        out[key] = set_summary(motions, up_axis=ground[0], height=ground[1], floor=ground[2], positions=pos,
                               jerk_fps=jerk_fps)  # fmt: skip
        for measure in ("jerk", "foot_skating"):
            if out[key][measure] is None:
                notes.append(f"set {key}: no {measure} (it needs motions of 4 frames or more"
                             + (" with named feet)" if measure == "foot_skating" else ")"))  # fmt: skip
        out[key]["height"], out[key]["floor"], out[key]["units"] = ground[1], ground[2], unit[key]
        if unit[key] is None:  # the set's motions in other units: a raw mean would add centimetres to metres
            out[key].update(dict.fromkeys([f"{k}_raw" for k in RAW]))
        out[key]["diversity"] = None
        out[key]["recognised"] = None
        if embed is None:
            continue
        try:
            f, predicted = embed(originals[key])
        except (ValueError, SkelanimError) as err:  # another skeleton, or a clip too short for it (a 1-frame file)
            out["notes"].append(f"set {key}: no recogniser features ({err})")
            continue
        feats[key] = f
        if 2 <= len(f) <= f.shape[-1]:  # a covariance of lower rank than its size: FID is biased (Chong & Forsyth 2020)
            notes.append(f"set {key}: {len(f)} recogniser windows for {f.shape[-1]} feature dimensions: fid from "
                         "so few samples is biased upward; compare fids of sets of like size")  # fmt: skip
        if len(f) < 2:
            notes.append(f"set {key}: one recogniser window only, so no diversity and no fid")
        else:
            out[key]["diversity"] = diversity(f)
        if contents is not None:
            out[key]["recognised"] = sum(p == c for p, c in zip(predicted, contents)) / len(contents)
    out["fid"] = fid(feats["a"], feats["b"]) if len(feats) == 2 and min(len(feats["a"]), len(feats["b"])) >= 2 else None
    out["paired"] = _paired(a, b, rest, height, notes)
    keep = out["paired"] is not None and unit["a"] is not None  # in A's heights: A's units times its height
    out["paired_raw"] = {k: out["paired"][k] * height for k in ("mpjpe", "mpjpe_root_relative")} if keep else None
    return out
