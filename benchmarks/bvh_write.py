"""Time and memory of writing a long BVH take: skelanim against pybvh (and bvhio), each write in a fresh process.

    python benchmarks/bvh_write.py [--file PATH] [--frames N] [--repeats N] [--bvhio] [--allow-missing-peers]

The source (default ``cmu_cgspeed_mb/01_01.bvh`` under ``$SKELANIM_DATA`` or ``<repo>/../shared/data/mocap``) is
tiled to ``--frames`` frames (default 100,000: 14 minutes at 120 fps) and written once, untimed, to a temporary
folder. Then, for each library in turn (interleaved, ``--repeats`` rounds), a new Python process reads that file
with the library (untimed), resets its peak-memory mark (``/proc/self/clear_refs``), writes the motion back
(skelanim: ``skelanim.io.bvh.save``; pybvh: ``pybvh.write_bvh_file``; bvhio: ``bvhio.writeHierarchy``, given the
frame time of the file's header) and reports the wall time of the write and the peak resident memory it added
(``VmHWM`` after the write minus ``VmRSS`` before it). Medians are printed with the ratio peer / skelanim: above 1 means skelanim is faster or
leaner. Every output is read back with skelanim and compared with the source as skelanim reads it: the same
number of frames and frame rate, and world joint positions equal to within ``WRITE_TOLERANCE`` of the skeleton's
height (0 for skelanim and pybvh: both write back the numbers they read, and so far their outputs have read back
bit for bit; 1e-5 for bvhio, which computes in float32). A difference beyond it is printed and the script exits
with status 1 (after the table). A peer that is not installed is an error (exit status 2) unless
``--allow-missing-peers`` is given, which leaves it out with a note.

bvhio reads a long take slowly (minutes for 100k frames), so it runs only with ``--bvhio``.

``skelanim-fresh`` is skelanim writing the same motion without the angles it was read with (``bvh_values`` dropped
from its metadata), so every Euler angle is worked out from the quaternions, as for a motion made or edited in
memory; it must read back within ``WRITE_TOLERANCE`` too.

Measured on the 2-CPU development VM, 100,000 frames, pybvh 0.9.0; medians (the first two rows 2026-12-05 22:07-22:12
UTC, load 1.1-2.3, ``--repeats 3``; the last 2026-12-06 19:15 UTC, load 1.2, ``--repeats 5``):

==========================================  ===========  ===========  ================  ===============
run                                         skelanim s   pybvh s      skelanim +MiB     pybvh +MiB
==========================================  ===========  ===========  ================  ===============
writer before 2026-12-05 (a0fb154^)         5.47         1.51         1067              144
writer of a0fb154 (joints 4 at a time,      3.78         1.62         230               144
frame lines 2048 at a time)
writer of 2026-12-06 evening (C formatter;  0.75         1.39         143               144
the angles read kept; fresh angles: 1.08 s,
+159 MiB)
==========================================  ===========  ===========  ================  ===============

pybvh writes the Euler angles it read; skelanim keeps the file's own angles where they still describe the rotation
and works the others out from quaternions (continuous over frames), which is most of ``skelanim-fresh``'s time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _paths import default_file  # puts the checkout's src first on the path

#: Largest difference of an output's world joint positions (read back by skelanim) from the source's, as a fraction
#: of the skeleton's height.
WRITE_TOLERANCE = {"skelanim": 0.0, "skelanim-fresh": 1e-6, "pybvh": 0.0, "bvhio": 1e-5}


def frame_time(path: Path) -> float:
    """The ``Frame Time:`` of a BVH file's MOTION header (read as text, without a BVH library)."""
    with path.open() as lines:
        for line in lines:
            if line.strip().lower().startswith("frame time:"):
                return float(line.split(":", 1)[1])
    raise ValueError(f"{path}: no 'Frame Time:' line")


def _status_kib(field: str) -> int:
    """A ``/proc/self/status`` field (``VmRSS``, ``VmHWM``) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def child(library: str, source: Path, target: Path) -> None:
    """Read ``source`` with ``library``, write it to ``target``; print JSON ``{"seconds", "added_mib"}``."""
    warnings.simplefilter("ignore")
    if library in ("skelanim", "skelanim-fresh"):
        import torch

        from skelanim.io import bvh

        torch.set_num_threads(1)
        motion = bvh.load(source)
        motion.rotations  # noqa: B018  (a motion read then edited has its quaternions; converted untimed)
        if library == "skelanim-fresh":  # without the angles read, every Euler angle is worked out afresh
            motion = motion.copy(metadata={k: v for k, v in motion.metadata.items() if k != "bvh_values"})

        def write() -> None:
            bvh.save(motion, target)
    elif library == "pybvh":
        import pybvh

        data = pybvh.read_bvh_file(source, world_up="+y")

        def write() -> None:
            pybvh.write_bvh_file(data, target)
    elif library == "bvhio":
        import bvhio

        root = bvhio.readAsHierarchy(str(source))
        seconds_per_frame = frame_time(source)

        def write() -> None:
            bvhio.writeHierarchy(str(target), root, seconds_per_frame)
    else:
        raise SystemExit(f"unknown library {library!r}")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current resident size
    before = _status_kib("VmRSS")
    start = time.perf_counter()
    write()
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "added_mib": (_status_kib("VmHWM") - before) / 1024}))


def run_child(library: str, source: Path, target: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--child", library, str(source), str(target)],
                          check=False, capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"error: {library} could not read or write the take (exit status {done.returncode}): {why}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=default_file())
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bvhio", action="store_true", help="also time bvhio (slow to read a long take)")
    parser.add_argument("--allow-missing-peers", action="store_true",
                        help="leave out a peer that is not installed, with a note (default: exit status 2)")
    parser.add_argument("--child", nargs=3, metavar=("LIBRARY", "SOURCE", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return 0
    if not args.file.is_file():
        print(f"error: {args.file}: no such file (set SKELANIM_DATA or pass --file)", file=sys.stderr)
        return 2
    import numpy as np

    from skelanim.core.motion import Motion
    from skelanim.io import bvh

    warnings.simplefilter("ignore")
    clip = bvh.load(args.file)
    take = Motion.concatenate([clip] * -(-args.frames // clip.num_frames))
    take = Motion(take.skeleton, take.rotations[: args.frames], take.root_positions[: args.frames], fps=take.fps)
    libraries = ["skelanim", "skelanim-fresh"]
    for peer in ("pybvh", "bvhio") if args.bvhio else ("pybvh",):
        try:
            __import__(peer)
        except ImportError:
            if not args.allow_missing_peers:
                print(f"error: peer {peer} is not installed (pip install {peer}, or pass --allow-missing-peers to "
                      "leave it out)", file=sys.stderr)  # fmt: skip
                return 2
            print(f"note: {peer} is not installed; skipped")
        else:
            libraries.append(peer)
    with tempfile.TemporaryDirectory(prefix="skelanim-bench-") as folder:
        source = Path(folder) / "take.bvh"
        bvh.save(take, source)
        written = bvh.load(source)
        expected = written.positions().numpy()
        print(f"{args.file} tiled to {take.num_frames} frames, {take.skeleton.num_joints} joints "
              f"({source.stat().st_size / 1e6:.0f} MB as BVH); {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}, {args.repeats} rounds")
        results: dict[str, list[dict[str, float]]] = {name: [] for name in libraries}
        for _ in range(args.repeats):
            for name in libraries:
                target = Path(folder) / f"out_{name}.bvh"
                results[name].append(run_child(name, source, target))
        failed = []
        for name in libraries:
            back = bvh.load(Path(folder) / f"out_{name}.bvh")
            again = back.positions().numpy()
            error = float(np.abs(again - expected).max()) / take.height if again.shape == expected.shape else np.inf
            same_rate = abs(back.fps - written.fps) <= 1e-6 * written.fps
            print(f"  {name}: output read back, {back.num_frames} frames at {back.fps:g} fps, max |positions - source| "
                  f"= {error:.1e} of skeleton height")  # fmt: skip
            if not (error <= WRITE_TOLERANCE[name] and same_rate):  # not (NaN <= tolerance) fails too
                failed.append(f"{name} ({back.num_frames} frames at {back.fps:g} fps, positions off by {error:.1e} of "
                              f"the height; the source: {written.num_frames} at {written.fps:g} fps, tolerance "
                              f"{WRITE_TOLERANCE[name]:g})")  # fmt: skip
    seconds = {name: statistics.median(r["seconds"] for r in rows) for name, rows in results.items()}
    added = {name: statistics.median(r["added_mib"] for r in rows) for name, rows in results.items()}
    print(f"\n{'library':14s} {'median s':>9s} {'peer/ours':>10s} {'added MiB':>10s} {'peer/ours':>10s}")
    for name in libraries:
        ratios = ("", "") if name.startswith("skelanim") else (f"{seconds[name] / seconds['skelanim']:.2f}",
                                                      f"{added[name] / added['skelanim']:.2f}")
        print(f"{name:14s} {seconds[name]:9.2f} {ratios[0]:>10s} {added[name]:10.0f} {ratios[1]:>10s}")
    if failed:
        print(f"error: an output does not read back as the source: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
