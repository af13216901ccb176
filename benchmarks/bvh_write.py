"""Time and memory of writing a long BVH take: skelanim against pybvh (and bvhio), each write in a fresh process.

    python benchmarks/bvh_write.py [--file PATH] [--frames N] [--repeats N] [--bvhio]

The source (default ``cmu_cgspeed_mb/01_01.bvh`` under ``$SKELANIM_DATA`` or ``<repo>/../shared/data/mocap``) is
tiled to ``--frames`` frames (default 100,000: 14 minutes at 120 fps) and written once, untimed, to a temporary
folder. Then, for each library in turn (interleaved, ``--repeats`` rounds), a new Python process reads that file
with the library (untimed), resets its peak-memory mark (``/proc/self/clear_refs``), writes the motion back
(skelanim: ``skelanim.io.bvh.save``; pybvh: ``pybvh.write_bvh_file``; bvhio: ``bvhio.writeHierarchy``) and
reports the wall time of the write and the peak resident memory it added (``VmHWM`` after the write minus
``VmRSS`` before it). Medians are printed with the ratio peer / skelanim: above 1 means skelanim is faster or
leaner. Every output is read back with skelanim and its joint positions compared with the source's.

bvhio reads a long take slowly (minutes for 100k frames), so it runs only with ``--bvhio``.

Measured on the 2-CPU development VM, 2026-12-05 22:07-22:12 UTC (load 1.1-2.3, a read-only audit running beside
it), 100,000 frames, ``--repeats 3``, pybvh 0.9.0; medians:

==========================================  ===========  ===========  ================  ===============
run                                         skelanim s   pybvh s      skelanim +MiB     pybvh +MiB
==========================================  ===========  ===========  ================  ===============
writer before 2026-12-05 (a0fb154^)         5.47         1.51         1067              144
writer of a0fb154 (joints 4 at a time,      3.78         1.62         230               144
frame lines 2048 at a time)
==========================================  ===========  ===========  ================  ===============

pybvh writes the Euler angles it read; skelanim works them out from quaternions (continuous over frames, the
file's own angles where they still describe the rotation), which is most of its time.
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

from _paths import mocap_dir  # puts the checkout's src first on the path


def default_file() -> Path:
    return mocap_dir() / "cmu_cgspeed_mb" / "01_01.bvh"


def _status_kib(field: str) -> int:
    """A ``/proc/self/status`` field (``VmRSS``, ``VmHWM``) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def child(library: str, source: Path, target: Path) -> None:
    """Read ``source`` with ``library``, write it to ``target``; print JSON ``{"seconds", "added_mib"}``."""
    warnings.simplefilter("ignore")
    if library == "skelanim":
        import torch

        from skelanim.io import bvh

        torch.set_num_threads(1)
        motion = bvh.load(source)
        motion.rotations  # noqa: B018  (a motion read then edited has its quaternions; converted untimed)

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

        def write() -> None:
            bvhio.writeHierarchy(str(target), root, 1.0 / 120.0)
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
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=default_file())
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bvhio", action="store_true", help="also time bvhio (slow to read a long take)")
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
    libraries = ["skelanim"]
    for peer in ("pybvh", "bvhio") if args.bvhio else ("pybvh",):
        try:
            __import__(peer)
        except ImportError:
            print(f"note: {peer} is not installed; skipped")
        else:
            libraries.append(peer)
    with tempfile.TemporaryDirectory(prefix="skelanim-bench-") as folder:
        source = Path(folder) / "take.bvh"
        bvh.save(take, source)
        expected = bvh.load(source).positions().numpy()
        print(f"{args.file} tiled to {take.num_frames} frames, {take.skeleton.num_joints} joints "
              f"({source.stat().st_size / 1e6:.0f} MB as BVH); {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}, {args.repeats} rounds")
        results: dict[str, list[dict[str, float]]] = {name: [] for name in libraries}
        for _ in range(args.repeats):
            for name in libraries:
                target = Path(folder) / f"out_{name}.bvh"
                results[name].append(run_child(name, source, target))
        for name in libraries:
            again = bvh.load(Path(folder) / f"out_{name}.bvh").positions().numpy()
            error = float(np.abs(again - expected).max()) / take.height if again.shape == expected.shape else np.inf
            print(f"  {name}: output read back, max |positions - source| = {error:.1e} of skeleton height")
    seconds = {name: statistics.median(r["seconds"] for r in rows) for name, rows in results.items()}
    added = {name: statistics.median(r["added_mib"] for r in rows) for name, rows in results.items()}
    print(f"\n{'library':10s} {'median s':>9s} {'peer/ours':>10s} {'added MiB':>10s} {'peer/ours':>10s}")
    for name in libraries:
        ratios = ("", "") if name == "skelanim" else (f"{seconds[name] / seconds['skelanim']:.2f}",
                                                      f"{added[name] / added['skelanim']:.2f}")
        print(f"{name:10s} {seconds[name]:9.2f} {ratios[0]:>10s} {added[name]:10.0f} {ratios[1]:>10s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
