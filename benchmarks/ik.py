"""IK side by side: IK-GAT against swing IK and per-frame optimisation, clean and with 1% noise, the
runtime choice (torch vs onnxruntime by batch size) and the network's size / error / speed trade-off.
One run, one CPU, printed as tables.

    python benchmarks/ik.py --threads 1           # shipped model, held-out Bandai styles, 2000 frames
    python benchmarks/ik.py --tradeoff /tmp/ikrun/n32 /tmp/ikrun/n48   # trained models to compare
    python benchmarks/ik.py --json                # one JSON object instead of tables
    python benchmarks/ik.py --speed-only --threads-list 1 2 --runs 3   # the network's speed against the
                                                  # pre-fast-path code (--reference REV) in this process

The data are the Bandai-Namco styles left out of the shipped model's training (angry and childish from
dataset 1, elderly from dataset 2). Speeds are medians of repeated timings; they depend on the machine
and on what else runs on it (the load average is printed with them).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

from skelanim.ik.evaluate import evaluate, format_table, select_frames
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.solve import ORT_MAX_BATCH, IKModel, run_method

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mocap"
HELD_OUT = ["bandai_namco_1/*_angry_*", "bandai_namco_1/*_childish_*", "bandai_namco_2/*_elderly_*"]
#: Untrained sizes for the speed columns of the trade-off table (the last is about the paper's size).
SIZES = [GATConfig(hidden=32, layers=2, chain=True), GATConfig(hidden=48, layers=3, chain=True),
         GATConfig(hidden=48, layers=3, flat=True), GATConfig(hidden=96, layers=3, chain=True),
         GATConfig(hidden=128, layers=4, chain=True)]  # fmt: skip
BATCHES = (1, 4, 16, 64, 256, 1024, 4096)
#: The last commit before the fast path (b769bcd): the old network code, ONNX graph and Python around it.
REFERENCE = "2852dea"
_REF_MODULES = ("frames", "classical", "model", "onnx", "solve")


def reference_solve(rev: str = REFERENCE) -> ModuleType:
    """``skelanim.ik.solve`` as of git revision ``rev``, with the ``frames``, ``classical``, ``model`` and
    ``onnx`` modules of that revision (package ``skelanim_ik_ref`` in a temporary folder), so the old path
    runs in the same process as the current one."""
    root = Path(__file__).resolve().parents[1]
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


def _paired(new: Callable[[], object], old: Callable[[], object], count: int, rounds: int) -> dict[str, float]:
    """Rates (``count`` poses per call of ``new`` / ``old``) timed alternately ``rounds`` times: medians of
    both (wall clock, and per second of the process's CPU time) and the median of the per-round wall ratios
    new/old (both see the same moment of a shared machine)."""
    rates: dict[str, list[float]] = {"new": [], "old": [], "new_cpu": [], "old_cpu": []}
    for _ in range(rounds):
        for name, fn in (("new", new), ("old", old)):
            started, cpu = time.perf_counter(), time.process_time()
            fn()
            rates[name].append(count / (time.perf_counter() - started))
            rates[f"{name}_cpu"].append(count / max(time.process_time() - cpu, 1e-9))
    out = {f"{name}_batched": statistics.median(rates[name]) for name in ("new", "old")}
    out.update({f"{name}_batched_cpu": statistics.median(rates[f"{name}_cpu"]) for name in ("new", "old")})
    out["ratio_batched"] = statistics.median(a / b for a, b in zip(rates["new"], rates["old"]))
    return out


def speed_against_reference(model: IKModel, ref: ModuleType, positions: torch.Tensor, threads: list[int],
                            runs: int) -> list[dict[str, float]]:  # fmt: skip
    """``run_method('gat')`` of the current and the reference code on the same poses: per thread count,
    ``runs`` runs, each timing batch 1 (300 poses one call at a time, in 10 groups of 30, the two codes
    alternating group by group) and batched (all poses in one call, 5 alternating calls), with the load
    average at the start of the run."""
    old = ref.IKModel.load(model.path)
    new_1 = lambda x: run_method("gat", x, model)
    old_1 = lambda x: ref.run_method("gat", x, old)
    for fn in (new_1, old_1):  # build the onnxruntime sessions, check both agree
        fn(positions[:1])
    got, want = new_1(positions[:64])[0], old_1(positions[:64])[0]
    diff = float((got * torch.sign((got * want).sum(-1, keepdim=True)) - want).abs().max())
    single = [positions[i : i + 1] for i in range(300)]
    rows = []
    for t in threads:
        torch.set_num_threads(t)
        for fn in (new_1, old_1):
            fn(positions[:512])
        for run in range(runs):
            row: dict[str, float] = {"threads": t, "run": run, "load": os.getloadavg()[0], "max_quat_diff": diff}
            rates: dict[str, list[float]] = {"new": [], "old": [], "new_cpu": [], "old_cpu": []}
            for g in range(10):  # alternate group by group on the same 30 poses
                for name, fn in (("new", new_1), ("old", old_1)):
                    started, cpu = time.perf_counter(), time.process_time()
                    for x in single[30 * g : 30 * g + 30]:
                        fn(x)
                    rates[name].append(30 / (time.perf_counter() - started))
                    rates[f"{name}_cpu"].append(30 / max(time.process_time() - cpu, 1e-9))
            for name in ("new", "old"):
                row[f"{name}_b1"] = statistics.median(rates[name])
                row[f"{name}_b1_cpu"] = statistics.median(rates[f"{name}_cpu"])
            row["ratio_b1"] = statistics.median(a / b for a, b in zip(rates["new"], rates["old"]))
            row.update(_paired(lambda: new_1(positions), lambda: old_1(positions), positions.shape[0], 5))
            rows.append(row)
    return rows


def print_speed(rows: list[dict[str, float]], frames: int) -> None:
    """The rows of :func:`speed_against_reference` and, per thread count, medians and new/old ratios."""
    print(f"run_method('gat') on {frames} held-out frames, current vs reference code in one process "
          f"(batch 1: 300 poses one call at a time; batched: all {frames} in one call; medians; ratio = median of"
          f" paired new/old wall timings; cpu = poses per second of the process's CPU time)")  # fmt: skip
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


def median_rate(fn: Callable[[], object], n: int, *, repeats: int = 7, seconds: float = 0.25) -> float:
    """Median over ``repeats`` timings of poses per second (each timing runs ``fn`` for ~``seconds``)."""
    fn()
    rates = []
    for _ in range(repeats):
        count, started = 0, time.perf_counter()
        while True:
            fn()
            count += n
            elapsed = time.perf_counter() - started
            if elapsed >= seconds:
                break
        rates.append(count / elapsed)
    return statistics.median(rates)


def runtime_table(model: IKModel, batches: tuple[int, ...] = BATCHES) -> list[dict[str, float]]:
    """Poses/s of :meth:`IKModel.predict` with torch, onnxruntime and the automatic choice, per batch size."""
    x = torch.randn(max(batches), model.rig.num_joints, 3, dtype=torch.float64) * (0.2 * model.rig.height)
    model.ort_session()
    rows = []
    for b in batches:
        xb = x[:b]
        row = {"batch": b, "auto": model.choose_runtime(b)}
        for runtime in ("torch", "onnx"):
            row[runtime] = median_rate(lambda rt=runtime, xs=xb: model.predict(xs, runtime=rt), b)
        rows.append(row)
    return rows


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
    parser.add_argument("--speed-only", action="store_true", help="only the network's speed against --reference")
    parser.add_argument("--reference", default=REFERENCE, help="git revision of the old code (speed comparison)")
    parser.add_argument("--threads-list", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = IKModel.load(args.model)
    if args.speed_only:
        positions = held_out_positions(args.data, model, args.max_frames)
        rows = speed_against_reference(model, reference_solve(args.reference), positions, args.threads_list, args.runs)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(rows, indent=1))
        print(json.dumps(rows, indent=1)) if args.json else print_speed(rows, positions.shape[0])
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
              f"batch-1 speed-up over per-frame optimisation: {r['gat_batch1_vs_optimize_batch1']:.0f}x")  # fmt: skip
    if "degradation_at_1pct" in result:
        print(
            "degradation at 1% noise (local deg): "
            + ", ".join(f"{m} {v:+.2f}" for m, v in result["degradation_at_1pct"].items())
        )
    print(f"\nruntime (poses/s of IKModel.predict, median; auto = onnxruntime up to batch {ORT_MAX_BATCH})")
    head = f"{'batch':>6}{'torch':>10}{'onnx':>10}{'auto picks':>12}"
    print(head + "\n" + "-" * len(head))
    for r in result["runtime"]:
        print(f"{r['batch']:>6}{r['torch']:>10.0f}{r['onnx']:>10.0f}{r['auto']:>12}")
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
