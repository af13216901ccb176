"""How three long-input paths scale, before and after the scale audit's fixes, in one run: time (median) and peak
memory of the old computation and of the library's, at two sizes each, with their ratios.

    python benchmarks/scaling.py [--repeats N] [--quick] [--only predict dtw resample]

* predict: ``predict_motion`` (zero_velocity, no model) continuing the Bandai-Namco walk by 120 s and 480 s.
  Old: each 1-second step computes the headings of the whole history (``forecast._yaw_from`` replaced by the whole
  history's headings, then the last ones taken); the per-step copy of the history the old loop also made is not
  reproduced, so the ratio understates the change (it was 0.7 of 22.6 s at 480 s). New: the library.
* dtw: ``dtw(a, b, window=30)`` of two 20-dimensional sequences of N = 4,000 and 16,000 frames (one a time-warp of
  the other). Old: the whole N x N cost matrix, masked outside the band, and the whole accumulated table (the code
  before the banded table, below as ``old_dtw``). New: the library (the band only).
* resample: ``sample_frames`` of 20,000 and 160,000 frames of 31 joints (random rotations), 30 -> 60 fps. Old: one
  pass over all frames (``old_sample_frames`` below, the code before the chunks). New: the library.

Each measurement runs in a fresh process (one torch thread, OMP/MKL threads 1): first a run with a thread sampling
the resident set size every millisecond (peak above the RSS before the call: "peak MB"), then ``--repeats`` timed
runs (process CPU time; the median is printed). Both sides' results are compared bit for bit ("same": the digests
of the output arrays). Speeds depend on the machine and its load (printed).

Measured 2026-12-06 on the 2-CPU development VM (load 1.4), ``--repeats 3`` (3 min in all):

========  =======  ======  =====  =======  ======  ======  ====
case      size     old s   new s  speedup  old MB  new MB  same
========  =======  ======  =====  =======  ======  ======  ====
predict   120 s    1.240   0.204  6.1x     55      53      yes
predict   480 s    16.835  0.743  22.7x    205     156     yes
dtw       4,000    0.491   0.021  23.8x    383     3       yes
dtw       16,000   11.481  0.085  134.8x   6,144   15      yes
resample  20,000   0.417   0.185  2.3x     397     126     yes
resample  160,000  5.412   1.367  4.0x     2,680   438     yes
========  =======  ======  =====  =======  ======  ======  ====

The last resample makes 9.9 M joint-frames (a 325 MB result): 270 bytes per joint-frame at the peak before, 44
after. Out of reach of the old code, timed alone: ``dtw`` of 64,000 frames with ``window=30`` (old: numpy's
MemoryError for a 30.5 GiB table; new: 0.5 s, 31 MB table).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _paths import REPO, mocap_dir  # puts the checkout's src first on the path

SIZES = {"predict": [120, 480], "dtw": [4000, 16000], "resample": [20_000, 160_000]}
QUICK = {"predict": [30, 120], "dtw": [2000, 4000], "resample": [5_000, 20_000]}
WINDOW = 30


# ---------------------------------------------------------------- the old computations, as they were
def old_dtw(a: np.ndarray, b: np.ndarray, window: int | None) -> tuple[np.ndarray, float]:
    """DTW as before the banded table: the whole ``(N, M)`` cost, masked outside the band, and the whole
    ``(N + 1, M + 1)`` accumulated table filled one anti-diagonal at a time."""
    from scipy.spatial.distance import cdist

    c = cdist(a, b)
    n, m = c.shape
    if window is not None:
        radius = max(int(window), abs(n - m))
        ii, jj = np.ogrid[:n, :m]
        c = np.where(np.abs(ii - jj) <= radius, c, np.inf)
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for k in range(n + m - 1):
        i = np.arange(max(0, k - m + 1), min(n - 1, k) + 1)
        j = k - i
        best = np.minimum(np.minimum(acc[i, j], acc[i, j + 1]), acc[i + 1, j])
        acc[i + 1, j + 1] = c[i, j] + best
    total = float(acc[n, m])
    path = [(n - 1, m - 1)]
    i, j = n, m
    while (i, j) != (1, 1):
        options = ((acc[i - 1, j - 1], i - 1, j - 1), (acc[i - 1, j], i - 1, j), (acc[i, j - 1], i, j - 1))
        _, i, j = min(options, key=lambda o: o[0])
        path.append((i - 1, j - 1))
    return np.asarray(path[::-1], dtype=np.int64), total


def old_sample_frames(motion: Any, indices: Any, fps: float) -> Any:
    """``sample_frames`` as before the chunks: the slerp over gathered copies of all frames at once, gathered again
    for the exact whole-frame cases."""
    import torch

    from skelanim.core.rotations import quat_slerp
    from skelanim.ops.resample import _lerp

    s = torch.as_tensor(indices, dtype=torch.float64)
    last = motion.num_frames - 1
    nearest = torch.round(s)
    s = torch.where((s - nearest).abs() < 1e-9, nearest, s).clamp(0.0, float(last))
    i0 = torch.floor(s).long().clamp(max=motion.num_frames - 2)
    i1 = i0 + 1
    a = s - i0.to(torch.float64)
    rot = quat_slerp(motion.rotations[i0], motion.rotations[i1], a[:, None].expand(-1, motion.skeleton.num_joints))
    at0, at1 = (a == 0)[:, None, None], (a == 1)[:, None, None]
    rot = torch.where(at0, motion.rotations[i0], torch.where(at1, motion.rotations[i1], rot))
    root = _lerp(motion.root_positions, i0, i1, a)
    return motion.copy(rotations=rot, root_positions=root, fps=float(fps), metadata={})


# ---------------------------------------------------------------- the cases
def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for x in arrays:
        h.update(np.ascontiguousarray(np.asarray(x)).tobytes())
    return h.hexdigest()[:16]


def case(name: str, size: int, impl: str) -> tuple[Callable[[], Any], Callable[[Any], str]]:
    """``(run, digest)`` for one case, size and side (``old`` or ``new``)."""
    import torch

    if name == "predict":
        import skelanim
        from skelanim.data import MotionDataset
        from skelanim.data.clips import clip_from_motion
        from skelanim.learn import forecast

        walk = skelanim.load(mocap_dir() / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh")
        rig = MotionDataset(clips=[clip_from_motion(walk, fps=25.0)], fps=25.0).rig
        if impl == "old":
            forecast._yaw_from = lambda rig, rot, pelvis, fps, start: forecast._yaw_of(rig, rot, pelvis, fps)[start:]
        return (lambda: forecast.predict_motion(walk, method="zero_velocity", rig=rig, seconds=float(size)),
                lambda out: _digest(out.rotations, out.root_positions, out.joint_translations))  # fmt: skip
    if name == "dtw":
        from skelanim.ops import dtw

        t = np.linspace(0, 20 * np.pi, size)
        warped = t + 0.3 * np.sin(t / 7)
        a = np.stack([np.sin(t), np.cos(t)] + [np.sin(k * t) for k in range(2, 20)], 1)
        b = np.stack([np.sin(warped), np.cos(warped)] + [np.sin(k * warped) for k in range(2, 20)], 1)
        run = (lambda: old_dtw(a, b, WINDOW)) if impl == "old" else (lambda: dtw(a, b, window=WINDOW))
        return run, lambda out: _digest(out[0], np.float64(out[1]))
    if name == "resample":
        import importlib

        import skelanim
        from skelanim.core.rotations import quat_normalize

        resample_module = importlib.import_module("skelanim.ops.resample")
        cmu = skelanim.load(mocap_dir() / "cmu_cgspeed_mb" / "01_01.bvh")
        gen = torch.Generator().manual_seed(0)
        rot = quat_normalize(torch.randn(size, cmu.skeleton.num_joints, 4, dtype=torch.float64, generator=gen))
        motion = cmu.copy(rotations=rot, root_positions=torch.randn(size, 3, dtype=torch.float64, generator=gen),
                          fps=30.0, metadata={})  # fmt: skip
        times = resample_module.sample_times(size, 30.0, 60.0)
        sample = old_sample_frames if impl == "old" else resample_module.sample_frames
        return lambda: sample(motion, times, 60.0), lambda out: _digest(out.rotations, out.root_positions)
    raise ValueError(name)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(name: str, size: int, impl: str, repeats: int) -> dict[str, Any]:
    """One side of one case in this process: the peak memory of a first run, then ``repeats`` timed runs."""
    import torch

    torch.set_num_threads(1)
    run, digest = case(name, size, impl)
    base = _rss()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        out = run()
    except MemoryError as error:
        done.set()
        sampler.join()
        return {"error": f"MemoryError: {error}"[:120]}
    done.set()
    sampler.join()
    result = digest(out)
    del out
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return {"seconds": times, "peak_bytes": peak[0] - base, "digest": result}


def measure(name: str, size: int, impl: str, repeats: int) -> dict[str, Any]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [sys.executable, __file__, "--child", name, str(size), impl, str(repeats)]
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:120]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side (median printed)")
    parser.add_argument("--quick", action="store_true", help=f"smaller sizes: {QUICK}")
    parser.add_argument("--only", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, size, impl, repeats = args.child
        print(json.dumps(child(name, int(size), impl, int(repeats))))
        return 0
    if any(c in args.only for c in ("predict", "resample")) and not mocap_dir().is_dir():
        print(f"error: {mocap_dir()}: no such folder (set SKELANIM_DATA to the mocap folder): predict and resample "
              "need it", file=sys.stderr)  # fmt: skip
        return 2
    sizes = QUICK if args.quick else SIZES
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs; CPU seconds, medians of {args.repeats}")
    header = f"{'case':<9} {'size':>7} {'old s':>9} {'new s':>9} {'speedup':>8} {'old MB':>8} {'new MB':>8}  same"
    print(header)
    print("-" * len(header))
    status = 0
    for name in args.only:
        for size in sizes[name]:
            old, new = (measure(name, size, impl, args.repeats) for impl in ("old", "new"))
            if "error" in old or "error" in new:
                print(f"{name:<9} {size:>7}  old: {old.get('error', 'ok')}  new: {new.get('error', 'ok')}")
                status = status or ("error" in new)
                continue
            t_old, t_new = statistics.median(old["seconds"]), statistics.median(new["seconds"])
            same = old["digest"] == new["digest"]
            status = status or not same
            print(f"{name:<9} {size:>7} {t_old:>9.3f} {t_new:>9.3f} {t_old / t_new:>7.1f}x "
                  f"{old['peak_bytes'] / 1e6:>8.0f} {new['peak_bytes'] / 1e6:>8.0f}  {'yes' if same else 'NO'}")  # fmt: skip
    return status


if __name__ == "__main__":
    sys.exit(main())
