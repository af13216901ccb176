"""Time reading a joint-positions CSV with the row-by-row reader (the reader as it was) and with numpy's, in one run.

    python benchmarks/positions_csv.py [--file CSV | --frames N] [--repeats N] [--keep PATH]

Without ``--file`` the CSV is made from real data: the world positions (with End Sites) of
``cmu_cgspeed_mb/01_01.bvh`` (2752 frames, 38 joints with its End Sites) under ``$SKELANIM_DATA`` or
``<repo>/../shared/data/mocap``, repeated to ``--frames`` frames (default 100 000: 116 columns, 200 MB) at 120 fps
and written by ``skelanim.io.positions.save`` (``repr`` values, a time column); ``--keep PATH`` writes it there.

What is timed
-------------
* old: :func:`skelanim.io.positions_csv.read_csv_rows` with the time column's digits counted cell by cell, which is
  the reader as it was before numpy's path (``float(cell)`` on every cell, lists of Python floats);
* new: :func:`skelanim.io.positions_csv.read_csv`, the reader ``skelanim.io.load_positions`` uses (numpy's
  ``loadtxt`` and whole-array checks; the row-by-row reader only for a file it refuses).

Both must give the same names, fps and bit-identical positions, checked before timing (exit status 1 otherwise).
The runs alternate (a busy machine slows both alike); the medians of wall and CPU time are printed with the
ratio old / new. Peak memory is measured once per reader in a fresh child process: the growth of the peak resident
set (``VmHWM``, reset first) over what the process held before reading, and the peak of ``tracemalloc`` (Python and
numpy allocations).

Measured on the 2-CPU development VM (2026-12-06, numpy 2.4, ``--repeats 5``, medians; load average ~2):

=====================================================  ======  ======  =====  ===============  ================
file                                                   reader  wall s  CPU s  peak RSS +MB     tracemalloc MB
=====================================================  ======  ======  =====  ===============  ================
generated (100 000 frames, 38 joints, 200 MB, 91 MB)   old     4.63    4.59   1584             1485
                                                       new     1.75    1.75   114              111
an audit's (100 000 frames, 22 joints, 121 MB, 53 MB)  old     2.66    2.64   954              895
                                                       new     1.02    1.01   75               71
=====================================================  ======  ======  =====  ===============  ================

Old / new: 2.6x the time, 13x the memory. Nine tenths of the new time is ``numpy.loadtxt`` itself (its C parser,
~150 ns a cell); the rest is the whole-array checks and counting the time column's digits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from _paths import mocap_dir, require_data  # puts the checkout's src first on the path

from skelanim.io import bvh, positions, positions_csv
from skelanim.io.positions import JointPositions

Result = tuple[list[str], np.ndarray, float | None]


def _digit_counts_cell_by_cell(cells: Sequence[str]) -> tuple[int, int]:
    digits = [positions_csv._digits(cell) for cell in cells]
    return max(d for d, _ in digits), max(s for _, s in digits)


@contextmanager
def _as_it_was() -> Iterator[None]:
    """The row-by-row reader exactly as it was: the time column's digits counted cell by cell too."""
    vectorised = positions_csv._digit_counts
    positions_csv._digit_counts = _digit_counts_cell_by_cell
    try:
        yield
    finally:
        positions_csv._digit_counts = vectorised


def old_reader(path: Path) -> Result:
    with _as_it_was():
        return positions_csv.read_csv_rows(path)


def new_reader(path: Path) -> Result:
    return positions_csv.read_csv(path)


READERS: dict[str, Callable[[Path], Result]] = {"old": old_reader, "new": new_reader}


def make_file(path: Path, frames: int) -> None:
    motion = bvh.load(mocap_dir() / "cmu_cgspeed_mb" / "01_01.bvh")
    clip = JointPositions.from_motion(motion, end_sites=True)
    reps = -(-frames // clip.num_frames)
    array = np.concatenate([clip.positions] * reps)[:frames]
    positions.save(JointPositions(clip.names, array, fps=120.0), path)


def _status_bytes(field: str) -> int:
    """``VmRSS`` or ``VmHWM`` (the peak resident set) of this process, from ``/proc/self/status``."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _child(name: str, path: Path) -> None:
    """Run in a fresh process: read once, print the peak RSS growth and tracemalloc's peak, in bytes. The peak is
    reset first (``ru_maxrss`` would carry the parent's over ``exec``)."""
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set
    before = _status_bytes("VmRSS")
    READERS[name](path)
    grown = _status_bytes("VmHWM") - before
    tracemalloc.start()
    READERS[name](path)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(max(grown, 0), traced)


def peak_memory(name: str, path: Path) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, "--file", str(path)], check=True, capture_output=True, text=True
    ).stdout.split()
    return int(out[0]), int(out[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--file", type=Path, help="a positions CSV (default: one made from real data)")
    parser.add_argument("--frames", type=int, default=100_000, help="frames of the generated file")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="write the generated file here (and keep it)")
    parser.add_argument("--child", choices=sorted(READERS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.file)
        return 0

    require_data(args.file if args.file is not None else mocap_dir() / "cmu_cgspeed_mb" / "01_01.bvh")
    with tempfile.TemporaryDirectory() as scratch:
        path = args.file
        if path is None:
            path = args.keep or Path(scratch) / "positions.csv"
            started = time.perf_counter()
            make_file(path, args.frames)
            print(f"made {path} ({args.frames} frames) in {time.perf_counter() - started:.1f} s")
        print(f"file: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")

        old, new = old_reader(path), new_reader(path)
        if old[0] != new[0] or old[2] != new[2] or old[1].tobytes() != new[1].tobytes():
            print("the readers differ: names", old[0] == new[0], "fps", old[2], new[2],
                  "positions bit-identical", old[1].tobytes() == new[1].tobytes())  # fmt: skip
            return 1
        frames, joints, _ = new[1].shape
        print(f"same result: {frames} frames, {joints} joints, fps {new[2]}, positions {new[1].nbytes / 1e6:.1f} MB")
        del old, new

        wall: dict[str, list[float]] = {name: [] for name in READERS}
        cpu: dict[str, list[float]] = {name: [] for name in READERS}
        for _ in range(args.repeats):
            for name, reader in READERS.items():
                w, c = time.perf_counter(), time.process_time()
                reader(path)
                wall[name].append(time.perf_counter() - w)
                cpu[name].append(time.process_time() - c)
        memory = {name: peak_memory(name, path) for name in READERS}

    print(f"\n{'reader':8}{'wall s':>10}{'CPU s':>10}{'peak RSS +MB':>15}{'tracemalloc MB':>16}")
    for name in READERS:
        rss, traced = memory[name]
        print(f"{name:8}{statistics.median(wall[name]):10.3f}{statistics.median(cpu[name]):10.3f}"
              f"{rss / 1e6:15.0f}{traced / 1e6:16.0f}")  # fmt: skip
    ratio = statistics.median(wall["old"]) / statistics.median(wall["new"])
    cpu_ratio = statistics.median(cpu["old"]) / statistics.median(cpu["new"])
    print(f"\nold / new: wall {ratio:.2f}x, CPU {cpu_ratio:.2f}x, peak RSS growth "
          f"{memory['old'][0] / max(memory['new'][0], 1):.1f}x, tracemalloc peak "
          f"{memory['old'][1] / max(memory['new'][1], 1):.1f}x (medians of {args.repeats})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
