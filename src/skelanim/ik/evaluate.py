"""Side-by-side evaluation of IK methods on motion files: accuracy and speed in one run.

Ground truth is each file's own local rotations; the input is the forward-kinematics positions of those
rotations on the model's rest offsets (plus Gaussian noise of ``noise * height`` when asked). Metrics,
over the joints IK answers for (a dummy root that never rotates is left out):

* ``local_geodesic_deg`` / ``global_geodesic_deg``: mean angle between predicted and true local / world
  rotations;
* ``mpjpe`` (skeleton units) and ``mpjpe_pct_height``: mean distance between the joints the answer puts
  and the clean true positions;
* ``poses_per_s_batch1``: poses solved one call at a time (a subset of frames, the automatic runtime;
  the median rate over nine groups of them, see :func:`_time_batch1`);
  ``poses_per_s_batched``: all frames in one call (``*_warm`` methods can only advance all windows together).

``max_frames`` picks frames evenly across the files as windows of :data:`WINDOW` consecutive frames, so
the previous-frame methods have a previous frame (each window's first frame starts from the mean pose).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import matrix_geodesic, quat_geodesic
from skelanim.data.dataset import NO_MOTION_FILES
from skelanim.errors import SkeletonError
from skelanim.ik.data import expand_paths, pose_set
from skelanim.ik.solve import ALL_METHODS, METHODS, IKModel, run_method

__all__ = ["BATCH1_FRAMES", "WINDOW", "evaluate", "format_table", "select_frames"]

WINDOW = 8
#: Frames timed one at a time, per method.
BATCH1_FRAMES = {"gat": 1000, "gat_refined": 30, "swing_rest": 60, "swing_mean": 60, "swing_warm": 60,
                 "optimize_rest": 4, "optimize_mean": 4, "optimize_warm": 4}  # fmt: skip


def select_frames(starts: Tensor, max_frames: int | None, window: int = WINDOW) -> tuple[Tensor, Tensor]:
    """Indices of frames to evaluate and where their sequences start.

    Parameters
    ----------
    starts : Tensor
        ``(N,)`` bool, true on each file's first frame.
    max_frames : int or None
        ``None`` keeps all frames.
    window : int
        Consecutive frames per picked window.

    Returns
    -------
    tuple of Tensor
        ``(M,)`` long indices (each frame at most once, increasing) and ``(M,)`` bool sequence starts.
    """
    n = starts.shape[0]
    if max_frames is None or max_frames >= n:
        return torch.arange(n), starts.clone()
    file_start = torch.cummax(torch.where(starts, torch.arange(n), torch.zeros(n, dtype=torch.long)), 0).values
    file_end = torch.empty(n, dtype=torch.long)  # one past the file's last frame
    ends = torch.cat([torch.nonzero(starts)[:, 0][1:], torch.tensor([n])])
    file_end[:] = ends[torch.cumsum(starts.long(), 0) - 1]
    count = max(1, math.ceil(max_frames / window))
    picked: list[int] = []
    first: list[bool] = []
    for s in torch.linspace(0, n - 1, count).round().long().tolist():
        lo = max(int(file_start[s]), min(s, int(file_end[s]) - window))
        # a window shifted back into the one before it (near a file's end) adds only its new frames, which go on
        # from there: no frame is scored twice
        follows = bool(picked) and lo <= picked[-1] and int(file_start[s]) <= picked[-1]
        idx = list(range(picked[-1] + 1 if follows else lo, min(lo + window, int(file_end[s]))))
        picked.extend(idx)
        first.extend([not follows] + [False] * (len(idx) - 1) if idx else [])
    return torch.tensor(picked[:max_frames], dtype=torch.long), torch.tensor(first[:max_frames], dtype=torch.bool)


def _time_batch1(method: str, positions: Tensor, model: IKModel, count: int, groups: int = 9) -> float:
    """Poses per second solving one pose per call: the median over ``groups`` consecutive groups of frames.
    A shared virtual machine has slow stretches of up to ~150 ms (on the development VM, 0.8% of 16 ms
    windows of single-pose IK-GAT calls ran at under half the median rate): the frames timed span several
    times that, so that one stretch moves one group, not the median."""
    frames = positions[: max(1, min(count, positions.shape[0]))]
    run_method(method, frames[:1], model)  # warm-up (builds the ONNX session)
    rates = []
    for group in torch.arange(frames.shape[0]).tensor_split(min(groups, frames.shape[0])):
        started = time.perf_counter()
        for f in group.tolist():
            run_method(method, frames[f : f + 1], model)
        rates.append(len(group) / (time.perf_counter() - started))
    return float(torch.tensor(rates).median())


def evaluate(
    data: Sequence[str],
    model: IKModel,
    *,
    methods: Sequence[str] = METHODS,
    noise: float = 0.0,
    max_frames: int | None = None,
    seed: int = 0,
    timing: bool = True,
) -> dict[str, Any]:
    """Run ``methods`` on the files ``data`` and measure them.

    Parameters
    ----------
    data : sequence of str
        Motion files, folders or glob patterns (the model's skeleton).
    model : IKModel
        Network, rig and mean pose.
    methods : sequence of str
        Names from :data:`skelanim.ik.solve.ALL_METHODS` (default :data:`~skelanim.ik.solve.METHODS`).
    noise : float
        Gaussian noise sigma on the input, as a fraction of height.
    max_frames : int, optional
        Evaluate at most this many frames (see :func:`select_frames`).
    seed : int
        Seeds the noise.
    timing : bool
        Measure poses per second (else they are reported as 0).

    Returns
    -------
    dict
        ``{"frames": N, "methods": {name: {metric: value}}, "per_joint": {name: {joint: deg}},
        "joints": [...], "height": h}``; the CLI's ``--json`` prints ``frames``, ``methods`` and ``height``, with the ``noise`` asked for.
    """
    import skelanim

    for m in methods:
        if m not in ALL_METHODS:
            raise ValueError(f"unknown IK method {m!r}; choose from {', '.join(ALL_METHODS)}")
    rig = model.rig
    files = expand_paths(data)
    if not files:
        raise FileNotFoundError(2, f"nothing to evaluate on: {NO_MOTION_FILES}", ", ".join(map(str, data)))
    motions = []
    for f in files:
        motion = skelanim.load(f)
        if motion.skeleton.names != rig.skeleton.names or list(motion.skeleton.parents) != rig.parents:
            raise SkeletonError(f"skeleton is not the model's; the model expects {rig.num_joints} joints: "
                                f"{', '.join(rig.skeleton.names)}", path=f)  # fmt: skip
        motions.append(motion)
    poses = pose_set(motions, rig, files)
    idx, starts = select_frames(poses.starts, max_frames)
    gt_local = poses.local[idx]
    zero = torch.zeros(idx.shape[0], 3, dtype=torch.float64)
    gt_world, gt_pos = forward_kinematics(gt_local, rig.translations(zero), rig.parents)
    gt_pos[:, rig.fixed] = -rig.offsets[rig.ik_root]
    inputs = gt_pos.clone()
    if noise > 0:
        gen = torch.Generator().manual_seed(seed)
        inputs = inputs + torch.randn(inputs.shape, generator=gen, dtype=torch.float64) * (noise * rig.height)
    joints = rig.evaluated
    results: dict[str, dict[str, float]] = {}
    per_joint: dict[str, dict[str, float]] = {}
    if timing and any(m.startswith("gat") for m in methods):
        model.ort_session()  # build the ONNX session outside the timed runs
    for method in methods:
        if timing:
            _run(method, inputs[:2], model, starts[:2])  # warm-up
        started = time.perf_counter()
        quats, trans = _run(method, inputs, model, starts)
        batched = idx.shape[0] / (time.perf_counter() - started)
        world, pos = forward_kinematics(quats, trans, rig.parents)
        local_err = quat_geodesic(quats, gt_local)[:, joints].rad2deg()
        global_err = matrix_geodesic(world, gt_world)[:, joints].rad2deg()
        mpjpe = float((pos - gt_pos)[:, joints].norm(dim=-1).mean())
        batch1 = _time_batch1(method, inputs, model, BATCH1_FRAMES.get(method, 10)) if timing else 0.0
        results[method] = {
            "local_geodesic_deg": float(local_err.mean()),
            "global_geodesic_deg": float(global_err.mean()),
            "mpjpe": mpjpe,
            "mpjpe_pct_height": 100.0 * mpjpe / rig.height,
            "poses_per_s_batch1": batch1,
            "poses_per_s_batched": batched if timing else 0.0,
        }
        per_joint[method] = {rig.skeleton.names[j]: float(v) for j, v in zip(joints, local_err.mean(0))}
    return {"frames": int(idx.shape[0]), "methods": results, "per_joint": per_joint,
            "joints": [rig.skeleton.names[j] for j in joints], "height": rig.height}  # fmt: skip


def _run(method: str, inputs: Tensor, model: IKModel, starts: Tensor) -> tuple[Tensor, Tensor]:
    if method.endswith("_warm"):
        return run_method(method, inputs, model, starts=starts)
    chunk = 1024 if method.startswith("optimize") or method == "gat_refined" else inputs.shape[0]
    parts = [run_method(method, inputs[i : i + chunk], model, starts=starts[i : i + chunk])
             for i in range(0, inputs.shape[0], chunk)]  # fmt: skip
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def format_table(report: dict[str, Any], *, noise: float = 0.0) -> str:
    """A readable table of :func:`evaluate`'s report with a per-joint breakdown (local geodesic, degrees)."""
    methods = list(report["methods"])
    lines = [f"{report['frames']} frames, height {report['height']:.4g}, input noise {100 * noise:.3g}% of height", ""]
    head = f"{'method':<15}{'local deg':>10}{'global deg':>11}{'MPJPE':>9}{'% height':>9}{'poses/s b1':>12}{'poses/s batch':>14}"
    lines += [head, "-" * len(head)]
    for name, r in report["methods"].items():
        lines.append(f"{name:<15}{r['local_geodesic_deg']:>10.2f}{r['global_geodesic_deg']:>11.2f}{r['mpjpe']:>9.3g}"
                     f"{r['mpjpe_pct_height']:>9.3f}{r['poses_per_s_batch1']:>12.0f}{r['poses_per_s_batched']:>14.0f}")  # fmt: skip
    lines += ["", "local geodesic per joint (deg)", f"{'joint':<14}" + "".join(f"{m[:13]:>14}" for m in methods)]
    for joint in report["joints"]:
        lines.append(f"{joint:<14}" + "".join(f"{report['per_joint'][m][joint]:>14.2f}" for m in methods))
    return "\n".join(lines)
