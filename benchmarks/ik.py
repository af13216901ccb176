"""IK side by side: IK-GAT against swing IK and per-frame optimisation, clean and with 1% noise, plus the
network's size / error / speed trade-off. One run, one CPU, printed as tables.

    python benchmarks/ik.py                       # shipped model, held-out Bandai styles, 2000 frames
    python benchmarks/ik.py --tradeoff /tmp/ikrun/n32 /tmp/ikrun/n48   # trained models to compare
    python benchmarks/ik.py --json                # one JSON object instead of tables

The data are the Bandai-Namco styles left out of the shipped model's training (angry and childish from
dataset 1, elderly from dataset 2). Timings depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from skelanim.ik.evaluate import evaluate, format_table
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.solve import IKModel

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mocap"
HELD_OUT = ["bandai_namco_1/*_angry_*", "bandai_namco_1/*_childish_*", "bandai_namco_2/*_elderly_*"]
SIZES = [GATConfig(hidden=32, layers=2), GATConfig(hidden=48, layers=3), GATConfig(hidden=64, layers=3),
         GATConfig(hidden=128, layers=4)]  # fmt: skip


def _rate(fn, n: int, seconds: float = 1.5) -> float:
    fn()
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        fn()
        count += n
    return count / (time.perf_counter() - started)


def speed(model: IKModel, batch: int = 4096) -> dict[str, float]:
    """Poses per second of the network alone: torch and onnxruntime, batch 1 and batched."""
    x = torch.randn(batch, model.rig.num_joints, 3) * (0.2 * model.rig.height)
    out = {"params": model.net.num_parameters()}
    with torch.inference_mode():
        out["torch_b1"] = _rate(lambda: model.net(x[:1]), 1)
        out["torch_batched"] = _rate(lambda: model.net(x), batch)
    session = model.ort_session()
    if session is not None:
        xn = x.numpy()
        out["ort_b1"] = _rate(lambda: session(xn[:1]), 1)
        out["ort_batched"] = _rate(lambda: session(xn), batch)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=[str(DATA / p) for p in HELD_OUT])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped one)")
    parser.add_argument("--max-frames", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--tradeoff", nargs="*", default=[], help="trained model folders for the size/error/speed table"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = IKModel.load(args.model)
    result: dict = {"threads": torch.get_num_threads()}
    for noise in (0.0, 0.01):
        report = evaluate(args.data, model, noise=noise, max_frames=args.max_frames)
        result[f"noise_{noise:g}"] = {"frames": report["frames"], "methods": report["methods"]}
        if not args.json:
            print(format_table(report, noise=noise), "\n")
    clean = result["noise_0"]["methods"]
    best_classical = min(clean[m]["local_geodesic_deg"] for m in ("swing_mean", "optimize_mean"))
    ratios = {
        "gat_vs_best_classical_error": clean["gat"]["local_geodesic_deg"] / best_classical,
        "gat_batch1_vs_optimize_batch1": clean["gat"]["poses_per_s_batch1"] / clean["optimize_mean"]["poses_per_s_batch1"],
    }  # fmt: skip
    result["ratios"] = ratios
    rows = []
    for folder in args.tradeoff:
        trained = IKModel.load(folder)
        err = evaluate(args.data, trained, methods=["gat"], max_frames=args.max_frames, timing=False)
        rows.append({"model": folder, **trained.net.config.to_dict(), **speed(trained),
                     "local_geodesic_deg": err["methods"]["gat"]["local_geodesic_deg"]})  # fmt: skip
    for cfg in SIZES:  # untrained networks: speed only
        torch.manual_seed(0)
        untrained = IKModel(IKGAT(model.rig, cfg).eval(), model.rig, {})
        rows.append({"model": "untrained", **cfg.to_dict(), **speed(untrained), "local_geodesic_deg": float("nan")})
    result["tradeoff"] = rows
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"IK-GAT error / best classical (clean): {ratios['gat_vs_best_classical_error']:.2f}; "
        f"batch-1 speed-up over per-frame optimisation: {ratios['gat_batch1_vs_optimize_batch1']:.0f}x\n"
    )
    head = f"{'model':<22}{'hidden':>7}{'layers':>7}{'params':>8}{'local deg':>10}{'torch b1':>10}{'torch batch':>12}{'ort b1':>9}{'ort batch':>11}"
    print("network size / error / speed (poses/s)\n" + head + "\n" + "-" * len(head))
    for r in rows:
        print(f"{Path(r['model']).name:<22}{r['hidden']:>7}{r['layers']:>7}{r['params']:>8}{r['local_geodesic_deg']:>10.2f}"
              f"{r['torch_b1']:>10.0f}{r['torch_batched']:>12.0f}{r.get('ort_b1', 0):>9.0f}{r.get('ort_batched', 0):>11.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
