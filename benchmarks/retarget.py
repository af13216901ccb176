"""Frames per second of every retargeting method, streamed (``Retargeter.step``) and whole clips.

    python benchmarks/retarget.py [--frames N] [--repeats R] [--torch-threads T] [--model DIR] [--methods ik,nkn] [--no-eager]

Pairs: ``cmu_cgspeed_mb/01_01`` (31 joints, 120 fps, 2752 frames) onto the 100-joint production rig, and the
Bandai-Namco walk ``bandai_namco_1/dataset-1_walk_normal_001`` (22 joints, 30 fps, 195 frames) onto the CMU
skeleton, under ``$SKELANIM_DATA`` or ``<repo>/../shared/data/mocap``. Each source is cut or, where it is shorter,
repeated (:func:`skelanim.ops.repeat_loop`: each play moved on by the clip's travel) to ``N`` frames, so every
pair and method streams ``N`` frames. The NKN gets its source at the rate it learned (30 fps): the CMU clip
resampled to 30 fps first (``N`` frames of it, a quarter of the rate: 600 frames are 20 s of the clip, not 5 s),
so that neither its stream nor its whole clip runs the set-up the library warns about, and its whole-clip rate
counts the frames the network runs. Every retargeter is built from clips (``Retargeter(source_clip,
target_clip)``: the whole source clip and a clip of the target, ``cmu_iclone_ccrig/001_01`` or the CMU clip), so
bone frames are calibrated where a zero pose is no body pose, as ``skelanim retarget`` does.

For each method and pair: the median over ``R`` runs of frames per second when the ``N`` frames are fed one at a
time through ``step`` (online; the issue asks for at least 1,000) and when they go through ``__call__`` at once.
``step`` runs the frame as one onnxruntime graph (:mod:`skelanim.retarget.online`, every method); the ``eager``
column is the same ``step`` with ``runtime="torch"`` on the same ``N`` frames, for comparison. Runs are
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
from _paths import mocap_dir, require_data  # puts the checkout's src first on the path

import skelanim
from skelanim import ops
from skelanim.retarget import METHODS, Retargeter, load_nkn
from skelanim.retarget.retargeter import NKN_RATE_TOLERANCE


def _frames(clip: skelanim.Motion, n: int) -> skelanim.Motion:
    """The first ``n`` frames of ``clip``, repeated first (:func:`skelanim.ops.repeat_loop`) where it is shorter."""
    if clip.num_frames < n:
        clip = ops.repeat_loop(clip, -(-(n - 1) // (clip.num_frames - 1)))
    return clip[:n]


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
    parser.add_argument("--frames", type=int, default=600,
                        help="frames streamed per pair and method (a shorter clip is repeated) [default: 600]")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--model", type=Path, default=None, help="NKN model folder [default: shipped]")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--no-eager", action="store_true", help="Skip the eager-torch step column.")
    args = parser.parse_args()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    data = mocap_dir()
    require_data(*(data / f for f in ("cmu_cgspeed_mb/01_01.bvh", "bandai_namco_1/dataset-1_walk_normal_001.bvh",
                                      "cmu_iclone_ccrig/001_01.bvh")))  # fmt: skip
    cmu = skelanim.load(data / "cmu_cgspeed_mb/01_01.bvh")
    bandai = skelanim.load(data / "bandai_namco_1/dataset-1_walk_normal_001.bvh")
    cc = skelanim.load(data / "cmu_iclone_ccrig/001_01.bvh")
    pairs = {"cmu31->ccrig100": (cmu, cc), "bandai22->cmu31": (bandai, cmu)}  # whole clips: source, target
    methods = [m for m in args.methods.split(",") if m]
    nkn_fps = load_nkn(args.model).train_fps if "nkn" in methods else None

    def source(m: str, clip: skelanim.Motion) -> tuple[skelanim.Motion, str]:
        """The ``N`` frames that method ``m`` streams (the NKN's at the rate it learned), and how they were made."""
        how = f"{clip.fps:g} fps"
        if m == "nkn" and nkn_fps is not None and abs(clip.fps / nkn_fps - 1.0) > NKN_RATE_TOLERANCE:
            clip = ops.resample(clip, nkn_fps)
            how = f"{clip.fps:g} fps (resampled, {clip.num_frames} frames)"
        return _frames(clip, args.frames), how + (", repeated (ops.repeat_loop)," if clip.num_frames < args.frames else "")

    made = {(m, p): source(m, src) for m in methods for p, (src, _) in pairs.items()}
    streams = {key: motion for key, (motion, _) in made.items()}
    retargeters = {(m, p): Retargeter(src, tgt, m, model=args.model, fps=streams[(m, p)].fps)
                   for m in methods for p, (src, tgt) in pairs.items()}  # fmt: skip
    eager = {} if args.no_eager else {
        (m, p): Retargeter(src, tgt, m, model=args.model, fps=streams[(m, p)].fps, runtime="torch")
        for m in methods for p, (src, tgt) in pairs.items()}  # fmt: skip
    results: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(args.repeats):
        for (m, p), r in retargeters.items():
            src = streams[(m, p)]
            wall, cpu = _online(r, src)
            results.setdefault((m, p, "online"), []).append(wall)
            results.setdefault((m, p, "cpu"), []).append(cpu)
            results.setdefault((m, p, "clip"), []).append(_batch(r, src))
            if (m, p) in eager:
                results.setdefault((m, p, "eager"), []).append(_online(eager[(m, p)], src)[0])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"frames/s (median of {args.repeats}; torch threads {torch.get_num_threads()}; load average {load:.1f} "
          f"on {os.cpu_count()} CPUs)")  # fmt: skip
    for p, (src, _) in pairs.items():  # what was streamed: every column of a row times the same frames
        hows = {how: [m for m in methods if made[(m, p)][1] == how] for m in methods for _, how in [made[(m, p)]]}
        print(f"  {p}: {args.frames} frames of a {src.num_frames}-frame clip, at " + "; at ".join(
            f"{how} for {', '.join(ms)}" for how, ms in hows.items()))  # fmt: skip
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
