"""Compare two sets of motions with every metric of :mod:`skelanim.metrics` (``skelanim evaluate A B``).

Per set (frame-weighted means over its motions, lengths divided by the set's median height):
``jerk`` (heights/s^3), ``foot_skating`` (heights/s), ``ground_penetration`` (heights), ``bone_length_error``
(relative, against the skeleton's offsets, or the mean length where joints carry translation channels; joints
moved by their translation channels are not bones) and, with a feature extractor, ``diversity``; with expected
contents, ``recognised`` (share of motions whose predicted content is the expected one).

Between the sets: ``fid`` (with a feature extractor) and, when the sets pair up (same count and skeleton
topology; paired in the given order, over the common frames), ``mpjpe`` (with root motion),
``mpjpe_root_relative`` (the body root subtracted per frame: joint 0, or its child where joint 0 is a static
dummy such as Bandai-Namco's ``joint_Root``, :func:`~skelanim.data.rig.body_root`, which is then left out of
the mean; both in heights) and
``angle_deg`` (local rotations).

The floor (for ground penetration) and the height are shared by both sets: medians over all their motions
of the lowest joint's height and of :attr:`Motion.height`, so that generated motion is judged against the
same ground as the real motion it is compared with. Sets on different skeletons, up axes or heights (more
than :data:`SAME_HEIGHT` apart) cannot share them: each is then measured against its own, with a note. Foot skating measures each foot joint against its own
lowest height in its motion, so a foot that hovers while it slides is not excused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_to_matrix
from skelanim.data.rig import body_root
from skelanim.metrics.distribution import diversity, fid
from skelanim.metrics.kinematic import angle_error, bone_length_error, foot_skating, ground_penetration, jerk, mpjpe

__all__ = ["FEET_THRESHOLD", "SAME_HEIGHT", "compare_sets", "set_summary"]

#: Foot-contact threshold ``H`` of :func:`~skelanim.metrics.kinematic.foot_skating`, fraction of the height.
FEET_THRESHOLD = 0.02
#: Relative difference of the two sets' median heights up to which they share height and floor.
SAME_HEIGHT = 0.1

Embedder = Callable[[Sequence[Motion]], tuple[Tensor, list[str]]]


def _feet(motion: Motion) -> list[int]:
    from skelanim.ops.contacts import find_feet

    try:
        return find_feet(motion.skeleton)
    except Exception:  # noqa: BLE001 - skeletons without named feet simply skip foot skating
        return []


def _rigid(motion: Motion) -> list[int]:
    """Joints whose bone to the parent is rigid: all, except joints whose translation channels move them
    (a root carried by a static dummy joint, as in Bandai-Namco files, is not a bone)."""
    jt = motion.joint_translations
    if jt is None:
        return list(range(1, motion.skeleton.num_joints))
    scale = max(float(jt.abs().max()), 1e-12)
    return [
        j for j in range(1, motion.skeleton.num_joints) if float((jt[:, j] - jt[:1, j]).abs().max()) <= 1e-6 * scale
    ]


def _ground(motions: Sequence[Motion], positions: list[Tensor]) -> tuple[int, float, float]:
    up = motions[0].up_axis()
    height = float(torch.tensor([m.height for m in motions]).median())
    floor = float(torch.stack([p[..., up].min() for p in positions]).median())
    return up, height, floor


def set_summary(
    motions: Sequence[Motion], *, up: int, height: float, floor: float, positions: list[Tensor] | None = None
) -> dict[str, float]:
    """Quality measures of one set (module docstring).

    Parameters
    ----------
    motions : sequence of Motion
        The set.
    up : int
        Up axis.
    height : float
        Normalising length.
    floor : float
        Ground level along ``up``.
    positions : list of Tensor, optional
        ``(F, J, 3)`` world positions of each motion (computed when absent).

    Returns
    -------
    dict of str to float
        ``motions``, ``frames``, ``jerk``, ``foot_skating``, ``ground_penetration``, ``bone_length_error``.
    """
    positions = positions or [m.positions() for m in motions]
    sums = {"jerk": 0.0, "foot_skating": 0.0, "ground_penetration": 0.0, "bone_length_error": 0.0}
    frames = 0
    for m, p in zip(motions, positions):
        f = p.shape[0]
        frames += f
        sums["jerk"] += f * jerk(p, m.fps, height=height)
        feet = _feet(m)
        if feet:
            sums["foot_skating"] += f * foot_skating(
                p, feet, m.fps, up=up, threshold=FEET_THRESHOLD * height, height=height
            )
        sums["ground_penetration"] += f * ground_penetration(p, up=up, floor=floor, height=height)
        offsets = m.skeleton.offsets if m.joint_translations is None else None
        sums["bone_length_error"] += f * bone_length_error(p, m.skeleton.parents.tolist(), offsets, bones=_rigid(m))
    return {"motions": len(motions), "frames": frames, **{k: v / max(frames, 1) for k, v in sums.items()}}


def _paired(a: Sequence[Motion], b: Sequence[Motion], height: float) -> dict[str, float] | None:
    if len(a) != len(b) or not all(x.skeleton.same_topology(y.skeleton) for x, y in zip(a, b)):
        return None
    totals = {"mpjpe": 0.0, "mpjpe_root_relative": 0.0, "angle_deg": 0.0}
    frames = 0
    for x, y in zip(a, b):
        n = min(x.num_frames, y.num_frames)
        px, py = x[:n].positions(), y[:n].positions()
        r = max(body_root(x), body_root(y))  # one joint for both: the hips where either has a dummy above them
        totals["mpjpe"] += float(mpjpe(px, py, height=height).sum())
        rel_x, rel_y = px[:, r:] - px[:, r : r + 1], py[:, r:] - py[:, r : r + 1]  # the dummy is not a body joint
        totals["mpjpe_root_relative"] += float(mpjpe(rel_x, rel_y, height=height).sum())
        totals["angle_deg"] += float(
            angle_error(quat_to_matrix(x.rotations[:n]), quat_to_matrix(y.rotations[:n])).sum()
        )
        frames += n
    return {k: v / max(frames, 1) for k, v in totals.items()}


def compare_sets(a: Sequence[Motion], b: Sequence[Motion], *, embed: Embedder | None = None,
                 contents_a: Sequence[str] | None = None, contents_b: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """All metrics for two sets of motions (module docstring).

    Parameters
    ----------
    a, b : sequence of Motion
        The sets (non-empty, one up axis).
    embed : callable, optional
        ``embed(motions) -> (features (W, D), predicted content per motion)``, e.g. a recogniser's; when it
        cannot handle a set (another skeleton) it should raise ``ValueError`` and the feature metrics are
        left out (``null``) with the reason under ``"notes"``.
    contents_a, contents_b : sequence of str, optional
        Expected content of each motion (for ``recognised``).

    Returns
    -------
    dict
        ``{"a": {...}, "b": {...}, "fid": float | None, "paired": {...} | None, "height": h, "floor": f,
        "notes": [...]}``; each set's dict has the ``height`` and ``floor`` it was measured with, and the
        top-level ones are ``None`` when the sets did not share them.
    """
    if not a or not b:
        raise ValueError("both sets need at least one motion")
    pos_a, pos_b = [m.positions() for m in a], [m.positions() for m in b]
    up, height, floor = _ground([*a, *b], [*pos_a, *pos_b])
    own = {"a": _ground(a, pos_a), "b": _ground(b, pos_b)}
    shared = (own["a"][0] == own["b"][0] and a[0].skeleton.same_topology(b[0].skeleton)
              and abs(own["a"][1] / own["b"][1] - 1) <= SAME_HEIGHT)  # fmt: skip
    out: dict[str, Any] = {"height": height if shared else None, "floor": floor if shared else None, "notes": []}
    if not shared:
        out["notes"].append(f"the sets differ in skeleton, up axis or height ({own['a'][1]:.4g} against "
                            f"{own['b'][1]:.4g}): each is measured against its own height and floor")  # fmt: skip
    feats: dict[str, Tensor] = {}
    for key, motions, pos, contents in (("a", a, pos_a, contents_a), ("b", b, pos_b, contents_b)):
        ground = (up, height, floor) if shared else own[key]
        out[key] = set_summary(motions, up=ground[0], height=ground[1], floor=ground[2], positions=pos)
        out[key]["height"], out[key]["floor"] = ground[1], ground[2]
        out[key]["diversity"] = None
        out[key]["recognised"] = None
        if embed is None:
            continue
        try:
            f, predicted = embed(motions)
        except ValueError as err:
            out["notes"].append(f"set {key}: no recogniser features ({err})")
            continue
        feats[key] = f
        out[key]["diversity"] = diversity(f)
        if contents is not None:
            out[key]["recognised"] = sum(p == c for p, c in zip(predicted, contents)) / len(contents)
    out["fid"] = fid(feats["a"], feats["b"]) if len(feats) == 2 and min(len(feats["a"]), len(feats["b"])) >= 2 else None
    out["paired"] = _paired(a, b, height)
    return out
