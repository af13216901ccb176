"""Frames per second of every retargeting method, streamed (``Retargeter.step``) and whole clips.

    python benchmarks/retarget.py [--frames N] [--repeats R] [--torch-threads T] [--model DIR] [--methods ik,nkn] [--no-eager]

Pairs: ``cmu_cgspeed_mb/01_01`` (31 joints, 120 fps) onto the 100-joint production rig, and Bandai-Namco
(22 joints) onto the CMU skeleton, under ``$SKELANIM_DATA`` or ``<repo>/../shared/data/mocap``. For each
method and pair: the median over ``R`` runs of frames per second when ``N`` frames are fed one at a
time through ``step`` (online; the issue asks for at least 1,000) and when they go through ``__call__``
at once. ``step`` runs the frame as one onnxruntime graph (:mod:`skelanim.retarget.online`, every method);
the ``eager`` column is the same ``step`` with ``runtime="torch"`` for comparison. Runs are
interleaved, so a busy machine slows every method alike; the machine's load average is printed with the
numbers, since this CPU is shared, and streamed rates are also given per second of this process's CPU time
(what the rate would be with a core to itself).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch
from _paths import mocap_dir  # puts the checkout's src first on the path

import skelanim
from skelanim.retarget import METHODS, Retargeter


def _online(retarget: Retargeter, motion: skelanim.Motion) -> tuple[float, float]:
    """Frames per second of wall-clock time and of this process's CPU time (each frame with its joints' local
    translations, so that Bandai's animated hips move the body and its feet touch down as in the clip)."""
    retarget.compile()  # builds the onnxruntime step once (about a second), outside the timing
    retarget.reset()
    translations = motion.local_translations()
    start, cpu = time.perf_counter(), time.process_time()
    for f in range(motion.num_frames):
        retarget.step(motion.rotations[f], motion.root_positions[f], translations[f])
    n = motion.num_frames
    return n / (time.perf_counter() - start), n / max(time.process_time() - cpu, 1e-9)


def _batch(retarget: Retargeter, motion: skelanim.Motion) -> float:
    start = time.perf_counter()
    retarget(motion)
    return motion.num_frames / (time.perf_counter() - start)


def main() -> None:
    """Parse the arguments, time every method, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--model", type=Path, default=None, help="NKN model folder [default: shipped]")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--no-eager", action="store_true", help="Skip the eager-torch step column.")
    args = parser.parse_args()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    data = mocap_dir()
    cmu = skelanim.load(data / "cmu_cgspeed_mb/01_01.bvh")
    bandai = skelanim.load(data / "bandai_namco_1/dataset-1_walk_normal_001.bvh")
    cc = skelanim.load(data / "cmu_iclone_ccrig/001_01.bvh").skeleton
    pairs = {"cmu31->ccrig100": (cmu[: args.frames], cc), "bandai22->cmu31": (bandai[: args.frames], cmu.skeleton)}
    methods = [m for m in args.methods.split(",") if m]
    retargeters = {(m, p): Retargeter(src.skeleton, tgt, m, model=args.model, fps=src.fps)
                   for m in methods for p, (src, tgt) in pairs.items()}  # fmt: skip
    eager = {} if args.no_eager else {
        (m, p): Retargeter(src.skeleton, tgt, m, model=args.model, fps=src.fps, runtime="torch")
        for m in methods for p, (src, tgt) in pairs.items()}  # fmt: skip
    results: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(args.repeats):
        for (m, p), r in retargeters.items():
            src = pairs[p][0]
            wall, cpu = _online(r, src)
            results.setdefault((m, p, "online"), []).append(wall)
            results.setdefault((m, p, "cpu"), []).append(cpu)
            results.setdefault((m, p, "clip"), []).append(_batch(r, src))
            if (m, p) in eager:
                results.setdefault((m, p, "eager"), []).append(_online(eager[(m, p)], src[: max(60, args.frames // 3)])[0])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"frames/s (median of {args.repeats}; torch threads {torch.get_num_threads()}; load average {load:.1f} "
          f"on {os.cpu_count()} CPUs)")  # fmt: skip
    print(f"{'method':8s}{'pair':18s}{'online step()':>16s}{'online, CPU time':>18s}{'eager step()':>14s}"
          f"{'whole clip':>12s}   target: online >= 1000")  # fmt: skip
    for m in methods:
        for p in pairs:
            on = statistics.median(results[(m, p, "online")])
            cpu = statistics.median(results[(m, p, "cpu")])
            clip = statistics.median(results[(m, p, "clip")])
            slow = f"{statistics.median(results[(m, p, 'eager')]):14.0f}" if (m, p, "eager") in results else f"{'-':>14s}"
            flag = "met" if on >= 1000 else "met on CPU time only" if cpu >= 1000 else "not met"
            print(f"{m:8s}{p:18s}{on:16.0f}{cpu:18.0f}{slow}{clip:12.0f}   {flag}")


if __name__ == "__main__":
    main()
