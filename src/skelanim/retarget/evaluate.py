"""Every retargeting method side by side (``skelanim retarget eval``).

Reference pair
--------------
``cmu_cgspeed_mb/01_01`` and ``cmu_iclone_ccrig/001_01`` are one take on two skeletons (the second made by a
commercial retargeter). The first, resampled to the second's frame rate, is retargeted onto the second's
skeleton; canonical joint positions relative to the hip centre (the midpoint of the upper legs) are
compared with the reference: squared error over the reference's height squared, times 1000, over all
frames, overall (mean over joints) and per joint.

Changed proportions
-------------------
Bandai-Namco dataset-2 locomotion clips (walk, run, turns; never used in training) onto the CMU
MotionBuilder, CMU 3dsMax and Xia skeletons, three fixed Bandai bone-length variants, and the DeepMimic
humanoid:

* ``skate``: horizontal speed of the target's feet and toes while the source's are planted
  (:func:`skelanim.ops.foot_contacts` on the source, planted in this frame and the last), in target
  heights per second;
* ``penetration``: mean depth of the lowest foot or toe joint below the floor ``y = 0``, in heights;
* ``ee``: end-effector trajectory distance after height normalisation: hands, feet and head relative to
  the hips, each motion divided by its skeleton's height, mean distance (heights); lower is more similar;
* ``limits`` (DeepMimic humanoid only, where limits are known): the share of knee and elbow frames whose
  rotation leaves the URDF's 1-DoF hinge (off-axis part above 5 degrees) or its angle range;
  ``limits_robot`` after :func:`~.robot.make_feasible`.

Heights are each rig's canonical T-pose height (:attr:`.rig.CanonicalRig.height`). As in ``skelanim retarget``,
a skeleton whose zero pose is no body pose has its bone frames calibrated on its own motion
(:func:`~.rig.calibrate_rig`): the Bandai source on its first clip, the Bandai variants on
``bandai_namco_1/dataset-1_walk_normal_001``, the production rig on another of its takes, ``005_01``, not on the
reference (``calibrate=False``: the rest-pose frames, for models trained before calibration).
"""

from __future__ import annotations

import copy
import glob
import os
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_to_rotvec
from skelanim.core.skeleton import Skeleton
from skelanim.io.deepmimic import humanoid_skeleton
from skelanim.ops.contacts import foot_contacts
from skelanim.ops.resample import resample
from skelanim.retarget.baselines import FEET
from skelanim.retarget.mapping import CANONICAL_JOINTS
from skelanim.retarget.retargeter import Retargeter, load_nkn, make_rig
from skelanim.retarget.rig import SLOT, CanonicalRig, calibrate_rig
from skelanim.retarget.robot import hinge_limits, make_feasible

__all__ = ["VARIANTS", "bandai_variant", "evaluate", "format_table", "proportion_metrics", "reference_error"]

#: Fixed Bandai bone-length variants: name -> {group: factor} (groups of :mod:`.data`).
VARIANTS: dict[str, dict[str, float]] = {
    "bandai_long_legs": {"spine": 0.8, "arms": 1.0, "hips": 1.1, "thigh": 1.3, "shin": 1.4, "foot": 1.2},
    "bandai_short_legs": {"spine": 1.3, "arms": 1.2, "hips": 0.9, "thigh": 0.75, "shin": 0.7, "foot": 0.8},
    "bandai_long_shins": {"spine": 1.0, "arms": 0.8, "hips": 1.3, "thigh": 0.85, "shin": 1.35, "foot": 1.0},
}
_GROUP_SLOTS = {
    "spine": ["spine", "spine1", "chest", "neck", "head"],
    "arms": [f"{s}_{p}" for s in "lr" for p in ("clavicle", "upperarm", "forearm", "hand")],
    "hips": ["l_upleg", "r_upleg"], "thigh": ["l_leg", "r_leg"], "shin": ["l_foot", "r_foot"], "foot": ["l_toe", "r_toe"],
}  # fmt: skip
_EE = ("l_hand", "r_hand", "l_foot", "r_foot", "head")


def bandai_variant(skeleton: Skeleton, factors: dict[str, float]) -> Skeleton:
    """The Bandai skeleton with each mapped joint's offset scaled by its group's factor."""
    rig = CanonicalRig(skeleton)
    offsets = skeleton.offsets.clone()
    for group, slots in _GROUP_SLOTS.items():
        for slot in slots:
            j = rig.mapping.joints.get(slot)  # type: ignore[union-attr]  # set in __post_init__
            if j is not None:
                offsets[j] *= factors.get(group, 1.0)
    return Skeleton(skeleton.names, skeleton.parents.copy(), offsets, list(skeleton.channels),
                    {k: v * factors.get("arms", 1.0) for k, v in skeleton.end_sites.items()})  # fmt: skip


def _hip_centre(pos: Tensor) -> Tensor:
    return pos - (pos[:, SLOT["l_upleg"]] + pos[:, SLOT["r_upleg"]])[:, None] / 2


def reference_error(out: Motion, reference: Motion, rig: CanonicalRig) -> dict[str, Any]:
    """Squared error of hip-centred canonical positions over the reference height squared, times 1000."""
    _, po = rig.encode(out.rotations, out.local_translations())
    _, pr = rig.encode(reference.rotations, reference.local_translations())
    n = min(len(po), len(pr))
    err = ((_hip_centre(po[:n]) - _hip_centre(pr[:n])) ** 2).sum(-1) / reference.height**2 * 1000
    present = [i for i in range(len(CANONICAL_JOINTS)) if bool(rig.present[i])]
    per_joint = {CANONICAL_JOINTS[i]: float(err[:, i].mean()) for i in present}
    return {"overall": float(err[:, present].mean()), "per_joint": per_joint, "frames": n}


def proportion_metrics(source: Motion, out: Motion, src_rig: CanonicalRig, tgt_rig: CanonicalRig,
                       limits: dict[str, tuple[float, float]] | None = None) -> dict[str, float]:  # fmt: skip
    """Skating, penetration, end-effector distance (and hinge violations) of one retargeted clip."""
    feet_joints = [int(src_rig.joint_of_slot[s]) for s in FEET]
    contacts = foot_contacts(source, joints=feet_joints)
    _, ps = src_rig.encode(source.rotations, source.local_translations())
    _, pt = tgt_rig.encode(out.rotations, out.local_translations())
    h = tgt_rig.height
    feet = pt[:, list(FEET)]
    speed = (feet[1:] - feet[:-1])[..., [0, 2]].norm(dim=-1) * out.fps / h
    planted = contacts[1:] & contacts[:-1]
    metrics = {
        "skate": float(speed[planted].mean()) if bool(planted.any()) else 0.0,
        "penetration": float(torch.relu(-feet[..., 1].min(-1).values).mean() / h),
    }
    ee = [SLOT[e] for e in _EE if bool(src_rig.present[SLOT[e]]) and bool(tgt_rig.present[SLOT[e]])]
    rel_s = (ps[:, ee] - ps[:, :1]) / src_rig.height
    rel_t = (pt[:, ee] - pt[:, :1]) / h
    metrics["ee"] = float((rel_s - rel_t).norm(dim=-1).mean())
    if limits:
        metrics["limits"] = hinge_violations(out, limits)
    return metrics


def hinge_violations(motion: Motion, limits: dict[str, tuple[float, float]]) -> float:
    """Share of hinge-joint frames off their +z axis by more than 5 degrees or outside their angle range."""
    bad, total = 0, 0
    for name, (low, high) in limits.items():
        v = quat_to_rotvec(motion.rotations[:, motion.skeleton.index(name)])
        off_axis = v[:, :2].norm(dim=-1) > 0.0873
        outside = (v[:, 2] < low - 0.0175) | (v[:, 2] > high + 0.0175)
        bad += int((off_axis | outside).sum())
        total += v.shape[0]
    return bad / max(total, 1)


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for r in rows for k in r}
    return {k: sum(r[k] for r in rows if k in r) / sum(1 for r in rows if k in r) for k in sorted(keys)}


def evaluate(
    mocap: str | os.PathLike,
    *,
    methods: list[str],
    model: Any = None,
    clips: int = 14,
    max_frames: int | None = None,
    calibrate: bool = True,
    device: str | None = None,
) -> dict[str, Any]:
    """Run the evaluation (see the module docstring).

    Parameters
    ----------
    mocap : path
        The shared mocap folder.
    methods : list of str
        Methods to compare.
    model : optional
        NKN model folder (default: the shipped one).
    clips : int
        Bandai dataset-2 locomotion clips (spread over the contents and styles).
    max_frames : int, optional
        Frames per clip (quick runs).
    calibrate : bool
        Calibrate the bone frames of skeletons whose zero pose is no body pose (module docstring).
    device : str, optional
        Where the NKN runs (``"cuda"``, ...; default: the CPU); the other methods and the metrics run on the CPU.

    Returns
    -------
    dict
        ``{"reference": {method: {...}}, "proportions": {method: {metric: mean}}, "per_target": {...},
        "source": {metric: mean}}`` (``source``: the source clips measured on themselves, for scale).
    """
    root = Path(mocap)
    net = load_nkn(model) if "nkn" in methods else None
    if net is not None and device is not None:
        net = copy.deepcopy(net).to(device)  # once, not load_nkn's cached model
    src = skelanim.load(root / "cmu_cgspeed_mb/01_01.bvh")
    ref = skelanim.load(root / "cmu_iclone_ccrig/001_01.bvh")
    src = resample(src, ref.fps)
    if max_frames:
        src, ref = src[: max_frames * 2], ref[: max_frames * 2]

    def calibrated(rig: CanonicalRig, motion: Motion) -> CanonicalRig:
        return calibrate_rig(rig, motion.rotations) if calibrate else rig

    rig_take = skelanim.load(root / "cmu_iclone_ccrig/005_01.bvh")  # the rig's own motion, not the reference's
    src_rig, ref_rig = make_rig(src.skeleton), calibrated(make_rig(ref.skeleton), rig_take)
    report: dict[str, Any] = {"reference": {}, "proportions": {}, "per_target": {}}
    for m in methods:
        out = Retargeter(src_rig, ref_rig, m, model=net)(src)
        report["reference"][m] = reference_error(out, ref, ref_rig)

    bandai = skelanim.load(root / "bandai_namco_1/dataset-1_walk_normal_001.bvh")
    targets: dict[str, Skeleton] = {
        "cmu_mb": src.skeleton,
        "cmu_max": skelanim.load(root / "cmu_cgspeed_max/131_01.bvh").skeleton,
        "xia": skelanim.load(root / "xia_style/angry_13_000.bvh").skeleton,
        **{name: bandai_variant(bandai.skeleton, f) for name, f in VARIANTS.items()},
        "deepmimic": humanoid_skeleton(),
    }
    limits = hinge_limits()
    files = sorted({f for c in ("walk", "run", "walk-turn-left", "walk-turn-right")
                    for f in glob.glob(str(root / f"bandai_namco_2/dataset-2_{c}_*.bvh"))})  # fmt: skip
    step = max(1, len(files) // clips)
    motions = [skelanim.load(f) for f in files[::step][:clips]]
    if max_frames:
        motions = [mo[:max_frames] for mo in motions]
    rigs = {n: calibrated(make_rig(sk), bandai) if n in VARIANTS else make_rig(sk) for n, sk in targets.items()}
    source_rig = calibrated(make_rig(motions[0].skeleton), motions[0])  # the same limb turns from any take
    rows: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
    per_target: dict[str, dict[str, list[dict[str, float]]]] = {m: {t: [] for t in targets} for m in methods}
    for m in methods:
        for name, rig in rigs.items():
            retarget = Retargeter(source_rig, rig, m, model=net)
            for motion in motions:
                out = retarget(motion)
                metrics = proportion_metrics(motion, out, source_rig, rig, limits if name == "deepmimic" else None)
                if name == "deepmimic":
                    metrics["limits_robot"] = hinge_violations(make_feasible(out, limits), limits)
                rows[m].append(metrics)
                per_target[m][name].append(metrics)
    report["source"] = _mean([proportion_metrics(mo, mo, source_rig, source_rig) for mo in motions])
    report["proportions"] = {m: _mean(r) for m, r in rows.items()}
    report["per_target"] = {m: {t: _mean(r) for t, r in d.items()} for m, d in per_target.items()}
    report["clips"] = [Path(mo.metadata.get("path", "")).name for mo in motions]
    report["targets"] = list(targets)
    return report


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table of the report: one row per method."""
    methods = list(report["reference"])
    lines = [("reference pair cmu_cgspeed_mb/01_01 -> cmu_iclone_ccrig/001_01 skeleton "
              "(hip-centred squared error / height^2 x 1000; lower is better)")]
    for m in methods:
        lines.append(f"  {m:6s} {report['reference'][m]['overall']:8.3f}")
    lines.append("changed proportions (Bandai dataset-2 locomotion onto CMU, Xia, Bandai variants, DeepMimic):")
    keys = ["skate", "penetration", "ee", "limits", "limits_robot"]
    lines.append("  " + "method".ljust(8) + "".join(k.rjust(14) for k in keys))
    for m, row in [*((m, report["proportions"][m]) for m in methods), ("(source)", report.get("source", {}))]:
        lines.append("  " + m.ljust(8) + "".join(f"{row.get(k, float('nan')):14.4f}" for k in keys))
    return "\n".join(lines)
