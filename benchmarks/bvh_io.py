"""Time BVH parsing, and parsing + forward kinematics, for skelanim against pybvh and bvhio, in one process.

    python benchmarks/bvh_io.py [--file PATH] [--repeats N] [--slow-repeats N] [--torch-threads T] [--quaternions]
                                [--allow-missing-peers]

Default file: ``cmu_cgspeed_mb/01_01.bvh`` (2752 frames, 31 joints, 2 MB) under ``$SKELANIM_DATA`` or
``<repo>/../shared/data/mocap``. Every library gets the same file, the runs are interleaved (so a
busy machine slows all of them alike), and the medians (also the minima, and CPU time) are printed
with the ratios peer/ours: above 1 means skelanim is faster.

What is timed
-------------
* parse: file -> the library's in-memory motion (skelanim: ``skelanim.io.bvh.load``, a ``Motion`` that
  keeps the Euler angles read and turns them into quaternions when ``motion.rotations`` is first read;
  pybvh: ``pybvh.read_bvh_file(path, world_up="+y")``, Euler angles in radians, with its up-axis
  guess skipped; bvhio: ``bvhio.readAsHierarchy``). ``--quaternions`` adds a skelanim row that reads
  ``motion.rotations`` too (parse + Euler -> quaternion conversion).
* parse + FK: the above, then world positions of every joint in every frame (skelanim:
  ``Motion.positions()``; pybvh: ``Bvh.joint_positions()``; bvhio: ``loadPose(f)`` and
  ``PositionWorld`` of every joint, frame by frame, as its API offers).

Checked before timing: every library's world positions (and skelanim's through the quaternions, with
``--quaternions``) must agree with skelanim's to within ``POSITION_TOLERANCE`` (1e-5) of the skeleton's height
(``motion.height``), with the same shape; else the script prints the differences and exits with status 1
without timing. A peer that is not installed is an error (exit status 2) unless ``--allow-missing-peers`` is
given, which leaves it out with a note.

The MOTION numbers are parsed by skelanim's optional C extension when it is built (``pip install -e .``
compiles ``src/skelanim/io/_bvh_numbers.c``), else by its NumPy path; the script prints which.

Torch runs single-threaded by default (``--torch-threads 0`` keeps torch's own setting): the peers are
single-threaded NumPy/Python, and torch's thread pool only adds latency on a shared machine.

Measured (``--repeats 15 --slow-repeats 1``, the 2-CPU development VM; medians of wall time, ms, and
ratio pybvh / skelanim; CPU-time ratio in brackets, lower because the MOTION block of a file this size is
scanned by two threads at once):

==============================  ==============  ===========  =================  ==================  ===========
run                             skelanim parse  pybvh parse  parse ratio (CPU)  skelanim parse+FK   ratio
==============================  ==============  ===========  =================  ==================  ===========
1, unloaded (load 0.8)          5.0             19.6         3.92 (3.05)        18.2                3.68
2, unloaded (load 1.0)          5.4             19.9         3.70 (2.87)        18.3                3.78
3, unloaded (load 1.0)          4.8             18.9         3.93 (3.08)        17.1                3.86
4, one core kept busy           5.5             18.9         3.45 (3.45)        17.7                3.70
5, 2026-12-05 (load 0.3-0.8)    3.9             44.6         11.33 (8.93)       13.3                6.22
6, 2026-12-05 night (load 0.5)  3.0             10.1         3.38 (2.66)        8.8                 4.46
==============================  ==============  ===========  =================  ==================  ===========

Rows 1-4 are of 2026-11-30 on another VM, with a pybvh whose version was not recorded; rows 5 and 6 are pybvh 0.9.0
on VMs of 2026-12-05, where pybvh's own time ranged from 10.1 to 44.6 ms for the same parse while skelanim's stayed
at 3-4 ms: the ratio follows pybvh, so compare the absolute times.

History of the parse ratio on this file: 0.60x at the start, 1.88x after the C scanner, 2.70-3.17x once
``Motion`` kept the Euler angles read (converted to quaternions when ``motion.rotations`` is first read)
and ``Motion.positions()`` ran FK from them per tree level, 3.45-3.93x after the scanner read
``[-]digits[.digits]`` tokens in two tight loops (1.3x faster scan on its own) and released the GIL so
that chunks of a large block are scanned by one thread per CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from _paths import default_file  # puts the checkout's src first on the path

from skelanim.io import bvh, bvh_numbers

#: Largest difference of a library's world joint positions from skelanim's, as a fraction of the skeleton's height,
#: that the check before timing accepts (pybvh agrees to ~1e-15, bvhio, in float32, to ~5e-7).
POSITION_TOLERANCE = 1e-5
PEERS = ("pybvh", "bvhio")


class MissingPeer(Exception):
    """A peer library is not installed (and ``--allow-missing-peers`` was not given)."""


def _positions_after_quaternions(path: Path) -> np.ndarray:
    motion = bvh.load(path)
    motion.rotations  # noqa: B018  (converts the Euler angles; positions then come from the quaternions)
    return motion.positions().numpy()


def peers(path: Path, quaternions: bool = False, allow_missing: bool = True,
          ) -> dict[str, tuple[Callable[[], object], Callable[[], np.ndarray]]]:  # fmt: skip
    """``{name: (parse, parse_and_fk)}``; the second returns ``(F, J, 3)`` world joint positions. A peer that
    is not installed is left out with a note, or raises :class:`MissingPeer` unless ``allow_missing``."""
    runs: dict[str, tuple[Callable[[], object], Callable[[], np.ndarray]]] = {
        "skelanim": (lambda: bvh.load(path), lambda: bvh.load(path).positions().numpy()),
    }
    if quaternions:
        runs["skelanim+q"] = (lambda: bvh.load(path).rotations, lambda: _positions_after_quaternions(path))
    try:
        import pybvh
    except ImportError:
        if not allow_missing:
            raise MissingPeer("pybvh") from None
        print("note: pybvh is not installed (pip install pybvh); skipped")
    else:
        runs["pybvh"] = (
            lambda: pybvh.read_bvh_file(path, world_up="+y"),
            lambda: pybvh.read_bvh_file(path, world_up="+y").joint_positions(),
        )
    try:
        import bvhio
    except ImportError:
        if not allow_missing:
            raise MissingPeer("bvhio") from None
        print("note: bvhio is not installed (pip install bvhio); skipped")
    else:

        def bvhio_fk() -> np.ndarray:
            root = bvhio.readAsHierarchy(str(path))
            joints = [joint for joint, _, _ in root.layout()]
            frames = len(root.Keyframes)
            out = np.empty((frames, len(joints), 3))
            for f in range(frames):
                root.loadPose(f)
                out[f] = [tuple(j.PositionWorld) for j in joints]
            return out

        runs["bvhio"] = (lambda: bvhio.readAsHierarchy(str(path)), bvhio_fk)
    return runs


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=default_file())
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--slow-repeats", type=int, default=3, help="repeats for bvhio's per-frame FK")
    parser.add_argument("--torch-threads", type=int, default=1, help="0 keeps torch's default")
    parser.add_argument("--quaternions", action="store_true",
                        help="also time skelanim with motion.rotations read (Euler -> quaternions) after loading")
    parser.add_argument("--allow-missing-peers", action="store_true",
                        help="leave out a peer that is not installed, with a note (default: exit status 2)")
    args = parser.parse_args(argv)
    if not args.file.is_file():
        print(f"error: {args.file}: no such file (set SKELANIM_DATA or pass --file)", file=sys.stderr)
        return 2
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    warnings.simplefilter("ignore")
    try:
        runs = peers(args.file, args.quaternions, allow_missing=args.allow_missing_peers)
    except MissingPeer as missing:
        print(f"error: peer {missing} is not installed (pip install {missing}, or pass --allow-missing-peers to "
              "leave it out)", file=sys.stderr)  # fmt: skip
        return 2
    size = args.file.stat().st_size
    motion = bvh.load(args.file)
    print(f"{args.file} ({size / 1e6:.1f} MB, {motion.num_frames} frames, {motion.skeleton.num_joints} joints); "
          f"torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, {args.repeats} repeats")
    print(f"skelanim MOTION number parser: {bvh_numbers.number_parser()}"
          + ("" if bvh_numbers.NATIVE else " (the C extension is not built: pip install -e . with a C compiler)"))

    ours = runs["skelanim"][1]()
    failed = []
    for name, (parse, fk) in runs.items():  # warm up, and check everybody computes the same positions
        if name == "skelanim":
            continue
        theirs = np.asarray(fk())
        if theirs.shape == ours.shape:
            err = float(np.abs(theirs - ours).max()) / motion.height
            ok = err <= POSITION_TOLERANCE  # False for NaN too
            print(f"  {name}: max |positions - skelanim| = {err:.1e} of skeleton height"
                  + ("" if ok else f", above the tolerance {POSITION_TOLERANCE:g}"))  # fmt: skip
        else:
            ok = False
            print(f"  {name}: positions {theirs.shape} vs skelanim {ours.shape}")
        if not ok:
            failed.append(name)
        parse()
    if failed:
        print(f"error: positions of {', '.join(failed)} differ from skelanim's (tolerance {POSITION_TOLERANCE:g} of the "
              "skeleton's height, same shape); not timed", file=sys.stderr)  # fmt: skip
        return 1

    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in range(max(args.repeats, args.slow_repeats)):
        for name, (parse, fk) in runs.items():
            for task, fn in (("parse", parse), ("parse+FK", fk)):
                if name == "bvhio" and task == "parse+FK" and r >= args.slow_repeats:
                    continue
                if r >= args.repeats and not (name == "bvhio" and task == "parse+FK"):
                    continue
                results.setdefault((name, task), []).append(measure(fn))

    print(f"\n{'task':10s} {'library':10s} {'median ms':>10s} {'min ms':>9s} {'cpu ms':>9s} "
          f"{'peer/ours':>10s} {'(min)':>7s} {'(cpu)':>7s}")
    for task in ("parse", "parse+FK"):
        base = results[("skelanim", task)]
        b_med = statistics.median(w for w, _ in base)
        b_min = min(w for w, _ in base)
        b_cpu = statistics.median(c for _, c in base)
        for name in runs:
            rows = results[(name, task)]
            med = statistics.median(w for w, _ in rows)
            low = min(w for w, _ in rows)
            cpu = statistics.median(c for _, c in rows)
            ratio = "" if name.startswith("skelanim") else f"{med / b_med:10.2f} {low / b_min:7.2f} {cpu / b_cpu:7.2f}"
            print(f"{task:10s} {name:10s} {med * 1e3:10.1f} {low * 1e3:9.1f} {cpu * 1e3:9.1f} {ratio}")
    if "skelanim+q" in runs and "pybvh" in runs:
        for task in ("parse", "parse+FK"):
            ours = statistics.median(w for w, _ in results[("skelanim+q", task)])
            theirs = statistics.median(w for w, _ in results[("pybvh", task)])
            print(f"pybvh / skelanim+q (quaternions read), {task}: {theirs / ours:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
