"""IK side by side: IK-GAT against swing IK and per-frame optimisation, clean and with 1% noise, the
runtime choice (torch vs onnxruntime by batch size) and the network's size / error / speed trade-off.
One run, one CPU, printed as tables.

    python benchmarks/ik.py --threads 1           # shipped model, held-out Bandai styles, 2000 frames
    python benchmarks/ik.py --tradeoff /tmp/ikrun/n32 /tmp/ikrun/n48   # trained models to compare
    python benchmarks/ik.py --json                # one JSON object instead of tables
    python benchmarks/ik.py --speed-only --threads-list 1 2 --runs 3   # the network's speed against the ik/
                                                  # modules of --reference REV, on today's core/ and nn/
    python benchmarks/ik.py --speed-only --reference-tree   # ... against REV's whole src tree, in a worker process
    python benchmarks/ik.py --runtime-only --threads-list 1 2   # only the torch / onnxruntime table

The data are the Bandai-Namco styles left out of the shipped model's training (angry and childish from
dataset 1, elderly from dataset 2), under ``$SKELANIM_DATA`` or ``<repo>/../shared/data/mocap``; the code timed is
the checkout's ``src`` (put first on the path by ``_paths``). Speeds are medians of repeated timings; they depend
on the machine and on what else runs on it (the load average is printed with them).

What ``--speed-only`` compares: ``run_method('gat')`` of the current code against the same call of the ``ik/``
modules ``frames``, ``classical``, ``model``, ``onnx`` and ``solve`` of git revision ``--reference`` (default
2852dea, the last commit before the fast path), copied into a package of their own and run in this process on
today's ``core/``, ``nn/``, ``io/`` and ``ik/refine.py`` (the old modules import those from the current
checkout). So it is not the old code as a whole: what changed in ``core/`` and ``nn/`` since that revision runs on
both sides and is missing from the ratio, which understates the change (for 2852dea: the FK of 56ef705, the
``nn.GraphAttention`` speed-ups of 8d225eb and bd5b598 and the later rewrites of the rotation conversions, among
others). Both load today's model files. ``--reference-tree`` compares with the whole ``src`` tree of the revision
instead (``git archive``, imported by a worker process that times its calls when asked, alternating with this
process's timings; each process times its own calls, the other waits).

The runtime table (``IKModel.predict`` with ``runtime="torch"`` and ``"onnx"``, per batch size) alternates the two
runtimes timing by timing (7 timings of ~0.25 s each, the first runtime swapped every round) and prints their
medians and how many of the paired timings onnxruntime won; "auto picks" is the library's choice
(``ORT_MAX_BATCH``).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
from _paths import REPO, mocap_dir, require_data  # puts the checkout's src first on the path
from safetensors.torch import save_file

from skelanim.ik.evaluate import evaluate, format_table, select_frames
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.solve import ORT_MAX_BATCH, IKModel, run_method

DATA = mocap_dir()
HELD_OUT = ["bandai_namco_1/*_angry_*", "bandai_namco_1/*_childish_*", "bandai_namco_2/*_elderly_*"]
#: Untrained sizes for the speed columns of the trade-off table (the last is about the paper's size).
SIZES = [GATConfig(hidden=32, layers=2, chain=True), GATConfig(hidden=48, layers=3, chain=True),
         GATConfig(hidden=48, layers=3, flat=True), GATConfig(hidden=96, layers=3, chain=True),
         GATConfig(hidden=128, layers=4, chain=True)]  # fmt: skip
BATCHES = (1, 4, 16, 32, 64, 256, 1024, 4096)
#: The last commit before the fast path (b769bcd). Only its ``ik/`` modules below are loaded (on today's ``core/``
#: and ``nn/``): its network code, ONNX graph and the Python around them, not its rotation and FK code.
REFERENCE = "2852dea"
_REF_MODULES = ("frames", "classical", "model", "onnx", "solve")


def reference_solve(rev: str = REFERENCE) -> ModuleType:
    """``skelanim.ik.solve`` as of git revision ``rev``, with the ``frames``, ``classical``, ``model`` and
    ``onnx`` modules of that revision (package ``skelanim_ik_ref`` in a temporary folder), run in the same
    process as the current code. Everything else they import (``skelanim.core``, ``skelanim.nn``,
    ``skelanim.io``, ``skelanim.ik.refine``, ``skelanim.errors``) is today's: this is the ``ik/`` modules of
    ``rev`` on the current checkout, not the code of ``rev`` as a whole."""
    root = REPO
    temp = tempfile.mkdtemp(prefix="skelanim-ikref-")
    atexit.register(shutil.rmtree, temp, ignore_errors=True)
    folder = Path(temp) / "skelanim_ik_ref"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name in _REF_MODULES:
        text = subprocess.run(["git", "show", f"{rev}:src/skelanim/ik/{name}.py"], cwd=root, check=True,
                              capture_output=True, text=True).stdout  # fmt: skip
        text = re.sub(rf"skelanim\.ik\.({'|'.join(_REF_MODULES)})\b", r"skelanim_ik_ref.\1", text)
        (folder / f"{name}.py").write_text(text)
    sys.path.insert(0, str(folder.parent))
    return importlib.import_module("skelanim_ik_ref.solve")


def held_out_positions(data: list[str], model: IKModel, max_frames: int) -> torch.Tensor:
    """``(F, J, 3)`` float64 FK positions of the frames :func:`~skelanim.ik.evaluate.evaluate` picks."""
    import skelanim
    from skelanim.core.kinematics import forward_kinematics
    from skelanim.ik.data import expand_paths, pose_set

    files = expand_paths(data)
    poses = pose_set([skelanim.load(f) for f in files], model.rig, files)
    idx, _ = select_frames(poses.starts, max_frames)
    zero = torch.zeros(idx.shape[0], 3, dtype=torch.float64)
    _, pos = forward_kinematics(poses.local[idx], model.rig.translations(zero), model.rig.parents)
    pos[:, model.rig.fixed] = -model.rig.offsets[model.rig.ik_root]
    return pos


#: Poses timed one call at a time by ``--speed-only``: 10 groups of 30.
SINGLE_POSES = 300


class _InProcess:
    """One side of :func:`speed_against_reference` run in this process: ``run_method`` of a ``solve`` module
    (today's, or :func:`reference_solve`'s) on ``model``. Each timing returns wall and CPU seconds."""

    def __init__(self, solve: ModuleType, model: object, positions: torch.Tensor, side: str = "today's code") -> None:
        self.fn = lambda x: solve.run_method("gat", x, model)
        self.positions = positions
        self.single = [positions[i : i + 1] for i in range(SINGLE_POSES)]
        self.fn(positions[:1])  # builds the onnxruntime sessions
        if model.ort_session() is None:  # type: ignore[attr-defined]
            # the solver falls back to torch without a word; a benchmark of its ONNX path must not
            raise SystemExit(f"{side}: the network could not be exported to ONNX here, so batch 1 would time torch "
                             "instead; with --reference, try --reference-tree (the reference's own core/)")

    def quaternions(self) -> torch.Tensor:
        """Local quaternions of the first 64 poses."""
        return self.fn(self.positions[:64])[0]

    def threads(self, count: int) -> None:
        torch.set_num_threads(count)
        self.fn(self.positions[:512])

    def _timed(self, xs: list[torch.Tensor]) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for x in xs:
            self.fn(x)
        return time.perf_counter() - wall, time.process_time() - cpu

    def group(self, g: int) -> tuple[float, float]:
        """The 30 poses of group ``g`` one call at a time."""
        return self._timed(self.single[30 * g : 30 * g + 30])

    def batched(self) -> tuple[float, float]:
        """All poses in one call."""
        return self._timed([self.positions])


_TREE_WORKER = """
import json, sys, time
src, model_path, positions_path, single_poses = sys.argv[1:5]
sys.path.insert(0, src)
import torch
import skelanim
if not skelanim.__file__.startswith(src):
    raise SystemExit(f"the reference tree's worker imported skelanim from {skelanim.__file__}, not {src}")
from skelanim.ik.solve import IKModel, run_method
model = IKModel.load(model_path)
from safetensors.torch import load_file
positions = load_file(positions_path)["positions"]
single = [positions[i : i + 1] for i in range(int(single_poses))]
fn = lambda x: run_method("gat", x, model)
fn(positions[:1])
def timed(xs):
    wall, cpu = time.perf_counter(), time.process_time()
    for x in xs:
        fn(x)
    return [time.perf_counter() - wall, time.process_time() - cpu]
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    cmd, arg = line.split()
    if cmd == "threads":
        torch.set_num_threads(int(arg))
        fn(positions[:512])
        out = None
    elif cmd == "quaternions":
        out = fn(positions[:64])[0].tolist()
    elif cmd == "group":
        out = timed(single[30 * int(arg) : 30 * int(arg) + 30])
    else:
        out = timed([positions])
    print(json.dumps(out), flush=True)
"""


class _TreeWorker:
    """The other side of :func:`speed_against_reference` with ``--reference-tree``: the whole ``src`` tree of a
    git revision (``git archive``) in a worker process that times ``run_method('gat')`` on the same poses and
    model files when asked, so that the two codes still alternate timing by timing (each timed in its own process;
    the other waits)."""

    def __init__(self, rev: str, model: IKModel, positions: torch.Tensor) -> None:
        temp = tempfile.mkdtemp(prefix="skelanim-iktree-")
        atexit.register(shutil.rmtree, temp, ignore_errors=True)
        tar = subprocess.run(["git", "archive", "--format=tar", rev, "src"], cwd=REPO, check=True,
                             capture_output=True).stdout  # fmt: skip
        with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
            archive.extractall(temp, filter="data")
        save_file({"positions": positions.contiguous()}, str(Path(temp) / "positions.safetensors"))
        self.proc = subprocess.Popen([sys.executable, "-c", _TREE_WORKER, str(Path(temp) / "src"), str(model.path),
                                      str(Path(temp) / "positions.safetensors"), str(SINGLE_POSES)], cwd=temp,
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
        atexit.register(self.proc.kill)
        self._read()

    def _read(self) -> object:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            raise SystemExit(f"error: the reference tree's worker stopped (exit status {self.proc.wait()})")
        return json.loads(line)

    def _ask(self, cmd: str, arg: int = 0) -> object:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{cmd} {arg}\n")
        self.proc.stdin.flush()
        return self._read()

    def quaternions(self) -> torch.Tensor:
        return torch.tensor(self._ask("quaternions"), dtype=torch.float64)

    def threads(self, count: int) -> None:
        self._ask("threads", count)

    def group(self, g: int) -> tuple[float, float]:
        wall, cpu = self._ask("group", g)  # type: ignore[misc]
        return wall, cpu

    def batched(self) -> tuple[float, float]:
        wall, cpu = self._ask("batched")  # type: ignore[misc]
        return wall, cpu


def speed_against_reference(new: _InProcess, old: _InProcess | _TreeWorker, positions: torch.Tensor,
                            threads: list[int], runs: int) -> list[dict[str, float]]:  # fmt: skip
    """``run_method('gat')`` of the current and the reference code on the same poses: per thread count,
    ``runs`` runs, each timing batch 1 (300 poses one call at a time, in 10 groups of 30, the two codes
    alternating group by group) and batched (all poses in one call, 5 alternating calls), with the load
    average at the start of the run. Rates are medians (wall clock, and per second of the timed process's CPU
    time); ratios are medians of the per-round wall ratios new/old (both see the same moment of a shared
    machine)."""
    got, want = new.quaternions(), old.quaternions()
    diff = float((got * torch.sign((got * want).sum(-1, keepdim=True)) - want).abs().max())
    count = positions.shape[0]
    rows = []
    for t in threads:
        for side in (new, old):
            side.threads(t)
        for run in range(runs):
            row: dict[str, float] = {"threads": t, "run": run, "load": os.getloadavg()[0], "max_quat_diff": diff}
            for task, n, rounds in (("b1", 30, 10), ("batched", count, 5)):
                rates: dict[str, list[float]] = {"new": [], "old": [], "new_cpu": [], "old_cpu": []}
                for g in range(rounds):  # alternate group by group (batch 1: on the same 30 poses)
                    for name, side in (("new", new), ("old", old)):
                        wall, cpu = side.group(g) if task == "b1" else side.batched()
                        rates[name].append(n / wall)
                        rates[f"{name}_cpu"].append(n / max(cpu, 1e-9))
                for name in ("new", "old"):
                    row[f"{name}_{task}"] = statistics.median(rates[name])
                    row[f"{name}_{task}_cpu"] = statistics.median(rates[f"{name}_cpu"])
                row[f"ratio_{task}"] = statistics.median(a / b for a, b in zip(rates["new"], rates["old"]))
            rows.append(row)
    return rows


def print_speed(rows: list[dict[str, float]], frames: int, reference: str) -> None:
    """The rows of :func:`speed_against_reference` and, per thread count, medians and new/old ratios."""
    print(f"run_method('gat') on {frames} held-out frames, current code (new) vs {reference} (old) "
          f"(batch 1: 300 poses one call at a time; batched: all {frames} in one call; medians; ratio = median of"
          f" paired new/old wall timings; cpu = poses per second of the timed process's CPU time)")  # fmt: skip
    head = (f"{'threads':>7}{'run':>4}{'load':>6}{'b1 new':>9}{'b1 old':>9}{'ratio':>7}{'(cpu new':>10}{'old)':>7}"
            f"{'batched new':>12}{'old':>8}{'ratio':>7}{'(cpu new':>10}{'old)':>7}")  # fmt: skip
    print(head + "\n" + "-" * len(head))
    for r in rows:
        print(f"{r['threads']:>7}{r['run']:>4}{r['load']:>6.2f}{r['new_b1']:>9.0f}{r['old_b1']:>9.0f}"
              f"{r['ratio_b1']:>7.2f}{r['new_b1_cpu']:>10.0f}{r['old_b1_cpu']:>7.0f}{r['new_batched']:>12.0f}"
              f"{r['old_batched']:>8.0f}{r['ratio_batched']:>7.2f}{r['new_batched_cpu']:>10.0f}"
              f"{r['old_batched_cpu']:>7.0f}")  # fmt: skip
    for t in sorted({r["threads"] for r in rows}):
        sel = [r for r in rows if r["threads"] == t]
        keys = ("new_b1", "old_b1", "new_batched", "old_batched", "new_b1_cpu", "new_batched_cpu")
        med = {k: statistics.median(r[k] for r in sel) for k in keys}
        ratio_1 = statistics.median(r["ratio_b1"] for r in sel)
        ratio_b = statistics.median(r["ratio_batched"] for r in sel)
        print(f"threads {t}: median batch 1 {med['new_b1']:.0f} (old {med['old_b1']:.0f}, x{ratio_1:.2f}), batched "
              f"{med['new_batched']:.0f} (old {med['old_batched']:.0f}, x{ratio_b:.2f}); per CPU second: batch 1 "
              f"{med['new_b1_cpu']:.0f}, batched {med['new_batched_cpu']:.0f}")  # fmt: skip
    print(f"largest quaternion difference new vs old: {rows[0]['max_quat_diff']:.2g}")


def _rate(fn: Callable[[], object], n: int, seconds: float) -> float:
    """Poses per second of one timing: ``fn`` (``n`` poses a call) called for ~``seconds``."""
    count, started = 0, time.perf_counter()
    while True:
        fn()
        count += n
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return count / elapsed


def median_rate(fn: Callable[[], object], n: int, *, repeats: int = 7, seconds: float = 0.25) -> float:
    """Median over ``repeats`` timings of poses per second (each timing runs ``fn`` for ~``seconds``)."""
    fn()
    return statistics.median(_rate(fn, n, seconds) for _ in range(repeats))


def runtime_table(model: IKModel, batches: tuple[int, ...] = BATCHES, *, repeats: int = 7,
                  seconds: float = 0.25) -> list[dict[str, float]]:  # fmt: skip
    """Poses/s of :meth:`IKModel.predict` with torch and onnxruntime per batch size, and the automatic choice:
    per batch size, ``repeats`` rounds that time each runtime once (~``seconds``; which goes first swaps every
    round), so both see the same moments of a shared machine. Medians, and ``onnx_wins``: the rounds in which
    onnxruntime was faster."""
    x = torch.randn(max(batches), model.rig.num_joints, 3, dtype=torch.float64) * (0.2 * model.rig.height)
    model.ort_session()
    rows = []
    for b in batches:
        xb = x[:b]
        fns = {rt: (lambda rt=rt, xs=xb: model.predict(xs, runtime=rt)) for rt in ("torch", "onnx")}
        for fn in fns.values():  # warm up both
            fn()
        rates: dict[str, list[float]] = {rt: [] for rt in fns}
        for r in range(repeats):
            for rt in ("torch", "onnx") if r % 2 == 0 else ("onnx", "torch"):
                rates[rt].append(_rate(fns[rt], b, seconds))
        rows.append({"batch": b, "auto": model.choose_runtime(b), "threads": torch.get_num_threads(),
                     "torch": statistics.median(rates["torch"]), "onnx": statistics.median(rates["onnx"]),
                     "onnx_wins": sum(o > t for o, t in zip(rates["onnx"], rates["torch"])), "rounds": repeats})  # fmt: skip
    return rows


def print_runtime(rows: list[dict[str, float]]) -> None:
    """The rows of :func:`runtime_table`."""
    print(f"\nruntime (poses/s of IKModel.predict, torch threads {rows[0]['threads']}; torch and onnxruntime timed "
          f"alternately, median of {rows[0]['rounds']} each; auto = onnxruntime up to batch {ORT_MAX_BATCH}, any batch on "
          f"one torch thread; load "
          f"average now {os.getloadavg()[0]:.2f})")  # fmt: skip
    head = f"{'batch':>6}{'torch':>10}{'onnx':>10}{'onnx/torch':>11}{'onnx wins':>10}{'auto picks':>12}"
    print(head + "\n" + "-" * len(head))
    for r in rows:
        print(f"{r['batch']:>6}{r['torch']:>10.0f}{r['onnx']:>10.0f}{r['onnx'] / r['torch']:>11.2f}"
              f"{r['onnx_wins']:>6}/{r['rounds']:<3}{r['auto']:>12}")  # fmt: skip


def network_speed(model: IKModel, batch: int = 4096) -> dict[str, float]:
    """Poses/s of the automatic runtime at batch 1 (``run_method('gat')``: positions in, quaternions and
    translations out) and batched."""
    x = torch.randn(batch, model.rig.num_joints, 3, dtype=torch.float64) * (0.2 * model.rig.height)
    model.ort_session()
    return {"params": model.net.num_parameters(),
            "b1": median_rate(lambda: run_method("gat", x[:1], model), 1),
            "batched": median_rate(lambda: run_method("gat", x, model), batch, repeats=5, seconds=0.5)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=[str(DATA / p) for p in HELD_OUT])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped one)")
    parser.add_argument("--max-frames", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--noise", type=float, nargs="+", default=[0.0, 0.01], help="input noise levels")
    parser.add_argument("--tradeoff", nargs="*", default=[], help="trained model folders for the trade-off table")
    parser.add_argument("--no-untrained", action="store_true", help="skip the untrained sizes of the trade-off table")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--json-out", default=None, help="also write the JSON object to this file")
    parser.add_argument("--speed-only", action="store_true",
                        help="only run_method('gat') of the current code against the ik/ modules of --reference "
                        "(frames, classical, model, onnx, solve of that revision) on today's core/ and nn/, in this "
                        "process")  # fmt: skip
    parser.add_argument("--reference", default=REFERENCE,
                        help="git revision whose ik/ modules --speed-only loads (on today's core/ and nn/: not that "
                        f"revision's code as a whole) [default: {REFERENCE}]")  # fmt: skip
    parser.add_argument("--reference-tree", action="store_true",
                        help="--speed-only against the whole src tree of --reference (git archive) in a worker "
                        "process, timings alternating with this process's, instead of its ik/ modules in this one")  # fmt: skip
    parser.add_argument("--runtime-only", action="store_true",
                        help="only the torch / onnxruntime table of IKModel.predict, at each --threads-list count")  # fmt: skip
    parser.add_argument("--threads-list", type=int, nargs="+", default=[1, 2],
                        help="torch thread counts for --speed-only and --runtime-only")  # fmt: skip
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = IKModel.load(args.model)
    if args.runtime_only:
        tables = []
        for t in args.threads_list:
            torch.set_num_threads(t)
            tables.append(runtime_table(model))
            if not args.json:
                print_runtime(tables[-1])
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(tables, indent=1))
        if args.json:
            print(json.dumps(tables, indent=1))
        return
    require_data(*args.data)
    if args.speed_only:
        positions = held_out_positions(args.data, model, args.max_frames)
        if positions.shape[0] < SINGLE_POSES:  # the batch-1 groups would time empty calls (or fail on them)
            raise SystemExit(f"--speed-only times {SINGLE_POSES} single poses one call at a time: it needs at least "
                             f"{SINGLE_POSES} held-out frames, got {positions.shape[0]} (raise --max-frames)")
        new = _InProcess(sys.modules[run_method.__module__], model, positions)
        if args.reference_tree:
            old: _InProcess | _TreeWorker = _TreeWorker(args.reference, model, positions)
            what = f"the src tree of {args.reference} (git archive) in a worker process"
        else:
            ref = reference_solve(args.reference)
            old = _InProcess(ref, ref.IKModel.load(model.path), positions, f"the ik/ modules of {args.reference}")
            what = f"the ik/ modules of {args.reference} on today's core/ and nn/, in this process"
        rows = speed_against_reference(new, old, positions, args.threads_list, args.runs)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(rows, indent=1))
        print(json.dumps(rows, indent=1)) if args.json else print_speed(rows, positions.shape[0], what)
        return
    result: dict = {"threads": torch.get_num_threads(), "load_average_start": os.getloadavg()}
    for noise in args.noise:
        report = evaluate(args.data, model, noise=noise, max_frames=args.max_frames)
        result[f"noise_{noise:g}"] = {"frames": report["frames"], "methods": report["methods"]}
        if not args.json:
            print(format_table(report, noise=noise), "\n")
    if "noise_0" in result:
        clean = result["noise_0"]["methods"]
        best_classical = min(clean[m]["local_geodesic_deg"] for m in ("swing_mean", "optimize_mean"))
        result["ratios"] = {
            "gat_vs_best_classical_error": clean["gat"]["local_geodesic_deg"] / best_classical,
            "gat_batch1_vs_optimize_batch1": clean["gat"]["poses_per_s_batch1"] / clean["optimize_mean"]["poses_per_s_batch1"],
            "gat_batch1_vs_swing_mean_batch1": clean["gat"]["poses_per_s_batch1"] / clean["swing_mean"]["poses_per_s_batch1"],
        }  # fmt: skip
        if "noise_0.01" in result:
            noisy = result["noise_0.01"]["methods"]
            result["degradation_at_1pct"] = {m: noisy[m]["local_geodesic_deg"] - clean[m]["local_geodesic_deg"]
                                             for m in clean}  # fmt: skip
    result["runtime"] = runtime_table(model)
    rows = []
    for folder in [args.model or "shipped", *args.tradeoff]:
        trained = model if folder == "shipped" or folder == args.model else IKModel.load(folder)
        err = evaluate(args.data, trained, methods=["gat"], max_frames=args.max_frames, timing=False)
        epochs = len(trained.config.get("training", {}).get("history", []))
        rows.append({"model": folder, "trained_epochs": epochs, **trained.net.config.to_dict(), **network_speed(trained),
                     "local_geodesic_deg": err["methods"]["gat"]["local_geodesic_deg"]})  # fmt: skip
    for cfg in [] if args.no_untrained else SIZES:  # untrained networks: speed only
        torch.manual_seed(0)
        untrained = IKModel(IKGAT(model.rig, cfg).eval(), model.rig, {})
        rows.append({"model": "untrained", "trained_epochs": 0, **cfg.to_dict(), **network_speed(untrained),
                     "local_geodesic_deg": float("nan")})  # fmt: skip
    result["tradeoff"] = rows
    result["load_average_end"] = os.getloadavg()
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1))
    if args.json:
        print(json.dumps(result, indent=1))
        return
    if "ratios" in result:
        r = result["ratios"]
        print(f"IK-GAT error / best classical (clean): {r['gat_vs_best_classical_error']:.2f}; "
              f"batch-1 speed-up over per-frame optimisation (LM stopped at convergence): "
              f"{r['gat_batch1_vs_optimize_batch1']:.0f}x, over one-pass swing IK from the mean pose: "
              f"{r['gat_batch1_vs_swing_mean_batch1']:.1f}x")  # fmt: skip
    if "degradation_at_1pct" in result:
        print(
            "degradation at 1% noise (local deg): "
            + ", ".join(f"{m} {v:+.2f}" for m, v in result["degradation_at_1pct"].items())
        )
    print_runtime(result["runtime"])
    head = (f"{'model':<22}{'start':>7}{'epochs':>7}{'hidden':>7}{'layers':>7}{'params':>8}{'local deg':>10}{'b1/s':>8}"
            f"{'batched/s':>10}")  # fmt: skip
    print("\nnetwork size / error / speed (automatic runtime)\n" + head + "\n" + "-" * len(head))
    for r in rows:
        start = "flat" if r.get("flat") else "chain" if r.get("chain") else "swing"
        print(f"{Path(r['model']).name:<22}{start:>7}{r['trained_epochs']:>7}{r['hidden']:>7}{r['layers']:>7}{r['params']:>8}"
              f"{r['local_geodesic_deg']:>10.2f}{r['b1']:>8.0f}{r['batched']:>10.0f}")  # fmt: skip
    print(f"\nload average start {result['load_average_start']}, end {result['load_average_end']}")


if __name__ == "__main__":
    main()
