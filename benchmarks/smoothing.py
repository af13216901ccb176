"""Time the One-Euro filters' frame loops, before and after they were made cheaper per frame, on a real take and on
the take tiled to ``--frames`` frames, in one process.

    python benchmarks/smoothing.py [--file BVH] [--frames N] [--repeats N] [--slow-repeats N] [--threads T]

* rotations: ``smooth_rotations(q, method="one_euro", fps=fps, beta=1.0)`` of every joint's local rotation (the
  take's ``(F, J, 4)`` float32 quaternions), as ``smooth(motion, "one_euro")`` calls it. Before: the same
  normalisation and sign continuity around ``old_one_euro_quat`` below, the per-frame loop of torch calls
  (``quat_inverse``, ``quat_multiply``, ``quat_to_rotvec``, ``quat_slerp``) that ``smoothing._one_euro_quat`` was
  until 2026-12-07; after: the library (one NumPy loop over frames, all joints at once).
* positions: ``one_euro(p / height, fps=fps, beta=1.0)`` of every joint's world position ``(F, J, 3)`` (the units
  ``smooth`` filters positions in). Before: ``old_one_euro`` below, the torch loop it replaced; after: the library.

``--file`` defaults to ``cmu_cgspeed_mb/01_01.bvh`` in the mocap folder (``$SKELANIM_DATA``; 2,752 frames, 31 joints,
120 fps). Each round (``--repeats``, default 5) times before and after once each, interleaved, who goes first
alternating; the tiled clip's "before" runs ``--slow-repeats`` times only (default 1: about a minute for 100,000
frames of rotations). Both sides' results are compared first (largest difference, quaternions up to sign); the table
gives medians and the ratio before / after. Torch runs one thread by default (``--threads 0`` keeps torch's own
setting); the NumPy loop is single-threaded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from _paths import default_file, require_data  # puts the checkout's src first on the path

if TYPE_CHECKING:
    from torch import Tensor

TOLERANCE = 1e-5  # float32 results of the same math, computed in a different order


# ---------------------------------------------------------------- the old loops, as they were (until 2026-12-07)
def old_one_euro_quat(q: Tensor, fps: float, min_cutoff: float, beta: float, d_cutoff: float) -> Tensor:
    """``smoothing._one_euro_quat`` before: ``(F, ..., 4)`` unit, sign-continuous quaternions, one frame per step
    through the public (checking, normalising) rotation functions (its speed taken from the previous raw sample,
    as the library's since it was found to grow with the rate, so that both sides compute the same)."""
    import torch

    from skelanim.core.rotations import quat_inverse, quat_multiply, quat_slerp, quat_to_rotvec
    from skelanim.ops.filters import alpha

    a_d = alpha(d_cutoff, fps)
    out = torch.empty_like(q)
    out[0] = q[0]
    prev = q[0]
    dprev = torch.zeros(q.shape[1:-1] + (3,), dtype=q.dtype, device=q.device)
    for i in range(1, q.shape[0]):
        omega = quat_to_rotvec(quat_multiply(quat_inverse(q[i - 1]), q[i])) * fps
        dprev = dprev + a_d * (omega - dprev)
        step = alpha(min_cutoff + beta * dprev.norm(dim=-1), fps)
        prev = quat_slerp(prev, q[i], step)
        out[i] = prev
    return out


def old_smooth_rotations(q: Tensor, fps: float, beta: float) -> Tensor:
    """``smooth_rotations(q, method="one_euro", ...)`` before (its checks and the method's own lines)."""
    import torch

    from skelanim.core.rotations import quat_continuous, quat_normalize

    if not torch.isfinite(q).all():
        raise ValueError("q contains NaN or infinite values")
    return quat_continuous(old_one_euro_quat(quat_continuous(quat_normalize(q)), fps, 1.0, beta, 1.0))


def old_one_euro(t: Tensor, fps: float, beta: float, min_cutoff: float = 1.0, d_cutoff: float = 1.0) -> Tensor:
    """``filters.one_euro`` before (isotropic, frames first), its loop of torch calls (speed from the previous raw
    sample, as the library's)."""
    import torch

    from skelanim.ops.filters import alpha

    if not torch.isfinite(t).all():
        raise ValueError("x contains NaN or infinite values")
    a_d = alpha(d_cutoff, fps)
    out = torch.empty_like(t)
    out[0] = t[0]
    prev, dprev = t[0], torch.zeros_like(t[0])
    for i in range(1, t.shape[0]):
        dx = (t[i] - t[i - 1]) * fps
        dprev = dprev + a_d * (dx - dprev)
        speed = dprev.norm(dim=-1, keepdim=True)
        prev = prev + alpha(min_cutoff + beta * speed, fps) * (t[i] - prev)
        out[i] = prev
    return out


# ---------------------------------------------------------------- timing
def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=None, help="BVH take (default: cmu_cgspeed_mb/01_01.bvh)")
    parser.add_argument("--frames", type=int, default=100_000, help="the tiled clip's length")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; medians are printed")
    parser.add_argument("--slow-repeats", type=int, default=1, help="rounds of the old loops on the tiled clip")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0 keeps torch's default)")
    args = parser.parse_args(argv)
    if args.frames < 2 or args.repeats < 1 or args.slow_repeats < 1:
        parser.error("--frames must be at least 2, --repeats and --slow-repeats at least 1")
    path = args.file if args.file is not None else default_file()
    require_data(path)

    import numpy as np
    import torch

    from skelanim.io import bvh
    from skelanim.ops import one_euro, smooth_rotations

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    take = bvh.load(path)
    fps, height = float(take.fps), float(take.height)
    q_take = take.rotations.float().contiguous()
    p_take = (take.positions() / height).float().contiguous()
    tiles = -(-args.frames // take.num_frames)
    q_long = q_take.repeat(tiles, 1, 1)[: args.frames].contiguous()
    p_long = p_take.repeat(tiles, 1, 1)[: args.frames].contiguous()
    print(f"{path.name}: {take.num_frames} frames, {take.skeleton.num_joints} joints, {fps:g} fps; tiled to "
          f"{args.frames:,} frames. torch {torch.__version__}, numpy {np.__version__}, torch threads "
          f"{torch.get_num_threads()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")  # fmt: skip

    cases: list[tuple[str, str, int, Callable[[], Tensor], Callable[[], Tensor], int, bool]] = []
    for size, q, p, old_rounds in [("take", q_take, p_take, args.repeats), ("tiled", q_long, p_long, args.slow_repeats)]:
        cases.append(("rotations", size, q.shape[0], partial(old_smooth_rotations, q, fps, 1.0),
                      partial(smooth_rotations, q, method="one_euro", fps=fps, beta=1.0), old_rounds, True))
        cases.append(("positions", size, p.shape[0], partial(old_one_euro, p, fps, 1.0),
                      partial(one_euro, p, fps=fps, beta=1.0), old_rounds, False))  # fmt: skip

    failed = []
    print(f"\n{'case':10s} {'clip':6s} {'frames':>8s} {'before s':>9s} {'after s':>9s} {'ratio':>7s} "
          f"{'us/frame before':>16s} {'after':>6s} {'max |diff|':>11s}")  # fmt: skip
    for name, size, frames, before, after, old_rounds, quats in cases:
        old_out, new_out = before().numpy(), after().numpy()  # (also the warm-up)
        diff = np.abs(old_out - new_out).max(-1)
        if quats:
            diff = np.minimum(diff, np.abs(old_out + new_out).max(-1))
        err = float(diff.max())
        if not err <= TOLERANCE:
            failed.append(f"{name} {size} ({err:.1e})")
        times: dict[str, list[float]] = {"before": [], "after": []}
        for r in range(args.repeats):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for side in order:
                if side == "after" or len(times["before"]) < old_rounds:
                    times[side].append(timed(before if side == "before" else after))
        old_s, new_s = statistics.median(times["before"]), statistics.median(times["after"])
        print(f"{name:10s} {size:6s} {frames:8,d} {old_s:9.3f} {new_s:9.3f} {old_s / new_s:6.1f}x "
              f"{old_s / frames * 1e6:16.1f} {new_s / frames * 1e6:6.1f} {err:11.1e}"
              + ("" if err <= TOLERANCE else "  ** TOO LARGE **"))  # fmt: skip
    print(f"medians of {args.repeats} rounds (before on the tiled clip: {args.slow_repeats}); load average now "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    if failed:
        print(f"error: before and after differ beyond {TOLERANCE:g}: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
