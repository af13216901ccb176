"""Time skelanim's rotation conversions against roma (torch) and scipy's ``Rotation`` (NumPy), in one process.

    python benchmarks/rotations.py [--count N] [--repeats N] [--threads T] [--dtype float32|float64] [--seed S]
                                   [--allow-missing-peers]

A batch of ``--count`` rotations (default 1,000,000; uniform over SO(3), seeded) is drawn once in float64 with NumPy
and rounded to ``--dtype`` (default float32); every library gets the same numbers in its own layout, converted
before timing: skelanim quaternions ``(w, x, y, z)`` (``skelanim.core.rotations``), roma 1.8 quaternions
``(x, y, z, w)`` (torch, the same dtype), scipy quaternions ``(x, y, z, w)`` in float64 (scipy computes in float64
whatever it is given; the values are the rounded ones the torch libraries get). No mocap data is read. Each round
(``--repeats``, default 7) times every conversion once per library, interleaved (a busy machine slows all alike);
the table gives the median wall time of each and the ratios peer / skelanim: above 1 means skelanim is faster.
Torch runs one thread by default (``--threads 0`` keeps torch's own setting); scipy is single-threaded.

What is timed (one call each on the whole batch; skelanim / roma / scipy with ``R = Rotation``; "-": the peer lacks it)
------------------------------------------------------------------------------------------------------------------------
* quat -> matrix: ``quat_to_matrix`` / ``unitquat_to_rotmat`` / ``R.from_quat(q).as_matrix()``
* matrix -> quat: ``matrix_to_quat`` / ``rotmat_to_unitquat`` / ``R.from_matrix(m, assume_valid=True).as_quat()``
* rotvec -> quat: ``rotvec_to_quat`` / ``rotvec_to_unitquat`` / ``R.from_rotvec(v).as_quat()``
* rotvec -> matrix: ``rotvec_to_matrix`` / ``rotvec_to_rotmat`` / ``R.from_rotvec(v).as_matrix()``
* quat -> rotvec: ``quat_to_rotvec`` / ``unitquat_to_rotvec`` / ``R.from_quat(q).as_rotvec()``
* 6D -> matrix: ``rot6d_to_matrix`` / ``special_gramschmidt`` / -
* Euler ZYX -> matrix: ``euler_to_matrix(a, "ZYX")`` / ``euler_to_rotmat("ZYX", a)`` /
  ``R.from_euler("ZYX", a).as_matrix()``
* Euler ZYX -> quat: ``euler_to_quat(a, "ZYX")`` / ``euler_to_unitquat("ZYX", a)`` /
  ``R.from_euler("ZYX", a).as_quat()``
* matrix -> Euler ZYX: ``matrix_to_euler(m, "ZYX")`` / ``rotmat_to_euler("ZYX", m)`` /
  ``R.from_matrix(m, assume_valid=True).as_euler("ZYX")``
* quat multiply: ``quat_multiply(a, b)`` / ``quat_product(a, b)`` / ``(R.from_quat(a) * R.from_quat(b)).as_quat()``
* quat slerp, t = 0.3 for every pair: ``quat_slerp(a, b, 0.3)`` / ``unitquat_slerp(a, b, tensor(0.3))`` / - (scipy's
  ``Slerp`` interpolates one key-framed sequence, not pairs)

Conventions matched: skelanim's Euler angles are intrinsic in the listed order (``"ZYX"``: ``Rz(a0) Ry(a1) Rx(a2)``),
as are roma's and scipy's upper-case orders. skelanim's 6D is the first two matrix columns laid out
``[R00, R10, R20, R01, R11, R21]``; roma's ``special_gramschmidt`` takes ``(..., 3, 2)`` matrices whose columns are
those two vectors, so it gets ``d6.unflatten(-1, (2, 3)).transpose(-1, -2)`` made contiguous (untimed). The 6D inputs
are the rotations' two columns scaled by 0.5-2 and nudged by noise of 0.1, as a network would give them. scipy's
``from_matrix`` gets ``assume_valid=True`` (the matrices are rotations to the dtype's rounding): its default
orthonormalises each matrix first, which neither torch library does. What each side does beyond the bare formula:
skelanim normalises quaternions wherever a rotation is meant (``quat_to_matrix``, ``quat_to_rotvec``, slerp), checks
``matrix_to_quat``'s input for reflections and guards every division (finite values and gradients at 0 and 180
degrees); roma's quaternion functions take unit quaternions as given; scipy normalises in ``from_quat`` and builds a
``Rotation`` object each time.

Checked before timing (the largest difference of each peer's result from skelanim's is printed above the table):
matrices entry by entry; quaternions up to sign (roma's and scipy's reordered to ``(w, x, y, z)``); rotation vectors
entry by entry; Euler angles as the difference wrapped into ``[-pi, pi)`` where the middle angle is at least 0.1 rad
from gimbal lock (nearer, the first and third angles are ill-conditioned: a float32 rounding moves them by ~eps/cos),
and, over all rows, the float64 matrices of both sides' angles. The tolerance is ``TOLERANCE`` (1e-5 in float32,
1e-10 in float64). A difference beyond it is printed, the timing still runs, and the script exits with status 1
after the table. A peer that is not installed is an error (exit status 2) unless ``--allow-missing-peers`` is given,
which leaves its column empty with a note.

Measured results, with what makes skelanim slower than a peer where it is: ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from _paths import REPO  # noqa: F401  (puts the checkout's src first on the path)

from skelanim.core import rotations as sk

#: Largest accepted difference of a peer's result from skelanim's, by torch dtype.
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}
PEERS = ("roma", "scipy")
EULER = "ZYX"  # intrinsic in all three libraries (upper case in roma and scipy)
#: Rows whose middle Euler angle is nearer than this (radians) to gimbal lock are left out of the angle comparison
#: (the matrices of the angles are compared on every row).
LOCK_MARGIN = 0.1


@dataclass
class Row:
    """One conversion: per library a call (no arguments) and a map of its result to a float64 array in skelanim's
    convention; ``kind`` says how results are compared."""

    name: str
    kind: str  # "matrix", "quat", "vector", "euler"
    runs: dict[str, tuple[Callable[[], object], Callable[[object], np.ndarray]]] = field(default_factory=dict)


def _np(x: object) -> np.ndarray:
    return x.detach().double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float64)


def _xyzw_to_wxyz(x: object) -> np.ndarray:
    return _np(x)[..., [3, 0, 1, 2]]


def random_unit_quaternions(count: int, rng: np.random.Generator) -> np.ndarray:
    """``(count, 4)`` float64 ``(w, x, y, z)``, uniform over SO(3) (normalised Gaussians)."""
    q = rng.standard_normal((count, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def build_rows(count: int, dtype: torch.dtype, seed: int, peers: dict[str, object]) -> list[Row]:
    """The conversions with their inputs, made once (untimed) for every library in its own layout."""
    from scipy.spatial.transform import Rotation  # a core dependency of skelanim; only called when scipy is a peer

    rng = np.random.default_rng(seed)

    def rounded(a: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
        """``a`` as a contiguous torch tensor of ``dtype`` and the same (rounded) values as float64 NumPy."""
        t = torch.from_numpy(np.ascontiguousarray(a)).to(dtype).contiguous()
        return t, t.double().numpy()

    qa, qa64 = rounded(random_unit_quaternions(count, rng))  # (w, x, y, z)
    qb, qb64 = rounded(random_unit_quaternions(count, rng))
    qa_xyzw, qb_xyzw = qa[:, [1, 2, 3, 0]].contiguous(), qb[:, [1, 2, 3, 0]].contiguous()
    qa64_xyzw, qb64_xyzw = qa64[:, [1, 2, 3, 0]].copy(), qb64[:, [1, 2, 3, 0]].copy()
    m, m64 = rounded(Rotation.from_quat(random_unit_quaternions(count, rng), scalar_first=True).as_matrix())
    v, v64 = rounded(Rotation.from_quat(random_unit_quaternions(count, rng), scalar_first=True).as_rotvec())
    euler = np.stack([rng.uniform(-math.pi, math.pi, count), rng.uniform(-math.pi / 2, math.pi / 2, count),
                      rng.uniform(-math.pi, math.pi, count)], -1)  # fmt: skip
    a, a64 = rounded(euler)
    columns = Rotation.from_quat(random_unit_quaternions(count, rng), scalar_first=True).as_matrix()[..., :2]
    d6_cols = columns * rng.uniform(0.5, 2.0, (count, 1, 2)) + 0.1 * rng.standard_normal((count, 3, 2))
    d6, _ = rounded(d6_cols.transpose(0, 2, 1).reshape(count, 6))  # [R00, R10, R20, R01, R11, R21]
    d6_roma = d6.unflatten(-1, (2, 3)).transpose(-1, -2).contiguous()  # (N, 3, 2): columns a1, a2
    t = 0.3
    roma = peers.get("roma")
    scipy = peers.get("scipy")

    rows = [
        Row("quat -> matrix", "matrix", {"skelanim": (lambda: sk.quat_to_matrix(qa), _np)}),
        Row("matrix -> quat", "quat", {"skelanim": (lambda: sk.matrix_to_quat(m), _np)}),
        Row("rotvec -> quat", "quat", {"skelanim": (lambda: sk.rotvec_to_quat(v), _np)}),
        Row("rotvec -> matrix", "matrix", {"skelanim": (lambda: sk.rotvec_to_matrix(v), _np)}),
        Row("quat -> rotvec", "vector", {"skelanim": (lambda: sk.quat_to_rotvec(qa), _np)}),
        Row("6D -> matrix", "matrix", {"skelanim": (lambda: sk.rot6d_to_matrix(d6), _np)}),
        Row(f"Euler {EULER} -> matrix", "matrix", {"skelanim": (lambda: sk.euler_to_matrix(a, EULER), _np)}),
        Row(f"Euler {EULER} -> quat", "quat", {"skelanim": (lambda: sk.euler_to_quat(a, EULER), _np)}),
        Row(f"matrix -> Euler {EULER}", "euler", {"skelanim": (lambda: sk.matrix_to_euler(m, EULER), _np)}),
        Row("quat multiply", "quat", {"skelanim": (lambda: sk.quat_multiply(qa, qb), _np)}),
        Row(f"quat slerp (t = {t})", "quat", {"skelanim": (lambda: sk.quat_slerp(qa, qb, t), _np)}),
    ]
    by_name = {row.name: row.runs for row in rows}
    if roma is not None:
        step = torch.tensor(t, dtype=dtype)
        by_name["quat -> matrix"]["roma"] = (lambda: roma.unitquat_to_rotmat(qa_xyzw), _np)
        by_name["matrix -> quat"]["roma"] = (lambda: roma.rotmat_to_unitquat(m), _xyzw_to_wxyz)
        by_name["rotvec -> quat"]["roma"] = (lambda: roma.rotvec_to_unitquat(v), _xyzw_to_wxyz)
        by_name["rotvec -> matrix"]["roma"] = (lambda: roma.rotvec_to_rotmat(v), _np)
        by_name["quat -> rotvec"]["roma"] = (lambda: roma.unitquat_to_rotvec(qa_xyzw), _np)
        by_name["6D -> matrix"]["roma"] = (lambda: roma.special_gramschmidt(d6_roma), _np)
        by_name[f"Euler {EULER} -> matrix"]["roma"] = (lambda: roma.euler_to_rotmat(EULER, a), _np)
        by_name[f"Euler {EULER} -> quat"]["roma"] = (lambda: roma.euler_to_unitquat(EULER, a), _xyzw_to_wxyz)
        by_name[f"matrix -> Euler {EULER}"]["roma"] = (lambda: roma.rotmat_to_euler(EULER, m), _np)
        by_name["quat multiply"]["roma"] = (lambda: roma.quat_product(qa_xyzw, qb_xyzw), _xyzw_to_wxyz)
        by_name[f"quat slerp (t = {t})"]["roma"] = (lambda: roma.unitquat_slerp(qa_xyzw, qb_xyzw, step),
                                                    _xyzw_to_wxyz)  # fmt: skip
    if scipy is not None:
        R = Rotation
        by_name["quat -> matrix"]["scipy"] = (lambda: R.from_quat(qa64_xyzw).as_matrix(), _np)
        by_name["matrix -> quat"]["scipy"] = (lambda: R.from_matrix(m64, assume_valid=True).as_quat(), _xyzw_to_wxyz)
        by_name["rotvec -> quat"]["scipy"] = (lambda: R.from_rotvec(v64).as_quat(), _xyzw_to_wxyz)
        by_name["rotvec -> matrix"]["scipy"] = (lambda: R.from_rotvec(v64).as_matrix(), _np)
        by_name["quat -> rotvec"]["scipy"] = (lambda: R.from_quat(qa64_xyzw).as_rotvec(), _np)
        by_name[f"Euler {EULER} -> matrix"]["scipy"] = (lambda: R.from_euler(EULER, a64).as_matrix(), _np)
        by_name[f"Euler {EULER} -> quat"]["scipy"] = (lambda: R.from_euler(EULER, a64).as_quat(), _xyzw_to_wxyz)
        by_name[f"matrix -> Euler {EULER}"]["scipy"] = (lambda: R.from_matrix(m64, assume_valid=True).as_euler(EULER),
                                                        _np)  # fmt: skip
        by_name["quat multiply"]["scipy"] = (lambda: (R.from_quat(qa64_xyzw) * R.from_quat(qb64_xyzw)).as_quat(),
                                             _xyzw_to_wxyz)  # fmt: skip
    return rows


def difference(kind: str, ours: np.ndarray, theirs: np.ndarray) -> tuple[float, str]:
    """The largest difference of ``theirs`` from ``ours`` (inf where the shapes differ) and how it was measured."""
    if ours.shape != theirs.shape:
        return math.inf, f"shape {theirs.shape} vs {ours.shape}"
    if kind == "quat":
        per_row = np.minimum(np.abs(theirs - ours).max(-1), np.abs(theirs + ours).max(-1))
        return float(per_row.max(initial=0.0)), "quaternion entries, up to sign"
    if kind != "euler":
        return float(np.abs(theirs - ours).max(initial=0.0)), "entries"
    from scipy.spatial.transform import Rotation

    wrapped = np.remainder(theirs - ours + math.pi, 2 * math.pi) - math.pi
    away = np.abs(np.abs(ours[:, 1]) - math.pi / 2) >= LOCK_MARGIN  # Tait-Bryan middle angle: lock at +-pi/2
    angles = float(np.abs(wrapped[away]).max(initial=0.0))
    matrices = float(np.abs(Rotation.from_euler(EULER, theirs).as_matrix()
                            - Rotation.from_euler(EULER, ours).as_matrix()).max(initial=0.0))  # fmt: skip
    return max(angles, matrices), (f"angles {angles:.1e} (wrapped; {int(away.sum())} of {len(away)} rows "
                                   f"{LOCK_MARGIN} rad from lock), matrices of the angles {matrices:.1e}")


def load_peers(allow_missing: bool) -> dict[str, object]:
    """``{name: module}`` of the installed peers (scipy's entry is ``scipy.spatial.transform``)."""
    found: dict[str, object] = {}
    for name in PEERS:
        try:
            if name == "roma":
                import roma as module
            else:
                import scipy.spatial.transform as module
        except ImportError:
            if not allow_missing:
                print(f"error: peer {name} is not installed (pip install {name}, or pass --allow-missing-peers to "
                      "leave it out)", file=sys.stderr)  # fmt: skip
                raise SystemExit(2) from None
            print(f"note: {name} is not installed (pip install {name}); its column is left empty")
        else:
            found[name] = module
    return found


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="rotations in the batch")
    parser.add_argument("--repeats", type=int, default=7, help="rounds; medians are printed")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0 keeps torch's default)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="of the torch inputs (scipy computes in float64 regardless)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allow-missing-peers", action="store_true",
                        help="leave out a peer that is not installed, with a note (default: exit status 2)")
    args = parser.parse_args(argv)
    if args.count < 1 or args.repeats < 1:
        parser.error("--count and --repeats must be at least 1")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    tolerance = TOLERANCE[dtype]
    warnings.simplefilter("ignore")
    peers = load_peers(args.allow_missing_peers)
    libraries = ["skelanim", *peers]
    rows = build_rows(args.count, dtype, args.seed, peers)
    versions = ", ".join(f"{name} {_version(name)}" for name in ("torch", *peers))
    print(f"{args.count:,} rotations, {args.dtype} (scipy: float64); {versions}; torch threads "
          f"{torch.get_num_threads()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"{args.repeats} rounds, seed {args.seed}")

    failed: list[str] = []
    agreement: dict[tuple[str, str], float] = {}
    print(f"\nagreement with skelanim (tolerance {tolerance:g}):")
    for row in rows:  # also the warm-up
        ours = row.runs["skelanim"][1](row.runs["skelanim"][0]())
        for name in libraries[1:]:
            if name not in row.runs:
                continue
            call, common = row.runs[name]
            err, how = difference(row.kind, ours, common(call()))
            agreement[(row.name, name)] = err
            ok = err <= tolerance  # False for NaN too
            print(f"  {row.name:24s} {name:6s} max |diff| {err:.1e} ({how})" + ("" if ok else "  ** TOO LARGE **"))
            if not ok:
                failed.append(f"{row.name} / {name} ({err:.1e})")

    times: dict[tuple[str, str], list[float]] = {}
    for r in range(args.repeats):
        for row in rows:
            order = libraries[r % len(libraries):] + libraries[: r % len(libraries)]  # who goes first rotates
            for name in order:
                if name in row.runs:
                    call = row.runs[name][0]
                    start = time.perf_counter()
                    call()
                    times.setdefault((row.name, name), []).append(time.perf_counter() - start)

    med = {key: statistics.median(values) for key, values in times.items()}
    print(f"\nmedians of {args.repeats} rounds, ms (load average now {os.getloadavg()[0]:.2f}); ratio peer / skelanim, "
          "above 1: skelanim faster")  # fmt: skip
    head = f"{'conversion':24s} {'skelanim':>9s}" + "".join(f" {n:>9s}" for n in libraries[1:])
    head += "".join(f" {n + '/sk':>9s}" for n in libraries[1:])
    print(head)
    for row in rows:
        ours = med[(row.name, "skelanim")]
        cells = [f"{med[(row.name, n)] * 1e3:9.1f}" if (row.name, n) in med else f"{'':9s}" for n in libraries[1:]]
        ratios = [f"{med[(row.name, n)] / ours:9.2f}" if (row.name, n) in med else f"{'':9s}" for n in libraries[1:]]
        print(f"{row.name:24s} {ours * 1e3:9.1f} " + " ".join(cells) + " " + " ".join(ratios))
    slower = [f"{row.name} ({n} {ours / med[(row.name, n)]:.2f}x faster)" for row in rows for n in libraries[1:]
              if (row.name, n) in med and (ours := med[(row.name, "skelanim")]) > 1.5 * med[(row.name, n)]]
    if slower:
        print(f"skelanim more than 1.5x slower than a peer: {'; '.join(slower)}")
    if failed:
        print(f"error: results differ from skelanim's beyond the tolerance {tolerance:g}: {'; '.join(failed)}",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
