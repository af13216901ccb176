"""IK side by side: IK-GAT against swing IK and per-frame optimisation, clean and with 1% noise, the
runtime choice (torch vs onnxruntime by batch size) and the network's size / error / speed trade-off.
One run, one CPU, printed as tables.

    python benchmarks/ik.py --threads 1           # shipped model, held-out Bandai styles, 2000 frames
    python benchmarks/ik.py --tradeoff /tmp/ikrun/n32 /tmp/ikrun/n48   # trained models to compare
    python benchmarks/ik.py --json                # one JSON object instead of tables

The data are the Bandai-Namco styles left out of the shipped model's training (angry and childish from
dataset 1, elderly from dataset 2). Speeds are medians of repeated timings; they depend on the machine
and on what else runs on it (the load average is printed with them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from skelanim.ik.evaluate import evaluate, format_table
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.solve import ORT_MAX_BATCH, IKModel, run_method

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mocap"
HELD_OUT = ["bandai_namco_1/*_angry_*", "bandai_namco_1/*_childish_*", "bandai_namco_2/*_elderly_*"]
#: Untrained sizes for the speed columns of the trade-off table (the last is about the paper's size).
SIZES = [GATConfig(hidden=32, layers=2, chain=True), GATConfig(hidden=48, layers=3, chain=True),
         GATConfig(hidden=48, layers=3, flat=True), GATConfig(hidden=96, layers=3, chain=True),
         GATConfig(hidden=128, layers=4, chain=True)]  # fmt: skip
BATCHES = (1, 4, 16, 64, 256, 1024, 4096)


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
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = IKModel.load(args.model)
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
